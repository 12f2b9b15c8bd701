"""Host side of an ``accel`` SpGEMM run (C = A·B on a Gustavson build): the plan, the
memory image, the registers, and C read back.

- **Memory**: A and B as the user stores them, CSR's three arrays each (row pointers of
  :data:`~sparseforge.sw.accel_image.ADDR_WIDTH` bits, column ids of ``iw``, values of
  ``dw``, two's complement), nothing converted; the tile list, one
  :func:`~sparseforge.sw.wire.gustavson_job` word a column tile of B
  (:func:`~sparseforge.sw.gustavson.column_tiles`: only tiles holding a nonzero of B;
  one at column 0 where B has none, so every run writes C's rows); ``out``, where the
  engine writes C's words one after another, sized for the most C can take (a row of a
  tile holds at most its products, and at most the tile's columns); ``out_rowlen``,
  where it writes each row's length, a word a row of C a tile, tile after tile.
- **C back**: the row lengths say how many words each row took (``n // lanes + 1``: full
  words, then the ``last`` one), so the words are split into rows with no scan of their
  flags; the tiles' rows are then joined by column into C's CSR, its ``indptr`` the
  prefix sum of the joined lengths. A word whose ``last`` flag disagrees with the
  lengths is a hardware fault (:class:`ValueError`).

On a build with **HYTE's buffer** (``buffer`` words, one PE) there is no tile list:
the host writes the tiling controller's job into the registers (:func:`hyte_job`: HYTE's
static schedule, or a baseline's shape, :data:`SCHEMES`), and lays out ``b_kept`` (a kept
segment entry a row of B, the positions unit's) and ``tile_log`` (a word a command the
controller sends); ``out`` and ``out_rowlen`` are sized from the commands the
controller's model sends on B (``commands``: a row length a row of each command's tile
of A). C is read by the log, which must equal those commands, and its partial rows (one
a k tile) are summed.

Host memory follows the nonzeros and the tiles' rows (``rows x tiles`` lengths).
"""

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from . import accel_image, dram, gustavson, hyte_estimate, hyte_schedule, wire
from .ciss import bits_values


@dataclass(frozen=True)
class SpgemmConfig:
    """A Gustavson build of the accelerator: ``pes`` PEs, column tiles of ``tile_cols``
    columns, ``lanes`` records a word of C, ``inflight`` reads ahead, and the widths; with
    HYTE's ``buffer`` (words), A's segment positions kept for ``cursors`` rows of a tile."""

    pes: int = 2
    tile_cols: int = 64
    lanes: int = 4
    inflight: int = 16
    dw: int = 16
    iw: int = 16
    acc_width: int = 32
    buffer: int = 0
    cursors: int = hyte_schedule.A_CURSORS


@dataclass(frozen=True)
class SpgemmPlan:
    """A run: its build, ``a`` and ``b`` (canonical integer CSRs), the column tiles'
    ``offsets``, the ``words`` of C the out region holds at most, and the ``golden``
    product (scipy's, canonical); on a build with HYTE's buffer, the controller's job
    ``tiling`` (:func:`~sparseforge.sw.hyte_schedule.controller_config`'s fields) and
    the tile ``commands`` it is expected to send (each a list over
    :data:`~sparseforge.sw.wire.HYTE_DIMS` of ``{begin, t, change}``)."""

    config: SpgemmConfig
    a: sp.csr_matrix
    b: sp.csr_matrix
    offsets: tuple
    words: int
    golden: sp.csr_matrix
    kernel: str = "spgemm"
    tiling: dict | None = None
    commands: tuple = ()

    @property
    def shape(self):
        return self.a.shape[0], self.a.shape[1], self.b.shape[1]


def operands(a, b, config):
    """``(a, b)`` as canonical integer CSRs, or
    :class:`~sparseforge.core.errors.ParameterError` in one line where they do not
    multiply, hold values that are not integers or do not fit ``config``'s build (ids
    past ``iw`` bits, values past ``dw``, sums past ``acc_width``; with HYTE's buffer, a
    dimension of ``2**iw``, whose whole extent a tile command's ``t`` cannot hold)."""
    c = config
    a, b = gustavson.operands(a, b)
    if a.shape[0] == 0:
        raise ParameterError("A has no rows: C = A·B has none to compute")
    gustavson.check_fits(a, b, c.iw, c.acc_width)
    dims = (*a.shape, b.shape[1])
    if c.buffer and max(dims) >= 1 << c.iw:
        raise ParameterError(f"C = A·B is {' x '.join(map(str, dims))} (i x k x j): HYTE's "
                             f"tile commands hold extents below 2^iw = {1 << c.iw}")
    for name, m in (("A", a), ("B", b)):
        wire.signed_words(m.data, c.dw, name, "dw")
    return a, b


def plan(a, b, config, tiling=None, commands=()):
    """The :class:`SpgemmPlan` of C = ``a`` · ``b`` on ``config``'s build (on a build
    with HYTE's buffer, with the controller's job ``tiling`` and the ``commands`` it is
    to send, which size C's regions), or :class:`~sparseforge.core.errors.ParameterError`
    in one line where :func:`operands` refuses them."""
    c = config
    a, b = operands(a, b, c)
    golden = a @ b
    golden.eliminate_zeros()
    golden.sort_indices()
    if c.buffer:
        most = 1 << (accel_image.ADDR_WIDTH - 2)
        if max(b.nnz, b.shape[0] + 1) > most:
            raise ParameterError(f"B has {b.nnz:,} elements and {b.shape[0]:,} rows: HYTE's "
                                 f"positions unit addresses at most {most:,} of each")
        if not tiling or not commands:
            raise ValueError("a run with HYTE's buffer needs the controller's job and the "
                             "commands it sends")
        return SpgemmPlan(c, a, b, (), _hyte_words(a, b, commands, c), golden,
                          tiling=tiling, commands=tuple(commands))
    tiles = gustavson.column_tiles(b, c.tile_cols) or [gustavson.ColumnTile(0, b)]
    offsets = tuple(t.offset for t in tiles)
    return SpgemmPlan(c, a, b, offsets, _words_bound(a, b, offsets, c), golden)


def _words_bound(a, b, offsets, c):
    """The most words of C the run can write: per row of A and tile, its products in the
    tile (at most the tile's columns) over ``lanes``, plus the row's ``last`` word."""
    _, tile = np.unique(b.indices // c.tile_cols, return_inverse=True)   # as column_tiles
    rows = np.repeat(np.arange(b.shape[0]), np.diff(b.indptr))
    per = sp.csr_matrix((np.ones(b.nnz, dtype=np.int64), (rows, tile)),
                        shape=(b.shape[0], len(offsets)))
    pattern = sp.csr_matrix((np.ones(a.nnz, dtype=np.int64), a.indices, a.indptr),
                            shape=a.shape)
    products = (pattern @ per).data
    return a.shape[0] * len(offsets) + int((np.minimum(products, c.tile_cols) //
                                             c.lanes).sum())


def extents(command, shape):
    """``{dim: (begin, end)}`` of a tile ``command`` in C = A·B of ``shape`` (I, K, J):
    its extents cut off at the dimensions' ends."""
    dims = dict(zip("ikj", shape, strict=True))
    return {d: (x["begin"], min(x["begin"] + x["t"], dims[d]))
            for d, x in zip(wire.HYTE_DIMS, command, strict=True)}


def a_cursors(commands, shape, cursors):
    """Per command, whether its job reads A's rows from the engine's cursors (on a build
    with HYTE's buffer and ``cursors`` of them): its rows those of the command before,
    which kept them all (at most ``cursors`` rows), and its k tile beginning where
    that one's ended; each row is then read from its first element in the k tile to its
    end, its pointers not read. The others read their rows whole."""
    out, last = [], None
    for command in commands:
        e = extents(command, shape)
        out.append(last is not None and last == (e["i"], e["k"][0]))
        last = (e["i"], e["k"][1]) if e["i"][1] - e["i"][0] <= cursors else None
    return out


def _tile_products(a, b, commands):
    """Per command, per row of its tile of A, the products of that row's part of the
    tile (B's elements of the tile its nonzeros read)."""
    ones = {name: sp.csr_matrix((np.ones(m.nnz, dtype=np.int64), m.indices, m.indptr),
                                shape=m.shape) for name, m in (("a", a), ("b", b))}
    for command in commands:
        e = extents(command, (a.shape[0], a.shape[1], b.shape[1]))
        (bi, ei), (bk, ek), (bj, ej) = e["i"], e["k"], e["j"]
        products = ones["a"][bi:ei, bk:ek] @ ones["b"][bk:ek, bj:ej]
        yield ej - bj, np.asarray(products.sum(axis=1)).ravel()


def _hyte_words(a, b, commands, c):
    """The most words of C a HYTE run of ``commands`` writes: per command and row of its
    tile of A, its products (at most the tile's columns) over ``lanes``, plus the row's
    ``last`` word."""
    return sum(len(p) + int((np.minimum(p, width) // c.lanes).sum())
               for width, p in _tile_products(a, b, commands))


def hardware(config):
    """HYTE's scheduler's view of ``config``'s build: HYTE's hardware (Section 7's MACs
    and bandwidths: with one PE here every scheme would tie on the PEs' time, the search
    keeping its first, the smallest tiles) with the accessor's words as its buffer."""
    hw = hyte_schedule.Hardware()
    return dataclasses.replace(hw, buffer_bytes=config.buffer * hw.nonzero_bytes)


SCHEMES = ("none", "tailors", "drt", "harp", "hyte-static", "hyte")
"""How B is tiled: ``none``, B's rows read from memory (the build without a buffer);
on a build with HYTE's buffer, the baselines' shapes (:data:`BASELINES`), ``hyte-static``
(HYTE's static schedule) and ``hyte`` (it, tuned at run time)."""

BASELINES = {"tailors": hyte_schedule.tailors_scheme, "drt": hyte_schedule.drt_scheme,
             "harp": hyte_schedule.harp_scheme}
"""The baselines' static shapes: ``tailors`` (k first, then j, to the buffer plus 10%
overbooking, j innermost), ``drt`` (exact fit, grown k, i, j in turn, i innermost) and
``harp`` (i alone tiled, i innermost); B's tile then at most ``tile_cols`` wide, which
for ``harp`` tiles j too wherever B is wider."""


def hyte_job(a, b, config, scheme, seed=0):
    """``(job, schedule)``: the tiling controller's job for ``scheme`` (one of
    :data:`SCHEMES` but ``none``) of C = ``a`` · ``b`` on ``config``'s build, and the
    :class:`~sparseforge.sw.hyte_schedule.Scheme` it comes from (HYTE's estimates sampled
    with ``seed``; the Gust dataflow). The job is :func:`~sparseforge.sw.hyte_schedule.
    controller_config`'s, B's tile at most ``tile_cols`` wide (the engine's accumulator);
    its ``bufsize``, what the tuning weighs, the buffer's words for ``hyte`` and 0 for the
    static schemes: every candidate then scores 0, none beats the shape, none is taken."""
    found = hyte_estimate.estimate(a, b, seed=seed)
    stats = hyte_schedule.Stats(a.shape[0], a.shape[1], b.shape[1], a.nnz, b.nnz,
                                found.eff_mac, found.nnz_ctk)
    hw = hardware(config)
    if scheme in BASELINES:
        schedule = BASELINES[scheme](stats, hw, "gust")
    else:
        schedule, _ = hyte_schedule.search(stats, hw, "gust")
    job = hyte_schedule.controller_config(stats, schedule, hw)
    most = config.tile_cols.bit_length() - 1
    return job | {"log_tj": min(job["log_tj"], most),
                  "bufsize": config.buffer if scheme == "hyte" else 0}, schedule


def word_fields(c):
    """A word of C as the engine writes it: ``lanes`` records ``{col, value}`` (lane 0
    lowest), then :func:`~sparseforge.sw.wire.word_end`."""
    lanes = tuple(wire.Field(f"{f.name}{x}", f.width) for x in range(c.lanes)
                  for f in wire.csr_entry(c.iw, c.acc_width))
    return lanes + wire.word_end(c.lanes)


def layout(plan_):
    """``{name: Region}`` of ``plan_``'s run. A CSR reader asks for an element's column id
    and value together and the master issues them back to back, so each values array
    starts a DRAM burst into its page: an element's value lies a bank group past its
    column id (as long as ids and values are of one size), and the DRAM takes the two
    bursts tCCD_S apart rather than tCCD_L (:mod:`~sparseforge.sw.accel_spgemm_model`)."""
    c, (m, k, _) = plan_.config, plan_.shape
    A = accel_image.ADDR_WIDTH
    sizes = {"a_rowptr": (A, m + 1), "a_colid": (c.iw, plan_.a.nnz),
             "a_values": (c.dw, plan_.a.nnz), "b_rowptr": (A, k + 1),
             "b_colid": (c.iw, plan_.b.nnz), "b_values": (c.dw, plan_.b.nnz),
             "out": (wire.width(word_fields(c)), plan_.words)}
    sizes["tiles"] = (wire.width(wire.gustavson_job(c.iw)), len(plan_.offsets))
    if c.buffer:
        sizes |= {"b_kept": (wire.width(wire.hyte_kept(c.iw, A)), k),
                  "tile_log": (len(wire.HYTE_DIMS) * wire.width(wire.hyte_tile(c.iw)),
                               len(plan_.commands)),
                  "out_rowlen": (wire.width(wire.spgemm_row_length(c.iw)),
                                 len(_tile_rows(plan_)))}
    else:
        sizes["out_rowlen"] = (c.iw, m * len(plan_.offsets))
    burst = dram.DDR4_2400.burst_bytes
    return accel_image.place(sizes, {"a_values": burst, "b_values": burst})


def image(plan_, a=None, b=None):
    """``(memory, regions)``: the bytes of ``plan_``'s run (C's regions zeroed) and its
    :func:`layout`; ``a`` and ``b`` are the plan's own (taken for the accelerator's
    other kernels' call)."""
    c, regions = plan_.config, layout(plan_)
    memory = accel_image.blank(regions)
    contents = {"tiles": np.asarray(plan_.offsets, dtype=np.int64)}
    for name, m in (("a", plan_.a), ("b", plan_.b)):
        contents |= {f"{name}_rowptr": m.indptr, f"{name}_colid": m.indices,
                     f"{name}_values": m.data & ((1 << c.dw) - 1)}
    for name, values in contents.items():
        accel_image.put(memory, regions[name], values)
    return memory, regions


def registers(plan_, regions):
    """The run's register values (``{name: value}``)."""
    hyte = {}
    if plan_.config.buffer:
        t = plan_.tiling
        hyte = {"hyte_j": t["j"], "hyte_k": t["k"], "hyte_order": t["order"],
                "hyte_bufsize": t["bufsize"], "hyte_capacity": plan_.config.buffer,
                **{f"hyte_log_t{d}": t[f"log_t{d}"] for d in wire.HYTE_DIMS}}
    return {"kernel": int(wire.AccelKernel.SPGEMM), "a_rows": plan_.shape[0],
            **accel_image.region_registers(regions), **hyte}


def _tile_rows(plan_):
    """The row of C of each row length a run writes: per column tile, A's rows; on a
    HYTE run, per command, its tile's rows."""
    m = plan_.shape[0]
    if not plan_.config.buffer:
        return np.tile(np.arange(m), len(plan_.offsets))
    spans = [extents(cmd, plan_.shape)["i"] for cmd in plan_.commands]
    return np.concatenate([np.arange(*span) for span in spans] or [np.zeros(0, int)])


def tile_log(plan_, memory, regions):
    """The tile commands a HYTE run logged, as :attr:`SpgemmPlan.commands` lists them."""
    words = accel_image.read(memory, regions["tile_log"]).astype(object)
    each = wire.hyte_tile(plan_.config.iw)
    fields = wire.unpack(tuple(wire.Field(f"{f.name}{d}", f.width) for d in range(3)
                               for f in each), words)
    return [[{f.name: int(fields[f"{f.name}{d}"][n]) for f in each} for d in range(3)]
            for n in range(len(words))]


def _row_lengths(plan_, memory, regions):
    """``(lengths, rows)``: each row of C the run wrote, its length and its row of C. A
    run without a buffer writes a length for every row of A each column tile; a HYTE run
    writes each row of a tile that holds a record with its id
    (:func:`~sparseforge.sw.wire.spgemm_row_length`), the region zeroed past the last."""
    words = accel_image.read(memory, regions["out_rowlen"])
    if not plan_.config.buffer:
        return words.astype(np.int64), _tile_rows(plan_)
    fields = wire.unpack(wire.spgemm_row_length(plan_.config.iw), words.astype(object))
    ends = np.flatnonzero(fields["length"] == 0)
    written = ends[0] if len(ends) else len(words)
    return fields["length"][:written], fields["row"][:written]


def output(plan_, memory, regions):
    """C (a canonical CSR of A·B's shape) from the run's ``memory``."""
    c, (m, _, n) = plan_.config, plan_.shape
    L = c.lanes
    if c.buffer and tile_log(plan_, memory, regions) != list(plan_.commands):
        raise ValueError("the controller's tile commands are not the model's")
    lengths, ids = _row_lengths(plan_, memory, regions)
    per_row = lengths // L + 1
    total = int(per_row.sum())
    if total > plan_.words:
        raise ValueError(f"C's row lengths take {total} words, past the {plan_.words} "
                         "the out region holds")
    raw = accel_image.read(memory, regions["out"])[:total]
    fields = wire.unpack(word_fields(c), raw.astype(object))
    row = np.repeat(np.arange(len(lengths)), per_row)
    nth = np.arange(total) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    if not np.array_equal(fields["last"], (nth == per_row[row] - 1).astype(np.int64)):
        raise ValueError("C's words are not framed as its row lengths say")
    held = np.clip(lengths[row] - nth * L, 0, L)
    keep = np.arange(L)[None, :] < held[:, None]                    # words x lanes
    cols = np.stack([fields[f"col{x}"] for x in range(L)], axis=1)[keep]
    bits = np.stack([fields[f"value{x}"] for x in range(L)], axis=1)[keep]
    values = bits_values(bits.astype(np.uint64), "int", c.acc_width)
    rows = np.repeat(ids[row], L).reshape(-1, L)[keep]
    out = sp.csr_matrix((values, (rows, cols)), shape=(m, n), dtype=np.int64)
    out.sum_duplicates()            # a HYTE run's partial sums over k's tiles, merged
    out.eliminate_zeros()
    out.sort_indices()
    return out


def multiplies(plan_):
    """B's elements the PEs scale, every tile's: each tile reads B's whole row for each
    nonzero of A (the elements of other tiles dropped after the multiply's slot); on a
    HYTE run, B's row in the tile for each nonzero of A in it."""
    if plan_.config.buffer:
        return sum(int(p.sum()) for _, p in _tile_products(plan_.a, plan_.b, plan_.commands))
    return len(plan_.offsets) * int(np.diff(plan_.b.indptr)[plan_.a.indices].sum())
