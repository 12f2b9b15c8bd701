# amaranth: UnusedElaboratable=no
"""Testbenches of MINT's Dense converters (``dense_to_coo``, ``dense_to_csr``,
``dense_to_zvc``, ``zvc_to_dense``), and their conversions for ``convert --engine rtl``.

A matrix goes in as the host encodes it (:mod:`sparseforge.sw.wire`: each value's bits,
dense vectors, ZVC mask words and value words), every stream stalls at random, and the
result is rebuilt from what the hardware emitted, in the formats of
:mod:`sparseforge.sw.conversion`; the framing of every word stream (full words, then
one final word with ``last``) is checked on the way. The bench's streams are gated by
nothing but their coins and its sinks know their counts up front (from the input's
nonzeros, not from a conversion), so it runs on Amaranth's simulator
(:func:`~sparseforge.sim.runners.pysim`) and natively on Verilator
(:func:`sparseforge.tb.native.run`) alike, in the same cycles.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..hw.convert_dense import DenseToCoo, DenseToCsr, DenseToZvc, ZvcToDense
from ..sw import conversion, wire
from ..sw.formats import index_dtype
from . import native
from .streams import Bench, Columns

RATE = 0.7
"""Each stream's chance to act on a cycle, by default."""

LANES, INDEX_WIDTH = 8, 32
"""Lanes and bits of a row or column id of the converters ``convert --engine rtl`` builds,
whatever the matrix (32-bit ids hold any dense matrix a host holds); their values are the
matrix's value type."""


@dataclass(frozen=True)
class ConverterResult:
    """What one run of a converter emitted: its cycles and each output stream's payloads."""

    cycles: int
    outputs: dict       # stream name -> payloads in order (plain Python)


class ConverterBench(Bench):
    """Streams ``sources`` (``{name: packed payloads}``) into ``component`` and takes
    ``sinks`` (``{name: how many}``) from it, each stream acting with its chance in
    ``rates`` (default :data:`RATE`)."""

    def __init__(self, component, sources, sinks, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys([*sources, *sinks], RATE), **(rates or {})}
        self.sources = [self.source_on(name, items, rates[name])
                        for name, items in sources.items()]
        self.sinks = [self.sink_on(name, rates[name], count) for name, count in sinks.items()]
        self.drivers = [*self.sources, *self.sinks]

    def check(self, io, cycle):
        for sink in self.sinks:
            if len(sink.received) > sink.expected:
                self.fail(f"{sink.name}: more than the {sink.expected} items expected")

    def from_outputs(self, cycles, outputs):
        return ConverterResult(cycles, outputs)


# -- host side: encoding a matrix, and rebuilding one from the hardware's streams -------

def _bits(values, width):
    """``values``' bits (uint64), refused where they need more than ``width``."""
    bits, need = wire.value_bits(values)
    if need > width:
        raise ParameterError(f"{np.asarray(values).dtype} values need {need} bits; the "
                             f"converter's values have width={width}")
    return bits


def _dense_stream(component, dense, rows):
    """The packed dense vectors of matrix ``dense`` for ``component``."""
    L = component.lanes
    vectors, flags = wire.dense_vectors(_bits(dense, component.width), L, rows)
    return wire.pack_lanes((wire.Field("value", component.width),), L, wire.dense_flags(rows),
                           {"value": vectors, **flags})


def _records(words, lanes, counts=None):
    """The records of a word stream, its framing checked (:func:`~sparseforge.sw.wire.word_end`).

    ``counts`` gives the records where the words carry none (ZVC values: the mask's).
    """
    if counts is None:
        counts = sum(w["count"] for w in words)
    want_count, want_last = wire.record_words(counts, lanes)
    got_last = [w["last"] for w in words]
    if len(words) != len(want_count) or got_last != want_last.tolist() or any(
            "count" in w and w["count"] != c for w, c in zip(words, want_count, strict=True)):
        raise AssertionError(f"{len(words)} words framed (count, last) as "
                             f"{[(w.get('count'), w['last']) for w in words][:8]}...: "
                             f"{counts} records take {len(want_count)} words")
    return [r for w, c in zip(words, want_count, strict=True) for r in w["lanes"][:c]]


def _column(records, name=None):
    return np.array([r[name] if name else r for r in records], dtype=np.uint64)


def _index(values, *sizes):
    """Indices or pointers typed as the golden converters store them (int32 where
    ``sizes`` fit)."""
    return np.asarray(values, dtype=index_dtype(*sizes))


def _one_last(items, what):
    if [i["last"] for i in items] != [0] * (len(items) - 1) + [1]:
        raise AssertionError(f"{what}: last must mark the final item only")


class _DenseIn:
    """Dense to COO, CSR or ZVC: the matrix's vectors in; ``rows``: row-padded."""

    rows = True

    def sources(self, component, dense):
        return {"dense": _dense_stream(component, dense, self.rows)}

    @staticmethod
    def nonzeros(component, dense):
        return int(np.count_nonzero(_bits(dense, component.width)))


class _Coo(_DenseIn):
    block = DenseToCoo

    def sinks(self, component, dense):
        return {"coo": self.nonzeros(component, dense) // component.lanes + 1}

    def rebuild(self, component, dense, outputs):
        records = _records(outputs["coo"], component.lanes)
        values = wire.bits_values(_column(records, "value"), dense.dtype)
        return sp.coo_array((values, (_index(_column(records, "row"), *dense.shape),
                                      _index(_column(records, "col"), *dense.shape))),
                            shape=dense.shape)


class _Csr(_DenseIn):
    block = DenseToCsr

    def sinks(self, component, dense):
        return {"entries": self.nonzeros(component, dense) // component.lanes + 1,
                "row_ptr": dense.shape[0]}

    def rebuild(self, component, dense, outputs):
        _one_last(outputs["row_ptr"], "row_ptr")
        records = _records(outputs["entries"], component.lanes)
        sizes = (*dense.shape, len(records))
        indptr = _index([0, *(p["ptr"] for p in outputs["row_ptr"])], *sizes)
        values = wire.bits_values(_column(records, "value"), dense.dtype)
        return sp.csr_array((values, _index(_column(records, "col"), *sizes), indptr),
                            shape=dense.shape)


class _Zvc(_DenseIn):
    block = DenseToZvc
    rows = False

    def sinks(self, component, dense):
        return {"mask": -(-dense.size // component.lanes),
                "values": self.nonzeros(component, dense) // component.lanes + 1}

    def rebuild(self, component, dense, outputs):
        _one_last(outputs["mask"], "mask")
        L = component.lanes
        mask = wire.zvc_mask_bytes(_column([w["mask"] for w in outputs["mask"]]), dense.size, L)
        nnz = int(np.unpackbits(mask).sum())
        values = wire.bits_values(_column(_records(outputs["values"], L, nnz)), dense.dtype)
        return conversion.ZVC(mask, values, dense.shape)


class _ZvcOut:
    """ZVC to Dense: mask words and value words in, the flat dense vectors out."""

    block = ZvcToDense

    def sources(self, component, zvc):
        L, size = component.lanes, zvc.shape[0] * zvc.shape[1]
        if not size:
            raise ParameterError(f"a {zvc.shape[0]} x {zvc.shape[1]} matrix has no elements "
                                 "to stream")
        words = wire.zvc_mask_words(zvc.mask, size, L)
        last = np.zeros(len(words), dtype=np.uint8)
        last[-1] = 1
        count, ends = wire.record_words(len(zvc.values), L)
        packed = np.zeros(len(count) * L, dtype=np.uint64)
        packed[:len(zvc.values)] = _bits(zvc.values, component.width)
        mask = Columns({"mask": words, "last": last})
        values = wire.pack_lanes((wire.Field("value", component.width),), L,
                                 wire.word_end(L, count=False),
                                 {"value": packed.reshape(-1, L), "last": ends})
        return {"mask": mask, "values": values}

    def sinks(self, component, zvc):
        return {"dense": -(-zvc.shape[0] * zvc.shape[1] // component.lanes)}

    def rebuild(self, component, zvc, outputs):
        vectors = outputs["dense"]
        _one_last(vectors, "dense")
        bits = _column([v for vector in vectors for v in vector["lanes"]])
        size = zvc.shape[0] * zvc.shape[1]
        return wire.bits_values(bits[:size], zvc.dtype).reshape(zvc.shape)


SPECS = {spec.block: spec for spec in (_Coo(), _Csr(), _Zvc(), _ZvcOut())}


def bench(component, source, seed, rates=None):
    """The :class:`ConverterBench` of ``source`` (a dense matrix, or a ZVC for ZVC to
    Dense) through ``component``, one of the four converters."""
    spec = SPECS[type(component)]
    return ConverterBench(component, spec.sources(component, source),
                          spec.sinks(component, source), seed, rates)


def rebuild(component, source, outputs):
    """The result, in :mod:`~sparseforge.sw.conversion`'s format, of what ``component``
    emitted (``outputs``: stream name to payloads) for ``source``."""
    return SPECS[type(component)].rebuild(component, source, outputs)


def simulate(component, source, seed, rates=None, engine="native", work_dir=None):
    """``(result, cycles)`` of ``source`` through ``component`` on Verilator (``native``,
    its images in ``work_dir``) or Amaranth's simulator (``pysim``)."""
    done = native.simulate(bench(component, source, seed, rates), engine, work_dir)
    return rebuild(component, source, done.outputs), done.cycles


def params_for(block, source):
    """The parameters ``convert --engine rtl`` builds ``block`` with for ``source``:
    :data:`LANES` lanes, :data:`INDEX_WIDTH`-bit ids and the bits of ``source``'s value
    type: one build per value type, whatever the matrix's size."""
    values = source.values if isinstance(source, conversion.ZVC) else source
    params = {"lanes": LANES, "width": wire.value_width(values.dtype)}
    if block in (DenseToCoo, DenseToCsr):
        params["index_width"] = INDEX_WIDTH
    return params


def _conversion(block):
    def run(source, _block, _run_bits, seed):
        if isinstance(source, np.ndarray) and source.ndim != 2:
            raise ParameterError(f"the Dense converter blocks take matrices, not a "
                                 f"{source.ndim}-D tensor")
        component = block(**params_for(block, source))
        return simulate(component, source, seed)
    return run


CONVERSIONS = {("dense", "coo"): _conversion(DenseToCoo),
               ("dense", "csr"): _conversion(DenseToCsr),
               ("dense", "zvc"): _conversion(DenseToZvc),
               ("zvc", "dense"): _conversion(ZvcToDense)}
"""The conversions these converter blocks do, for :mod:`sparseforge.tb.convert`."""
