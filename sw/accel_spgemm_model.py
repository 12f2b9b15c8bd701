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
"""

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
