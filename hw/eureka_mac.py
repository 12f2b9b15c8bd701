"""The sparse tensor core's MACs: Ampere's 2:4 MAC and the Eureka SUDS MAC.

Eureka Section 2.3.1 (Figure 5) and Sections 3-3.2 (Figures 6, 8), Table 2.
Both are integer MACs (the paper's are FP16): signed ``weight_width`` x
``act_width`` operands, a signed ``acc_width`` accumulator.
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..params import Param, check_params
from ..registry import block
from ..sw.wire import ROWS
from .mux import mux

COMPACTION = Param("compaction", 4, 1, 4, "compaction factor P: a 4P:1 operand mux", pow2=True)
WIDTHS = (
    Param("weight_width", 8, 2, 32, "bits of a signed weight (filter) operand"),
    Param("act_width", 8, 2, 32, "bits of a signed activation (input) operand"),
    Param("acc_width", 32, 4, 64, "bits of the signed accumulator",
          at_least=("weight_width", "act_width")),
)


class Mac(wiring.Component):
    """A MAC with a ``inputs``:1 operand multiplexer (the common part of both MACs).

    Members
    -------
    weight : In(signed(weight_width))
        The filter value broadcast along the MAC row; 0 idles the MAC.
    operands : In(array of inputs x signed(act_width))
        The input values broadcast down the MAC column.
    select : In(log2(inputs))
        The operand multiplexer's select: the weight's column metadata. The
        MACs of a row share it.
    product : Out(signed(weight_width + act_width))
        ``weight * operands[select]``, combinational.
    enable : In(1)
        Accumulate on this cycle.
    clear : In(1)
        With ``enable``: start a new output, the adder ignores the accumulator.
    acc : Out(signed(acc_width))
        The accumulator (output stationary).

    Latency: the accumulator updates on the clock edge after ``enable``; one
    accumulation per cycle.
    """

    def __init__(self, inputs, weight_width, act_width, acc_width, extra=None):
        self.inputs = inputs
        self.weight_width, self.act_width, self.acc_width = weight_width, act_width, acc_width
        super().__init__({
            "weight": In(signed(weight_width)),
            "operands": In(data.ArrayLayout(signed(act_width), inputs)),
            "select": In(range(inputs)),
            "product": Out(signed(weight_width + act_width)),
            "enable": In(1),
            "clear": In(1),
            "acc": Out(signed(acc_width)),
            **(extra or {}),
        })

    def addends(self, m):
        """What the adder adds to the accumulator: here the local product."""
        return [self.product]

    def elaborate(self, platform):
        m = Module()
        # Named, exact-width operands: the Verilog export then extends them in place.
        operand = Signal(signed(self.act_width))
        m.d.comb += [
            operand.eq(mux(self.select, [self.operands[i] for i in range(self.inputs)])),
            self.product.eq(self.weight * operand),
        ]
        # The adder, one accumulator-wide partial sum per addend (named, so the
        # Verilog export keeps every sum exactly as wide as the accumulator).
        total = Mux(self.clear, 0, self.acc)
        for i, addend in enumerate(self.addends(m)):
            partial = Signal.like(self.acc, name=f"sum{i}")
            m.d.comb += partial.eq(total + addend)
            total = partial
        with m.If(self.enable):
            m.d.sync += self.acc.eq(total)
        return m


@block("ampere_mac")
class AmpereMac(Mac):
    """Ampere's 2:4 sparse MAC: a MAC with a 4:1 operand multiplexer (Section 2.3.1).

    In 2:4 sparsity a left-aligned weight came from one of its four original
    columns, so the MAC picks the matching input row with a 4:1 multiplexer
    (Figure 5); dense operation selects row ``t`` on cycle ``t``. The paper's
    "Total Ampere (per MAC)" of Table 2, the baseline of the Eureka MAC's
    area. Ports as :class:`Mac` with 4 operands.
    """

    PARAMS = WIDTHS
    REPORT = ({},)

    def __init__(self, weight_width=8, act_width=8, acc_width=32):
        v = check_params(self.PARAMS, {"weight_width": weight_width, "act_width": act_width,
                                       "acc_width": acc_width})
        super().__init__(ROWS, v["weight_width"], v["act_width"], v["acc_width"])


@block("eureka_mac")
class EurekaMac(Mac):
    """The Eureka MAC: a 4P:1 operand multiplexer and SUDS (Sections 3, 3.1; Figure 8).

    Compaction packs 4P original columns into 4 (Figure 6), so the operand
    multiplexer grows to 4P:1 (16:1 at P = 4). SUDS lets a MAC multiply a
    value *displaced* from the MAC row above and send the product back up;
    the MAC above accumulates it. Two 2:1 multiplexers and a three-input
    adder (accumulator + local product + product from below) do it:

    - ``displaced`` set: the local product goes up, the local adder takes 0;
    - ``below_displaced`` set: the adder takes ``below``, else 0.

    ``from_below = 0`` is the last MAC row after rotation (Section 3.2): no
    MAC below it, so no ``below`` ports and a two-input adder. It still may
    multiply a value displaced from above.

    Members (beyond :class:`Mac`'s, with 4P operands)
    -------
    displaced : In(1)
        This MAC's weight belongs to the MAC row above. Shared along the row.
    below : In(signed(weight_width + act_width))
        The product of the MAC below (``from_below = 1`` only).
    below_displaced : In(1)
        The MAC below's weight belongs here (``from_below = 1`` only).
    """

    PARAMS = (COMPACTION, *WIDTHS,
              Param("from_below", 1, 0, 1, "1: three-input adder with the product of the "
                    "MAC below; 0: the last MAC row's two-input adder"))
    REPORT = ({"compaction": 4}, {"compaction": 2}, {"compaction": 4, "from_below": 0})

    def __init__(self, compaction=4, weight_width=8, act_width=8, acc_width=32, from_below=1):
        v = check_params(self.PARAMS, {"compaction": compaction, "weight_width": weight_width,
                                       "act_width": act_width, "acc_width": acc_width,
                                       "from_below": from_below})
        self.compaction, self.from_below = v["compaction"], v["from_below"]
        product = signed(v["weight_width"] + v["act_width"])
        extra = {"displaced": In(1)}
        if self.from_below:
            extra |= {"below": In(product), "below_displaced": In(1)}
        super().__init__(ROWS * self.compaction, v["weight_width"], v["act_width"],
                         v["acc_width"], extra)

    def addends(self, m):
        local = Signal.like(self.product)  # the first 2:1 mux
        m.d.comb += local.eq(Mux(self.displaced, 0, self.product))
        if not self.from_below:
            return [local]
        below = Signal.like(self.product)  # the second 2:1 mux
        m.d.comb += below.eq(Mux(self.below_displaced, self.below, 0))
        return [local, below]
