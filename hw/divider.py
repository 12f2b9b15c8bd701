"""The MINT parallel divide and modulo unit (MINT Sections V-A and V-B, Figure 8d and 8f).

RLC-to-COO and Dense-to-COO turn a position (a prefix sum) into coordinates
by dividing it by a tensor dimension: the quotient is the row, the remainder
the column. The paper limits MINT to eight divider lanes and notes they must
be pipelined to meet timing (Section VII-B); here each lane is restoring
division unrolled one quotient bit per level.
"""

from amaranth.hdl import Cat, Const, Module, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import divmod_layout
from .pipeline import Pipeline, levels_param, stages


def restoring_step(state, wire):
    """One level of restoring division on every lane: the next dividend bit.

    A lane is ``{rest, quotient, remainder}``: the dividend bits not yet
    used (the next one on top), the quotient bits so far and the partial
    remainder. The remainder is below the divisor, so it is kept no wider
    than the divisor, and below ``2**k`` after ``k`` levels from an empty
    one, so level ``k`` subtracts only ``k + 1`` bits; ``rest`` shrinks and
    ``quotient`` grows by a bit a level. ``wire(value, name)`` names the
    subtraction (used twice) and the remainder.
    """
    divisor = state["divisor"]
    lanes = []
    for lane in state["lanes"]:
        rest, shifted = lane["rest"], Cat(lane["rest"][-1], lane["remainder"])
        # The shifted remainder is below twice the divisor: it is at most a bit wider.
        # A divisor with a bit set past the shifted remainder's exceeds it, and a shifted
        # remainder with its bit past the divisor's set exceeds the divisor, so only
        # their common low bits need a subtractor (the new remainder, below the divisor,
        # is those bits of the difference).
        keep = min(len(shifted), len(divisor))
        low, high, top = divisor[:keep], divisor[keep:], shifted[keep:]
        difference = wire(shifted[:keep] - low, "difference")
        fits = ~difference[-1] | top[0] if len(top) else ~difference[-1]
        fits = fits & (high == 0) if len(high) else fits
        lanes.append({"rest": rest[:-1], "quotient": Cat(fits, lane["quotient"]),
                      "remainder": wire(Mux(fits, difference[:keep], shifted[:keep]),
                                        "remainder")})
    return {"divisor": divisor, "lanes": lanes}


class DivModSignature(wiring.Signature):
    """A parallel divide and modulo unit, ``lanes`` unsigned ``width``-bit dividends a cycle.

    - ``dividends`` (stream in, ``lanes`` x ``width`` bits): one vector.
    - ``divisor`` (in, ``width`` bits): the divisor (a tensor dimension),
      sampled with each vector as it is accepted. Hold it while a tensor's
      vectors stream in; a change applies to vectors accepted from then on.
    - ``results`` (stream out, :func:`~sparseforge.hw.interfaces.divmod_layout`): one per vector, in
      order: ``dividend // divisor`` and ``dividend % divisor`` per lane. A
      divisor of 0 gives a quotient of all ones and the dividend as remainder.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "dividends": In(stream.Signature(data.ArrayLayout(width, lanes))),
            "divisor": In(width),
            "results": Out(stream.Signature(divmod_layout(lanes, width))),
        })


@block("divmod")
class DivMod(wiring.Component):
    """Parallel divide and modulo by a run-time divisor, pipelined (Section V-A, Figure 8).

    Parameters
    ----------
    lanes : L, dividends per vector (the paper's MINT has eight).
    width : W, bits of a dividend, the divisor, a quotient and a remainder
        (all unsigned) on the ports.
    quotient_width : Q (at most W; 0 for W), bits of a quotient: the unit
        divides exactly a dividend below ``divisor * 2**Q``, in Q levels.
    divisor_width : D (at most W; 0 for W), bits of the divisor: the unit
        divides exactly by a divisor below ``2**D`` and reads only its low D
        bits; a partial remainder, and so each subtract, is at most D bits.
    levels : quotient bits (restoring-division levels: a subtract of at
        most D + 1 bits and a multiplexer) between pipeline registers.

    Members
    -------
    dividends : In(stream(L x W))
    divisor : In(W)
        Sampled with each vector as it is accepted and carried down the
        pipeline with it: hold it while a tensor's vectors stream in.
    results : Out(stream(L x {quotient, remainder}))
        As :class:`~sparseforge.hw.divider.DivModSignature` says (the
        quotient's bits past Q and the remainder's past D zero) for
        dividends and divisors within Q and D; at Q = D = W, a divisor of 0
        gives a quotient of all ones and the dividend as remainder.

    Latency and throughput: ``ceil(Q / levels)`` cycles from a vector's
    transfer to its results; one vector (L quotients and remainders) per
    cycle while ``results`` is taken. A held output holds the pipeline.
    """

    PARAMS = (
        Param("lanes", 8, 1, 64, "dividends per vector (L)"),
        Param("width", 16, 1, 64, "bits of a dividend, divisor, quotient and remainder"),
        Param("quotient_width", 0, 0, 64, "bits of a quotient (0: width)"),
        Param("divisor_width", 0, 0, 64, "bits of the divisor (0: width)"),
        levels_param("quotient-bit"),
    )
    REPORT = ({"lanes": 8, "width": 16},
              {"lanes": 8, "width": 32, "quotient_width": 16, "divisor_width": 17})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.levels = v["lanes"], v["width"], v["levels"]
        for name in ("quotient_width", "divisor_width"):
            if v[name] > self.width:
                raise ParameterError(f"{name}={v[name]} exceeds width={self.width}")
        self.quotient_width = v["quotient_width"] or self.width
        self.divisor_width = v["divisor_width"] or self.width
        self.latency = stages(self.quotient_width, self.levels)
        super().__init__(DivModSignature(self.lanes, self.width))

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.dividends, self.results)
        Q, D = self.quotient_width, self.divisor_width
        # A dividend below ``divisor * 2**Q`` has its bits past Q below the divisor: they
        # are the first partial remainder, and one level a quotient bit takes the rest.
        state = {"divisor": self.divisor[:D],
                 "lanes": [{"rest": dividend[:Q], "quotient": Const(0, 0),
                            "remainder": dividend[Q:][:D]}
                           for dividend in self.dividends.payload]}
        done = pipe.network(state, [lambda s: restoring_step(s, pipe.wire)] * Q, self.levels)
        pipe.finish()
        for result, lane in zip(self.results.payload, done["lanes"], strict=True):
            m.d.comb += [result.quotient.eq(lane["quotient"]),
                         result.remainder.eq(lane["remainder"])]
        return m
