"""The rules of a valid/ready stream as properties of a :class:`~.formal.Proof`.

A producer keeps an item it offers, unchanged, until the consumer takes it; the
harness assumes this of a design's input streams and asserts it of its outputs
(:func:`holds_offer`). A design that passes items on in order neither drops nor
duplicates one: :class:`Tracker` follows one item the solver chooses, in the
manner of the wb2axip property files, so the proof covers every item.
"""

from amaranth.hdl import Assert, Signal, Value


def holds_offer(proof, port, rule=Assert):
    """State that ``port`` (a stream) keeps its item offered and unchanged until taken.

    ``rule`` is ``Assert`` for a design's output and ``Assume`` for its input. A
    failure points at the caller's line, which names the stream.
    """
    payload = Value.cast(port.payload)
    stream = port.valid.name.removesuffix("__valid")       # names it in a trace
    waiting = proof.registered(port.valid & ~port.ready, f"{stream}__waiting")
    offered = proof.registered(payload, f"{stream}__offered")
    proof.m.d.comb += rule(~waiting | (port.valid & (payload == offered)), src_loc_at=1)


class Tracker:
    """Follows one item through a design that passes its items on in order.

    The solver chooses which item to follow (any item, so the proof covers all).
    The tracker counts the items inside (taken at ``i``, not yet given at ``o``)
    and the tracked item's place among them; it asserts that the count stays
    within ``capacity``, that nothing is offered while nothing is inside, and that
    whenever the tracked item is first in line the output offers it, unchanged.
    A dropped item puts a later one in its place, a duplicated one puts an
    earlier one there: either breaks the last rule. (An item lost with nothing
    after it shows only as a count the design disagrees with: the harness asserts
    :attr:`count` against the design's own state.)

    Members
    -------
    count : items inside.
    inside : the tracked item is inside.
    ahead : items in line before the tracked one.
    data : the tracked item's payload.
    """

    def __init__(self, proof, i, o, capacity):
        m = proof.m
        took, gave = i.valid & i.ready, o.valid & o.ready
        payload = Value.cast(i.payload)
        self.count = Signal(range(capacity + 2), name="count")
        self.inside = Signal(name="inside")
        self.ahead = Signal(range(capacity + 1), name="ahead")
        self.data = Signal.like(payload, name="tracked")
        followed = Signal(name="followed")          # the tracked item has left
        m.d.sync += self.count.eq(self.count + took - gave)
        with m.If(took & proof.choice(name="pick") & ~self.inside & ~followed):
            m.d.sync += [self.inside.eq(1), self.data.eq(payload),
                         self.ahead.eq(self.count - gave)]
        with m.If(self.inside & gave):
            with m.If(self.ahead == 0):
                m.d.sync += [self.inside.eq(0), followed.eq(1)]
            with m.Else():
                m.d.sync += self.ahead.eq(self.ahead - 1)
        m.d.comb += [
            Assert(self.count <= capacity, "more items inside than the capacity"),
            Assert(~o.valid | (self.count != 0), "an item offered that was never taken"),
            Assert(~self.inside | (self.ahead < self.count), "the tracked item's place"),
            Assert(~(self.at(0) & o.valid) | (Value.cast(o.payload) == self.data),
                   "the item offered is not the tracked one, first in line"),
        ]

    def at(self, place):
        """The tracked item has ``place`` items before it."""
        return self.inside & (self.ahead == place)
