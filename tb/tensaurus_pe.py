# amaranth: UnusedElaboratable=no
"""Testbench of a Tensaurus PE (``tensaurus_pe``) on its CISS lane.

The lane's items stream in; the scratchpad is a stream of responses in the order of the
PE's reads, each offered only once its read has been made and then at random (a
scratchpad of random latency that answers in order); ``forward``, ``request`` and
``drain`` are taken at random. The reads and drains the model
(:func:`sparseforge.sim.models.tensaurus.pe`) makes are what the sinks must take, and
the run is checked against them after it ends, so it runs on Amaranth's simulator and
natively on Verilator alike.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..sim.models import tensaurus as model
from ..sw import wire
from ..sw.ciss import bits_values
from . import native
from .streams import Bench, Columns, Static

RATE = 0.7


@dataclass(frozen=True)
class PeRun:
    cycles: int
    requests: list
    drains: list
    forwarded: int


def lane_items(ciss, pe):
    """PE ``pe``'s lane of a CISS stream as ``{nnz, ij, k, marker, last}`` columns (the
    values' bits; ``marker`` where ``nnz`` is 0), then the end marker."""
    lanes = wire.unpack_lane_words(ciss.wire.lane, ciss.wire.pes, ciss.words)
    columns = {name: np.append(lanes[name][:, pe],
                               np.uint64(ciss.wire.idle if name == "ij" else 0))
               for name in lanes}
    last = np.zeros(ciss.entries + 1, dtype=np.uint8)
    last[-1] = 1
    return {**columns, "marker": (columns["nnz"] == 0).astype(np.uint8), "last": last}


def model_items(ciss, items):
    """``items`` as the model takes them: ``(scalar, ij, k, marker, last)`` with signed
    scalars."""
    scalars = bits_values(items["nnz"], "int", ciss.wire.dw)
    k = items.get("k", np.zeros(len(scalars), dtype=np.uint64))     # a matrix has no k
    return list(zip(scalars.tolist(), items["ij"].tolist(), k.tolist(),
                    items["marker"].tolist(), items["last"].tolist(), strict=True))


def forwarded(kernel, items):
    """The lane items a PE passes to the next of its row: all of them, or in MV (where
    only the first column computes) the end marker alone."""
    return 1 if kernel == wire.TensaurusKernel.MV else len(items["last"])


class PeBench(Bench):
    """A PE walking ``items`` (:func:`lane_items`) of ``kernel`` against the scratchpad
    ``read(operand, row, chunk)`` (``vlen`` ints)."""

    def __init__(self, component, ciss, items, kernel, read, seed, rates=None):
        super().__init__(component, seed)
        if ciss.kind != "int":
            raise ParameterError("the PE's data paths are integers: encode integer values")
        rates = {**dict.fromkeys(("lane", "forward", "request", "response", "drain"), RATE),
                 **(rates or {})}
        self.trace = model.pe(model_items(ciss, items), kernel, component.tlen, component.vlen,
                              read, component.acc_width, ciss.wire.idle, component.r1)
        n = len(self.trace.requests)
        responses = [[int(x) for x in read(*r)] for r in self.trace.requests]
        lane = self.source_on("lane", Columns(items), rates["lane"])
        response = self.source_on("spm__response", responses, rates["response"],
                                  after={"spm__request": np.arange(1, n + 1)})
        self.sinks = {name: self.sink_on(stream, rates[name], count)
                      for name, stream, count in (
                          ("forward", "forward", forwarded(kernel, items)),
                          ("request", "spm__request", n),
                          ("drain", "drain", len(self.trace.drains) + 1))}
        self.drivers = [Static("kernel", kernel), lane, response, *self.sinks.values()]

    def from_outputs(self, cycles, outputs):
        """The :class:`PeRun` of what the sinks took, the drains' end item checked and
        left out."""
        drains = outputs["drain"]
        if [d["last"] for d in drains] != [0] * (len(drains) - 1) + [1] or any(
                drains[-1][k] for k in ("row", "chunk")) or any(drains[-1]["lanes"]):
            raise AssertionError("drain: the PE's end item (last, all 0) must come last, once")
        return PeRun(cycles,
                     [(r["operand"], r["row"], r["chunk"]) for r in outputs["spm__request"]],
                     [(d["row"], d["chunk"], tuple(d["lanes"])) for d in drains[:-1]],
                     len(outputs["forward"]))


def simulate(component, ciss, pe, kernel, read, seed, rates=None, engine="native",
             work_dir=None):
    """``(run, trace)``: PE ``pe``'s lane of ``ciss`` through ``component``, and the
    model's trace to hold it to."""
    bench = PeBench(component, ciss, lane_items(ciss, pe), kernel, read, seed, rates)
    return native.simulate(bench, engine, work_dir), bench.trace
