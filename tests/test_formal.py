"""The stream primitives and the Buffet, proven by k-induction (SymbiYosys, Boolector).

Each proof states the stream rules (an item offered is held, unchanged, until taken;
nothing dropped or duplicated) and the block's own promises, and adds the invariants
induction needs, read from the block's registers. A deliberately broken skid shows
what a failure reports.
"""

import pytest
from amaranth.hdl import Assert, Assume, Module
from amaranth.lib import wiring

from sparseforge.hw.stream_units import Skid
from sparseforge.synth.formal import Counterexample, Proof
from sparseforge.synth.stream_rules import Tracker, holds_offer

pytestmark = pytest.mark.synth


def passing(name, dut, capacity, depth):
    """A proof of ``dut``, a one-in one-out stream block holding up to ``capacity`` items:
    its input obeys the stream rules, its output must, and it keeps its items in order.
    Returns the proof, the block's internals and the :class:`Tracker`."""
    proof = Proof(name, depth)
    inside = proof.include(dut)
    proof.free(dut.i.valid, dut.i.payload, dut.o.ready)
    holds_offer(proof, dut.i, Assume)
    holds_offer(proof, dut.o)
    return proof, inside, Tracker(proof, dut.i, dut.o, capacity)


def skid_invariants(proof, tracker, valid, held, spare):
    """What a :class:`Skid` holds: its output register, then the item waiting aside."""
    proof.m.d.comb += [
        Assert(tracker.count == valid + held),
        Assert(~held | valid),
        Assert(~tracker.at(1) | (spare == tracker.data)),
    ]


def test_skid_passes_every_item_once_in_order():
    dut = Skid(4)
    proof, inside, tracker = passing("skid", dut, capacity=2, depth=4)
    # The skid register has no name of its own in the design (Amaranth names it).
    skid_invariants(proof, tracker, dut.o.valid, inside["held"], inside["$signal"])
    assert proof.run() < 30


class Hasty(wiring.Component):
    """A skid whose input claims to be ready while its skid register is full."""

    def __init__(self, shape):
        self.skid = Skid(shape)
        super().__init__(self.skid.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.skid = skid = self.skid
        wiring.connect(m, wiring.flipped(self.i), skid.i)
        wiring.connect(m, skid.o, wiring.flipped(self.o))
        m.d.comb += self.i.ready.eq(1)
        return m


def test_broken_skid_fails_with_its_trace():
    proof, _, _ = passing("skid_hasty", Hasty(4), capacity=2, depth=6)
    with pytest.raises(Counterexample) as failure:
        proof.run()
    print(failure.value)
    assert not failure.value.inductive
    assert failure.value.trace.exists()
    assert "i__ready" in str(failure.value)
