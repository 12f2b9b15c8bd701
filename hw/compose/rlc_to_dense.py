# amaranth: UnusedElaboratable=no
"""RLC to Dense as one design: RLC to COO streaming into COO to Dense."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ...core.params import Param, check_params
from ...core.registry import block
from ..convert_expand import LANES, VALUE_WIDTH, WIDTH, CooToDense
from ..convert_rlc import RlcToCoo


@block("rlc_to_dense")
class RlcToDense(wiring.Component):
    """RLC to Dense: RLC pairs in, L a vector; L elements a cycle out, on chip.

    A :class:`~sparseforge.hw.convert_rlc.RlcToCoo` (MINT Fig. 8d) whose ``records``
    stream straight into a :class:`~sparseforge.hw.convert_expand.CooToDense`; nothing is
    stored between them. SAGE's choice for five of MINT's Table III matrices (RLC in
    memory, Dense to compute), and Eyeriss's decoder.

    Parameters
    ----------
    lanes : L, RLC pairs per input vector and values per dense vector (a power of two).
    run_bits : bits of a run.
    width : P, bits of a position, a row and a column (up to ``2**P`` elements, fewer
        than ``2**P`` rows and columns).
    value_width : bits of a value; 0 is an RLC filler.

    Members
    -------
    pairs : In(stream({pairs[L] {run, value}, last}))
    columns : In(P)
        RLC to COO's: a matrix's pairs, and its column count, held while they stream in.
    shape : In(stream({rows, cols, nnz}))
    dense : Out(stream({lanes[L], last}))
        COO to Dense's: per matrix a shape (its ``cols`` the ``columns`` held), then its
        ``ceil(rows * cols / L)`` vectors.

    Latency and throughput: the two blocks', one after the other. RLC to COO gives a
    record a cycle and COO to Dense a vector a cycle (a record a cycle within one), so a
    matrix of ``v`` dense vectors and ``z`` nonzeros takes about ``max(v, z)`` to
    ``v + z`` cycles.

    Clock: above 100 MHz on the ECP5 (the synthesis report). The critical path is COO to
    Dense's :class:`~sparseforge.hw.convert_expand.Linearize`: the records' register
    slice, through its take, into its registers of whether a shape is held and records
    remain, three quarters routing. Each converter meets 100 MHz in its own row too;
    placed side by side they stretch each other's paths, and the register slice between
    them keeps any path from joining the two.
    """

    PARAMS = (LANES, Param("run_bits", 5, 1, 32, "bits of a run"), WIDTH, VALUE_WIDTH)
    REPORT = ({"lanes": 8, "run_bits": 5, "width": 32, "value_width": 32},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.run_bits = v["lanes"], v["run_bits"]
        self.width, self.value_width = v["width"], v["value_width"]
        self.coo = RlcToCoo(**v)
        self.dense_unit = CooToDense(lanes=self.lanes, width=self.width,
                                     value_width=self.value_width)
        coo, dense = self.coo.signature.members, self.dense_unit.signature.members
        super().__init__({"pairs": coo["pairs"], "columns": coo["columns"],
                          "shape": dense["shape"], "dense": dense["dense"]})

    def elaborate(self, platform):
        m = Module()
        m.submodules.rlc_to_coo = coo = self.coo
        m.submodules.coo_to_dense = dense = self.dense_unit
        wiring.connect(m, wiring.flipped(self.pairs), coo.pairs)
        m.d.comb += coo.columns.eq(self.columns)
        wiring.connect(m, coo.records, dense.records)
        wiring.connect(m, wiring.flipped(self.shape), dense.shape)
        wiring.connect(m, dense.dense, wiring.flipped(self.dense))
        return m
