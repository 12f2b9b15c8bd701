"""The stream primitives and the Buffet, proven by k-induction (SymbiYosys, Boolector).

Each proof states the stream rules (an item offered is held, unchanged, until taken;
nothing dropped or duplicated) and the block's own promises, and adds the invariants
induction needs, read from the block's registers. A deliberately broken skid shows
what a failure reports.
"""

from types import SimpleNamespace

import pytest
from amaranth.hdl import Assert, Assume, Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring

from sparseforge.hw.buffet import Buffet
from sparseforge.hw.pipeline import Pipeline
from sparseforge.hw.stream_units import Beside, Queue, RoundRobin, Skid
from sparseforge.synth.formal import Counterexample, Proof
from sparseforge.synth.stream_rules import Tracker, holds_offer

pytestmark = pytest.mark.synth


def passing(proof, dut, capacity, body=None):
    """Set ``proof`` to show that ``dut``, a one-in one-out stream block holding up to
    ``capacity`` items (``body``: as :meth:`Proof.open` elaborated it, if it did), obeys
    the stream rules wherever its input does and keeps its items in order. Returns the
    block's internals and the :class:`Tracker`."""
    inside = proof.include(dut if body is None else body)
    proof.free(dut.i.valid, dut.i.payload, dut.o.ready)
    holds_offer(proof, dut.i, Assume)
    holds_offer(proof, dut.o)
    return inside, Tracker(proof, dut.i, dut.o, capacity)


def skid_invariants(proof, tracker, valid, held, spare):
    """What a :class:`Skid` holds, first in line: its output register, then the item
    waiting aside."""
    proof.m.d.comb += [
        Assert(~held | valid),
        Assert(~(tracker.at(1) & held) | (spare == tracker.data)),
    ]


def test_skid_passes_every_item_once_in_order():
    dut, proof = Skid(4), Proof("skid", depth=4)
    inside, tracker = passing(proof, dut, capacity=2)
    held = inside["held"]
    skid_invariants(proof, tracker, dut.o.valid, held, inside["spare"])
    proof.m.d.comb += Assert(tracker.count == dut.o.valid + held)
    proof.run()


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
    proof = Proof("skid_hasty", depth=6)
    passing(proof, Hasty(4), capacity=2)
    with pytest.raises(Counterexample) as failure:
        proof.run()
    print(failure.value)
    assert not failure.value.inductive
    assert failure.value.trace.exists()
    assert "i__ready" in str(failure.value)


class Element:
    """One element of a buffet, chosen by the solver as it is filled, followed by its place
    from the head and its value through updates until a shrink frees it."""

    def __init__(self, proof, buffet):
        m, parent, child = proof.m, buffet.parent, buffet.child
        filled = parent.fill.valid & parent.fill.ready
        updated = buffet.update.valid & buffet.update.ready
        shrunk = Signal.like(child.shrink.payload, name="shrunk")
        m.d.comb += shrunk.eq(Mux(child.shrink.valid & child.shrink.ready,
                                  child.shrink.payload, 0))
        self.inside = Signal(name="element_inside")
        self.place = Signal(range(buffet.depth), name="element_place")
        self.data = Signal(buffet.width, name="element_data")
        self.now = Signal(buffet.width, name="element_now")    # as a read on this cycle sees it
        target = updated & (buffet.update.payload.index == self.place)
        m.d.comb += self.now.eq(Mux(target, buffet.update.payload.data, self.data))
        with m.If(self.inside):
            m.d.sync += [self.data.eq(self.now), self.place.eq(self.place - shrunk)]
            with m.If(shrunk > self.place):
                m.d.sync += self.inside.eq(0)
        with m.Elif(filled & proof.choice(name="pick")):
            m.d.sync += [self.inside.eq(1), self.data.eq(parent.fill.payload),
                         self.place.eq(child.occupancy - shrunk)]


class Credits:
    """The parent's credits: ``depth`` at first, one spent per fill, returned as ``credit``
    says. (A fill the buffet takes while the parent holds none is one whose credit
    returns on that cycle, so no parent is assumed to respect them.)"""

    def __init__(self, proof, buffet):
        m, parent = proof.m, buffet.parent
        self.held = Signal(range(2 * buffet.depth + 2), init=buffet.depth, name="credits")
        m.d.sync += self.held.eq(self.held - (parent.fill.valid & parent.fill.ready)
                                 + parent.credit)


@pytest.mark.parametrize("latency", [1, 2])
def test_buffet_keeps_its_bounds_its_credits_and_what_was_filled(latency):
    depth = 4
    buffet = Buffet(depth=depth, width=2, read_latency=latency)
    proof = Proof(f"buffet_latency{latency}", depth=6)
    body, _ = proof.open(buffet)
    probe = body.submodules.store.read_port(domain="comb")     # the harness's view
    inside = proof.include(body)
    m, parent, child = proof.m, buffet.parent, buffet.child
    for port in (parent.fill, child.read, buffet.update, child.shrink):
        proof.free(port.valid, port.payload)
        holds_offer(proof, port, Assume)
    proof.free(child.read_data.ready)
    holds_offer(proof, child.read_data)

    # Occupancy and credits.
    occupancy, credits = child.occupancy, Credits(proof, buffet)
    updated = buffet.update.valid & buffet.update.ready
    m.d.comb += [
        Assert(occupancy <= depth),
        Assert(credits.held + occupancy + parent.credit == depth),
        Assert(~(parent.fill.valid & (credits.held != 0) & ~updated) | parent.fill.ready),
        Assert(~child.read.ready | (child.read.payload < occupancy)),
        Assert(~buffet.update.ready | (buffet.update.payload.index < occupancy)),
        Assert(~child.shrink.ready | (child.shrink.payload <= occupancy)),
        Assert(inside["occupancy_up"] == occupancy + 1),
    ]

    # A filled element keeps its value, as updated, until shrunk (head: from the
    # read's address, as head is declared in a tuple with tail).
    element, mask = Element(proof, buffet), depth - 1
    head = (inside["read_stage.addr"] - child.read.payload) & mask
    address = (head + element.place) & mask
    stored = probe.data
    if latency == 2:                # a write the RAM has not taken yet
        write = inside["wr__en"] & (inside["wr__addr"] == address)
        stored = Mux(write, inside["wr__data"], probe.data)
    m.d.comb += [
        probe.addr.eq(address),
        Assert(((inside["tail"] - head) & mask) == (occupancy & mask)),
        Assert(~element.inside | ((element.place < occupancy) & (stored == element.data))),
    ]

    # No read answered that was not asked. At latency 1 the answer is the element's value
    # when the read was taken; at latency 2 the read stage is handed that value (the
    # registers that carry it on are declared in tuples, so have no names to reach).
    taken = child.read.valid & child.read.ready
    answered = child.read_data.valid & child.read_data.ready
    pending = Signal(range(4), name="pending")
    m.d.sync += pending.eq(pending + taken - answered)
    fetched = inside["read_stage.fetched"]
    asked = taken & element.inside & (child.read.payload == element.place)
    if latency == 1:                # one read in flight, its data in the RAM's read register
        watched, expected = Signal(name="watched"), Signal(buffet.width, name="expected")
        with m.If(asked):
            m.d.sync += [watched.eq(1), expected.eq(element.now)]
        with m.Elif(answered):
            m.d.sync += watched.eq(0)
        m.d.comb += [
            Assert(pending == fetched),
            Assert(~watched | fetched),
            Assert(~(watched & child.read_data.valid) | (child.read_data.payload == expected)),
        ]
    else:                           # what the read stage takes with a read of the element
        handed = Mux(inside["hit"], inside["hit_data"], inside["mem__data"])
        m.d.comb += [Assert(pending == fetched + child.read_data.valid),
                     Assert(~asked | (handed == element.now))]
    proof.run()


def fifo_invariants(proof, tracker, fifo, port, before):
    """What an :class:`~amaranth.lib.fifo.SyncFIFO` holds (``fifo``: its internals;
    ``port``: a read port of its memory) with ``before`` items in line ahead of it."""
    depth = port.memory.depth
    level, produce, consume = fifo["level"], fifo["produce"], fifo["consume"]
    used = Mux(produce >= consume, produce - consume, depth + produce - consume)
    slot = consume + tracker.ahead - before
    proof.m.d.comb += [
        port.addr.eq(Mux(slot >= depth, slot - depth, slot)),
        Assert((produce < depth) & (consume < depth)),
        Assert(used == Mux(level == depth, 0, level)),
        Assert(~(tracker.inside & (tracker.ahead >= before)) | (port.data == tracker.data)),
    ]


def queue_proof(name, depth, latency, k):
    """A Queue of ``depth`` under proof to ``k`` steps, items tracked through it, with a
    read port on its FIFO's memory: ``(queue, proof, port, inside, tracker)``."""
    queue = Queue(4, depth=depth, latency=latency)
    proof = Proof(name, depth=k)
    body, fifo = proof.open(queue, "fifo")
    port = fifo.submodules.storage.read_port(domain="comb")
    inside, tracker = passing(proof, queue, depth, body)
    return queue, proof, port, inside, tracker


@pytest.mark.parametrize("depth", [2, 4])
def test_queue_passes_every_item_once_in_order(depth):
    queue, proof, port, inside, tracker = queue_proof(f"queue_depth{depth}", depth, 1, 6)
    fifo = {name: inside[f"fifo.{name}"] for name in ("level", "produce", "consume")}
    proof.m.d.comb += [Assert(tracker.count == queue.o.valid + fifo["level"]),
                       Assert(queue.o.valid | (fifo["level"] == 0))]
    fifo_invariants(proof, tracker, fifo, port, before=1)
    proof.run()


@pytest.mark.parametrize("depth", [4, 5])
def test_registered_queue_passes_every_item_once_in_order(depth):
    queue, proof, port, inside, tracker = queue_proof(f"queue_depth{depth}_latency3", depth,
                                                      3, 8)
    # In line: the skid's output and spare registers, the FIFO's read register, its memory.
    held, ready = inside["out.held"], inside["fifo.r_rdy"]
    skid_invariants(proof, tracker, queue.o.valid, held, inside["out.spare"])
    fifo = {name: inside[f"fifo.{name}"] for name in ("produce", "consume")}
    fifo["level"] = inside["fifo.inner_level"]
    skid = queue.o.valid + held
    proof.m.d.comb += [
        Assert(tracker.count == skid + ready + fifo["level"]),
        Assert(~(tracker.at(skid) & ready) | (inside["fifo.r_data"] == tracker.data)),
    ]
    fifo_invariants(proof, tracker, fifo, port, before=skid + ready)
    proof.run()


@pytest.mark.parametrize("depth", [2, 3])
def test_buffered_queue_passes_every_item_once_in_order(depth):
    _, proof, port, inside, tracker = queue_proof(f"queue_depth{depth}_latency2", depth,
                                                  2, 8)
    # In line: the FIFO's read register (the output), its memory.
    ready = inside["fifo.r_rdy"]
    fifo = {name: inside[f"fifo.{name}"] for name in ("produce", "consume")}
    fifo["level"] = inside["fifo.inner_level"]
    proof.m.d.comb += [
        Assert(tracker.count == ready + fifo["level"]),
        Assert(~(tracker.at(0) & ready) | (inside["fifo.r_data"] == tracker.data)),
    ]
    fifo_invariants(proof, tracker, fifo, port, before=ready)
    proof.run()


def waited(proof, i, requests, grant):
    """Grants to other requesters since requester ``i`` last started to request."""
    count = Signal(range(len(grant) + 1), name=f"waited{i}")
    with proof.m.If(requests[i] & ~grant[i]):
        proof.m.d.sync += count.eq(count + grant.any())
    with proof.m.Else():
        proof.m.d.sync += count.eq(0)
    return count


@pytest.mark.parametrize("n", [3, 4])
def test_round_robin_grants_one_requester_and_each_in_turn(n):
    arbiter, proof = RoundRobin(n=n), Proof(f"round_robin{n}", depth=4)
    inside = proof.include(arbiter)
    requests, grant = proof.free(arbiter.requests), arbiter.grant
    after = inside["after"]                     # the requesters after the last granted
    proof.m.d.comb += [
        Assert((grant & ~requests) == 0),
        Assert((grant & (grant - 1)) == 0),
        Assert(grant.any() == requests.any()),
    ]
    for i in range(n):
        # At most n - 1 others first: no more than round-robin puts before it.
        before = Mux(after[i], sum(after[:i]), sum(after) + i)
        proof.m.d.comb += Assert(waited(proof, i, requests, grant) + before <= n - 1)
    proof.run()


@pytest.mark.parametrize("n", [3, 4])
def test_registered_round_robin_moves_its_grant_to_each_in_turn(n):
    arbiter, proof = RoundRobin(n=n, registered=True), Proof(f"round_robin{n}_registered", 4)
    inside = proof.include(arbiter)
    requests, grant = proof.free(arbiter.requests), arbiter.grant
    above = Signal(n)                           # the requesters after the one granted
    proof.m.d.comb += [above.eq(~(grant | (grant - 1))),
                       Assert((grant != 0) & ((grant & (grant - 1)) == 0)),
                       Assert(inside["after"] == above)]
    for i in range(n):
        # Each cycle it waits, the grant moves at least one place closer to it.
        distance = sum(Mux(grant[j], (i - j) % n, 0) for j in range(n))
        proof.m.d.comb += Assert(~requests[i] |
                                 (waited(proof, i, requests, grant) + distance <= n - 1))
    proof.run()


def pipeline(m, i, o, stages):
    """A :class:`Pipeline` of ``stages`` stages from ``i`` to ``o`` passing its items on
    unchanged; returns each stage's valid bit and register, first stage first."""
    pipe, state, held = Pipeline(m, i, o), i.payload, []
    for _ in range(stages):
        state = pipe.stage(state)
        held.append((pipe.valid, state))
    pipe.finish()
    m.d.comb += o.payload.eq(state)
    return held


def in_stages(proof, tracker, stages):
    """Every item inside is in one of ``stages`` (each a valid bit and the item's value,
    first stage first), the tracked one in the stage its place in line says."""
    proof.m.d.comb += Assert(tracker.count == sum(valid for valid, _ in stages))
    for n, (valid, value) in enumerate(stages):
        later = sum(v for v, _ in stages[n + 1:])       # the items ahead of this stage's
        proof.m.d.comb += Assert(~(tracker.at(later) & valid) | (value == tracker.data))


def test_pipeline_passes_every_item_once_in_order():
    proof, m = Proof("pipeline", depth=6), Module()
    i, o = (stream.Signature(4).create(path=(name,)) for name in ("i", "o"))
    stages = pipeline(m, i, o, 3)
    _, tracker = passing(proof, SimpleNamespace(i=i, o=o), 3, body=m)
    in_stages(proof, tracker, stages)
    proof.run()

def test_beside_rejoins_each_item_with_its_own_side():
    beside = Beside(4, 4, 3, latency=2)
    proof = Proof("beside", depth=8)
    body, fifo = proof.open(beside, "store", "fifo")
    port = fifo.submodules.storage.read_port(domain="comb")
    inside = proof.include(body)
    enter, leave, to_pipe, from_pipe = beside.enter, beside.leave, beside.to_pipe, beside.from_pipe
    proof.free(enter.valid, enter.payload, to_pipe.ready, from_pipe.valid, from_pipe.payload,
               leave.ready)
    for port_in in (enter, from_pipe):
        holds_offer(proof, port_in, Assume)
    holds_offer(proof, to_pipe)
    holds_offer(proof, leave)
    # The pipeline gives back no more items than it was given.
    m = proof.m
    piped = Signal(range(8), name="piped")
    gave, took = from_pipe.valid & from_pipe.ready, to_pipe.valid & to_pipe.ready
    m.d.sync += piped.eq(piped + took - gave)
    m.d.comb += Assume(~from_pipe.valid | (piped != 0))
    # Sides, in line through the FIFO, leave with the results in the order they entered.
    sides = [SimpleNamespace(valid=s.valid, ready=s.ready, payload=s.payload.side)
             for s in (enter, leave)]
    tracker = Tracker(proof, *sides, capacity=beside.depth)
    ready = inside["store.fifo.r_rdy"]
    fifo = {name: inside[f"store.fifo.{name}"] for name in ("produce", "consume")}
    fifo["level"] = inside["store.fifo.inner_level"]
    m.d.comb += [
        Assert(took == (enter.valid & enter.ready)),
        Assert(gave == (leave.valid & leave.ready)),
        Assert(tracker.count == ready + fifo["level"]),
        Assert(~(tracker.at(0) & ready) | (inside["store.fifo.r_data"] == tracker.data)),
    ]
    fifo_invariants(proof, tracker, fifo, port, before=ready)
    proof.run()


def test_lockstep_beside_rejoins_each_item_with_its_own_side():
    latency, proof, m = 2, Proof("beside_lockstep", depth=6), Module()
    m.submodules.beside = beside = Beside(4, 4, 3, latency=latency, lockstep=True)
    # The pipeline beside it: as many stages, passing its items on unchanged.
    stages = pipeline(m, beside.to_pipe, beside.from_pipe, latency)
    inside, tracker = passing(proof, SimpleNamespace(i=beside.enter, o=beside.leave),
                              latency, body=m)
    # Each item's side in the Beside's stage that moves with the item's own.
    both = [(valid, inside[f"beside.valid{n}"], Cat(data, inside[f"beside.stage{n}"]))
            for n, (valid, data) in enumerate(stages, 1)]
    proof.m.d.comb += [Assert(valid == side_valid) for valid, side_valid, _ in both]
    in_stages(proof, tracker, [(valid, item) for valid, _, item in both])
    proof.run()
