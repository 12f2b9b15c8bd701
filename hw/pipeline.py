"""Feed-forward pipelines between two streams, and the networks built on them.

The MINT building blocks (prefix sum, divide/modulo, sorting network,
counters) are feed-forward: one item in, one item out, in order. Each is a
:class:`Pipeline`: registered stages that advance together, the input
stream's ``ready`` the pipeline's advance, the output stream's payload the
last stage's registers (so every block output is registered). A *network*
is a list of levels, each a function from the state (Values, in lists,
tuples and dicts) to the next state; :meth:`Pipeline.network` registers the
state after every ``levels`` of them.
"""

from amaranth.hdl import Signal, Value

from ..core.params import Param


def levels_param(what):
    """The ``levels`` parameter: how many levels of ``what`` run between pipeline registers."""
    return Param("levels", 1, 1, 64, f"{what} levels between pipeline registers (1: one level "
                 "per cycle)")


def stages(depth, levels):
    """Pipeline stages of a network ``depth`` levels deep, registered every ``levels``."""
    return -(-depth // levels)


class Pipeline:
    """Registered stages between ``sink`` (an input stream) and ``source`` (an output stream).

    Every stage loads on ``advance``: when the last stage is empty or its
    item is taken on this cycle. The input is ready exactly then, so a held
    output holds every stage (bubbles stay in place) and the pipeline takes
    one item per cycle while its output is taken. ``valid`` is the valid bit
    of the item at the current end of the pipeline (the input's at first);
    ``depth`` counts the stages so far, the latency in cycles.
    """

    def __init__(self, m, sink, source):
        self.m, self.source = m, source
        self.advance = Signal()
        self.valid = sink.valid
        self.depth = 0
        m.d.comb += [self.advance.eq(~source.valid | source.ready), sink.ready.eq(self.advance)]

    def stage(self, state):
        """Register ``state`` as the next stage; return its registers, in the same structure."""
        self.depth += 1
        valid = Signal(name=f"valid{self.depth}")
        with self.m.If(self.advance):
            self.m.d.sync += valid.eq(self.valid)
        self.valid = valid
        return self._register(state, f"stage{self.depth}")

    def _register(self, state, name):
        if isinstance(state, dict):
            return {k: self._register(v, f"{name}_{k}") for k, v in state.items()}
        if isinstance(state, list | tuple):
            return type(state)(self._register(v, f"{name}_{i}") for i, v in enumerate(state))
        value = Value.cast(state)
        if not len(value):
            return value
        reg = Signal(value.shape(), name=name, reset_less=True)
        with self.m.If(self.advance):
            self.m.d.sync += reg.eq(value)
        return reg

    def wire(self, value, name):
        """A signal driven by ``value``: an expression used twice then stays one cell in the
        exported Verilog (it would otherwise be emitted, and narrowed, once per use)."""
        signal = Signal(Value.cast(value).shape(), name=name)
        self.m.d.comb += signal.eq(value)
        return signal

    def network(self, state, network, levels):
        """``state`` through each level of ``network``, registered after every ``levels``
        levels and after the last; returns the final (registered) state."""
        for n, level in enumerate(network, 1):
            state = level(state)
            if n % levels == 0 or n == len(network):
                state = self.stage(state)
        return state

    def finish(self):
        """Drive the output stream's ``valid`` from the last stage (the caller drives its
        payload from the last stage's registers)."""
        self.m.d.comb += self.source.valid.eq(self.valid)
