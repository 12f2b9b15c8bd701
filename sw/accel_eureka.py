"""Host side of an ``accel`` pruned GEMM run (Y = W X on an Eureka build): the plan, the
memory image, the registers, and Y read back.

W, pruned, is compacted by P and each block placed by the optimal SUDS scheduler and
rotated (:mod:`~sparseforge.sw.suds`, Eureka §3-3.2); only its non-empty blocks are sent,
in block order (row-major over the grid), so a block row's blocks come together. X is
dense; the engine runs one sub-array row of ``cols`` 4x4 sub-arrays, ``4 cols`` of X's
columns a *panel*, and makes one pass over W's blocks a panel.

- **Memory**: ``w_records``, each sent block's record
  (:meth:`~sparseforge.sw.eureka_format.EurekaFormat.records`), a word a block;
  ``tiles``, each sent block's place on the grid and whether it ends its block row
  (:func:`~sparseforge.sw.wire.eureka_block`), a word a block; ``b``, X as the array
  takes it, one slab word a block column (its 4P rows by the panel's columns,
  row-major, two's complement: the ``inputs`` payload of
  :class:`~sparseforge.hw.eureka_array.EurekaArray`), panel after panel, K and N padded
  with zeros to whole slabs; ``out``, Y, one tile word a block row (its 4 rows by the
  panel's columns, in Y's row order), panel after panel. The engine sums a block row's
  tiles, each put in Y's row order by its rotation, and writes the sum at the row's
  ``end``; a block row with no sent block is not written and reads as the zeros the
  host laid down.
- **Y back**: the tile words unpacked, panels side by side, the padding cut off.

Slabs and tiles are words of signed lanes, lane 0 lowest, as the MSU's output words are
(:func:`~sparseforge.sw.wire.tensaurus_out_words`), so one packer serves both.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from . import accel_image, wire
from .compaction import block_grid, compact
from .eureka_format import EurekaFormat
from .suds import displace, optimal
from .wire import ROWS


@dataclass(frozen=True)
class EurekaConfig:
    """An Eureka build of the accelerator: compaction ``P``, ``cols`` 4x4 sub-arrays side
    by side (4 ``cols`` of X's columns a panel), ``dw`` bits of W's and X's values,
    ``acc_width`` of Y's, and ``iw`` bits of a block's row and column."""

    compaction: int = 4
    cols: int = 1
    dw: int = 8
    acc_width: int = 32
    iw: int = 16

    @property
    def columns(self):
        """X's columns a panel: the sub-array row's MAC columns."""
        return 4 * self.cols

    @property
    def depth(self):
        """X's rows a slab: a block's 4P columns of W."""
        return ROWS * self.compaction


@dataclass(frozen=True, eq=False)
class PrunedPlan:
    """A run: its build, ``w`` (a canonical integer CSR) and ``x`` (int64), the sent
    blocks as placed (:class:`~sparseforge.sw.suds.DisplacedBlocks`), their ``records``,
    the block ``grid`` and the ``golden`` product."""

    config: EurekaConfig
    w: sp.csr_matrix
    x: np.ndarray
    placed: object
    records: list
    grid: tuple
    golden: np.ndarray
    kernel: str = "pruned-gemm"

    @property
    def shape(self):
        """``(M, K, N)``."""
        return self.w.shape[0], self.w.shape[1], self.x.shape[1]

    @property
    def panels(self):
        """Passes over W's blocks: X's columns in panels of the array's columns."""
        return -(-self.x.shape[1] // self.config.columns)


def plan(w, x, config):
    """The :class:`PrunedPlan` of Y = ``w`` X (``w`` M x K, sparse or dense; ``x`` K x N),
    or :class:`~sparseforge.core.errors.ParameterError` in one line where the shapes do
    not multiply or a value does not fit the build (W or X past ``dw``, a sum past
    ``acc_width``, the grid past ``iw`` bits)."""
    c = config
    w = sp.csr_matrix(w)
    x = np.asarray(x)
    if x.ndim != 2 or w.shape[1] != x.shape[0]:
        shape = " x ".join(map(str, x.shape))
        raise ParameterError(f"W is {w.shape[0]} x {w.shape[1]} and X {shape}: W X needs X "
                             "of W's columns as its rows")
    if 0 in w.shape or x.shape[1] == 0:
        raise ParameterError(f"W X of {w.shape[0]} x {w.shape[1]} by {x.shape[0]} x "
                             f"{x.shape[1]} is empty: nothing to compute")
    for name, values in (("W", w.data), ("X", x)):
        if values.size and not np.array_equal(values, np.rint(values)):
            raise ParameterError(f"{name}: values must be integers (quantize the layer "
                                 "first)")
        wire.signed_words(values, c.dw, name, "dw")
    w = sp.csr_matrix(w, dtype=np.int64)
    w.eliminate_zeros()
    w.sort_indices()
    x = x.astype(np.int64)
    bound = int((abs(w) @ np.abs(x)).max(initial=0))
    if bound >= 1 << (c.acc_width - 1):
        raise ParameterError(f"W X: a sum reaches {bound}, past acc_width={c.acc_width} "
                             "bits (two's complement)")
    grid = block_grid(w.shape, c.compaction)
    if max(grid) >> c.iw:
        raise ParameterError(f"W's block grid {grid[0]} x {grid[1]}: past iw={c.iw} bits "
                             "of a block's row and column")
    compacted = compact(w, c.compaction)
    placed = displace(compacted, optimal(compacted.counts))
    records = EurekaFormat(c.compaction, c.dw).records(placed)
    return PrunedPlan(c, w, x, placed, records, grid, w @ x)


def slab_words(plan_):
    """X's slab words, panel after panel, each a block column's ``[4P][columns]``."""
    c, cols = plan_.config, plan_.grid[1]
    padded = np.zeros((cols * c.depth, plan_.panels * c.columns), dtype=np.int64)
    padded[:plan_.x.shape[0], :plan_.x.shape[1]] = plan_.x
    slabs = padded.reshape(cols, c.depth, plan_.panels, c.columns).transpose(2, 0, 1, 3)
    return wire.tensaurus_out_words(slabs.reshape(-1, c.depth * c.columns), c.dw)


def layout(plan_):
    """``{name: Region}`` of ``plan_``'s run."""
    c, sent = plan_.config, len(plan_.records)
    fmt = EurekaFormat(c.compaction, c.dw)
    sizes = {"tiles": (wire.width(wire.eureka_block(c.iw)), sent),
             "w_records": (fmt.record_width, sent),
             "b": (c.depth * c.columns * c.dw, plan_.panels * plan_.grid[1]),
             "out": (ROWS * c.columns * c.acc_width, plan_.panels * plan_.grid[0])}
    return accel_image.place(sizes)


def image(plan_, w=None, x=None):
    """``(memory, regions)``: the bytes of ``plan_``'s run (Y's region zeroed) and its
    :func:`layout`; ``w`` and ``x`` are the plan's own (taken for the accelerator's
    other kernels' call)."""
    regions = layout(plan_)
    memory = accel_image.blank(regions)
    p = plan_.placed
    end = np.append(p.block_rows[1:] != p.block_rows[:-1], True)[:len(p.block_rows)]
    blocks = wire.pack(wire.eureka_block(plan_.config.iw),
                       {"row": p.block_rows, "col": p.block_cols, "end": end})
    for name, values in (("tiles", blocks), ("w_records", plan_.records),
                         ("b", slab_words(plan_))):
        accel_image.put(memory, regions[name], np.asarray(values, dtype=object))
    return memory, regions


def registers(plan_, regions):
    """The run's register values (``{name: value}``): the block list in ``tiles``, the
    records, X's slabs in ``b``, Y in ``out``; a pass a panel."""
    return {"kernel": int(wire.AccelKernel.PRUNED_GEMM), "passes": plan_.panels,
            "b_panel": plan_.grid[1] * regions["b"].word,
            "out_panel": plan_.grid[0] * regions["out"].word,
            **accel_image.region_registers(regions)}


def output(plan_, memory, regions):
    """Y (``M x N``, int64) from the run's ``memory``."""
    c, (m, _, n) = plan_.config, plan_.shape
    words = accel_image.read(memory, regions["out"])
    lanes = wire.tensaurus_out_values(words.astype(object), ROWS * c.columns, c.acc_width)
    tiles = lanes.reshape(plan_.panels, plan_.grid[0], ROWS, c.columns)
    return tiles.transpose(1, 2, 0, 3).reshape(plan_.grid[0] * ROWS, -1)[:m, :n]


def out_words(plan_, y):
    """The output region's words of a run whose output is ``y``, as the engine writes
    them (the inverse of :func:`output`): panels of tiles, a block row's ``ROWS`` rows a
    word; padding zero."""
    c, panels = plan_.config, plan_.panels
    padded = np.zeros((plan_.grid[0] * ROWS, panels * c.columns), dtype=np.int64)
    padded[:y.shape[0], :y.shape[1]] = y
    tiles = padded.reshape(plan_.grid[0], ROWS, panels, c.columns)
    return wire.tensaurus_out_words(tiles.transpose(2, 0, 1, 3).reshape(
        -1, ROWS * c.columns), c.acc_width)


def traffic(plan_, data=64):
    """``(bytes read, bytes written)`` of the run as the engine makes it on a bus of
    ``data`` bits: every pass reads each sent block's place, record and slab, and writes
    a tile word for each block row holding a sent block; a word crosses the bus as
    :func:`~sparseforge.sw.wire.word_beats` says."""
    def moved(name):
        beats, size = wire.word_beats(regions[name].width, data)
        return beats << size

    regions = layout(plan_)
    per_pass = len(plan_.records) * sum(moved(name) for name in ("tiles", "w_records", "b"))
    rows = len(np.unique(plan_.placed.block_rows))
    return plan_.panels * per_pass, plan_.panels * rows * moved("out")


def array_cycles(plan_):
    """Cycles the array computes: each pass its sent blocks' critical paths (SUDS's
    optimal schedule, Eureka §3.1)."""
    return plan_.panels * int(plan_.placed.cycles.sum())


def dense_cycles(plan_):
    """Cycles the array would compute in dense mode: every block of the grid, 4P cycles
    each, every pass (Eureka's dense tensor-core baseline, §4)."""
    c = plan_.config
    return plan_.panels * plan_.grid[0] * plan_.grid[1] * c.depth
