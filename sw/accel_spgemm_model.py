"""A model of an ``accel`` SpGEMM run (:mod:`~sparseforge.sw.accel_spgemm`): its memory
traffic exactly, its DRAM bursts, and its cycles from the DRAM's data bus they hold.

Traffic, per column tile of B (``T`` of them), as the Gustavson build reads and writes:
the tile's word of the tile list; A's rows again, two row pointers a row and a column id
and a value a nonzero; for each nonzero A(i, k) B's row k, two row pointers and a column
id and a value for each of its elements (every tile reads the whole row and drops the
other tiles' columns); C's words (a row of ``n`` nonzeros in the tile ``n // lanes + 1``
words) and a row length a row. Every pointer, id, value and length is a read or write of
its own (one AXI burst, :mod:`~sparseforge.hw.csr_reader`), and the DRAM (``sw.dram``'s
controller, as the native memory runs it) books a **burst** of its own for each: the
read ports' requests interleave, so an access rarely finds the burst the access before
it fetched (the few that do are not predicted). The run is bound by those bursts on the
data bus, each as the DDR4 part's timing (:func:`sparseforge.sw.dram.timing`) says:

- ``burst`` cycles a burst (tCCD_S: bursts of different bank groups back to back);
- tCCD_L - ``burst`` more for a burst in the **bank group** of the one before it. A
  reader's column id and value of one element are requested together, granted on
  consecutive cycles and booked back to back: they conflict where their two bursts lie
  in one bank group (:func:`~sparseforge.sw.accel_spgemm.layout` puts a values array
  a burst past its ids' offset, so where ids and values are of one size, never). Every
  other access follows one of another port, of any of the four groups alike: a quarter
  of them conflict.

Plus a round trip for each of the four reads a tile's first product waits on in turn
(its tile word, A's pointers, A's element, B's pointers and element are five; the first
overlaps the start); plus the **refresh**: from tREFI on, every tREFI the banks stop for
tRFC, each window the run reaches (:func:`refreshed`) tRFC more. The cycles before it
are the larger of the bus's and the PEs' (one B element a cycle each, a row's drain a
cycle).

Row misses: an image within the 128 KiB the DRAM's banks keep open misses only after a
refresh closes them, a miss a bank a window, hidden behind the other banks' bursts; a
larger image's misses are not modelled.

**With HYTE's buffer** (:func:`hyte_commands`, :func:`_predict_hyte`) the run is the
controller's commands one after another (the sequencer sends the next only once the
last job's rows are written, and evicts B's tile before a fetch), each priced alone and
the sum refreshed as above. A command's accesses are counted as its units make them
(exactly, but for the positions unit's reads ahead of the column id that ends a
segment, taken as ``inflight`` past it where the row goes on); each is a burst of the
DRAM's (the bus term above, ``bus``) but for the ``shared`` ones, a read in the burst
of the read before (:func:`pointers_shared`: a job's pointers of A, its first
:data:`RANGES` rows' read back to back, a row's pair after them; the positions unit's
row end and begin, at ``bj`` 0). Its cycles are the largest of three paces, as they
overlap:

- the **bus**: its bursts, a quarter of those not paired with their column id in the
  bank group of the burst before;
- A's elements through the **k filter** (``a_stream``);
- the **engine**: B's rows at the row server's pace (``b_serve``: a row its words held,
  at least 1, plus :data:`ACCESSOR` less one; a bypassed rest, from memory after its
  kept entry, a cycle a word and one for the entry) and its rows of C drained
  (``drain``: :data:`DRAIN` and a cycle a group of ``lanes`` columns);

plus the **round trips** its first reads wait on in turn (``memory.ordered`` each): two
where A's rows are read whole (pointers, then elements), one from A's cursors, three
where it fetches B's tile (the positions unit's row end and begin, its column ids, the
segment's words: the fetch begins once the last tile is evicted), one more where its job
meets a bypassed row (its rest read after its kept entry; one fitted better than two);
plus its **row misses**, :data:`ROW_MISS` cycles each: with its units' streams spread
evenly over the command, one after another, the bursts that find their bank open at
another row (an image past 128 KiB puts C's regions in rows above those A's and B's
arrays keep open, in the same banks); plus :data:`COMMAND` cycles.
What it leaves out: the other bursts the DRAM shares (a column scan's ids read alone);
the refresh's row misses (as above); where the units' streams bunch within a command.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import accel_image, accel_model, dram, hyte_schedule, wire
from .accel_spgemm import a_cursors, extents, layout, word_fields


@dataclass(frozen=True)
class SpgemmPrediction:
    """A run's predicted ``cycles``, its exact ``reads`` and ``writes`` (accesses),
    ``bytes_read`` and ``bytes_written``, its ``dram_bursts`` (one an access) and
    ``conflicts``: the bursts in the bank group of the burst before (expected)."""

    cycles: int
    reads: int
    writes: int
    bytes_read: int
    bytes_written: int
    dram_bursts: int
    conflicts: float


def row_lengths(plan_):
    """C's row lengths per tile, ``tiles x rows`` (the lengths the run writes)."""
    c, m = plan_.golden, plan_.shape[0]
    tile = np.searchsorted(np.asarray(plan_.offsets), c.indices, side="right") - 1
    rows = np.repeat(np.arange(m), np.diff(c.indptr))
    out = np.zeros((len(plan_.offsets), m), dtype=np.int64)
    np.add.at(out, (tile, rows), 1)
    return out


def _group(region, index, part):
    """The bank group of the DRAM burst holding word ``index`` of ``region``."""
    return (region.base + np.asarray(index) * region.word) // part.burst_bytes \
        % part.bank_groups


def paired_conflicts(plan_, part=dram.DDR4_2400):
    """``(pairs, conflicts)`` of a tile: the column id and value reads of one element
    (A's nonzeros once, B's elements once for each nonzero of A in their row), and those
    of them whose two bursts share a bank group."""
    regions = layout(plan_)
    same = {name: _group(regions[f"{name}_colid"], np.arange(m.nnz), part)
            == _group(regions[f"{name}_values"], np.arange(m.nnz), part)
            for name, m in (("a", plan_.a), ("b", plan_.b))}
    reads = np.repeat(np.bincount(plan_.a.indices, minlength=plan_.b.shape[0]),
                      np.diff(plan_.b.indptr))                # each B element's reads
    pairs = plan_.a.nnz + int(reads.sum())
    return pairs, int(same["a"].sum() + (reads * same["b"]).sum())


def bus(bursts, conflicts, timing):
    """Cycles the DRAM's data bus is held by ``bursts``, ``conflicts`` of them in the bank
    group of the burst before (tCCD_L apart, the others tCCD_S: a burst's ``burst``)."""
    return bursts * timing.burst + conflicts * (timing.tccd_l - timing.burst)


def refreshed(cycles, timing):
    """``cycles`` of work stretched by the refresh windows they reach: the first at
    tREFI, then every tREFI, each tRFC long."""
    windows = 0
    while (cycles + windows * timing.trfc) // timing.trefi > windows:
        windows += 1
    return cycles + windows * timing.trfc


def predict(plan_, memory=accel_model.DRAM, timing=None):
    """The :class:`SpgemmPrediction` of ``plan_`` against ``memory``
    (:class:`~sparseforge.sw.accel_model.Memory`: its round trip ``ordered``; a DRAM's
    bus where its ``burst`` is not 0) whose DRAM has ``timing``
    (:func:`sparseforge.sw.dram.timing`, DDR4-2400 at 1 GHz)."""
    t = timing or dram.timing()
    if plan_.config.buffer:
        return _predict_hyte(plan_, memory, t)
    c, (m, _, _) = plan_.config, plan_.shape
    size = wire.word_bytes
    ptr, col, value = size(accel_image.ADDR_WIDTH), size(c.iw), size(c.dw)
    tiles, nnz = len(plan_.offsets), plan_.a.nnz
    elements = int(np.diff(plan_.b.indptr)[plan_.a.indices].sum())    # a tile's products
    reads = tiles * (1 + 2 * m + 2 * nnz + 2 * nnz + 2 * elements)
    bytes_read = tiles * (size(wire.width(wire.gustavson_job(c.iw))) + 2 * m * ptr
                          + nnz * (col + value) + 2 * nnz * ptr + elements * (col + value))
    words = int((row_lengths(plan_) // c.lanes + 1).sum())
    writes = words + tiles * m
    bytes_written = words * size(wire.width(word_fields(c))) + tiles * m * col
    bursts = reads + writes
    pairs, same = (tiles * n for n in paired_conflicts(plan_, t.part))
    conflicts = same + (bursts - pairs) / t.part.bank_groups
    held = bus(bursts, conflicts, t) if memory.burst else 0.0
    pes = tiles * (elements + m) / c.pes
    cycles = max(held, pes) + 4 * memory.ordered
    return SpgemmPrediction(round(refreshed(cycles, t) if memory.burst else cycles), reads,
                            writes, bytes_read, bytes_written, bursts, conflicts)


def known_traffic(plan_):
    """The bytes of a run whose count follows from the plan alone: ``a_read`` (A's row
    pointers, two a row, and its elements, every row of every tile; on a HYTE run, a
    tile read from A's cursors, :func:`~sparseforge.sw.accel_spgemm.a_cursors`, its rows'
    elements from its k tile on), ``c_written`` (C's
    words and row lengths: a row of a tile's ``n`` nonzeros ``n // lanes + 1`` words; on
    a HYTE run, no row of none),
    ``meta_read`` (the tile list) and ``meta_written`` (on a HYTE run, the tile log and
    a kept entry a segment fetched: none for a command that keeps B's tile). B's reads
    are the rest of what the run reads (on a HYTE run, the positions unit's too): the
    part no formula here gives."""
    c, size, a = plan_.config, wire.word_bytes, plan_.a
    word, length = size(wire.width(word_fields(c))), size(c.iw)
    per_row = np.diff(a.indptr) * (size(c.iw) + size(c.dw)) + 2 * size(accel_image.ADDR_WIDTH)
    if not c.buffer:
        lengths = row_lengths(plan_)
        return {"a_read": len(plan_.offsets) * int(per_row.sum()),
                "c_written": int((lengths // c.lanes + 1).sum()) * word + lengths.size * length,
                "meta_read": len(plan_.offsets) * size(wire.width(wire.gustavson_job(c.iw))),
                "meta_written": 0}
    a_read = c_written = segments = 0
    entry = size(wire.width(wire.spgemm_row_length(c.iw)))
    fetches = hyte_schedule.hyte_fetches(plan_.commands)
    cursors = a_cursors(plan_.commands, plan_.shape, plan_.config.cursors)
    element = size(c.iw) + size(c.dw)
    for command, fetch, cursor in zip(plan_.commands, fetches, cursors, strict=True):
        e = extents(command, plan_.shape)
        (bi, ei), (bk, ek), (bj, ej) = e["i"], e["k"], e["j"]
        part = a[bi:ei, bk:ek] @ plan_.b[bk:ek, bj:ej]
        part.eliminate_zeros()
        rows = a[bi:ei]
        a_read += (int((rows.indices >= bk).sum()) * element if cursor
                   else int(per_row[bi:ei].sum()))
        held = np.diff(part.indptr)
        held = held[held > 0]                   # a partial row of no records: not written
        c_written += int((held // c.lanes + 1).sum()) * word + len(held) * entry
        segments += (ek - bk) * fetch
    log = size(len(wire.HYTE_DIMS) * wire.width(wire.hyte_tile(c.iw)))
    kept = size(wire.width(wire.hyte_kept(c.iw, accel_image.ADDR_WIDTH)))
    return {"a_read": a_read, "c_written": c_written, "meta_read": 0,
            "meta_written": len(plan_.commands) * log + segments * kept}


def _first_at(m, rows, col):
    """Per row of ``rows`` (consecutive rows of the CSR ``m``), the index of its first
    element of column ``col`` or more (its end where it has none). Only those rows'
    elements are searched, so a command costs its own tile's elements, not the matrix's."""
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return rows
    r0, width = rows[0], m.shape[1] + 1
    lo, hi = m.indptr[r0], m.indptr[rows[-1] + 1]
    keys = np.repeat(rows - r0, np.diff(m.indptr[r0:rows[-1] + 2])) * width + m.indices[lo:hi]
    return lo + np.searchsorted(keys, (rows - r0) * width + col)


RANGES = 4
"""Rows whose pointers a CSR row reader reads ahead of their elements
(:data:`sparseforge.hw.csr_reader.RANGES`)."""


def pointers_shared(bursts):
    """Of a job's pointer reads (``bursts``, a row's two a row), those that find the
    burst the read before fetched: at the job's start, its first :data:`RANGES` rows'
    pointers go out back to back, alone (each one read in the burst of the one before
    shares it); after, a row's two go out when the elements of a row before have, the
    second sharing the first's burst where they lie in one."""
    first = bursts[:RANGES].ravel()
    later = bursts[RANGES:]
    return int((first[1:] == first[:-1]).sum() + (later[:, 0] == later[:, 1]).sum())


def stored_words(lengths, capacity):
    """``(stored, words)`` of a tile's segments of ``lengths`` fetched in order into an
    empty accessor of ``capacity`` words in buffering mode: each stored segment takes a
    word of metadata and a word for each it keeps; the first that does not fit keeps
    what does (stored where its metadata fits), and every later one bypasses."""
    lengths = np.asarray(lengths, dtype=np.int64)
    need = lengths + 1
    before = np.cumsum(need) - need
    over = np.flatnonzero(before + need > capacity)
    stored, words = np.ones(len(lengths), bool), lengths.copy()
    if len(over):
        s = over[0]
        stored[s + 1:], words[s + 1:] = False, 0
        stored[s] = before[s] < capacity
        words[s] = max(capacity - before[s] - 1, 0)
    return stored, words


ACCESSOR = 4
"""Cycles from a read of HYTE's accessor to its answer (:class:`~sparseforge.hw.
hyte_accessor.HyteAccessor`'s, at the earliest): the row server pays it, less one, a row
of B."""

DRAIN = 4
"""Cycles from a row's last element taken to its drain's start in the engine
(:class:`~sparseforge.hw.gustavson.Gustavson`)."""

COMMAND = 22
"""Cycles a HYTE command spends beyond its round trips and its bus: the sequencer's
states (the tile log's write, the job), the engine's pipeline to its first row and the
drain of its last, the writer (fitted with :data:`ROW_MISS`: the largest error made
least over ``bench accel --spgemm``'s four matrices and five schemes on three builds,
of 32 words of buffer and tiles of 64 columns, 64 and 32, 256 and 16: 60 runs)."""

ROW_MISS = 14
"""Cycles a row miss costs a command: its precharge and activation (tRP and tRCD, 28
cycles), half hidden behind the other banks' bursts (fitted with :data:`COMMAND`, the
runs whose image passes 128 KiB, 8 of the 60, setting it)."""


@dataclass(frozen=True)
class HyteCommand:
    """One tile command of a HYTE run as the build spends it: whether it ``fetch`` es B's
    tile and reads A from its ``cursor`` s; its ``reads`` and ``writes`` (accesses) and
    their bytes; ``shared``, its reads that find the burst the read before fetched (a
    pair of row pointers one port asks for back to back, in one burst); ``pairs`` (a
    column id and value read together) and ``same``, those of them in one bank group;
    ``a_stream``, A's elements through the k filter (a cycle each, and one a row whose
    last is kept); ``b_serve``, the row server's cycles (a row of B its words held, 1 if
    none, plus :data:`ACCESSOR` less one; a bypassed rest a cycle a word and one for its
    entry); ``drain``, the engine's rows of C (:data:`DRAIN` and a cycle a group of
    ``lanes`` columns, at least one); ``misses``, B's rows its job reads that bypassed
    (a rest from memory after the row's kept entry); ``row_misses``, its bursts that
    find their bank open at another row (:func:`hyte_commands`)."""

    fetch: bool
    cursor: bool
    reads: int
    writes: int
    bytes_read: int
    bytes_written: int
    shared: int
    pairs: int
    same: int
    a_stream: int
    b_serve: int
    drain: int
    misses: int
    row_misses: int


def hyte_commands(plan_, part=dram.DDR4_2400):
    """The :class:`HyteCommand` of each of ``plan_``'s commands (a build with HYTE's
    buffer). Its accesses are its units' streams, each in its order: the tile log's
    word; per row of a fetched tile, the positions unit's reads of the row's end, of
    where its segment begins and of its column ids from there to the row's end or
    ``inflight`` past the segment's (the reads ahead of the answer that ends it); the
    fetcher's column id and value a word of the segments; their kept entries' writes;
    A's two pointers a row read whole; A's column id and value an element read; the row
    server's kept entry of each bypassed row and column id and value a word of its
    rest; C's words; C's row lengths. Its ``row_misses``: with each command's streams
    spread evenly over it, the commands one after another, its bursts that find their
    bank open at another row (:func:`row_misses_at`)."""
    c, a, b = plan_.config, plan_.a, plan_.b
    regions = layout(plan_)
    same = {name: _group(regions[f"{name}_colid"], np.arange(m.nnz), part)
            == _group(regions[f"{name}_values"], np.arange(m.nnz), part)
            for name, m in (("a", a), ("b", b))}
    sums = {name: np.concatenate([[0], np.cumsum(s)]) for name, s in same.items()}

    def burst(name, index):
        r = regions[name]
        return (r.base + np.asarray(index, dtype=np.int64) * r.word) // part.burst_bytes

    def same_in(name, lo, hi):
        """Column id and value pairs in one bank group, elements ``[lo, hi)`` of each."""
        return int((sums[name][hi] - sums[name][lo]).sum())

    fetches = hyte_schedule.hyte_fetches(plan_.commands)
    cursors = a_cursors(plan_.commands, plan_.shape, c.cursors)
    ahead = min(c.inflight, 64)                     # the positions unit's, as the build's
    out, held, lo = [], np.zeros((3, 0), np.int64), np.zeros(0, np.int64)
    at = {"out": 0, "out_rowlen": 0}                # C's next word and row length
    times, bursts = [], []                          # each burst's place in the run
    for n_, (command, fetch, cursor) in enumerate(zip(plan_.commands, fetches, cursors,
                                                      strict=True)):
        e = extents(command, plan_.shape)
        (bi, ei), (bk, ek), (bj, ej) = e["i"], e["k"], e["j"]
        reads, writes = [], [[("tile_log", np.array([n_]))]]
        shared = pairs = same_ = 0
        if fetch:
            rows = np.arange(bk, ek)
            lo, hi = _first_at(b, rows, bj), _first_at(b, rows, ej)
            length = hi - lo
            fill = _spans(lo, hi)
            # the row's end, where its segment begins, its column ids; its words; its entry
            reads += [[("b_rowptr", rows + 1), ("b_rowptr" if bj == 0 else "b_kept", rows),
                       ("b_colid", _spans(lo, np.minimum(b.indptr[rows + 1], hi + ahead)))],
                      [("b_colid", fill), ("b_values", fill)]]
            writes.append([("b_kept", rows)])
            if bj == 0:                     # the row's end and begin, two row pointers
                shared += int((burst("b_rowptr", rows) == burst("b_rowptr", rows + 1)).sum())
            pairs += len(fill)
            same_ += same_in("b", lo, hi)
            held = np.stack([length, *stored_words(length, c.buffer)[::-1]])
        rows = np.arange(bi, ei)
        ends = a.indptr[bi + 1:ei + 1]
        first = _first_at(a, rows, bk) if cursor else a.indptr[bi:ei]
        if not cursor:
            reads.append([("a_rowptr", np.stack([rows, rows + 1], 1).ravel())])
            shared += pointers_shared(burst("a_rowptr", np.stack([rows, rows + 1], 1)))
        elements = _spans(first, ends)
        reads.append([("a_colid", elements), ("a_values", elements)])
        pairs += len(elements)
        same_ += same_in("a", first, ends)
        tile = a[bi:ei, bk:ek]
        k = tile.indices                            # B's rows the engine reads, by A's
        n, w = held[0][k], held[1][k]
        miss = (held[2][k] == 0) | (w < n)          # bypassed whole, or cut
        rest = _spans((lo[k] + w)[miss], (lo[k] + n)[miss])
        reads.append([("b_kept", bk + k[miss]), ("b_colid", rest), ("b_values", rest)])
        pairs += len(rest)
        same_ += same_in("b", (lo[k] + w)[miss], (lo[k] + n)[miss])
        b_serve = int((np.maximum(w, 1) + ACCESSOR - 1).sum()) + int(miss.sum()) + len(rest)
        last = a.indices[np.maximum(ends - 1, 0)]
        last_kept = int(((last >= bk) & (last < ek) & (ends > a.indptr[bi:ei])).sum())
        c_tile = tile @ b[bk:ek, bj:ej]
        c_tile.eliminate_zeros()
        lengths = np.diff(c_tile.indptr)
        groups = len(np.unique(np.repeat(np.arange(ei - bi), lengths) * (ej - bj + c.lanes)
                               + (c_tile.indices // c.lanes)))
        drain = (ei - bi) * (DRAIN + 1) + groups - int(np.count_nonzero(lengths))
        lengths = lengths[lengths > 0]              # a partial row of none: not written
        for name, count in (("out", int((lengths // c.lanes + 1).sum())),
                            ("out_rowlen", len(lengths))):
            writes.append([(name, np.arange(at[name], at[name] + count))])
            at[name] += count
        for stream in reads + writes:
            places = np.concatenate([burst(name, x) for name, x in stream])
            times.append(n_ + (np.arange(len(places)) + 0.5) / max(len(places), 1))
            bursts.append(places)
        count = {x: sum(len(v) for stream in y for _, v in stream)
                 for x, y in (("r", reads), ("w", writes))}
        size = {x: sum(len(v) * regions[name].word for stream in y for name, v in stream)
                for x, y in (("r", reads), ("w", writes))}
        out.append(HyteCommand(fetch, cursor, count["r"], count["w"], size["r"], size["w"],
                               shared, pairs, same_, len(elements) + last_kept, b_serve,
                               drain, int(miss.sum()), 0))
    missed = row_misses_at(np.concatenate(times), np.concatenate(bursts), part)
    return [dataclasses.replace(x, row_misses=int(m)) for x, m in
            zip(out, np.bincount(missed, minlength=len(out)), strict=True)]


def _spans(lo, hi):
    """The indices ``lo[n] .. hi[n] - 1`` of every ``n``, in order."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    count = np.maximum(hi - lo, 0)
    return np.repeat(lo - np.cumsum(count) + count, count) + np.arange(count.sum())


def row_misses_at(times, bursts, part):
    """The commands (``times``' whole parts) of the ``bursts`` taken in order of their
    ``times`` that find their bank open at another row."""
    order = np.argsort(times, kind="stable")
    group, bank, row, _ = dram.Geometry(8, part).locate(bursts[order])
    by_bank = np.argsort(group * part.banks + bank, kind="stable")
    key, row = (group * part.banks + bank)[by_bank], row[by_bank]
    switch = np.flatnonzero((key[1:] == key[:-1]) & (row[1:] != row[:-1])) + 1
    return np.floor(times[order][by_bank][switch]).astype(np.int64)


def _predict_hyte(plan_, memory, t):
    """:func:`predict` on a build with HYTE's buffer (the module's docstring)."""
    commands = hyte_commands(plan_, t.part)
    total = 0.0
    for x in commands:
        bursts = x.reads + x.writes - x.shared
        conflicts = x.same + (bursts - x.pairs) / t.part.bank_groups
        held = bus(bursts, conflicts, t) if memory.burst else 0.0
        trips = max(1 if x.cursor else 2, 3 if x.fetch else 0) + (x.misses > 0)
        total += (max(held, x.a_stream, x.b_serve + x.drain) + trips * memory.ordered
                  + COMMAND + ROW_MISS * x.row_misses * bool(memory.burst))
    reads, writes = (sum(getattr(x, f) for x in commands) for f in ("reads", "writes"))
    bursts = reads + writes - sum(x.shared for x in commands)
    conflicts = sum(x.same + (x.reads + x.writes - x.shared - x.pairs)
                    / t.part.bank_groups for x in commands)
    return SpgemmPrediction(round(refreshed(total, t) if memory.burst else total), reads,
                            writes, sum(x.bytes_read for x in commands),
                            sum(x.bytes_written for x in commands), bursts, conflicts)
