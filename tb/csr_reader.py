# amaranth: UnusedElaboratable=no
"""Testbench of the CSR row reader (``csr_reader``): rows requested at random, the CSR's
row pointers and its ``{col, value}`` words each in a memory with DRAM timing (so the two
ports answer apart), the answers taken under back-pressure; they must be the model's,
and each port must have read what the model says."""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..hw.csr_reader import CsrRowReader
from ..hw.interfaces import RowReadSignature
from ..hw.stream_units import MemoryPortSignature, Zip
from ..sim.models import csr_reader as model
from ..sw import wire
from . import native
from .dram import DramPort
from .streams import Bench, Columns


class CsrReaderHarness(wiring.Component):
    """A :class:`~sparseforge.hw.csr_reader.CsrRowReader` of ``params`` reading its
    elements through a :class:`~sparseforge.hw.stream_units.Zip` of two arrays, column ids
    (``part_col``) and values (``part_value``), as the accelerator stores a CSR."""

    def __init__(self, **params):
        self.reader = CsrRowReader(**params)
        r = self.reader
        self.index_width, self.value_width = r.index_width, r.value_width
        self.zip = Zip(r.addr_width, {"col": r.index_width, "value": r.value_width})
        super().__init__({
            "rows": In(RowReadSignature(r.index_width, r.value_width)),
            "ptr": Out(MemoryPortSignature(r.addr_width, r.addr_width)),
            "part_col": Out(MemoryPortSignature(r.addr_width, r.index_width)),
            "part_value": Out(MemoryPortSignature(r.addr_width, r.value_width)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.reader, m.submodules.zip = self.reader, self.zip
        wiring.connect(m, wiring.flipped(self.rows), self.reader.rows)
        wiring.connect(m, self.reader.ptr, wiring.flipped(self.ptr))
        wiring.connect(m, self.reader.elements, self.zip.port)
        for name in ("col", "value"):
            wiring.connect(m, self.zip.part(name), wiring.flipped(getattr(self, f"part_{name}")))
        return m


@dataclass(frozen=True)
class CsrReaderResult:
    """A run's cycles and the elements answered (``{col, value, last, empty}`` each)."""

    cycles: int
    answers: list


class CsrReaderBench(Bench):
    """Requests of ``rows`` of ``matrix`` (a CSR of integers) through ``component`` (a
    :class:`CsrReaderHarness`), the
    requests and the answers each acting with chance ``rate``."""

    def __init__(self, component, matrix, rows, seed, rate=0.7):
        super().__init__(component, seed)
        m = sp.csr_matrix(matrix)
        vw = component.value_width
        bits = wire.signed_words(m.data, vw, "the matrix")
        self.want = model.answers(m.indptr, m.indices, bits, rows)
        count = len(self.want["last"])
        self.drivers = [
            self.source_on("rows__request", Columns({"row": np.asarray(rows)}), rate),
            self.sink_on("rows__response", rate, count),
            DramPort("ptr", np.asarray(m.indptr, dtype=np.uint64), self.codecs),
            DramPort("part_col", np.asarray(m.indices, dtype=np.uint64), self.codecs),
            DramPort("part_value", np.asarray(bits, dtype=np.uint64), self.codecs),
        ]
        self.outputs["rows__response"] = [{k: int(v[n]) for k, v in self.want.items()}
                                          for n in range(count)]
        self.patience = 5_000

    def from_outputs(self, cycles, outputs):
        return CsrReaderResult(cycles, outputs["rows__response"])


def simulate(component, matrix, rows, seed, rate=0.7, engine="pysim"):
    """The :class:`CsrReaderResult` of ``rows`` of ``matrix`` through ``component``."""
    return native.simulate(CsrReaderBench(component, matrix, rows, seed, rate), engine)
