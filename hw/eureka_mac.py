"""The sparse tensor core's MACs: Ampere's 2:4 MAC and the Eureka SUDS MAC.

Eureka Section 2.3.1 (Figure 5) and Sections 3-3.2 (Figures 6, 8), Table 2.
``dtype`` picks the arithmetic: ``int8`` (signed ``weight_width`` x
``act_width`` operands, a signed ``acc_width`` accumulator; 8 x 8 -> 32 by
default) or the paper's ``fp16``: FP16 operands, exact FP32 products and an
FP32 accumulator rounding to nearest even (:mod:`sparseforge.hw.float` states
the domain: subnormal inputs flush to zero, finite inputs only).

Clock: int8 at ``pipeline`` 2, the critical path is the DSP multiply between its
operand and product registers. fp16 is far below 100 MHz: each FP32 addition (align,
add, normalize, round) is one combinational cycle of about 95 logic levels, two in
series in the Eureka MAC (the pre-add, then the accumulator); the adders are not
pipelined. The synthesis report gives the figures.
"""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params, choice
from ..core.registry import block
from ..sw.wire import ROWS
from .float import fp16_mul, fp32_add
from .mux import mux

COMPACTION = Param("compaction", 4, 1, 4, "compaction factor P: a 4P:1 operand mux", pow2=True)
WIDTHS = (
    Param("weight_width", 8, 2, 32, "bits of a signed weight (filter) operand"),
    Param("act_width", 8, 2, 32, "bits of a signed activation (input) operand"),
    Param("acc_width", 32, 4, 64, "bits of the signed accumulator",
          at_least=("weight_width", "act_width")),
)
DTYPES = ("int8", "fp16")
MAC_PARAMS = (
    Param("pipeline", 2, 0, 2, "registers before the adder: 1 on the operand mux's output, "
          "2 also on the product; each adds a cycle to product and acc"),
    choice("dtype", "int8", DTYPES, "int8: signed integers of the widths; fp16: FP16 "
           "operands, FP32 products and accumulator (widths ignored)"),
)


def product_shape(dtype, weight_width, act_width):
    """The shape of a product: an exact signed integer, or FP32 bits."""
    return unsigned(32) if dtype == "fp16" else signed(weight_width + act_width)


class Mac(wiring.Component):
    """A MAC with a ``inputs``:1 operand multiplexer (the common part of both MACs).

    Members
    -------
    weight : In(signed(weight_width)), or FP16 bits
        The filter value broadcast along the MAC row; 0 idles the MAC.
    operands : In(array of inputs x signed(act_width)), or of FP16 bits
        The input values broadcast down the MAC column.
    select : In(log2(inputs))
        The operand multiplexer's select: the weight's column metadata. The
        MACs of a row share it.
    product : Out(signed(weight_width + act_width)), or FP32 bits
        ``weight * operands[select]`` of the inputs ``pipeline`` cycles ago
        (combinational at ``pipeline = 0``).
    enable : In(1)
        Accumulate the product of this cycle's inputs.
    clear : In(1)
        With ``enable``: start a new output, the adder ignores the accumulator
        (takes +0).
    acc : Out(signed(acc_width)), or FP32 bits
        The accumulator (output stationary).

    Latency: ``pipeline`` registers (1: the operand mux's output with the
    weight and controls; 2: also the product) delay the accumulation: the
    accumulator holds the inputs of cycle t from cycle t + 1 + ``pipeline``
    on, and ``product`` shows them on cycle t + ``pipeline``. One accumulation
    per cycle at every depth.
    """

    CONTROLS = ("enable", "clear")

    def __init__(self, inputs, weight_width, act_width, acc_width, extra=None, pipeline=0,
                 dtype="int8"):
        self.inputs, self.pipeline, self.dtype = inputs, pipeline, dtype
        if dtype == "fp16":
            weight_width, act_width, acc_width = 16, 16, 32
        self.weight_width, self.act_width, self.acc_width = weight_width, act_width, acc_width
        number = unsigned if dtype == "fp16" else signed
        super().__init__({
            "weight": In(number(weight_width)),
            "operands": In(data.ArrayLayout(number(act_width), inputs)),
            "select": In(range(inputs)),
            "product": Out(product_shape(dtype, weight_width, act_width)),
            "enable": In(1),
            "clear": In(1),
            "acc": Out(number(acc_width)),
            **(extra or {}),
        })

    @property
    def latency(self):
        """Cycles from a cycle's inputs to the accumulator holding them."""
        return 1 + self.pipeline

    def add(self, m, a, b, shape, name):
        """``a + b``: exact in ``shape`` (integers) or rounded FP32, a named signal.

        Kept, so that Yosys's ``alumacc`` does not merge the pre-adder and the
        accumulator's adder into one three-operand sum (a carry-save layer of
        LUTs, about 60 LUT4 more on the ECP5 than two carry chains).
        """
        if self.dtype == "fp16":
            return fp32_add(m, a, b, name)
        total = Signal(shape, name=name, attrs={"keep": 1})
        m.d.comb += total.eq(a + b)
        return total

    def addend(self, m, product, controls):
        """What the adder adds to the accumulator: here the local product."""
        return product

    def _stage(self, m, values, name):
        """``values`` (a dict of signals) through one pipeline register each."""
        out = {}
        for key, value in values.items():
            out[key] = Signal.like(value, name=f"{key}_{name}")
            m.d.sync += out[key].eq(value)
        return out

    def elaborate(self, platform):
        m = Module()
        # Named, exact-width operands: the Verilog export then extends them in place.
        operand = Signal.like(self.operands[0], name="operand")
        m.d.comb += operand.eq(mux(self.select, [self.operands[i] for i in range(self.inputs)]))
        controls = {name: getattr(self, name) for name in self.CONTROLS}
        stage = {"weight": self.weight, "operand": operand, **controls}
        if self.pipeline >= 1:
            stage = self._stage(m, stage, "s1")
        if self.dtype == "fp16":
            product = fp16_mul(m, stage["weight"], stage["operand"], "multiply")
        else:
            product = Signal(self.product.shape(), name="multiply")
            m.d.comb += product.eq(stage["weight"] * stage["operand"])
        controls = {key: stage[key] for key in self.CONTROLS}
        if self.pipeline >= 2:
            stage = self._stage(m, {"product": product, **controls}, "s2")
            product, controls = stage.pop("product"), stage
        m.d.comb += self.product.eq(product)
        total = self.add(m, Mux(controls["clear"], 0, self.acc),
                         self.addend(m, product, controls), self.acc.shape(), "sum")
        with m.If(controls["enable"]):
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

    PARAMS = (*WIDTHS, *MAC_PARAMS)
    REPORT = ({}, {"dtype": "fp16"})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        super().__init__(ROWS, v["weight_width"], v["act_width"], v["acc_width"],
                         pipeline=v["pipeline"], dtype=v["dtype"])


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

    The three-input adder is built as the paper draws it: a pre-adder of the
    two candidate products (one bit wider than a product, no wider than the
    accumulator, whose sum drops the bits above it anyway; in FP16, an FP32
    addition), then the accumulator's adder: ``acc + (local + below)``.

    ``from_below = 0`` is the last MAC row after rotation (Section 3.2): no
    MAC below it, so no ``below`` ports and a two-input adder. It still may
    multiply a value displaced from above.

    Members (beyond :class:`Mac`'s, with 4P operands)
    -------------------------------------------------
    displaced : In(1)
        This MAC's weight belongs to the MAC row above. Shared along the row.
    below : In(product)
        The ``product`` of the MAC below (``from_below = 1`` only), taken as it
        is: the MAC below has the same ``pipeline``, so its product is as late
        as this MAC's own.
    below_displaced : In(1)
        The MAC below's weight of this cycle belongs here (``from_below = 1``
        only); delayed with the other controls.
    """

    PARAMS = (COMPACTION, *WIDTHS,
              Param("from_below", 1, 0, 1, "1: three-input adder with the product of the "
                    "MAC below; 0: the last MAC row's two-input adder"),
              *MAC_PARAMS)
    REPORT = ({"compaction": 4}, {"compaction": 2}, {"compaction": 4, "from_below": 0},
              {"compaction": 4, "dtype": "fp16"})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.compaction, self.from_below = v["compaction"], v["from_below"]
        self.CONTROLS = (*Mac.CONTROLS, "displaced",
                         *(("below_displaced",) if self.from_below else ()))
        extra = {"displaced": In(1)}
        if self.from_below:
            below = product_shape(v["dtype"], v["weight_width"], v["act_width"])
            extra |= {"below": In(below), "below_displaced": In(1)}
        super().__init__(ROWS * self.compaction, v["weight_width"], v["act_width"],
                         v["acc_width"], extra, v["pipeline"], v["dtype"])

    def addend(self, m, product, controls):
        local = Signal.like(self.product, name="local")  # the first 2:1 mux
        m.d.comb += local.eq(Mux(controls["displaced"], 0, product))
        if not self.from_below:
            return local
        below = Signal.like(self.product, name="from_below")  # the second 2:1 mux
        m.d.comb += below.eq(Mux(controls["below_displaced"], self.below, 0))
        shape = self.product.shape()
        wider = shape if self.dtype == "fp16" else signed(min(shape.width + 1, self.acc_width))
        return self.add(m, local, below, wider, "pre")
