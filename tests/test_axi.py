# amaranth: UnusedElaboratable=no
"""The AXI4 master and its bridges against a checking AXI memory (Amaranth's simulator),
and against cocotbext-axi's AxiRam on Verilator."""

import random

import pytest
from amaranth.lib import wiring
from amaranth.sim import Simulator

from sparseforge.core.errors import ParameterError
from sparseforge.hw.axi import AxiLiteSignature, AxiSignature, pins
from sparseforge.hw.axi_master import AxiMaster, ReadBridge, TaggedMux, WriteBridge
from sparseforge.sim.runners import cocotb_verilog, seed_from_env
from sparseforge.sw import wire
from sparseforge.tb.axi import (
    AxiMemory,
    Channels,
    OrderedReads,
    Pins,
    TaggedReads,
    Writes,
    ports_verilog,
    simulate,
)

STALLS = {c: 0.5 for c in ("ar", "r", "aw", "w", "b")}


def words(rng, memory, width, n):
    """``n`` random words of ``width`` bits stored at word addresses ``0..n-1``."""
    values = [rng.getrandbits(width) for _ in range(n)]
    for addr, value in enumerate(values):
        memory.store(addr, width, value)
    return values


# -- the word's placement -----------------------------------------------------------------

@pytest.mark.parametrize("width, data, want", [
    (32, 32, (4, 1, 2)), (33, 32, (8, 2, 2)), (16, 32, (2, 1, 1)), (1, 8, (1, 1, 0)),
    (96, 32, (16, 3, 2)), (64, 512, (8, 1, 3))])
def test_a_word_takes_its_bytes_rounded_to_a_power_of_two(width, data, want):
    assert (wire.word_bytes(width), *wire.word_beats(width, data)) == want


# -- the read bridge ----------------------------------------------------------------------

@pytest.mark.parametrize("word, data, tag", [
    (32, 32, 3),        # exactly one beat
    (33, 32, 3),        # one bit more: two beats, interleaved across IDs
    (100, 32, 2),       # four beats
    (16, 32, 3),        # narrow: two words a beat, on their lanes
    (1, 8, 1),          # the narrowest word and bus, one tag bit
    (64, 32, 8)])       # the largest tag: 256 IDs in flight
def test_read_bridge_answers_every_read_from_a_reordering_interleaving_memory(word, data,
                                                                                tag):
    rng = random.Random(seed_from_env(word * 7 + tag))
    dut = ReadBridge(12, word, tag, 32, data)
    memory = AxiMemory(Channels(read=dut.axi), data, 1 << 16, rng, STALLS)
    n = 60
    values = words(rng, memory, word, n)
    addrs = [rng.randrange(n) for _ in range(2 * n)]
    reads = TaggedReads(dut.port, addrs, rng, 0.8, 0.6)
    reads.free = reads.free[-16:]       # the largest tags
    simulate(dut, memory, [reads], lambda ctx: True)
    assert sorted(reads.got) == sorted((a, values[a]) for a in addrs)
    assert [a for a, _ in reads.got] != addrs, "the memory answered in order"
    beats = wire.word_beats(word, data)[0]
    assert memory.r_beats == beats * len(addrs)
    assert (memory.interleaved > 0) == (beats > 1)


def test_read_bridge_holds_r_only_for_a_response_not_taken():
    rng = random.Random(seed_from_env(5))
    dut = ReadBridge(10, 64, 3, 32, 32)
    memory = AxiMemory(Channels(read=dut.axi), 32, 1 << 14, rng, STALLS)
    values = words(rng, memory, 64, 50)
    reads = TaggedReads(dut.port, [rng.randrange(50) for _ in range(100)], rng, 0.8, 1.0)
    simulate(dut, memory, [reads], lambda ctx: True)
    assert len(reads.got) == 100 and all(values[a] == d for a, d in reads.got)
    assert memory.r_stalls == 0


# -- the write bridge ---------------------------------------------------------------------

@pytest.mark.parametrize("word, data", [(32, 32), (33, 32), (16, 32), (1, 8), (100, 64)])
def test_write_bridge_lands_every_write_and_is_idle_only_when_all_are_answered(word, data):
    rng = random.Random(seed_from_env(word + data))
    dut = WriteBridge(12, word, 32, data, outstanding=4)
    memory = AxiMemory(Channels(write=dut.axi), data, 1 << 16, rng, STALLS)
    writes = [(rng.randrange(40), rng.getrandbits(word)) for _ in range(120)]
    port = Writes(dut.port, writes, rng, 0.8)
    busy = []

    def check(ctx):
        if memory.answers or memory.writes or memory.b:
            assert not ctx.get(dut.idle), "idle with a write unanswered"
            busy.append(1)

    simulate(dut, memory, [port], lambda ctx: ctx.get(dut.idle), check=check)
    for addr, value in dict(writes).items():
        assert memory.load(addr, word) == value, addr
    assert memory.w_beats == wire.word_beats(word, data)[0] * len(writes)
    assert busy


def test_write_bridge_idle_falls_with_the_write_taken_and_rises_a_cycle_after_its_answer():
    """``idle`` is a register: low from the cycle after a write is taken (never idle with
    one unanswered), high again the second cycle after its B, not the first."""
    dut = WriteBridge(8, 32, 32, 32)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        request, axi = dut.port.request, dut.axi
        ctx.set(axi.aw.ready, 1)
        ctx.set(axi.w.ready, 1)
        seen.append(ctx.get(dut.idle))
        ctx.set(request.payload, {"addr": 3, "data": 7})
        ctx.set(request.valid, 1)
        await ctx.tick()
        ctx.set(request.valid, 0)
        for _ in range(4):                          # AW and W leave; no B yet
            seen.append(ctx.get(dut.idle))
            await ctx.tick()
        ctx.set(axi.b.valid, 1)
        await ctx.tick()
        ctx.set(axi.b.valid, 0)
        seen.append(ctx.get(dut.idle))
        await ctx.tick()
        seen.append(ctx.get(dut.idle))

    sim.add_testbench(bench)
    sim.run()
    assert seen == [1, 0, 0, 0, 0, 0, 1]


def test_writes_go_on_while_aw_waits():
    """AW and W are decoupled: W takes the queued words' beats while the slave holds AW."""
    rng = random.Random(seed_from_env(6))
    dut = WriteBridge(8, 32, 32, 32, outstanding=8, words=4)
    memory = AxiMemory(Channels(write=dut.axi), 32, 1 << 12, rng, {"aw": 0.0})
    port = Writes(dut.port, [(k, k) for k in range(8)], rng)
    seen = []

    def check(ctx):
        seen.append(memory.w_beats)
        if len(seen) == 20:
            memory.rates["aw"] = 1.0

    simulate(dut, memory, [port], lambda ctx: ctx.get(dut.idle), check=check)
    assert seen[19] == 4            # the queued words' beats went, their AWs held
    assert [memory.load(k, 32) for k in range(8)] == list(range(8))


def test_error_responses_set_error():
    rng = random.Random(seed_from_env(7))
    dut = AxiMaster(reads=1, ordered=0, writes=1, addr_width=8, word=32, data=32)
    memory = AxiMemory(Pins(dut.m_axi), 32, 1 << 12, rng, bad=frozenset({4 * 9}))
    reads = TaggedReads(dut.tagged[0], [3, 9], rng)
    flags = []
    simulate(dut, memory, [reads], lambda ctx: ctx.get(dut.error),
             check=lambda ctx: flags.append(ctx.get(dut.error)))
    assert flags[0] == 0 and sorted(d for _, d in reads.got) == [0, 0]
    dut = AxiMaster(reads=1, ordered=0, writes=1, addr_width=8, word=32, data=32)
    memory = AxiMemory(Pins(dut.m_axi), 32, 1 << 12, rng, bad=frozenset({4 * 9}))
    simulate(dut, memory, [Writes(dut.write[0], [(3, 1), (9, 2)], rng)],
             lambda ctx: ctx.get(dut.idle) and ctx.get(dut.error))


def test_a_response_whose_tag_names_no_port_is_dropped_and_flagged():
    """Three ports take two tag bits above theirs; tag {3, x} names none of them. A
    response reaches its port the cycle after (each port's slice)."""
    dut = TaggedMux(3, 8, 16, 2)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        response = dut.mem.response
        for port in dut.ports:
            ctx.set(port.response.ready, 1)
        for tag in (0b0110, 0b1101, 0b0001, None):      # port 1, no port, port 0, none
            ctx.set(response.valid, tag is not None)
            ctx.set(response.payload, {"tag": tag or 0, "data": tag or 0})
            seen.append((ctx.get(response.ready),
                         [ctx.get(p.response.valid) for p in dut.ports], ctx.get(dut.error)))
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert seen == [(1, [0, 0, 0], 0), (1, [0, 1, 0], 0), (1, [0, 0, 0], 1), (1, [1, 0, 0], 1)]


# -- the master ----------------------------------------------------------------------------

def serve(params, seed, n=40, per_port=50):
    """Every port of an :class:`AxiMaster` of ``params`` busy at once against the checking
    memory: tagged and in-order reads of ``n`` random words, ``per_port`` writes each to
    a range of its own; every answer and every landed word checked."""
    rng = random.Random(seed)
    dut = AxiMaster(**params)
    v = dut.params
    memory = AxiMemory(Pins(dut.m_axi), v["data"], 1 << 16, rng, STALLS)
    values = words(rng, memory, v["word"], n)
    tagged = [TaggedReads(dut.tagged[k], [rng.randrange(n) for _ in range(per_port)], rng,
                          .6, .6) for k in range(v["reads"])]
    ordered = [OrderedReads(dut.ordered[k], [rng.randrange(n) for _ in range(per_port)], rng,
                            .6, .6) for k in range(v["ordered"])]
    wanted = [list(o.addrs) for o in ordered]
    writes = [[(n + 64 * k + rng.randrange(60), rng.getrandbits(v["word"]))
               for _ in range(per_port)] for k in range(v["writes"])]
    assert n + 64 * v["writes"] <= 1 << v["addr_width"], "a write address would wrap"
    posts = [Writes(dut.write[k], writes[k], rng, .6) for k in range(v["writes"])]
    simulate(dut, memory, [*tagged, *ordered, *posts], lambda ctx: ctx.get(dut.idle),
             limit=400 * per_port)
    for port in tagged:
        assert len(port.got) == per_port and all(values[a] == d for a, d in port.got)
    for port, addrs in zip(ordered, wanted, strict=True):
        assert port.got == [values[a] for a in addrs]
    for mine in writes:
        for addr, value in dict(mine).items():
            assert memory.load(addr, v["word"]) == value
    return dut


@pytest.mark.parametrize("params", [
    {},
    {"reads": 3, "ordered": 2, "writes": 3, "word": 48, "data": 32, "tag": 2}])
def test_master_serves_every_port_through_one_bus(params):
    dut = serve(params, seed_from_env(8))
    v = dut.params
    assert dut.read_id == v["tag"] + (v["reads"] + v["ordered"] - 1).bit_length()


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(100, 112))
def test_soak_master_over_seeds_and_shapes(seed):
    rng = random.Random(seed)
    params = {"reads": rng.randint(0, 3), "ordered": rng.randint(1, 2),
              "writes": rng.randint(1, 3), "word": rng.choice([8, 16, 32, 33, 48, 100, 256]),
              "data": rng.choice([8, 32, 64]), "tag": rng.randint(1, 4), "addr_width": 10,
              "axi_addr": 16}
    serve(params, seed, n=100, per_port=300)


class ReadsBack(OrderedReads):
    """Reads each word back through an in-order port as soon as ``writes`` (a
    :class:`Writes` driver, sampled after this one) has had its write taken: ``got`` the
    words, in order."""

    def __init__(self, port, writes, rng):
        super().__init__(port, [], rng)
        self.writes, self.left = writes, len(writes.writes)

    def sample(self, ctx):
        sent = self.writes.offered
        if sent is not None and ctx.get(self.writes.port.request.ready):
            self.addrs.append(sent[0]["addr"])
        super().sample(ctx)

    def done(self):
        return len(self.got) == self.left


@pytest.mark.parametrize("after, ordered", [({0: 0}, True), ({}, False)])
def test_a_fenced_port_reads_what_the_watched_port_wrote_before(after, ordered):
    """Each word written through write port 0 is read back through in-order port 0 on the
    cycle after its write is taken, while write port 1 keeps writing elsewhere, AW and W
    stalled at random: with the port fenced after port 0 (``after={0: 0}``) every read
    sees its write; without, some read overtakes its write and sees the old word."""
    rng = random.Random(seed_from_env(21))
    dut = AxiMaster(after=after, reads=0, ordered=1, writes=2, word=32, data=32)
    memory = AxiMemory(Pins(dut.m_axi), 32, 1 << 16, rng, STALLS)
    words(rng, memory, 32, 200)
    fresh = [(a, rng.getrandbits(32)) for a in range(40)]
    mine = Writes(dut.write[0], fresh, rng, 0.7)
    back = ReadsBack(dut.ordered[0], mine, rng)
    other = Writes(dut.write[1], [(a, rng.getrandbits(32)) for a in range(100, 200)], rng)
    simulate(dut, memory, [back, mine, other], lambda ctx: ctx.get(dut.idle))
    assert len(back.got) == len(fresh)
    assert (back.got == [v for _, v in fresh]) == ordered


def test_a_fence_names_ports_the_master_has():
    AxiMaster(after={1: 1}, ordered=2, writes=2)
    for after in ({2: 0}, {0: 2}, {-1: 0}):
        with pytest.raises(ParameterError, match="after="):
            AxiMaster(after=after, ordered=2, writes=2)


def test_master_pins_have_the_standard_names():
    names = {"__".join(map(str, path)) for path, _, _ in
             AxiMaster().signature.flatten(AxiMaster())}
    for channel, fields in {"ar": ("id", "addr", "len", "size", "burst", "valid", "ready"),
                            "r": ("id", "data", "resp", "last", "valid", "ready"),
                            "aw": ("id", "addr", "len", "size", "burst", "valid", "ready"),
                            "w": ("data", "strb", "last", "valid", "ready"),
                            "b": ("id", "resp", "valid", "ready")}.items():
        assert {f"m_axi__{channel}{f}" for f in fields} <= names


def test_pins_of_a_slave_flow_the_other_way():
    lite = pins(AxiLiteSignature(8).flip())
    assert lite.members["awaddr"].flow == wiring.In and lite.members["rdata"].flow == \
        wiring.Out
    full = pins(AxiSignature(32, 64, 4, 1))
    assert full.members["arid"].flow == wiring.Out and full.members["rid"].flow == wiring.In
    assert (full.members["arid"].shape, full.members["bid"].shape) == (4, 1)


@pytest.mark.parametrize("params, name", [
    ({"tag": 9}, "tag"), ({"reads": 17}, "reads"), ({"writes": 0}, "writes"),
    ({"data": 48}, "data"), ({"reads": 0, "ordered": 0}, "reads"),
    ({"word": 2049, "data": 8, "addr_width": 8}, "word"),      # 257 beats: AXI4 has 256
    ({"addr_width": 30, "word": 64, "axi_addr": 32}, "addr_width")])  # 33 address bits
def test_parameters_are_refused_at_the_first_illegal_value(params, name):
    with pytest.raises(ParameterError, match=f"{name}="):
        AxiMaster(**params)


def test_largest_legal_values_are_taken():
    AxiMaster(word=2048, data=8, tag=8)                 # 256 beats, 256 tags
    AxiMaster(addr_width=29, word=64, axi_addr=32)      # exactly 32 byte-address bits


@pytest.mark.parametrize("params", [{}, {"reads": 4, "ordered": 0, "writes": 2, "word": 128,
                                         "data": 32},
                                    {"reads": 1, "ordered": 0, "word": 16, "data": 64}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("axi_master", params) == ""


# -- cocotbext-axi --------------------------------------------------------------------------


@pytest.mark.verilator
@pytest.mark.soak
def test_copy_through_cocotbext_axi_ram(tmp_path):
    """The copy harness's master against cocotbext-axi's AxiRam, every channel paused at
    random: 48-bit words (two beats of a 32-bit bus), eight tags in flight, 60 words."""
    cocotb_verilog("axi_ports", ports_verilog(), "sparseforge.tb.axi_cocotb", tmp_path,
                   {"seed": seed_from_env(1), "word": 48, "count": 60, "src": 5, "dst": 700,
                    "bytes": 1 << 16, "pause": 0.3, "watchdog": 4000},
                   testcase="copy_through_axi_ram")


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(200, 205))
def test_soak_copy_through_cocotbext_axi_ram(tmp_path, seed):
    cocotb_verilog("axi_ports", ports_verilog(), "sparseforge.tb.axi_cocotb", tmp_path,
                   {"seed": seed, "word": 48, "count": 1500, "src": seed, "dst": 2000,
                    "bytes": 1 << 16, "pause": 0.5, "watchdog": 60_000},
                   testcase="copy_through_axi_ram")
