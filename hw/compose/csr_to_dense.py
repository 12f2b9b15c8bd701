# amaranth: UnusedElaboratable=no
"""CSR to Dense as one design: CSR to COO streaming into COO to Dense."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ...core.params import check_params
from ...core.registry import block
from ..convert_expand import LANES, VALUE_WIDTH, WIDTH, CooToDense, CooToDenseSignature, CsrToCoo


@block("csr_to_dense")
class CsrToDense(wiring.Component):
    """CSR to Dense: row pointers and nonzeros in, L elements a cycle out, on chip.

    A :class:`~sparseforge.hw.convert_expand.CsrToCoo` whose ``records`` stream straight
    into a :class:`~sparseforge.hw.convert_expand.CooToDense` (CSR is row-major, so its
    records come sorted as COO to Dense takes them); nothing is stored between them.
    CSR(A)-Dense(B) is the compute format of half of MINT's Table II accelerators.

    Parameters
    ----------
    lanes : L, values per dense vector (a power of two).
    width : bits of a row, a column, a pointer and a position (up to ``2**width``
        elements, fewer than ``2**width`` rows, columns and nonzeros).
    value_width : bits of a value.

    Members
    -------
    row_ptr, entries : In(stream)
        CSR to COO's: per matrix its ``rows + 1`` pointers (``last`` on the final one) and
        its nonzeros ``{col, value}``.
    shape : In(stream({rows, cols, nnz}))
    dense : Out(stream({lanes[L], last}))
        COO to Dense's: per matrix a shape, then its ``ceil(rows * cols / L)`` vectors.

    Latency and throughput: the two blocks', one after the other; COO to Dense's sets the
    rate (one vector a cycle, a record a cycle within one), CSR to COO keeps up with a
    record a cycle.

    Clock: above 100 MHz on the ECP5 (the synthesis report). The critical path is COO to
    Dense's :class:`~sparseforge.hw.convert_expand.Fill`: a position's vector compared
    with the vector gathered, into the ready of the register slice before it, mostly
    routing.
    """

    PARAMS = (LANES, WIDTH, VALUE_WIDTH)
    REPORT = ({"lanes": 8, "width": 32, "value_width": 32},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.value_width = v["lanes"], v["width"], v["value_width"]
        self.coo = CsrToCoo(width=self.width, value_width=self.value_width)
        self.dense_unit = CooToDense(**v)
        members = CooToDenseSignature(self.lanes, self.width, self.value_width).members
        super().__init__({"row_ptr": self.coo.signature.members["row_ptr"],
                          "entries": self.coo.signature.members["entries"],
                          "shape": members["shape"], "dense": members["dense"]})

    def elaborate(self, platform):
        m = Module()
        m.submodules.csr_to_coo = coo = self.coo
        m.submodules.coo_to_dense = dense = self.dense_unit
        wiring.connect(m, wiring.flipped(self.row_ptr), coo.row_ptr)
        wiring.connect(m, wiring.flipped(self.entries), coo.entries)
        wiring.connect(m, coo.records, dense.records)
        wiring.connect(m, wiring.flipped(self.shape), dense.shape)
        wiring.connect(m, dense.dense, wiring.flipped(self.dense))
        return m
