# amaranth: UnusedElaboratable=no
"""Testbench of the merged converter (``mint_merged``, MINT_m): each of its modes runs a
matrix exactly as the separate converter of that conversion does (:mod:`.convert_dense`),
its streams renamed to the merged ones, and the result is rebuilt by that converter's
own rebuilding, so MINT_m and MINT_b are held to one check.
"""

import numpy as np

from ..hw.convert_dense import DenseToCoo, DenseToCsr, DenseToZvc, ZvcToDense
from ..sw import wire
from ..sw.wire import MintMode
from . import native
from .convert_dense import SPECS, ConverterBench, _bits
from .streams import Static

SEPARATE = {MintMode.DENSE_TO_COO: DenseToCoo, MintMode.DENSE_TO_CSR: DenseToCsr,
            MintMode.DENSE_TO_ZVC: DenseToZvc, MintMode.ZVC_TO_DENSE: ZvcToDense}
"""The separate converter (MINT_b) each mode stands for."""

STREAMS = {MintMode.DENSE_TO_COO: {"coo": "words"},
           MintMode.DENSE_TO_CSR: {"entries": "words", "row_ptr": "marks"},
           MintMode.DENSE_TO_ZVC: {"mask": "marks", "values": "words"},
           MintMode.ZVC_TO_DENSE: {"dense": "expanded"}}
"""Each mode's outputs: the separate converter's stream name -> the merged one's."""


def _flat_dense(component, dense):
    """A flat dense stream (Dense to ZVC) on the merged ``dense`` port, ``row_end`` 0."""
    L = component.lanes
    vectors, flags = wire.dense_vectors(_bits(dense, component.width), L, rows=False)
    flags = {"row_end": np.zeros(len(vectors), dtype=np.uint8), **flags}
    return wire.pack_lanes((wire.Field("value", component.width),), L, wire.dense_flags(),
                           {"value": vectors, **flags})


def bench(component, mode, source, seed, rates=None):
    """The :class:`~.convert_dense.ConverterBench` of ``source`` through the merged
    ``component`` in ``mode``."""
    spec, names = SPECS[SEPARATE[mode]], STREAMS[mode]
    sources = spec.sources(component, source)
    if mode == MintMode.DENSE_TO_ZVC:
        sources = {"dense": _flat_dense(component, source)}
    sinks = {names[name]: count for name, count in spec.sinks(component, source).items()}
    rates = {names.get(name, name): rate for name, rate in (rates or {}).items()}
    run = ConverterBench(component, sources, sinks, seed, rates)
    run.drivers.insert(0, Static("mode", mode.value))
    return run


def rebuild(component, mode, source, outputs):
    """The result of what the merged converter emitted, rebuilt as its separate
    converter's would be."""
    given = {name: outputs[merged] for name, merged in STREAMS[mode].items()}
    if mode == MintMode.DENSE_TO_ZVC:
        given["values"] = [{**w, "lanes": [r["value"] for r in w["lanes"]]}
                           for w in given["values"]]
    return SPECS[SEPARATE[mode]].rebuild(component, source, given)


def simulate(component, mode, source, seed, rates=None, engine="native", work_dir=None):
    """``(result, cycles)`` of ``source`` through ``component`` in ``mode``, on Verilator
    (``native``) or Amaranth's simulator (``pysim``)."""
    done = native.simulate(bench(component, mode, source, seed, rates), engine, work_dir)
    return rebuild(component, mode, source, done.outputs), done.cycles
