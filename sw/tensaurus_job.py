"""A kernel as a Tensaurus run: the CISS stream, the operand matrices padded to the
array's rank, the golden output, and the run's measures, the paper's beside ours
(Tensaurus Sections 5 and 7.1, Fig. 7).

The PEs compute on integers (wrapping at ``acc_width`` bits), so values and factors
must be integers that ``dw`` bits hold, and a run whose exact output ``acc_width`` bits
do not hold is refused. A kernel maps to the PE's two modes:

- SpMTTKRP and DMTTKRP: ``Y[i] = sum_j B[j] * sum_k A[i,j,k] C[k]``: operand 0 is C
  (mode 2's factor), operand 1 is B (mode 1's);
- SpTTMc and DTTMc: ``Y[i,u,w] = sum_j B[j,u] sum_k A[i,j,k] C[k,w]`` (B's rank ``r1``
  and C's may differ): operand 0 is C, split over the PE columns as in MTTKRP; operand 1
  is B, each row whole in every column (``ceil(r1 / vlen)`` chunks); the output, ``I x
  r1 x R``, comes out as rows of ``r1 * R`` values;
- SpMM and GEMM: ``Y[i] = sum_j A[i,j] B[j]``: operand 0 is B;
- SpMV and GEMV: ``y[i] = sum_j A[i,j] b[j]`` on the first PE column (Section 5.2.4):
  operand 1 is b, ``per`` elements a row (:func:`~sparseforge.sw.wire.mv_layout`),
  loaded as TTMc's B is, whole into the scratchpads; operand 0 is empty. Each nonzero
  is one operation of one PE, and the output one value a row.

A dense operand (DMTTKRP, DTTMc, GEMM, GEMV) runs in the TLU's dense mode (Section
5.2.4): memory holds it as dense words (:func:`~sparseforge.sw.wire.tensaurus_dense_words`,
``dw`` bits an element, zeros included: :class:`DenseStream`) and the TLU builds its CISS
entries on the fly, every PE row at the same ``(j, k)``, so the scratchpads broadcast one
read to a column. A rank of ``F``
runs as ``R = tlen * cols * vlen >= F`` columns, the rest zero (MV: one column).

A run is tiled (Section 5.1) when the scratchpads hold fewer than all the operands' rows
(``spm_rows``): the nonzeros are grouped by the block of ``spm_rows`` rows of each operand
they read (MM: of B by ``j``; MV: of b, ``spm_rows * per`` values of ``j``; MTTKRP and
TTMc: of C by ``k`` and of B by ``j``), each
group a tile with its own CISS stream of indices local to its blocks; only blocks that
hold nonzeros make tiles. The output is tiled too (Section 5.2.5), when the MSU holds
fewer than all its rows (``out_rows``): its rows split into output tiles of ``out_rows``
rows, the nonzeros grouped by output tile first, then as above by the operands' blocks
(the input tiles of the output tile), each slice numbered from its output tile's first
row ``i0``. Every output tile has an input tile, an empty one if it holds no nonzeros,
so the MSU writes each output row once; each input tile records its output tile and
whether it is the output tile's last (after it the MSU writes the output tile). In the
direct mode (Section 5.2.5) the output is one tile, whatever the MSU holds, each drain
added to its word in memory.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from . import ciss as cissmod
from . import tensor_kernels, wire
from .formats import Tensor

KERNELS = {"spmttkrp": "mttkrp", "dmttkrp": "mttkrp", "spttmc": "ttmc", "dttmc": "ttmc",
           "spmm": "mm", "gemm": "mm", "spmv": "mv", "gemv": "mv"}
"""The kernels a run takes, and the PE mode each runs in."""

DENSE = ("dmttkrp", "dttmc", "gemm", "gemv")


@dataclass(frozen=True, eq=False)
class DenseStream:
    """A tile of a dense tensor or matrix as the TLU reads it in its dense mode: ``words``
    (:func:`~sparseforge.sw.wire.tensaurus_dense_words`) of its ``slices`` slices (padded
    with zeros to a multiple of the PE rows) over its block of ``jn x kn`` (``kn`` 1 for
    a matrix); ``wire`` the CISS lanes the TLU builds from them."""

    wire: wire.CissWire
    words: np.ndarray
    slices: int
    jn: int
    kn: int

    @classmethod
    def of(cls, dense, pes, dw=16, iw=16):
        """The stream of a dense ``I x J [x K]`` integer array for ``pes`` PE rows, its
        slices padded with zeros to a multiple of ``pes``; refused where ``iw`` bits cannot
        index its slices."""
        dense = np.asarray(dense, dtype=np.int64)
        cissw = wire.CissWire(pes, dw, iw, dense.ndim)
        slices = dense.shape[0]
        if slices + (-slices % pes) > cissw.idle:
            raise ParameterError(f"the tensor's {slices} slices: past what iw={iw} bits "
                                 f"index with {pes} PE rows; a larger iw holds them")
        padded = np.pad(dense, ((0, -slices % pes), *((0, 0),) * (dense.ndim - 1)))
        return cls(cissw, wire.tensaurus_dense_words(padded, pes, dw), slices,
                   dense.shape[1], dense.shape[2] if dense.ndim == 3 else 1)

    @property
    def entries(self):
        """Words in memory (the TLU adds a header entry per slice group)."""
        return len(self.words)

    @property
    def nnz(self):
        """Elements, zeros included: a dense kernel computes them all."""
        return self.slices * self.jn * self.kn


@dataclass(frozen=True, eq=False)
class Tile:
    """An input tile of a run: its part of the tensor (a :class:`~sparseforge.sw.ciss.Ciss`
    with indices local to its blocks and its output tile, or a :class:`DenseStream`), the
    rows of each operand it loads (``(first, count)``), its (i, j) fibers (0 in MM), its
    output tile's rows ``out`` (``(i0, count)``) and whether it ``closes`` it (the output
    tile's last input tile)."""

    stream: object
    rows: tuple
    fibers: int
    out: tuple
    closes: bool


@dataclass(frozen=True, eq=False)
class Job:
    """A run: ``tiles`` (:class:`Tile`, in order), ``mats`` the operand matrices (int64,
    ``R`` columns; TTMc's B ``ceil(r1 / vlen) * vlen``), ``golden`` the exact output
    (``out_rows x rank``, in TTMc ``out_rows x r1 x rank``), the array,
    ``spm_rows``, the rows of each operand a tile loads at most, and ``out_tile_rows``,
    the rows of an output tile at most (in the ``direct`` mode, the MSU's rows it was
    planned for: its one output tile is every row)."""

    kernel: str
    mode: str               # "mttkrp", "ttmc", "mm" or "mv"
    tiles: tuple
    mats: tuple
    golden: np.ndarray
    rank: int               # of the output's split columns: B's (MM), C's (MTTKRP, TTMc)
    r1: int                 # B's rank in TTMc; 1 otherwise
    rows: int
    cols: int
    vlen: int
    tlen: int
    acc_width: int
    spm_rows: int
    out_tile_rows: int
    direct: bool = False    # accumulated directly in memory (Section 5.2.5)

    @property
    def active_pes(self):
        """The PEs that compute: MV's first column, or all of them."""
        return self.rows * (1 if self.mode == "mv" else self.cols)

    @property
    def out_rows(self):
        return self.golden.shape[0]

    @property
    def nnz(self):
        return sum(tile.stream.nnz for tile in self.tiles)

    @property
    def entries(self):
        return sum(tile.stream.entries for tile in self.tiles)

    @property
    def wire(self):
        return self.tiles[0].stream.wire

    @property
    def dense(self):
        """Whether the tensor streams in the TLU's dense mode."""
        return self.kernel in DENSE

    @property
    def tensor_word_bits(self):
        """Bits of the tensor a memory word carries: a CISS entry, or a dense word of a
        value a PE row."""
        return self.rows * self.wire.dw if self.dense else self.wire.entry_width

    def chunks(self, tile):
        """The matrix chunks (``vlen`` values each) ``tile`` loads: its rows of each
        operand, each row whole words of ``cols`` chunks as the MLU reads them (a
        broadcast row of fewer chunks is padded to one)."""
        return sum(count * -(-m.shape[1] // (self.vlen * self.cols)) * self.cols
                   for (_, count), m in zip(tile.rows, self.mats, strict=True))

    def macs(self):
        """Lane multiply-accumulates the PEs do: each PE of a row one chunk operation per
        chunk for a nonzero, and for each fiber's end in each tile (``r1`` per chunk in
        TTMc); in MV one PE one operation per nonzero, its value on every lane."""
        if self.mode == "mv":
            return self.nnz * self.vlen
        ends = sum(tile.fibers for tile in self.tiles) * self.r1
        return (self.nnz + ends) * self.tlen * self.cols * self.vlen

    def useful_macs(self):
        """The multiply-accumulates on real values, as the paper counts ops (Sec. 7.1,
        Fig. 7: each multiply and each add performed, 2 a MAC): per nonzero one for each
        of the output's ``rank`` columns (F), and per fiber's end in each tile ``r1 x F``
        (MTTKRP: ``r1`` = 1, the Hadamard product with B's row; TTMc: the Kronecker
        product's). The array runs ``R = tlen x cols x vlen >= F`` columns, the ``R - F``
        past the rank zeros: :meth:`macs` counts those padded lanes too, this does not."""
        ends = sum(tile.fibers for tile in self.tiles) * self.r1
        return (self.nnz + ends) * self.rank

    @property
    def memory_word_bits(self):
        """Bits one memory system delivers a cycle: one word as wide as the accelerator's
        widest memory port, the TLU's CISS entry (or dense word) or the MLU's word of
        ``cols`` chunks of ``vlen`` values.
        The paper's tensor, matrices and output share one HBM (Sec. 6-7.1, Fig. 7); here
        each has its own port, and their widths summed would be a memory the paper does
        not have."""
        return max(self.tensor_word_bits, self.cols * self.vlen * self.wire.dw)

    def drains(self, r1=None):
        """The PEs' drains to the output's rows, a word of ``vlen`` accumulators each: for
        each slice of each tile, each column's ``r1 x tlen`` chunks (on a build of B's rank
        ``r1``, default the job's); in MV the first column's one."""
        per = 1 if self.mode == "mv" else (r1 or self.r1) * self.tlen * self.cols
        return per * sum(tile.stream.slices if self.dense else len(tile.stream.slices)
                         for tile in self.tiles)

    def moved_bytes(self):
        """Bytes the run moves: the CISS stream, each tile's rows of the matrices and the
        output (in the direct mode, its words zeroed beforehand and each drain's read and
        write)."""
        loaded = sum(self.chunks(tile) for tile in self.tiles)
        out = self.out_rows * self.r1 * self.tlen * self.cols + 2 * self.direct * self.drains()
        return (self.entries * self.tensor_word_bits + loaded * self.vlen * self.wire.dw
                + out * self.vlen * self.acc_width) / 8


def _integers(values, what):
    """``values`` as int64, refused (naming ``what``) unless each is an integer int64
    holds: a uint64 past 2^63 or a float past 2^63 would wrap, not fail."""
    values = np.asarray(values)
    if values.dtype.kind not in "iubf" or (values.dtype.kind == "f" and not (
            np.isfinite(values).all() and (values == np.rint(values)).all())):
        raise ParameterError(f"{what}: the PEs compute on integers; give integer values")
    if values.size and values.dtype.kind in "uf" and values.max() >= 2.0**63:
        raise ParameterError(f"{what}: value {values.max()} is past 64-bit integers")
    if values.size and values.dtype.kind == "f" and values.min() < -(2.0**63):
        raise ParameterError(f"{what}: value {values.min()} is past 64-bit integers")
    return values.astype(np.int64)


def _as_tensor(operand, kernel, what):
    """The sparse operand as a Tensor of integer values (a dense one's nonzeros)."""
    if kernel in DENSE:
        dense = np.asarray(operand)
        want = 2 if KERNELS[kernel] in ("mm", "mv") else 3
        if dense.ndim != want:
            raise ParameterError(f"{what}: {kernel} takes a dense {want}-D array, not "
                                 f"{dense.ndim}-D")
        coords = np.argwhere(dense != 0)
        return Tensor(coords, _integers(dense[tuple(coords.T)], what), dense.shape)
    if isinstance(operand, Tensor):
        tensor = operand
    else:
        m = operand.tocoo()
        tensor = Tensor(np.stack([m.row, m.col], 1).astype(np.int64), m.data, m.shape)
    want = 2 if KERNELS[kernel] in ("mm", "mv") else 3
    if tensor.ndim != want:
        raise ParameterError(f"{what}: {kernel} takes a {want}-mode operand, not "
                             f"{tensor.ndim} modes")
    return Tensor(tensor.coords, _integers(tensor.values, what), tensor.shape)


def plan(kernel, operand, factors, rows=2, cols=2, vlen=2, dw=16, iw=16, acc_width=32,
         spm_rows=None, names=None, out_rows=None, direct=False):
    """The :class:`Job` of ``kernel`` on ``operand`` (a Tensor, scipy sparse matrix or,
    for a dense kernel, an array) with ``factors`` (MTTKRP and TTMc: ``[B, C]``; MM:
    ``[B]``; SpMV and GEMV: ``[b]``, a vector, 1-D or one column) on an ``rows x cols``
    array of ``vlen`` lanes, tiled to scratchpads of ``spm_rows`` rows an operand
    (default: one tile) and to an MSU of ``out_rows`` output rows (default: one output
    tile). ``direct`` accumulates in memory (one output tile); ``"auto"`` does where the
    output needs several output tiles and that moves fewer bytes
    (:meth:`Job.moved_bytes`): the paper's reasoning, the larger tensor tile against the
    reads and writes of every drain. ``names`` label the operand and each factor in
    errors (their files). Values past ``dw`` bits and outputs past ``acc_width`` bits are
    refused: the run is exact or it does not start."""
    if direct == "auto":
        given = dict(rows=rows, cols=cols, vlen=vlen, dw=dw, iw=iw, acc_width=acc_width,
                     spm_rows=spm_rows, names=names, out_rows=out_rows)
        buffered = plan(kernel, operand, factors, **given)
        if sum(tile.closes for tile in buffered.tiles) == 1:
            return buffered
        alternative = plan(kernel, operand, factors, **given, direct=True)
        return min((buffered, alternative), key=Job.moved_bytes)
    if direct not in (False, True):
        raise ParameterError(f"direct={direct!r}: expected True, False or 'auto'")
    if kernel not in KERNELS:
        raise ParameterError(f"--kernel {kernel}: the hardware runs {', '.join(KERNELS)}")
    what, *labels = names or ["the tensor", *(f"factor {n}" for n in range(len(factors)))]
    tensor = _as_tensor(operand, kernel, what)
    mode = KERNELS[kernel]
    mats = [_integers(f, label) for f, label in zip(factors, labels, strict=True)]
    need = 1 if mode in ("mm", "mv") else 2
    if len(mats) != need:
        raise ParameterError(f"{kernel} takes {need} factor matrices, not {len(mats)}")
    if kernel in ("spmv", "gemv"):
        if mats[0].ndim != 1 and mats[0].shape[1:] != (1,):
            raise ParameterError(f"{labels[0]} is {mats[0].shape}: {kernel} takes a vector "
                                 f"(1-D, or one column); {'gemm' if kernel == 'gemv' else 'spmm'}"
                                 f" takes a matrix")
        mats[0] = mats[0].reshape(-1, 1)
    for m, size, label in zip(mats, tensor.shape[1:], labels, strict=True):
        if m.ndim != 2 or m.shape[0] != size:
            raise ParameterError(f"{label} is {m.shape}: expected ({size}, rank)")
    ranks = [m.shape[1] for m in mats]
    if 0 in ranks or (mode == "mttkrp" and ranks[0] != ranks[1]):
        raise ParameterError(f"the factors' ranks differ or are 0: {ranks}")
    rank, r1 = ranks[-1], ranks[0] if mode == "ttmc" else 1
    tlen = tlen_of(mode, rank, cols, vlen)
    padded = [np.pad(m, ((0, 0), (0, tlen * cols * vlen - rank))) for m in mats]
    for m, label in zip([tensor.values, *mats], [what, *labels], strict=True):
        wire.signed_words(m, dw, label, "dw")
    golden = _golden(mode, tensor, mats, acc_width)
    if mode == "mm":
        operands = (padded[0],)
    elif mode == "mv":                              # b, per elements a row
        per = wire.mv_layout(vlen)[0]
        b = np.pad(mats[0][:, 0], (0, -len(mats[0]) % per)).reshape(-1, per)
        operands = (np.zeros((0, vlen), dtype=np.int64), np.pad(b, ((0, 0), (0, vlen - per))))
    elif mode == "mttkrp":
        operands = (padded[1], padded[0])           # operand 0: C; operand 1: B
    else:                                           # B whole: ceil(r1 / vlen) chunks
        operands = (padded[1], np.pad(mats[0], ((0, 0), (0, -r1 % vlen))))
    largest = max(m.shape[0] for m in operands)
    if spm_rows is not None and (isinstance(spm_rows, bool) or int(spm_rows) < 1):
        raise ParameterError(f"spm_rows={spm_rows!r}: a scratchpad holds at least one row")
    spm_rows = max(1, largest if spm_rows is None else min(int(spm_rows), largest))
    if out_rows is not None and (isinstance(out_rows, bool) or int(out_rows) < 1):
        raise ParameterError(f"out_rows={out_rows!r}: an output tile holds at least one row")
    slices = tensor.shape[0]
    capacity = max(1, slices if out_rows is None else min(int(out_rows), slices))
    out_rows = max(1, slices) if direct else capacity
    per = wire.mv_layout(vlen)[0] if mode == "mv" else None
    dense = _integers(operand, what) if kernel in DENSE else None
    tiles = []
    for i0, part in _output_tiles(tensor, out_rows):
        if kernel in DENSE:
            inner = _dense_tiles(dense[i0:i0 + part.shape[0]], spm_rows, rows, dw, iw, per)
        else:
            inner = _tiles(part, spm_rows, rows, dw, iw, per)
        tiles += [Tile(*tile, (i0, part.shape[0]), n == len(inner) - 1)
                  for n, tile in enumerate(inner)]
    return Job(kernel, mode, tuple(tiles), operands, golden, rank, r1, rows, cols, vlen, tlen,
               acc_width, spm_rows, capacity, direct)


def _output_tiles(tensor, out_rows):
    """``(i0, part)`` of each output tile of ``out_rows`` rows: its first row, and its
    nonzeros as a tensor of its rows, their slices numbered from ``i0``."""
    order = np.argsort(tensor.coords[:, 0], kind="stable")
    coords, values = tensor.coords[order], tensor.values[order]
    starts = range(0, max(tensor.shape[0], 1), out_rows)
    bounds = np.searchsorted(coords[:, 0], [*starts, max(tensor.shape[0], 1)])
    for n, i0 in enumerate(starts):
        held = slice(bounds[n], bounds[n + 1])
        local = coords[held] - np.array([i0] + [0] * (tensor.ndim - 1))
        yield i0, Tensor(local, values[held], (min(out_rows, tensor.shape[0] - i0),
                                               *tensor.shape[1:]))


def tlen_of(mode, rank, cols, vlen):
    """Chunks of a row each PE holds (TLEN): the rank over the columns' lanes, or one in
    MV."""
    return 1 if mode == "mv" else -(-rank // (cols * vlen))


def _golden(mode, tensor, mats, acc_width):
    """The kernel's exact output, refused past ``acc_width``-bit accumulators. The
    kernel over the values' magnitudes (in floats) bounds every partial sum; where it
    stays under 2^62 the int64 output is exact."""
    kernel = {"mm": lambda t, m: tensor_kernels.spmm(t, m[0]),
              "mv": lambda t, m: tensor_kernels.spmm(t, m[0]),
              "mttkrp": lambda t, m: tensor_kernels.spmttkrp(t, [None, *m]),
              "ttmc": lambda t, m: tensor_kernels.spttmc(t, [None, *m])}[mode]
    size = Tensor(tensor.coords, np.abs(tensor.values).astype(np.float64), tensor.shape)
    bound = kernel(size, [np.abs(m).astype(np.float64) for m in mats])
    if bound.size and bound.max() >= 2.0**62:
        raise ParameterError(f"the output may reach {bound.max():.3g}: past what 64-bit "
                             "integers check exactly; scale the values down")
    golden = kernel(tensor, mats)
    wire.signed_words(golden, acc_width, "the output", "acc_width")
    return golden


def _tiles(tensor, spm_rows, pes, dw, iw, per=None):
    """``(stream, rows, fibers)`` of an output tile's input tiles: its nonzeros grouped
    by the blocks of ``spm_rows`` rows of each operand they read (operand 0: C by ``k``,
    or B by ``j`` in MM; operand 1: B by ``j``), in order of B's block, then C's. In MV
    b's rows hold ``per`` values each: a block spans ``spm_rows * per`` values of ``j``,
    its rows operand 1's."""
    held = tensor.values != 0
    coords, values = tensor.coords[held], tensor.values[held]
    axes = (1,) if tensor.ndim == 2 else (2, 1)             # operand 0's index, then 1's
    span = spm_rows * (per or 1)                            # of an index, a block
    blocks = coords[:, axes] // span
    key = blocks[:, 0] if tensor.ndim == 2 else blocks[:, 1] * (
        -(-tensor.shape[2] // spm_rows)) + blocks[:, 0]
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    order = np.argsort(key, kind="stable")
    local_shape = (tensor.shape[0], *(min(span, n) for n in tensor.shape[1:]))
    tiles, at = [], 0
    for n, count in zip(first, counts, strict=True):
        part = order[at:at + count]
        at += count
        origin = np.zeros(tensor.ndim, dtype=np.int64)
        origin[list(axes)] = blocks[n] * span
        local = coords[part] - origin
        ciss = cissmod.encode(Tensor(local, values[part], local_shape), pes, dw=dw, iw=iw)
        rows = tuple((int(origin[a]) // (per or 1),
                      -(-int(min(span, tensor.shape[a] - origin[a])) // (per or 1)))
                     for a in axes)
        if per:
            rows = ((0, 0), *rows)
        fibers = 0 if tensor.ndim == 2 else len(np.unique(local[:, :2], axis=0))
        tiles.append((ciss, rows, fibers))
    if not tiles:                                           # no nonzeros: one empty tile
        empty = Tensor(np.zeros((0, tensor.ndim), dtype=np.int64), values[:0], local_shape)
        tiles.append((cissmod.encode(empty, pes, dw=dw, iw=iw),
                      tuple((0, 0) for _ in range(len(axes) + bool(per))), 0))
    return tiles


def _dense_tiles(dense, spm_rows, pes, dw, iw, per=None):
    """``(stream, rows, fibers)`` of the input tiles of an output tile of a dense tensor or
    matrix, as :func:`_tiles` groups a sparse one's (in MV ``per`` of b's values a row):
    every block of ``spm_rows`` rows of each operand is a tile, each a
    :class:`DenseStream` of the block, its slices padded to the PE rows."""
    span = spm_rows * (per or 1)
    j_blocks = range(0, dense.shape[1], span)
    k_blocks = range(0, dense.shape[2], spm_rows) if dense.ndim == 3 else (None,)
    tiles = []
    for j0 in j_blocks:
        jn = min(span, dense.shape[1] - j0)
        for k0 in k_blocks:
            block = dense[:, j0:j0 + jn] if k0 is None else dense[:, j0:j0 + jn,
                                                                   k0:k0 + spm_rows]
            stream = DenseStream.of(block, pes, dw, iw)
            kn = stream.kn
            if per:
                rows = ((0, 0), (j0 // per, -(-jn // per)))
            else:
                rows = ((j0, jn),) if k0 is None else ((k0, kn), (j0, jn))
            tiles.append((stream, rows, 0 if k0 is None else stream.slices * jn))
    if not tiles:                                           # no columns: one empty tile
        tiles.append((DenseStream.of(dense, pes, dw, iw),
                      ((0, 0),) * (2 if per or dense.ndim == 3 else 1), 0))
    return tiles


def measures(job, cycles, compute_cycles):
    """The run's measures as the paper defines them (Sec. 7.1, Fig. 7), ours beside, from
    its ``cycles`` (of them ``compute_cycles`` computing); ``paper_`` marks a figure by
    the paper's peak.

    Ops are 2 a MAC (a multiply and an add) on real values (:meth:`Job.useful_macs`);
    ``executed_ops`` adds the lanes padded past the rank (:meth:`Job.macs`). The
    intensity is useful ops over every byte the run moved (:meth:`Job.moved_bytes`). Our
    peak is ``lanes x 2`` ops a cycle, the PE reading its scratchpad and computing in the
    same cycle; the paper's is ``lanes x 2 x 0.5``, its PE spending every other cycle
    reading. Under each peak the roof at the run's intensity is ``min(peak, intensity x
    bandwidth)``, the bandwidth one memory's word a cycle (:attr:`Job.memory_word_bits`),
    and utilization is the useful ops a cycle over the peak, while computing and over the
    whole run. The peaks are the whole array's; ``active_pes`` says how many of its PEs
    the kernel uses (SpMV's first column)."""
    lanes = job.rows * job.cols * job.vlen
    useful, executed = 2 * job.useful_macs(), 2 * job.macs()
    moved = job.moved_bytes()
    intensity = useful / moved
    bandwidth = job.memory_word_bits / 8
    figures = {"useful_ops": useful, "executed_ops": executed, "bytes": moved,
               "array_pes": job.rows * job.cols, "active_pes": job.active_pes,
               "intensity_useful_ops_per_byte": intensity,
               "bandwidth_bytes_per_cycle": bandwidth,
               "useful_ops_per_cycle": useful / cycles,
               "utilization_executed": executed / (compute_cycles * 2 * lanes)}
    for by, peak in (("", 2 * lanes), ("paper_", lanes * 2 * 0.5)):
        figures |= {f"{by}peak_ops_per_cycle": peak,
                    f"{by}attainable_ops_per_cycle": min(peak, intensity * bandwidth),
                    f"{by}utilization_useful": useful / (compute_cycles * peak),
                    f"{by}utilization_useful_with_loading": useful / (cycles * peak)}
    figures["of_attainable"] = useful / cycles / figures["attainable_ops_per_cycle"]
    return figures
