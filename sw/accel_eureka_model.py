"""A model of an ``accel`` pruned GEMM run (:mod:`~sparseforge.sw.accel_eureka`): its
memory traffic exactly, its DRAM bursts, and its cycles from what bounds them.

Every pass reads, for each sent block, three words, each an access of its own: its place,
its record and its slab of X; and writes a tile word for each block row holding a sent
block (:func:`~sparseforge.sw.accel_eureka.traffic`). The run is bound by the largest of:

- **R**, the AXI read data channel: each access's beats (a word wider than the bus is
  ``ceil(width / 64)`` of them, :func:`~sparseforge.sw.wire.word_beats`), one a cycle
  where R's coin allows (``rate`` of cycles), and a coin's wait more an access
  (``1 / rate - 1`` cycles: its first beat waits for R's register after the burst before);
- the **DRAM's data bus**: a burst of its own for each access (the three ports' requests
  interleave, so none finds the burst fetched before it), as many as the word spans
  (:class:`~sparseforge.sw.dram.Geometry`), at tCCD_S, a quarter of them in the bank
  group of the one before at tCCD_L (:func:`~sparseforge.sw.accel_spgemm_model.bus`);
- the **array**: its SUDS cycles (:func:`~sparseforge.sw.accel_eureka.array_cycles`).

Plus two in-order round trips (the first block's place, then its slab, before the array
starts) and the refresh windows the run reaches
(:func:`~sparseforge.sw.accel_spgemm_model.refreshed`).
"""

from dataclasses import dataclass

import numpy as np

from . import accel_eureka, accel_model, dram, wire
from .accel_spgemm_model import bus, refreshed

READS = ("tiles", "w_records", "b")
"""The regions a sent block reads each pass, in the order it asks for them."""


@dataclass(frozen=True)
class EurekaPrediction:
    """A run's predicted ``cycles`` and what bounds them (``parts``: cycles of R, the
    DRAM's bus and the array), its exact ``reads`` and ``writes`` (accesses), ``beats``
    on R, ``bytes_read``, ``bytes_written`` and ``dram_bursts``."""

    cycles: int
    parts: dict
    reads: int
    writes: int
    beats: int
    bytes_read: int
    bytes_written: int
    dram_bursts: int


def predict(plan_, memory=accel_model.DRAM, timing=None, data=64):
    """The :class:`EurekaPrediction` of ``plan_`` against ``memory``
    (:class:`~sparseforge.sw.accel_model.Memory`: its R ``rate``, its in-order round trip
    ``ordered``, a DRAM's bus where its ``burst`` is not 0) whose DRAM has ``timing``
    (:func:`sparseforge.sw.dram.timing`) on an AXI bus of ``data`` bits."""
    t = timing or dram.timing()
    regions = accel_eureka.layout(plan_)
    blocks = plan_.panels * len(plan_.records)
    writes = plan_.panels * len(np.unique(plan_.placed.block_rows))
    reads = blocks * len(READS)
    beats = blocks * sum(wire.word_beats(regions[n].width, data)[0] for n in READS)

    def spans(name):
        return dram.Geometry(regions[name].width, t.part).bursts

    bursts = blocks * sum(spans(n) for n in READS) + writes * spans("out")
    parts = {"r": beats / memory.rate + reads * (1 / memory.rate - 1),
             "dram": bus(bursts, bursts / t.part.bank_groups, t) if memory.burst else 0.0,
             "array": accel_eureka.array_cycles(plan_)}
    cycles = max(parts.values()) + 2 * memory.ordered
    read, written = accel_eureka.traffic(plan_, data)
    return EurekaPrediction(round(refreshed(cycles, t) if memory.burst else cycles), parts,
                            reads, writes, beats, read, written, bursts)
