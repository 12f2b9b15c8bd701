"""An ``accel`` run planned by the host: the tiles, the passes, the golden output.

The accelerator computes ``Y = A B`` (SpMM) or ``y = A b`` (SpMV) from A stored as CSR.
Its sequencer walks a loop nest the host lays out here:

- **output tiles**: bands of ``rows`` consecutive rows of A (Tailors §4: the tile the
  buffer holds is ``A[I, :]``, every column of its rows); the band height is chosen by
  the tiling policy against the Tailor's capacity and capped by the MSU's ``out_rows``;
- **passes** over B's columns, ``R = tlen * cols * vlen`` a pass (the PE array's row):
  each pass streams the whole band to the array again, which is what the Tailor holds
  it for: the first pass converts it from CSR in line and fills the Tailor, later passes
  read the Tailor, and a band longer than the Tailor overbooks it and has its bumped part
  converted again every pass;
- **input tiles**: within a band, the nonempty blocks of ``spm_rows`` columns of A (the
  rows of B a scratchpad holds), each one Tensaurus tile (Section 5.1) whose CISS
  stream the converter makes of the window ``A[I, k0:k1]``, rows numbered from the
  band's first, columns from ``k0``.

SpMTTKRP (``Y[i] = sum_{j,k} T[i,j,k] B[j] * C[k]``, Tensaurus §5.2) runs on a build of
``order`` 3 (:attr:`AccelConfig.order`) with the tensor stored as COO sorted by ``(i, j,
k)``: bands of slices and passes over the rank's panels as SpMM's (a pass ``R`` of the
rank), windows of ``spm_rows`` over j (B's rows, operand 1), a slice's part of a window
one run of its elements; C's ``K`` rows load whole with every tile (operand 0), so ``K``
must fit a scratchpad (:func:`plan` refuses it otherwise, in one line: a window over k
would cut every fiber). A band's CISS entries are counted as SpMM's with j for the
column (:class:`BandEntries` of the tensor's ``(i, j)`` pattern, repeats kept: each is a
nonzero of its own), and a dense slice holds ``J * K`` of them.

SpMV runs on Tensaurus's own SpMV mapping (Section 5.2.4, the ``MV`` kernel of
:class:`~sparseforge.sw.wire.TensaurusKernel`), not as SpMM of one column (a whole
``R``-wide row of B a nonzero, ``R - 1`` of its lanes computing zeros): b is broadcast
to every column's scratchpad, ``per`` of its values a row (:func:`~sparseforge.sw.wire.
mv_layout`), and each nonzero is one operation of a PE of the first column. So one pass,
and a window is ``spm_rows * per`` of A's columns, the b a scratchpad holds.

The tiles are :func:`sparseforge.sw.tensaurus_job.plan`'s for an MSU of the band's
height (a test holds the two equal); the host keeps only their lengths (the tile list
carries each input tile's CISS entries, the length the TLU reads and the converter's
count is checked against), so it counts them (:meth:`BandEntries.windows`: the
nonzeros sorted once, every window's slices scheduled together) rather than encoding
every window's stream. Host memory follows the nonzeros.

Tiling policies (Tailors §4, as :mod:`sparseforge.sw.swiftiles` applies them to
coordinate-space tiles), sizing the bands in what the Tailor holds: CISS entries
(:class:`BandEntries`), not nonzeros. An entry has a lane for each of the ``pes`` PE rows,
and a band's stream carries a header for each of its rows in each window besides the
nonzeros, and idle lanes wherever a window's rows do not share out evenly: near the
Tailor's depth a band takes 1.1 to 4 times its nonzeros over the lanes (more, the shorter
the band). Heights are capped by the MSU's ``out_rows``.

- ``uniform``: the band assumed dense: the tallest whose dense instance fits the Tailor
  (at least one row). A sparser band never takes more entries, so only a row longer than
  the Tailor overbooks it, as it does at any height.
- ``prescient``: the tallest band height whose fullest band fits, candidate heights
  measured over every band. A row that alone takes more than the Tailor overbooks at any
  height, so no height meets the rule; the paper's construction would then cut rows
  short, which a band cannot (the MSU's output tile is whole rows). Such a row is a band
  of its own, and the rule holds for the bands between (the grid starting again after
  it), so one long row does not make every band one row.
- ``swiftiles``: Swiftiles' height (Section 4.2) from sampled bands' entries, so that a
  fraction ``k`` of the bands overbook.
"""

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from . import ciss_csr, swiftiles, tensaurus_job, wire
from .occupancy import first_of_runs

KERNELS = ("spmm", "spmv", "spmttkrp")
"""The kernels a run takes (:data:`~sparseforge.sw.wire.TensaurusKernel`'s ``MM``, ``MV``
and ``MTTKRP``)."""

POLICIES = ("uniform", "prescient", "swiftiles")
"""The tiling policies (Tailors §4) that size A's bands (:func:`bands_of`)."""


@dataclass(frozen=True)
class AccelConfig:
    """The accelerator's build: the PE array (``pes`` rows of ``cols`` PEs of ``vlen``
    lanes, ``tlen`` chunks each), the scratchpads' ``spm_rows`` rows of B, the MSU's
    ``out_rows`` output rows, the Tailor's ``depth`` CISS entries (``fifo`` of them its
    FIFO region when overbooked) and the widths."""

    pes: int = 4
    cols: int = 2
    vlen: int = 2
    tlen: int = 2
    spm_rows: int = 64
    out_rows: int = 64
    depth: int = 1024
    fifo: int = 64
    dw: int = 16
    iw: int = 16
    acc_width: int = 32
    order: int = 2

    @property
    def width(self):
        """R: B's columns a pass computes."""
        return self.tlen * self.cols * self.vlen

    @property
    def entry_bytes(self):
        """Bytes a CISS entry is stored in (``pes`` lanes, a memory word's whole bytes):
        what a refetched entry costs in traffic."""
        return wire.word_bytes(wire.CissWire(self.pes, self.dw, self.iw,
                                             self.order).entry_width)

    @property
    def macs(self):
        """The PE array's multipliers: ``vlen`` lanes in each of its ``pes * cols`` PEs
        (Tensaurus Sec. 6: 8 x 8 PEs of 4 SIMD MACs)."""
        return self.pes * self.cols * self.vlen

    @property
    def buffet_region(self):
        """Entries an overbooked band keeps in the Tailor: the rest is bumped."""
        return self.depth - self.fifo


@dataclass(frozen=True)
class InputTile:
    """One Tensaurus tile of a band: the window ``[k0, k1)`` of A's columns (B's rows the
    scratchpads load), its CISS ``entries`` and their ``offset`` in the band's stream (its
    place in the Tailor), ``closes`` on the band's last."""

    k0: int
    k1: int
    entries: int
    offset: int
    closes: bool


@dataclass(frozen=True)
class Band:
    """An output tile: rows ``[i0, i0 + rows)``, its input tiles in order."""

    i0: int
    rows: int
    inputs: tuple

    @property
    def entries(self):
        """L: the band's CISS entries, the length of the stream the Tailor holds."""
        return sum(tile.entries for tile in self.inputs)

    def bumped(self, config):
        """Entries past the Tailor's buffet region, converted again on every pass after
        the first: 0 for a band that fits (at most ``depth`` entries)."""
        if self.entries <= config.depth:
            return 0
        return self.entries - config.buffet_region

    def refetched_inputs(self, config):
        """The input tiles converted again on a later pass: those holding bumped entries."""
        keep = config.buffet_region if self.bumped(config) else self.entries
        return tuple(t for t in self.inputs if t.offset + t.entries > keep)


@dataclass(frozen=True, eq=False)
class AccelPlan:
    """A run: its ``bands`` in order, ``passes`` over B's columns, the policy's
    ``tiling`` (:class:`~sparseforge.sw.swiftiles.Tiling`), ``golden`` the exact output
    (``M x N``, int64), the build it is planned for and its ``kernel``
    (:data:`KERNELS`)."""

    config: AccelConfig
    shape: tuple
    columns: int
    bands: tuple
    passes: int
    tiling: object
    golden: np.ndarray
    kernel: str = "spmm"

    @property
    def mv(self):
        """Tensaurus's SpMV mapping: b broadcast, ``per`` values a scratchpad row."""
        return self.kernel == "spmv"

    @property
    def mttkrp(self):
        """SpMTTKRP: ``shape`` is the tensor's ``(I, J, K)``, windows over j."""
        return self.kernel == "spmttkrp"

    @property
    def b_words(self):
        """Words of B (MLU words) in memory: each pass's panel of K rows (SpMTTKRP: J)
        of ``tlen`` words; in SpMV b's ``ceil(K / per)`` rows of one word."""
        c, k = self.config, self.shape[1]
        if self.mv:
            return -(-k // wire.mv_layout(c.vlen)[0])
        return self.passes * k * c.tlen

    @property
    def c_words(self):
        """Words of C in memory (SpMTTKRP; else 0): each pass's panel of its K rows."""
        return self.passes * self.shape[2] * self.config.tlen if self.mttkrp else 0

    @property
    def band_rows(self):
        """The tallest band's rows (a prescient band of a row longer than the Tailor is
        shorter)."""
        return max((band.rows for band in self.bands), default=0)

    @property
    def overbooked(self):
        """Bands longer than the Tailor."""
        return sum(1 for band in self.bands if band.bumped(self.config))

    def refetched_entries(self):
        """Entries the Tailor takes again, over the run (Tailors §3): each overbooked
        band's bumped part, on each pass after the first."""
        return sum(band.bumped(self.config) for band in self.bands) * (self.passes - 1)

    def buffer_utilization(self):
        """The Tailor's utilization as Tailors counts it (Sec. 1: the share of the buffer
        occupied by data), averaged over bands: each band fills ``min(L, depth)`` of its
        ``depth`` entries, L its CISS entries (an overbooked band fills it all)."""
        depth = self.config.depth
        return sum(min(band.entries, depth) for band in self.bands) / (depth * len(self.bands))

    def mac_utilization(self, nonzeros, cycles):
        """The MACs' useful share of a run of ``cycles``: an operation a nonzero of A and
        a column of B (Tensaurus's op, Sec. 6), ``nonzeros * columns`` of them, over what
        the array's :attr:`~AccelConfig.macs` could do in those cycles. Padding lanes
        (B's last panel narrower than R, SpMV's idle PE columns) are not useful work."""
        return nonzeros * self.columns / (self.config.macs * cycles)

    def reconverted_entries(self):
        """Entries the converter makes again, over the run: each overbooked band's input
        tiles that hold bumped entries, whole, on each pass after the first (their
        entries the Tailor still holds are dropped)."""
        again = sum(t.entries for band in self.bands
                    for t in band.refetched_inputs(self.config))
        return again * (self.passes - 1)


def grid(height, begin, end):
    """``(i0, rows)`` (int64 arrays) of the bands of ``height`` rows that cut each run of
    rows ``[begin, end)`` (arrays, in order) from its first, the last cut short."""
    begin, end = np.asarray(begin, dtype=np.int64), np.asarray(end, dtype=np.int64)
    count = -(-(end - begin) // height)
    step = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    i0 = np.repeat(begin, count) + step * height
    return i0, np.minimum(height, np.repeat(end, count) - i0)


@dataclass(frozen=True, eq=False)
class BandEntries:
    """The CISS entries bands of A's rows take in the Tailor, exactly as
    :func:`~sparseforge.sw.ciss.encode` lays out each of a band's windows of ``span``
    columns (``spm_rows``, in SpMV ``spm_rows * per``): a slice a row holding nonzeros
    there, its header and its nonzeros on one lane, handed out in row order to the lane
    that frees first (ties to the lower) of ``pes``; the window's stream as long as its
    longest lane. A band's entries are its windows' summed.

    Exact rather than a row's nonzeros over the lanes plus its header: the idle lanes
    that estimate leaves out are most of a short band's entries, and the bands the
    policies weigh are short (a Tailor of 64 entries holds bands of tens of rows). It is
    affordable: one sort of the bands' nonzeros, then one vectorized step a slice rank
    (at most the tallest band's rows) over every window at once.

    ``shape``; ``ptr`` (int64, ``M + 1``) and ``col`` A's CSR pattern, stored zeros and
    repeats dropped as the encoder drops them."""

    shape: tuple
    ptr: np.ndarray
    col: np.ndarray
    pes: int
    span: int
    depth: int = 1
    """Nonzeros a column holds in a dense row: 1, or a tensor's K (its j's fiber)."""

    @classmethod
    def of(cls, matrix, pes, span):
        a = sp.csr_array(matrix, copy=True)
        a.sum_duplicates()
        a.eliminate_zeros()
        return cls(a.shape, a.indptr.astype(np.int64), a.indices.astype(np.int64), pes,
                   span)

    @property
    def nnz(self):
        return len(self.col)

    def windows(self, i0, rows):
        """``(band, window, entries)`` (int64 arrays) of each nonempty window of each band
        ``A[i0 : i0 + rows]`` (disjoint, ascending), band by band, windows in order."""
        i0, rows = np.asarray(i0, dtype=np.int64), np.asarray(rows, dtype=np.int64)
        lo, count = self.ptr[i0], self.ptr[i0 + rows] - self.ptr[i0]
        at = np.repeat(lo - (np.cumsum(count) - count), count) + np.arange(count.sum())
        band = np.repeat(np.arange(len(i0)), count)
        window = self.col[at] // self.span
        order = np.lexsort((window, band))      # stable: rows stay ascending in a window
        band, window = band[order], window[order]
        row = np.searchsorted(self.ptr, at[order], side="right")
        pair = first_of_runs(band) | first_of_runs(window)      # a (band, window)
        start = np.flatnonzero(pair | first_of_runs(row))       # a slice
        length = np.diff(np.append(start, len(row))) + 1        # its header and nonzeros
        owner = np.cumsum(pair[start]) - 1                      # its window
        firsts = np.flatnonzero(pair[start])
        rank = np.arange(len(start)) - firsts[owner]            # its place in the window
        loads = np.zeros((len(firsts), self.pes), dtype=np.int64)
        by_rank = np.argsort(rank, kind="stable")
        bounds = np.searchsorted(rank[by_rank], np.arange(rank.max(initial=-1) + 2))
        for lo_, hi_ in itertools.pairwise(bounds):
            slices = by_rank[lo_:hi_]                           # one a window at most
            windows = owner[slices]
            lanes = np.argmin(loads[windows], axis=1)
            loads[windows, lanes] += length[slices]
        return band[start[firsts]], window[start[firsts]], loads.max(axis=1, initial=0)

    def __call__(self, i0, rows):
        """The entries of each band ``A[i0 : i0 + rows]`` (disjoint, ascending; int64)."""
        band, _, entries = self.windows(i0, rows)
        return np.bincount(band, weights=entries, minlength=len(i0)).astype(np.int64)


def uniform_bands(entries, depth, cap):
    """Uniform: the tallest band (at most ``cap`` rows, at least one) whose dense instance
    fits ``depth`` entries. A dense band of h rows takes ``ceil(h / pes)`` lanes' worth of
    every window, each ``columns + 1`` entries: ``ceil(h / pes) * (K + windows)``."""
    start = time.perf_counter()
    k = entries.shape[1]
    dense = k * entries.depth + -(-k // entries.span)
    height = max(1, min(cap, entries.pes * (depth // dense)))
    tiling = swiftiles.Tiling("uniform", (k, height), time.perf_counter() - start)
    return *grid(height, 0, entries.shape[0]), tiling


def prescient_bands(entries, depth, cap, per_octave=4):
    """Prescient: the tallest candidate height (1, then ``per_octave`` a doubling, up to
    ``cap``, as :func:`~sparseforge.sw.swiftiles.prescient_candidates` spaces sizes) at
    which every band fits ``depth`` entries, each candidate measured over every band.
    A row longer than the Tailor alone is a band of its own and the grid starts again
    after it (see the module)."""
    start = time.perf_counter()
    lone = np.flatnonzero(entries(*grid(1, 0, entries.shape[0])) > depth)
    begin = np.concatenate([[0], lone + 1])                 # the runs between lone rows
    end = np.append(lone, entries.shape[0])
    steps = np.arange(math.ceil(per_octave * math.log2(max(cap, 1))) + 1)
    heights = np.unique(np.append(np.floor(2.0 ** (steps / per_octave)), cap).astype(np.int64))
    heights = heights[heights <= cap]
    best, worst = 1, 0
    for height in heights.tolist():
        fullest = int(entries(*grid(height, begin, end)).max(initial=0))
        if fullest <= depth:
            best, worst = height, fullest
    i0, rows = grid(best, begin, end)
    i0, rows = np.append(i0, lone), np.append(rows, np.ones_like(lone))
    order = np.argsort(i0, kind="stable")
    tiling = swiftiles.PrescientTiling("prescient", (entries.shape[1], best),
                                       time.perf_counter() - start, worst, len(heights))
    return i0[order], rows[order], tiling


def swiftiles_bands(entries, depth, cap, k=0.1, y=10, seed=None, rounds=3):
    """Swiftiles (Section 4.2) in entries. The initial height is eq. 2's ``B / d`` for
    whole rows: the rows whose nonzeros would fill every lane, ``depth * pes / (nnz /
    M)`` (at most ``cap``: no taller band is used); ``N = ceil(y / k)`` random bands of
    that height are sampled and their entries measured; ``O_k`` is the entries a fraction
    ``k`` of them exceed, and the height ``sampled * depth / O_k`` (at least one, at most
    ``cap``). The paper's linear scaling assumes the sampled size close to the final
    one; a band's entries are not proportional to its height (its rows' headers in each
    window and its idle lanes weigh more, the shorter the band), and the first estimate
    is off by the lanes a row leaves idle, so the bands are sampled again at the estimate
    until it repeats, at most ``rounds`` samplings."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    m = entries.shape[0]
    height = max(1, min(cap, int(depth * entries.pes * m / max(entries.nnz, 1))))
    for _ in range(rounds):
        sampled = height
        i0, rows = grid(sampled, 0, m)
        n = min(swiftiles.samples_for(k, y), len(i0))
        pick = np.sort(rng.choice(len(i0), n, replace=False))
        samples = entries(i0[pick], rows[pick])
        o_k = swiftiles.quantile_point(samples, k)
        height = max(1, min(cap, int(sampled * depth / max(o_k, 1))))
        if height == sampled:
            break
    predicted = float(np.mean(samples * height / sampled > depth))
    tiling = swiftiles.SwiftilesTiling("swiftiles", (entries.shape[1], height),
                                       time.perf_counter() - start, k, y,
                                       (entries.shape[1], sampled), samples, o_k, predicted)
    return *grid(height, 0, m), tiling


def bands_of(matrix, policy, config, per=1, k=0.1, y=10, seed=None):
    """``(i0, rows, tiling)``: the bands ``policy`` cuts ``matrix`` (M x K) into for the
    Tailor of ``config``, each band's first row and rows (int64 arrays, in order), and the
    :class:`~sparseforge.sw.swiftiles.Tiling` they came from (``tile_shape`` ``(K,
    height)``, the tile of ``A^T`` the paper's SpMSpM construction grows: A's columns
    whole, then its rows). ``per``: in SpMV, b's values a scratchpad row (windows of
    ``spm_rows * per`` columns), else 1; ``k``, ``y`` and ``seed`` Swiftiles'."""
    return _bands(BandEntries.of(matrix, config.pes, config.spm_rows * per), policy, config,
                  k, y, seed)


def _bands(entries, policy, config, k=0.1, y=10, seed=None):
    """:func:`bands_of` with A's :class:`BandEntries` counted already."""
    if policy not in POLICIES:
        raise ParameterError(f"--tiling {policy}: expected one of {', '.join(POLICIES)}")
    cap = max(1, min(config.out_rows, entries.shape[0]))
    if policy == "uniform":
        return uniform_bands(entries, config.depth, cap)
    if policy == "prescient":
        return prescient_bands(entries, config.depth, cap)
    return swiftiles_bands(entries, config.depth, cap, k, y, seed)


def plan(matrix, b, policy="swiftiles", config=AccelConfig(), seed=None, progress=None,
         kernel="spmm"):
    """The :class:`AccelPlan` of ``Y = matrix @ b`` (A: M x K sparse, integer values;
    ``b``: K x N integers, or a vector of K; for ``kernel="spmv"`` a vector, 1-D or one
    column) on ``config``'s build with ``policy``'s bands. Values past ``dw`` bits and
    outputs past ``acc_width`` bits are refused, as :func:`~sparseforge.sw.tensaurus_job.
    plan` refuses them. ``progress(done, total)`` is called after each band."""
    if kernel not in KERNELS:
        raise ParameterError(f"--kernel {kernel}: expected one of {', '.join(KERNELS)}")
    if kernel == "spmttkrp":
        return _plan_mttkrp(matrix, b, policy, config, seed, progress)
    a = sp.csr_array(matrix)
    b = np.asarray(b)
    if kernel == "spmv" and b.ndim != 1 and b.shape[1:] != (1,):
        raise ParameterError(f"b is {b.shape}: spmv takes a vector (1-D, or one column)")
    if b.ndim == 1:
        b = b.reshape(-1, 1)
    if b.ndim != 2 or b.shape[0] != a.shape[1] or b.shape[1] == 0:
        raise ParameterError(f"B is {b.shape}: expected ({a.shape[1]}, N) with N >= 1")
    if a.nnz == 0:
        raise ParameterError(f"A ({a.shape[0]} x {a.shape[1]}) has no nonzeros")
    per = wire.mv_layout(config.vlen)[0] if kernel == "spmv" else 1
    span = config.spm_rows * per
    counter = BandEntries.of(a, config.pes, span)
    starts, heights, tiling = _bands(counter, policy, config, seed=seed)
    limit = _KN_LIMIT
    if kernel == "spmv" and min(config.spm_rows * per, a.shape[1]) >= limit:
        raise ParameterError(f"--spm-rows {config.spm_rows}: spmv's windows of "
                             f"{config.spm_rows * per} columns of A (b's {per} values a "
                             f"row) past the tile list's {limit - 1}")
    R = config.width
    wire.signed_words(a.data, config.dw, "A", "dw")
    wire.signed_words(b[:, :R] if kernel == "spmm" else b, config.dw, "B", "dw")
    golden = _golden(a, b, config)
    bands = _bands_of(counter, starts, heights, span, a.shape[1], progress)
    return AccelPlan(config, a.shape, b.shape[1], bands, -(-b.shape[1] // R), tiling,
                     golden, kernel)


_KN_LIMIT = 1 << next(f.width for f in wire.ACCEL_TILE if f.name == "kn")


def _bands_of(counter, starts, heights, span, columns, progress):
    """The :class:`Band` s of the bands ``starts``, ``heights``: each its nonempty windows
    of ``span`` of the ``columns`` (an input tile each), a band of no nonzeros one empty
    tile."""
    entries = {}
    for n, w, count in zip(*(x.tolist() for x in counter.windows(starts, heights)),
                           strict=True):
        entries.setdefault(n, {})[w] = count
    bands = []
    for n, (i0, rows) in enumerate(zip(starts.tolist(), heights.tolist(), strict=True)):
        windows = entries.get(n, {0: 0})        # a band of no nonzeros: one empty tile
        inputs, offset = [], 0
        for t, (w, count) in enumerate(windows.items()):
            k0 = w * span
            k1 = min(k0 + span, columns) if count else 0
            inputs.append(InputTile(k0, k1, count, offset, t == len(windows) - 1))
            offset += count
        bands.append(Band(i0, rows, tuple(inputs)))
        if progress:
            progress(n + 1, len(starts))
    return tuple(bands)


def tensor_image(tensor, config):
    """The :class:`~sparseforge.sw.ciss_csr.CooImage` of a 3-D tensor as the build of
    ``config`` reads it (COO sorted by ``(i, j, k)``, stored zeros dropped)."""
    from .accel_image import ADDR_WIDTH

    return ciss_csr.coo_image(tensor, config.dw, config.iw, ADDR_WIDTH)


def _plan_mttkrp(tensor, factors, policy, config, seed, progress):
    """:func:`plan` of SpMTTKRP: ``tensor`` a 3-D :class:`~sparseforge.sw.formats.
    Tensor`, ``factors`` ``(B, C)`` (J x R and K x R integers)."""
    if getattr(tensor, "ndim", None) != 3:
        raise ParameterError("spmttkrp takes a 3-D tensor (.tns), not "
                             f"{getattr(tensor, 'ndim', 2)} modes")
    if config.order != 3:
        raise ParameterError(f"spmttkrp runs on a build of order 3, not {config.order}")
    if len(factors) != 2:
        raise ParameterError(f"spmttkrp takes two factors, B and C, not {len(factors)}")
    b, c = (np.asarray(f) for f in factors)
    _, J, depth = tensor.shape
    for name, f, rows in (("B", b, J), ("C", c, depth)):
        if f.ndim != 2 or f.shape[0] != rows or f.shape[1] == 0:
            raise ParameterError(f"{name} is {f.shape}: expected ({rows}, R) with R >= 1 "
                                 f"for the tensor of shape {tuple(tensor.shape)}")
    if b.shape[1] != c.shape[1]:
        raise ParameterError(f"B's rank {b.shape[1]} and C's {c.shape[1]} differ")
    if depth > config.spm_rows:
        raise ParameterError(f"--spm-rows {config.spm_rows}: C's {depth} rows must fit a "
                             "scratchpad (SpMTTKRP windows go over j; C loads whole)")
    image = tensor_image(tensor, config)
    if not len(image.i):
        raise ParameterError(f"the tensor {tuple(tensor.shape)} has no nonzeros")
    span = min(config.spm_rows, _KN_LIMIT - 1)
    counter = BandEntries((tensor.shape[0], J), image.row_ptr, image.col, config.pes, span,
                          depth=depth)
    starts, heights, tiling = _bands(counter, policy, config, seed=seed)
    R = config.width
    values = tensor.values[tensor.values != 0]
    wire.signed_words(values, config.dw, "the tensor", "dw")
    for name, f in (("B", b), ("C", c)):
        wire.signed_words(f, config.dw, name, "dw")
    golden = tensaurus_job._golden("mttkrp", tensor, [b, c], config.acc_width)
    bands = _bands_of(counter, starts, heights, span, J, progress)
    return AccelPlan(config, tuple(tensor.shape), b.shape[1], bands, -(-b.shape[1] // R),
                     tiling, golden, "spmttkrp")


def _golden(a, b, config):
    """``A @ B`` exactly (int64), refused where ``acc_width`` bits do not hold it."""
    magnitude = abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    if magnitude.size and magnitude.max() >= 2.0**62:
        raise ParameterError(f"the output may reach {magnitude.max():.3g}: past what "
                             "64-bit integers check exactly; scale the values down")
    golden = np.asarray(a.astype(np.int64) @ b.astype(np.int64))
    limit = 1 << (config.acc_width - 1)
    if golden.size and (golden.max() >= limit or golden.min() < -limit):
        raise ParameterError(f"the output reaches {int(np.abs(golden).max())}: past "
                             f"acc_width={config.acc_width} bits")
    return golden


def tile_words(plan_):
    """The tile list in memory: one :data:`~sparseforge.sw.wire.ACCEL_TILE` word an input
    tile, band after band (an object array of ints)."""
    rows = [(band.i0, t.k0, t.entries, band.rows, t.k1 - t.k0, int(t.closes))
            for band in plan_.bands for t in band.inputs]
    columns = np.array(rows, dtype=np.int64).reshape(-1, len(wire.ACCEL_TILE)).T
    return wire.pack(wire.ACCEL_TILE, {f.name: c for f, c in zip(wire.ACCEL_TILE, columns,
                                                                  strict=True)})


def describe(plan_):
    """One line a run: bands, passes, overbooking."""
    c = plan_.config
    passes = (f"one pass of b ({wire.mv_layout(c.vlen)[0]} values a scratchpad row, the "
              "first PE column)" if plan_.mv else f"{plan_.passes} passes of {c.width} columns")
    return (f"{len(plan_.bands)} bands of {plan_.band_rows} rows ({plan_.tiling.strategy}), "
            f"{passes}, {plan_.overbooked} bands overbook "
            f"a Tailor of {c.depth} entries, {plan_.refetched_entries()} entries refetched "
            f"({plan_.reconverted_entries()} converted again)")


@dataclass(frozen=True)
class Bases:
    """Word addresses of a run's regions as the sequencer takes them: the tile list,
    B's first panel and the words between panels, the output's and C's likewise."""

    tiles: int = 0
    b: int = 0
    b_panel: int = 0
    out: int = 0
    out_panel: int = 0
    c: int = 0
    c_panel: int = 0


def jobs(plan_, bases=Bases()):
    """``(passes, converts, computes)``: the jobs the sequencer
    (:class:`~sparseforge.hw.accel_control.AccelControl`) emits for ``plan_``, each a
    list of dicts in its stream's fields (unset compute fields are 0)."""
    c = plan_.config
    chunks = c.tlen * c.cols
    per = wire.mv_layout(c.vlen)[0]
    passes, converts, computes = [], [], []
    for n, band in enumerate(plan_.bands):
        fits = not band.bumped(c)
        for p in range(plan_.passes):
            final = p == plan_.passes - 1
            again = band.inputs if p == 0 else () if fits else band.refetched_inputs(c)
            passes.append({"start": again[0].offset if p and again else 0,
                           "final": int(final)})
            for first, t in enumerate(again):
                converts.append({"i0": band.i0, "rows": band.rows, "k0": t.k0,
                                 "kn": t.k1 - t.k0, "first": int(first == 0),
                                 "entries": t.entries, "closes": int(t.closes)})
            for t in band.inputs:
                panel = bases.b + p * bases.b_panel
                if plan_.mv:
                    b_rows = {"base0": 0, "rows0": 0, "base1": panel + t.k0 // per,
                              "rows1": -(-(t.k1 - t.k0) // per)}
                elif plan_.mttkrp:
                    b_rows = {"base0": bases.c + p * bases.c_panel,
                              "rows0": plan_.shape[2], "base1": panel + t.k0 * c.tlen,
                              "rows1": t.k1 - t.k0}
                else:
                    b_rows = {"base0": panel + t.k0 * c.tlen, "rows0": t.k1 - t.k0,
                              "base1": 0, "rows1": 0}
                computes.append({
                    "tensor_base": t.offset, "entries": t.entries, "dense": 0, "jn": 0,
                    "kn": 0, **b_rows,
                    "out_base": bases.out + p * bases.out_panel + band.i0 * chunks,
                    "out_rows": band.rows, "closes": int(t.closes),
                    "last": int(final and t.closes and n == len(plan_.bands) - 1)})
    return passes, converts, computes
