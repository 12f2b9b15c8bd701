"""HYTE's static scheduler for ``C = A B`` (HYTE Sections 5.2-5.3): the pruned space of
tiling schemes and the cost model that picks one.

A scheme is a tile shape ``(T_i, T_k, T_j)``, an inter-tile order (only its innermost
loop matters: the tensor that loop does not index keeps its tile on chip), and a buffer
allocation. The space (Section 5.2): power-of-two tile sizes (and the whole dimension),
the outermost loop of the intra-tile dataflow left untiled (``i`` for Gust and IP, ``k``
for OP), the 3 innermost loops plus the allocation that serves intra-tile reuse only.

The cost (Section 5.3): ``max(PE, DRAM, SRAM time)`` over the run (tiles times the mean
tile's time), with ``PE = effMAC / MACs``; SRAM traffic follows the dataflow and grows
with the tiles of a tensor's irrelevant dimension (C's with ``T_k``: nnzCTk); DRAM
traffic is the SRAM traffic of streamed tensors, less what a buffered tile keeps (its
hit rate the allocation over the tile's size); every fetched tile also moves its fiber
segments' metadata. Tiles are taken as uniform: a tile's nonzeros are its tensor's over
the tile count.

The baselines HYTE compares against (Section 8.1, Table 2) are shapes of the same space,
priced by the same model: Tailors' (:func:`tailors_scheme`), DRT's (:func:`drt_scheme`)
and HARP's (:func:`harp_scheme`).
"""

import itertools
import math
from dataclasses import dataclass, field

from ..core.errors import ParameterError
from .wire import HYTE_DIMS, HYTE_ORDERS

DATAFLOWS = ("gust", "ip", "op")
OUTERMOST = {"gust": "i", "ip": "i", "op": "k"}
BUFFERED = {"gust": "B", "ip": "B", "op": "C"}
"""The tensor each dataflow rereads within a tile (Table 1), whose tile it buffers."""
REUSED = {"i": "B", "j": "A", "k": "C"}
"""The tensor the innermost inter-tile loop does not index: its tile stays on chip."""


@dataclass(frozen=True)
class Hardware:
    """The accelerator the schedule is for (HYTE Section 7's default): MACs a cycle,
    the global buffer, DRAM bytes a cycle (68 GB/s at 1 GHz), SRAM words a cycle (32
    banks), bytes of a nonzero (value and index) and of a fiber segment's metadata."""

    macs: int = 32
    buffer_bytes: int = 4 << 20
    dram_bytes: float = 68.0
    sram_words: float = 32.0
    nonzero_bytes: int = 8
    metadata_bytes: int = 4

    def __post_init__(self):
        if self.buffer_bytes <= 0:
            raise ParameterError(f"--buffer-kb: the buffer must hold something, not "
                                 f"{self.buffer_bytes} bytes")


@dataclass(frozen=True)
class Stats:
    """What the cost model needs of ``C = A B``: dimensions, nonzeros, effMAC and
    nnzCTk (``{T_k: traffic}`` for the power-of-two ``T_k`` and ``K``)."""

    i: int
    k: int
    j: int
    nnz_a: int
    nnz_b: int
    eff_mac: float
    nnz_ctk: dict

    def ctk(self, tk):
        """nnzCTk at ``tk`` (the nearest size measured at or above it)."""
        return self.nnz_ctk[min((t for t in self.nnz_ctk if t >= tk), default=self.k)]

    @property
    def nnz_c(self):
        return self.nnz_ctk[max(self.nnz_ctk)]


@dataclass(frozen=True)
class Scheme:
    """A tiling scheme and its modeled cost."""

    tile: tuple                 # (T_i, T_k, T_j)
    innermost: str | None       # the innermost inter-tile loop; None: intra-tile reuse only
    allocation: dict            # bytes of the buffer per tensor
    cycles: float
    parts: dict = field(default_factory=dict)   # pe, dram, sram cycles

    @property
    def order(self):
        """The inter-tile order, outermost first (the outer two in either order)."""
        if self.innermost is None:
            return "intra-tile reuse only"
        return " > ".join([*(d for d in "ijk" if d != self.innermost), self.innermost])


def controller_config(stats, scheme, hw):
    """The tiling controller's job for ``scheme`` (the fields of
    :func:`~sparseforge.sw.wire.hyte_config`), as the host writes it: the dimensions; each
    extent's log (the next power of two: a whole dimension that is not one is clamped by
    the controller); the order with the scheme's innermost loop last, the outer two as
    ``ijk`` lists them (k innermost where only intra-tile reuse is planned: each command
    a new B tile, which is what the tuning measures); ``bufsize``, B's allocation in
    nonzeros, the tuned tensor's buffer."""
    inner = scheme.innermost or "k"
    order = "".join(d for d in "ijk" if d != inner) + inner
    logs = {d: (t - 1).bit_length() for d, t in zip("ikj", scheme.tile, strict=True)}
    return {"i": stats.i, "j": stats.j, "k": stats.k,
            **{f"log_t{d}": logs[d] for d in HYTE_DIMS},
            "order": HYTE_ORDERS.index(order),
            "bufsize": scheme.allocation["B"] // hw.nonzero_bytes}


A_CURSORS = 256
"""Rows of A's tile whose segment positions a Gustavson build with HYTE's buffer keeps on
chip by default (its ``cursors``; :func:`~sparseforge.sw.accel_spgemm.a_cursors`): A's
part of the buffer there."""


def hyte_fetches(commands):
    """Per tile command of the controller (each a list over
    :data:`~sparseforge.sw.wire.HYTE_DIMS` of :func:`~sparseforge.sw.wire.hyte_tile`'s
    fields as a dict), whether it fetches B's tile: the first does, and each whose ``k``
    or ``j`` ``begin`` or ``t`` differs from the command before; the others keep that
    tile on chip (only A's tile moved: :data:`REUSED`'s ``i``), so they neither fetch
    nor count it."""
    k, j = HYTE_DIMS.index("k"), HYTE_DIMS.index("j")

    def tile(command):
        return [(command[d]["begin"], command[d]["t"]) for d in (k, j)]

    return [n == 0 or tile(commands[n - 1]) != tile(c) for n, c in enumerate(commands)]


def _sizes(n):
    return sorted({*(1 << e for e in range(max(1, n).bit_length()) if (1 << e) < n), n})


def cost(stats, hw, dataflow, tile, innermost):
    """The :class:`Scheme` of ``tile`` and ``innermost`` under ``dataflow``."""
    ti, tk, tj = tile
    n_i, n_k, n_j = (-(-stats.i // ti), -(-stats.k // tk), -(-stats.j // tj))
    tiles = {"A": n_i * n_k, "B": n_k * n_j, "C": n_i * n_j}
    data = {"A": stats.nnz_a, "B": stats.nnz_b, "C": stats.ctk(tk)}
    repeats = {"A": n_j, "B": n_i, "C": 1}           # each tile fetched once per pass
    segments = {"A": ti if dataflow != "op" else tk,
                "B": tk if dataflow != "ip" else tj, "C": ti}
    sram = {"A": stats.nnz_a * n_j, "B": stats.nnz_b * n_i, "C": data["C"]}
    if dataflow == "gust":
        sram["B"] = stats.eff_mac                    # a B row per nonzero of A
    elif dataflow == "ip":
        sram["B"] = stats.nnz_b * stats.i            # B's tile per row of A
    else:
        sram["C"] = stats.eff_mac                    # a partial sum per product

    # The buffer: the dataflow's reread tensor first, then the reused one.
    buffered, reused = BUFFERED[dataflow], REUSED.get(innermost)
    tile_bytes = {x: data[x] / tiles[x] * hw.nonzero_bytes for x in data}
    allocation = dict.fromkeys("ABC", 0.0)
    if reused is None or reused == buffered:
        allocation[buffered] = hw.buffer_bytes
    else:
        allocation[buffered] = min(tile_bytes[buffered], hw.buffer_bytes)
        allocation[reused] = hw.buffer_bytes - allocation[buffered]

    dram = {}
    for x in "ABC":
        hit = min(1.0, allocation[x] / tile_bytes[x]) if tile_bytes[x] else 1.0
        once = data[x]
        fetched = once * repeats[x]
        if x == reused == "C":                       # partial sums stay for every k-tile
            fetched = stats.nnz_c + (data["C"] - stats.nnz_c) * (1 - hit)
        elif x == reused:
            fetched = once + (fetched - once) * (1 - hit)
        if x == buffered:                            # rereads a tile cannot keep
            fetched += max(0.0, sram[x] - once * repeats[x]) * (1 - hit)
        metadata = tiles[x] * min(segments[x], data[x] / tiles[x]) * (fetched / once
                                                                       if once else 0)
        dram[x] = fetched * hw.nonzero_bytes + metadata * hw.metadata_bytes
    parts = {"pe": stats.eff_mac / hw.macs, "dram": sum(dram.values()) / hw.dram_bytes,
             "sram": sum(sram.values()) / hw.sram_words}
    return Scheme(tile, innermost, {x: int(v) for x, v in allocation.items()},
                  max(parts.values()), parts)


def space(stats, dataflow, pruned=True):
    """The schemes' ``(tile, innermost)``: HYTE's pruned space, or every power-of-two
    shape with every innermost loop (the exhaustive space)."""
    dims = {"i": stats.i, "k": stats.k, "j": stats.j}
    choices = [[dims[d]] if pruned and d == OUTERMOST[dataflow] else _sizes(dims[d])
               for d in "ikj"]
    return itertools.product(itertools.product(*choices), ("i", "j", "k", None))


def search(stats, hw, dataflow, pruned=True):
    """``(best scheme, schemes evaluated)`` over :func:`space`."""
    if dataflow not in DATAFLOWS:
        raise ParameterError(f"--dataflow {dataflow}: expected one of {', '.join(DATAFLOWS)}")
    best, count = None, 0
    for tile, innermost in space(stats, dataflow, pruned):
        scheme = cost(stats, hw, dataflow, tile, innermost)
        count += 1
        if best is None or scheme.cycles < best.cycles:
            best = scheme
    return best, count


def tailors_scheme(stats, hw, dataflow, overbook=0.10):
    """The Tailors/Swiftiles baseline under the same model: the buffered tensor's tile
    grown along k first until its mean occupancy reaches the buffer plus ``overbook``,
    then along j; the inter-tile order j innermost (the Tailors paper's)."""
    target = hw.buffer_bytes * (1 + overbook) / hw.nonzero_bytes
    per = {"B": stats.nnz_b / (stats.k * stats.j), "C": stats.nnz_c / (stats.i * stats.j)}
    density = per[BUFFERED[dataflow]]
    tk = tj = 1
    while tk < stats.k and density * min(2 * tk, stats.k) * tj <= target:
        tk = min(2 * tk, stats.k)
    while tj < stats.j and density * tk * min(2 * tj, stats.j) <= target:
        tj = min(2 * tj, stats.j)
    ti = stats.i if OUTERMOST[dataflow] == "i" else 1
    if dataflow == "op":
        ti, tk = max(1, min(stats.i, math.ceil(target / max(density * tj, 1e-30)))), stats.k
        ti = 1 << max(0, ti.bit_length() - 1) if ti < stats.i else stats.i
    return cost(stats, hw, dataflow, (ti, tk, tj), "j")


DRT_SHARES = {"A": 0.05, "B": 0.45, "C": 0.50}
HARP_SHARES = {"A": 0.045, "B": 0.91, "C": 0.045}
"""DRT's and HARP's buffers for A, B and C as shares of the whole (HYTE Table 2)."""


def _fits(stats, tile, room):
    """Whether the mean tile of ``tile`` (its tensor's nonzeros over its tiles; C's, the
    partial sums of one k tile) fits ``room`` (words per tensor) exactly, for every
    tensor ``room`` names."""
    ti, tk, tj = tile
    n_i, n_k, n_j = (-(-stats.i // ti), -(-stats.k // tk), -(-stats.j // tj))
    words = {"A": stats.nnz_a / (n_i * n_k), "B": stats.nnz_b / (n_k * n_j),
             "C": stats.ctk(tk) / (n_i * n_k * n_j)}
    return all(words[x] <= room[x] for x in room)


def _rooms(hw, shares, tensors):
    words = hw.buffer_bytes / hw.nonzero_bytes
    return {x: shares[x] * words for x in tensors}


def drt_scheme(stats, hw, dataflow):
    """The DRT baseline under the same model: exact fit, no overbooking, the tile grown
    by doubling k, then i, then j, in turn, each step taken while every tensor's mean
    tile fits its share of the buffer (:data:`DRT_SHARES`), until none can grow; i
    innermost (ExTensor's order). DRT sizes each tile at run time to the data it holds;
    a uniform shape stands for it here, judged on the mean tile of HYTE's estimates, so
    a denser tile than the mean overflows where DRT's would have been smaller."""
    room = _rooms(hw, DRT_SHARES, "ABC")
    dims = {"i": stats.i, "k": stats.k, "j": stats.j}
    tile = dict.fromkeys("ikj", 1)
    grown = True
    while grown:
        grown = False
        for d in "kij":
            bigger = tile | {d: min(2 * tile[d], dims[d])}
            if bigger != tile and _fits(stats, tuple(bigger[x] for x in "ikj"), room):
                tile, grown = bigger, True
    return cost(stats, hw, dataflow, tuple(tile[x] for x in "ikj"), "i")


def harp_scheme(stats, hw, dataflow):
    """The HARP baseline under the same model: only i tiled (k and j whole), ``T_i``
    doubled while A's and C's mean tiles fit their shares of the buffer exactly
    (:data:`HARP_SHARES`; B's tile, all of B, overflows its share where B does not fit);
    i innermost. HARP merges pseudo-tiles of rows at run time; one uniform ``T_i`` from
    HYTE's estimates stands for it here."""
    room = _rooms(hw, HARP_SHARES, "AC")
    ti = 1
    while ti < stats.i and _fits(stats, (min(2 * ti, stats.i), stats.k, stats.j), room):
        ti = min(2 * ti, stats.i)
    return cost(stats, hw, dataflow, (ti, stats.k, stats.j), "i")
