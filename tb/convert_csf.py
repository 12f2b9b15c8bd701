# amaranth: UnusedElaboratable=no
"""The Dense-to-CSF converter (``dense_to_csf``) as a bench and as ``convert --engine rtl``.

:class:`CsfBench` streams dense 3-D tensors into the block, one after the other, ``lanes``
elements a vector in row-major order, under random back-pressure on every stream, and
takes the three levels' records. Its result is each
:class:`~sparseforge.sw.conversion.CSF` rebuilt from what the block emitted (each
level's masked lanes, the closing pointers from the last records' totals), never from a
golden converter; tests compare it with :func:`sparseforge.sw.conversion.convert`.
Values travel as their bits (a float's -0.0 as the zero it is).
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..hw.convert_csf import MODES, DenseToCsf
from ..sw import wire
from ..sw.conversion import CSF
from . import native
from .streams import Bench, Columns

LEVELS = tuple(f"level{n}" for n in range(MODES))

RTL = {"lanes": 8, "index_width": 16, "count_width": 32, "value_width": 64}
"""The ``dense_to_csf`` block ``convert --engine rtl`` builds, whatever the tensor: modes
of up to 65,536, up to 2**32 - 1 nonzeros, 64-bit values (any value type's bits). A
larger tensor is refused."""


def record_counts(dense, lanes):
    """How many records each level makes: one per vector holding a node of the level, and
    one for the last vector on every level."""
    position = np.flatnonzero(dense)
    vectors = -(-dense.size // lanes)
    counts = []
    for level in range(MODES):
        node = position // int(np.prod(dense.shape[level + 1:], dtype=np.int64))
        first = position[np.r_[True, node[1:] != node[:-1]]] if len(position) else position
        counts.append(len(np.union1d(first // lanes, [vectors - 1])))
    return counts


@dataclass(frozen=True)
class CsfResult:
    """Tensors through the block: the cycles, and the CSF it emitted for each."""

    cycles: int
    csf: list


class CsfBench(Bench):
    """The dense 3-D ``tensors`` through ``component``, one after the other.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7 on every
    stream).
    """

    def __init__(self, component, tensors, seed, rates=None):
        super().__init__(component, seed)
        tensors = [np.asarray(t) for t in tensors]
        lanes = component.lanes
        for dense in tensors:
            check_fits(component, dense)
        self.tensors = [(t.shape, t.dtype) for t in tensors]
        rates = {**dict.fromkeys(("shape", "dense", *LEVELS), 0.7), **(rates or {})}
        shapes = np.array([t.shape for t in tensors], dtype=np.int64).reshape(-1, MODES)
        # the block compares bits with 0: a float's -0.0 goes as the zero it is
        vectors = [np.pad(wire.value_bits(t.ravel())[0], (0, -t.size % lanes))
                   for t in tensors]
        self.sources = [
            self.source_on("shape", Columns({f"dim{n}": shapes[:, n] for n in range(MODES)}),
                           rates["shape"]),
            self.source_on("dense", np.concatenate([np.zeros(0, np.uint64), *vectors])
                           .reshape(-1, lanes).tolist(), rates["dense"])]
        counts = np.sum([record_counts(t, lanes) for t in tensors], axis=0, dtype=np.int64)
        self.sinks = [self.sink_on(name, rates[name], expected=int(count))
                      for name, count in zip(LEVELS, counts.reshape(MODES), strict=True)]
        self.drivers = [*self.sources, *self.sinks]

    def rebuild(self, levels):
        """The CSF of each tensor from the block's records (``levels``: each level's, in
        order; a tensor's end on each level is its record with ``last``)."""
        ends = [[n for n, r in enumerate(records) if r["last"]] for records in levels]
        if any(len(e) != len(self.tensors) or e[-1:] != [len(records) - 1]
               for e, records in zip(ends, levels, strict=True)):
            raise AssertionError(f"last is set on records {ends} of {len(self.tensors)} "
                                 "tensors: expected once per tensor, on its final record")
        out = []
        for t, (shape, dtype) in enumerate(self.tensors):
            mine = [records[(ends[n][t - 1] + 1 if t else 0):ends[n][t] + 1]
                    for n, records in enumerate(levels)]
            nodes = [[lane for r in records for n, lane in enumerate(r["lanes"])
                      if r["mask"] >> n & 1] for records in mine]
            fids = tuple(np.array([lane["id"] for lane in level], dtype=np.int64)
                         for level in nodes)
            fptr = tuple(np.array([lane["data"] for lane in nodes[n]] + [mine[n + 1][-1]["total"]],
                                  dtype=np.int64) for n in range(MODES - 1))
            leaves = wire.bits_values([lane["data"] for lane in nodes[-1]], dtype)
            out.append(CSF(fids, fptr, leaves, shape))
        return out

    def result(self):
        return CsfResult(self.cycle, self.rebuild([[v for _, v in s.received]
                                                   for s in self.sinks]))


def check_fits(component, dense):
    """Refuse (ParameterError) a tensor ``component`` does not take."""
    lanes, shape = component.lanes, dense.shape
    if dense.ndim != MODES:
        raise ParameterError(f"the dense_to_csf block converts 3-D tensors; this one is "
                             f"{dense.ndim}-D")
    if min(shape) < 1 or max(shape) > 1 << component.index_width or shape[2] < lanes:
        raise ParameterError(f"a {' x '.join(map(str, shape))} tensor does not fit the "
                             f"dense_to_csf block: modes of 1 to {1 << component.index_width}"
                             f", the last at least lanes = {lanes}")
    if np.count_nonzero(dense) >> component.count_width:
        raise ParameterError(f"{np.count_nonzero(dense)} nonzeros do not fit the "
                             f"{component.count_width}-bit counts")
    if wire.value_width(dense.dtype) > component.value_width:
        raise ParameterError(f"{dense.dtype} values do not fit the block's "
                             f"{component.value_width}-bit values")


def run_native(component, tensors, seed, rates=None):
    """``tensors`` through ``component`` natively on Verilator: a :class:`CsfResult`."""
    bench = CsfBench(component, tensors, seed, rates)
    run = native.run(bench)
    return CsfResult(run.cycles, bench.rebuild([run.outputs[s.name] for s in bench.sinks]))


def convert(source, block=None, run_bits=None, seed=1):
    """``convert --engine rtl`` from Dense to CSF: ``(csf, cycles)`` from the block built
    once as :data:`RTL` says. A last mode shorter than the block's lanes is padded with
    zeros to them (its nonzeros, and so its CSF, are the same) and the shape given back."""
    dense = np.asarray(source)
    component = DenseToCsf(**RTL)
    if dense.ndim == MODES and 0 < dense.shape[-1] < component.lanes:
        dense = np.pad(dense, [(0, 0)] * (MODES - 1)
                       + [(0, component.lanes - dense.shape[-1])])
    result = run_native(component, [dense], seed)
    csf = result.csf[0]
    return CSF(csf.fids, csf.fptr, csf.values, np.shape(source)), result.cycles


convert.orders = (MODES,)

CONVERSIONS = {("dense", "csf"): convert}
