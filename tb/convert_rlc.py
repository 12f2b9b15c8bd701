"""RLC to COO on the ``rlc_to_coo`` block (MINT Fig. 8d) and Dense to RLC on
``dense_to_rlc``: their benches, and ``convert --engine rtl``.

:class:`RlcBench` streams RLC matrices of one shape, back to back, into the block:
``lanes`` pairs a vector as the host encoder packs them
(:func:`~sparseforge.sw.wire.rlc_vectors`, :func:`~sparseforge.sw.wire.pack_lanes`),
``columns`` held, and takes the COO records, with random back-pressure on both streams.
Its result is the records as the hardware emitted them; :func:`records_to_coo` rebuilds
the COO matrix from them, and :func:`run` does both natively on Verilator.
:class:`UnitBench` drives the converters' sub-units (hw/convert_rlc.py's stream units,
hw/convert_bsr.py's stages) in their own tests.

:class:`DenseRlcBench` streams dense matrices of any shapes, back to back, into
``dense_to_rlc`` as flat dense vectors (:func:`~sparseforge.sw.wire.dense_vectors`) and
takes its RLC vectors, each compared (natively) with the host encoder's
(:func:`~sparseforge.sw.wire.rlc_vectors` of the golden RLC); :func:`vectors_to_rlc`
rebuilds the RLC matrix from what the hardware emitted, and :func:`run_dense` does both
natively on Verilator.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..hw.convert_rlc import DenseToRlc, RlcToCoo
from ..sw import conversion, wire
from . import native
from .convert_ciss import EntryWords
from .streams import Bench, Static

DENSE, PAIRS, RECORDS = "dense", "pairs", "records"

LANES, WIDTH = 8, 32
"""Pairs per vector and bits of a position of the block ``--engine rtl`` builds, whatever
the matrix: 32-bit positions hold every matrix of up to 2**32 elements (the shared data's
largest, 65,536 square, included); a larger one is refused. Its runs are the input's
``run_bits``, its values the input's value type."""


@dataclass(frozen=True)
class RlcResult:
    """What one run emitted: its cycles and the records' fields (arrays, in emission order)."""

    cycles: int
    records: dict


@dataclass(frozen=True)
class UnitResult:
    """What a sub-unit emitted: its cycles and, per output stream, its items in order."""

    cycles: int
    outputs: dict


class UnitBench(Bench):
    """Streams ``inputs`` (``{stream: items}``, plain Python payloads) into a sub-unit
    and takes ``outputs`` (``{stream: count}``) from it, every stream acting with
    probability ``rate`` on a cycle; ``static`` holds other inputs at constants."""

    def __init__(self, component, inputs, outputs, seed, rate=0.7, static=None):
        super().__init__(component, seed)
        self.sources = [self.source_on(name, items, rate) for name, items in inputs.items()]
        self.sinks = {name: self.sink_on(name, rate, expected=count)
                      for name, count in outputs.items()}
        self.drivers = [*(Static(k, v) for k, v in (static or {}).items()), *self.sources,
                        *self.sinks.values()]

    def finished(self):
        return all(s.done for s in self.sources) and all(
            len(s.received) == s.expected for s in self.sinks.values())

    def result(self):
        return UnitResult(self.cycle, {name: [v for _, v in s.received]
                                       for name, s in self.sinks.items()})


def record_columns(records):
    """Records (dicts, as the sink took them) as ``{row, col, value, last}`` arrays."""
    return {name: np.array([r[name] for r in records], dtype=np.uint64 if name == "value"
                           else np.int64) for name in ("row", "col", "value", "last")}


def records_to_coo(records, shape, dtype):
    """The COO matrix of the records one matrix's run emitted, in their order, with the
    index type the golden converter gives (int32 where the shape fits it)."""
    index = np.int32 if max(shape, default=0) <= np.iinfo(np.int32).max else np.int64
    coords = (records["row"].astype(index), records["col"].astype(index))
    return sp.coo_array((wire.bits_values(records["value"], dtype), coords), shape=shape)


class RlcBench(Bench):
    """Streams ``matrices`` (:class:`~sparseforge.sw.conversion.RLC` of one shape and the
    block's ``run_bits``) through an :class:`~sparseforge.hw.convert_rlc.RlcToCoo`.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7).
    :meth:`check_records` checks the ``last`` flags of what came out.
    """

    def __init__(self, component, matrices, seed, rates=None):
        super().__init__(component, seed)
        rates = {PAIRS: 0.7, RECORDS: 0.7, **(rates or {})}
        shape = self._check(component, matrices)
        L = component.lanes
        pieces = [wire.rlc_vectors(m.runs, wire.value_bits(m.values)[0], L) for m in matrices]
        columns = {k: np.concatenate([p[k] for p in pieces]) for k in ("run", "value", "last")}
        words = wire.pack_lanes(wire.rlc_pair(component.run_bits, component.value_width), L,
                                wire.rlc_end(), columns)
        counts = [int(np.count_nonzero(m.values)) for m in matrices]
        self.ends = np.cumsum(counts)[np.array(counts) > 0] - 1   # each matrix's final record
        self.nonzeros = sum(counts)
        self.source = self.source_on(PAIRS, words, rates[PAIRS])
        self.sink = self.sink_on(RECORDS, rates[RECORDS], expected=self.nonzeros)
        self.drivers = [Static("columns", shape[1]), self.source, self.sink]

    @staticmethod
    def _check(component, matrices):
        shape = matrices[0].shape
        for m in matrices:
            if m.shape != shape or m.run_bits != component.run_bits:
                raise ParameterError(f"a {m.shape[0]} x {m.shape[1]} RLC matrix of "
                                     f"{m.run_bits}-bit runs: this bench streams "
                                     f"{shape[0]} x {shape[1]} matrices of the block's "
                                     f"{component.run_bits}-bit runs")
            if wire.value_bits(m.values)[1] > component.value_width:
                raise ParameterError(f"{m.dtype} values do not fit the block's "
                                     f"{component.value_width}-bit values")
        if max(shape[0] * shape[1] - 1, shape[1]) >> component.width:
            raise ParameterError(f"a {shape[0]} x {shape[1]} matrix does not fit the block's "
                                 f"{component.width}-bit positions")
        return shape

    def check_records(self, records):
        """Fail unless ``last`` is set on each matrix's final record and on no other."""
        flagged = np.flatnonzero(records["last"])
        if len(records["last"]) != self.nonzeros or not np.array_equal(flagged, self.ends):
            self.fail(f"{len(records['last'])} records with last on {flagged.tolist()[:8]}; "
                      f"expected {self.nonzeros} with last on {self.ends.tolist()[:8]}")

    def finished(self):
        return len(self.sink.received) == self.nonzeros and self.source.done

    def result(self):
        records = record_columns([r for _, r in self.sink.received])
        self.check_records(records)
        return RlcResult(self.cycle, records)


def run(source, block=None, run_bits=None, seed=1):
    """``(coo, cycles)``: the RLC matrix ``source`` converted by the ``rlc_to_coo`` block,
    natively on Verilator under random back-pressure, rebuilt from its records."""
    component = RlcToCoo(lanes=LANES, run_bits=source.run_bits, width=WIDTH,
                         value_width=wire.value_bits(source.values)[1])
    bench = RlcBench(component, [source], seed)
    out = native.run(bench)
    records = record_columns(out.outputs[RECORDS])
    bench.check_records(records)
    return records_to_coo(records, source.shape, source.dtype), out.cycles


class DenseRlcBench(Bench):
    """Streams ``matrices`` (2-D arrays, of any shapes) through a
    :class:`~sparseforge.hw.convert_rlc.DenseToRlc`, flat, back to back.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7). The
    ``pairs`` sink takes each vector as its word (an int, the wire's packing) and a
    native run checks every one against the golden converter's
    (:func:`~sparseforge.sw.conversion.convert` to ``rlc`` with the block's
    ``run_bits``), whose vector counts tell the sink how many to take.
    """

    def __init__(self, component, matrices, seed, rates=None):
        super().__init__(component, seed)
        rates = {DENSE: 0.7, PAIRS: 0.7, **(rates or {})}
        L, B, V = component.lanes, component.run_bits, component.value_width
        bits = [self._check(component, m) for m in matrices]
        self.golden = [conversion.convert(m, "rlc", run_bits=B) for m in matrices]
        vectors = [wire.dense_vectors(b, L, rows=False) for b in bits]
        words = np.concatenate([wire.pack_lanes(
            (wire.Field("value", V),), L, wire.dense_flags(False), {"value": v, **flags})
            for v, flags in vectors])
        pairs = [wire.pack_lanes(wire.rlc_pair(B, V), L, wire.rlc_end(),
                                 wire.rlc_vectors(g.runs, wire.value_bits(g.values)[0], L))
                 for g in self.golden]
        self.counts = [len(p) for p in pairs]
        self.codecs[PAIRS] = EntryWords(self.codecs[PAIRS].shape)
        self.outputs[PAIRS] = [int(w) for p in pairs for w in p]
        self.source = self.source_on(DENSE, words, rates[DENSE])
        self.sink = self.sink_on(PAIRS, rates[PAIRS], expected=sum(self.counts))
        self.drivers = [self.source, self.sink]

    @staticmethod
    def _check(component, matrix):
        """The bits of ``matrix``'s elements, refused where the block cannot take them."""
        matrix = np.asarray(matrix)
        if matrix.ndim != 2:
            raise ParameterError(f"dense_to_rlc takes matrices, not a {matrix.ndim}-D array")
        bits, need = wire.value_bits(matrix)
        if need > component.value_width:
            raise ParameterError(f"{matrix.dtype} values do not fit the block's "
                                 f"{component.value_width}-bit values")
        if matrix.size > 1 << component.width:
            raise ParameterError(f"a {matrix.shape[0]} x {matrix.shape[1]} matrix does not "
                                 f"fit the block's {component.width}-bit filler count")
        return bits.reshape(matrix.shape)

    def finished(self):
        return self.source.done and len(self.sink.received) == self.sink.expected

    def from_outputs(self, cycles, outputs):
        return UnitResult(cycles, {PAIRS: outputs[PAIRS]})


def vectors_to_rlc(words, component, shape, dtype):
    """The RLC matrix of one matrix's RLC vectors (ints, the wire's packing) as
    ``dense_to_rlc`` emitted them; fails unless ``last`` marks the final one only and the
    final one's lanes after its last pair are (0, 0)."""
    L, B, V = component.lanes, component.run_bits, component.value_width
    lane = B + V
    lanes = [(w >> (lane * i)) & ((1 << lane) - 1) for w in words for i in range(L)]
    last = [w >> (lane * L) & 1 for w in words]
    if last != [0] * (len(words) - 1) + [1] * bool(words):
        raise AssertionError(f"{len(words)} RLC vectors with last {last[:8]}...: last must "
                             "mark the final one only")
    while lanes and not lanes[-1]:
        lanes.pop()
    if len(lanes) <= L * (len(words) - 1):
        raise AssertionError("an RLC vector holds no pair")
    runs = np.array([p & ((1 << B) - 1) for p in lanes], dtype=np.uint64)
    values = wire.bits_values(np.array([p >> B for p in lanes], dtype=np.uint64), dtype)
    return conversion.RLC(runs, values, shape, B)


def dense_component(dtype, run_bits):
    """The ``dense_to_rlc`` block ``--engine rtl`` builds: :data:`LANES` lanes, a
    :data:`WIDTH`-bit filler count, the conversion's ``run_bits`` and the matrix's value
    type."""
    return DenseToRlc(lanes=LANES, run_bits=run_bits, width=WIDTH,
                      value_width=wire.value_width(dtype))


def run_dense(source, block=None, run_bits=None, seed=1):
    """``(rlc, cycles)``: the dense matrix ``source`` converted by the ``dense_to_rlc``
    block, natively on Verilator under random back-pressure, rebuilt from its vectors."""
    source = np.asarray(source)
    if source.ndim != 2:
        raise ParameterError(f"dense_to_rlc takes matrices, not a {source.ndim}-D tensor")
    component = dense_component(source.dtype, conversion.RUN_BITS if run_bits is None
                                else run_bits)
    out = native.run(DenseRlcBench(component, [source], seed))
    return vectors_to_rlc(out.outputs[PAIRS], component, source.shape, source.dtype), out.cycles


CONVERSIONS = {("rlc", "coo"): run, ("dense", "rlc"): run_dense}
