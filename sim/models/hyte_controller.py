"""Behavioural model of the HYTE tiling controller (HYTE Sections 6.2 and 6.4).

The executable specification the ``hyte_controller`` generator is checked against.

Inter-tile iteration (6.2): tiles of shape ``(Ti, Tj, Tk)`` (powers of two) sweep the
space ``I x J x K`` in an order (outermost first, e.g. ``ijk`` for i > j > k). Each tile
command carries its begins, its extents (``T`` clamped to the dimension) and per
dimension ``change``: 0 same begin, 1 advanced by the previous tile's ``T``, 2 reset to
0. The first command resets all three; ``ijk`` then sends (0, 0, 1) until the last
innermost tile, then (0, 1, 2).

Dynamic tuning (6.4) of the tuned tensor B's tile ``Tk x Tj``: after each command, the
quadrant counts ``cnt00..cnt11`` of that command's B tile (first digit the half along
k) give, for each of the nine shapes ``T'k in {Tk/2, Tk, 2Tk}``, ``T'j in {Tj/2, Tj,
2Tj}``, the estimate ``E = mean over its sub-tiles of min(nnz, bufsize)``: a halved
dimension splits the tile into halves counted exactly, a doubled one doubles each
count (the paper's example: ``Tk/2 x 2Tj`` has ``1/2 (min(2 cnt00 + 2 cnt01, buf) +
min(2 cnt10 + 2 cnt11, buf))``). Shapes that would halve below 1 or double a tile that
already spans its dimension are not candidates. The hit rate of a shape is
``rule="tiles"`` (default): ``(K / T'k) (J / T'j) E / nnz_total``, the fraction of
B's nonzeros that fit if every tile were like this one (at most 1: "if the buffer is
larger than the tile, 100%, else the ratio"); ``rule="area"``: the paper's printed
``T'k T'j E / nnz_total``, read literally (it grows with the tile's area, so it
always prefers the larger shape). Both give the paper's Fig. 5(c) figure (50%).
The best (the current shape on a tie, then the lowest candidate number ``3 a + b``,
``a, b`` 0 halve, 1 keep, 2 double for k, j) becomes the *target* if its rate beats
the current one's by more than 5% (``20 best > 21 current``); else the target is the
measured tile's own shape (newer counts override an older, unapplied target).

Delayed application: a dimension takes its target shape on the next command that
changes it (``change`` 1 or 2) at a begin aligned to the new extent, so every tile
starts at a multiple of its extent and the tiles of a sweep stay aligned.

Counts are taken as a tile is fetched (6.4: "when an accessor fetches a tile"). A
command whose B tile is the last one's (the same ``k`` and ``j`` begins and extents,
:func:`~sparseforge.sw.hyte_schedule.hyte_fetches`: only A's tile moved) keeps that tile in the
buffer: it is not fetched, so it gives no counts, and the target the last fetch set
stands (the same tile, counted again, would only repeat it).
"""

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ...sw.hyte_schedule import hyte_fetches
from ...sw.occupancy import Pattern
from ...sw.wire import HYTE_DIMS as DIMS
from ...sw.wire import HYTE_ORDERS as ORDERS
from ...sw.wire import HyteMode
from .hyte_accessor import Accessor
from .hyte_positions import SegmentPositions

J, K = DIMS.index("j"), DIMS.index("k")


@dataclass(frozen=True)
class Config:
    i: int
    j: int
    k: int
    log_ti: int
    log_tj: int
    log_tk: int
    order: int          # index into ORDERS
    bufsize: int

    def as_dict(self):
        return dict(self.__dict__)


def groups(counts, a, b):
    """The sub-tiles' nonzeros of candidate ``(a, b)`` (0 halve, 1 keep, 2 double, along
    k and j) from ``counts[r][c]``, before the doubling scale."""
    (c00, c01), (c10, c11) = counts
    if a == 0 and b == 0:
        return [c00, c01, c10, c11]
    if a == 0:
        return [c00 + c01, c10 + c11]
    if b == 0:
        return [c00 + c10, c01 + c11]
    return [c00 + c01 + c10 + c11]


def score(counts, a, b, bufsize):
    """``sum over sub-tiles of min(scale nnz, bufsize)``, the integer numerator of E."""
    scale = 1 << ((a == 2) + (b == 2))
    return sum(min(scale * g, bufsize) for g in groups(counts, a, b))


def weight_shift(a, b, rule):
    """The shift making every candidate's rate an integer multiple of one constant:
    ``rate = score << shift`` times ``K J / (16 Tk Tj nnz_total)`` (tiles) or
    ``Tk Tj / (16 nnz_total)`` (area)."""
    fa, fb = Fraction(2) ** (a - 1), Fraction(2) ** (b - 1)     # T' / T
    m = len(groups(((0, 0), (0, 0)), a, b))                       # sub-tiles
    w = 4 / (fa * fb * m) if rule == "tiles" else 16 * fa * fb / m
    return int(w).bit_length() - 1


def hit_rate(counts, tk, tj, a, b, bufsize, k, j, nnz_total, rule="tiles"):
    """The estimated hit rate of candidate ``(a, b)`` of a ``tk x tj`` tile (a Fraction)."""
    fa, fb = Fraction(2) ** (a - 1), Fraction(2) ** (b - 1)
    e = Fraction(score(counts, a, b, bufsize), len(groups(counts, a, b)))
    tk2, tj2 = tk * fa, tj * fb
    area = Fraction(k * j) / (tk2 * tj2) if rule == "tiles" else tk2 * tj2
    return area * e / nnz_total


def allowed(log_t, dim, a):
    """Whether a tile of ``2**log_t`` along a dimension of ``dim`` may take change ``a``."""
    return not (a == 0 and log_t == 0) and not (a == 2 and (1 << log_t) >= dim)


def decide(counts, log_tk, log_tj, config, rule="tiles", most_tj=None):
    """The target ``(log_tk, log_tj)`` from one tile's counts (Section 6.4's rule); a
    tile of ``most_tj`` columns or more is not doubled along j."""
    scores = {}
    j = config.j if most_tj is None else min(config.j, most_tj)
    for a in range(3):
        for b in range(3):
            if allowed(log_tk, config.k, a) and allowed(log_tj, j, b):
                scores[3 * a + b] = score(counts, a, b, config.bufsize) << weight_shift(a, b,
                                                                                        rule)
    best = max(scores, key=lambda c: (scores[c], c == 4, -c))
    if 20 * scores[best] > 21 * scores[4]:
        return log_tk + best // 3 - 1, log_tj + best % 3 - 1
    return log_tk, log_tj


class Controller:
    """The tiling controller of one job: :meth:`commands` drives it, given each
    command's counts."""

    def __init__(self, config, rule="tiles", most_tj=None):
        self.config, self.rule, self.most_tj = config, rule, most_tj
        self.dims = {"i": config.i, "j": config.j, "k": config.k}
        self.log_t = {"i": config.log_ti, "j": config.log_tj, "k": config.log_tk}
        self.begin = dict.fromkeys(DIMS, 0)
        self.target = dict(self.log_t)
        self.first = True

    def command(self, change):
        """The tile command: per dimension of ``DIMS``, its ``begin``, ``t`` and ``change``."""
        return [{"begin": self.begin[d], "t": min(1 << self.log_t[d], self.dims[d]),
                 "change": change[d]} for d in DIMS]

    def next(self):
        """The next tile command, or ``None`` after the last tile."""
        if self.first:
            self.first = False
            return self.command(dict.fromkeys(DIMS, 2))
        change = dict.fromkeys(DIMS, 0)
        for d in reversed(ORDERS[self.config.order]):      # innermost first
            if self.begin[d] + (1 << self.log_t[d]) < self.dims[d]:
                change[d] = 1
                break
            change[d] = 2
        else:
            return None
        for d in DIMS:
            if change[d]:
                self.begin[d] = self.begin[d] + (1 << self.log_t[d]) if change[d] == 1 else 0
                if self.begin[d] % (1 << self.target[d]) == 0:
                    self.log_t[d] = self.target[d]
        return self.command(change)

    def counts(self, counts):
        """Take the quadrant counts ``[[cnt00, cnt01], [cnt10, cnt11]]`` of the last tile."""
        self.target["k"], self.target["j"] = decide(counts, self.log_t["k"], self.log_t["j"],
                                                    self.config, self.rule, self.most_tj)

    def commands(self, oracle, tune=True):
        """Every command of the job and the counts given, ``oracle(command)`` giving the
        counts of each command that fetches B's tile (the others keep it and give none);
        with ``tune`` false, the counts are taken and not weighed (the shape stays)."""
        out, given = [], []
        while (cmd := self.next()) is not None:
            out.append(cmd)
            if hyte_fetches(out[-2:])[-1]:
                given.append(oracle(cmd))
                if tune:
                    self.counts(given[-1])
        return out, given


def counts_dict(counts):
    """``[[c00, c01], [c10, c11]]`` as the counts stream's payload."""
    return {f"cnt{r}{c}": int(counts[r][c]) for r in range(2) for c in range(2)}


# -- a real matrix as the tuned tensor B (K x J), fetched through an accessor --------

class TileFetcher:
    """B's tiles fetched into a buffering :class:`~.hyte_accessor.Accessor` of
    ``bufsize`` words, which counts each tile's quadrants itself (Section 6.4): a
    command's rows ``k`` are its segments (found from the positions kept across tiles,
    :class:`~.hyte_positions.SegmentPositions`), each word a column ``j`` of the tile; the
    halves are those of the command's extents ``t`` (as the tile command gives them, so
    the hardware derives them from it: :class:`~sparseforge.hw.compose.hyte_tiling.
    QuadrantSpec`; a tile cut off at the matrix's edge keeps its full extent's halves).
    The tile is evicted whole
    after it is counted; ``stored`` and ``fetched`` add up the words it held and took;
    ``program`` lists what it gave the accessor, as :mod:`sparseforge.tb.hyte_accessor`
    replays it on the hardware."""

    def __init__(self, pattern, bufsize):
        order = np.lexsort((pattern.cols, pattern.rows))
        self.rows, self.cols = pattern.rows[order], pattern.cols[order]
        self.ptr = np.searchsorted(self.rows, np.arange(pattern.shape[0] + 1))
        self.positions = SegmentPositions(self.ptr, self.cols)
        self.accessor = Accessor(bufsize, HyteMode.BUFFERING,
                                 coord_width=max(16, (2 * pattern.shape[1]).bit_length()))
        self.stored = self.fetched = 0
        self.program = []

    def counts(self, command):
        """The quadrant counts of ``command``'s B tile, as the accessor took them."""
        acc, ops = self.accessor, []
        (bk, tk), (bj, tj) = ((command[d]["begin"], command[d]["t"]) for d in (K, J))
        ek = min(bk + tk, len(self.ptr) - 1)            # cut off at the matrix's edge
        ops.append(("tile", (ek - bk, max(1, tk >> 1), bj + max(1, tj >> 1))))
        for k in range(bk, ek):
            cols = self.cols[slice(*self.positions.segment(k, bj, bj + tj))]
            ops += [("segment", len(cols)), *(("fill", int(c)) for c in cols)]
        acc.tile(*ops[0][1])
        for port, item in ops[1:]:
            getattr(acc, port)(item)
        self.stored += sum(len(seg.words) for seg in acc.segments)
        self.fetched += sum(seg.filled for seg in acc.segments)
        ops.append(("evict", acc.occupancy))
        acc.evict(acc.occupancy)
        self.program += ops
        return acc.counts.pop()

    @property
    def hit_rate(self):
        """B's words the buffer held over those fetched."""
        return self.stored / max(self.fetched, 1)


@dataclass(frozen=True)
class Trace:
    commands: list
    counts: list            # one a command that fetches B's tile
    shapes: list            # (Tk, Tj) of each command
    before: float           # B's hit rate walked at the initial shape, untuned
    after: float            # B's hit rate of this (tuned) run
    fetches: list           # what this run gave B's accessor (TileFetcher.program)


def matrix_trace(matrix, config, rule="tiles", most_tj=None):
    """The controller's commands with a real matrix as B (``K x J``), its tiles' counts
    taken by an accessor (:class:`TileFetcher`), and B's hit rate in the buffer walked
    untuned at the initial shape and in this run (tiles doubled along j up to
    ``most_tj`` columns)."""
    pattern = Pattern.from_matrix(matrix)
    static, tuned = Controller(config, rule, most_tj), Controller(config, rule, most_tj)
    untuned = TileFetcher(pattern, config.bufsize)
    static.commands(untuned.counts, tune=False)
    fetcher = TileFetcher(pattern, config.bufsize)
    commands, counts = tuned.commands(fetcher.counts)
    shapes = [(c[K]["t"], c[J]["t"]) for c in commands]
    return Trace(commands, counts, shapes, untuned.hit_rate, fetcher.hit_rate,
                 fetcher.program)
