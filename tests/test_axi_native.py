# amaranth: UnusedElaboratable=no
"""The native AXI4 memory with DRAM timing (tb.axi_native): raw channel traffic (narrow
beats, bursts, repeated IDs, strobes, reads after writes, accesses past the image) and
the accelerator's AxiMaster, each checked against a byte model and against the checking
Python memory on Amaranth's simulator. One Verilator build serves every test: the
harness holds both, and each test gives them its own images and settings at run time."""

import itertools
import random
import subprocess
from dataclasses import dataclass

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sparseforge.core.errors import ParameterError
from sparseforge.core.tools import verilator_on_path
from sparseforge.hw.axi import OKAY, SLVERR, AxiSignature, Pinout, pins
from sparseforge.hw.axi_master import AxiMaster
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import wire
from sparseforge.sw.dram import timing
from sparseforge.tb import native
from sparseforge.tb.axi_native import VERILOG, AxiDram, AxiDramMemory, lint_text
from sparseforge.tb.streams import Bench, Columns

CHANNELS = AxiSignature(20, 64, 3, 2)       # the raw side: 8-byte beats, 8 read IDs
CAPACITY = 1 << 19                          # four rows of every DRAM bank: rows conflict
WORD, DATA, TAG = 48, 32, 6                 # the master: two beats a word, 64 tags a port
MASTER = {"reads": 2, "ordered": 1, "writes": 1, "addr_width": 16, "word": WORD,
          "tag": TAG, "data": DATA, "axi_addr": 20}
STRIDE = wire.word_bytes(WORD)
SIZES = {"capacity": CAPACITY, "reads": 8, "in_writes": 4, "bookings": 8}


class Harness(wiring.Component):
    """Both users of the memory in one top, so one build serves every test: AXI channels
    from the bench's streams brought out as pins (``chan`` to ``pins``), and an
    :class:`~sparseforge.hw.axi_master.AxiMaster`'s ports and bus (``m_axi``)."""

    def __init__(self):
        self.master = AxiMaster(**MASTER)
        super().__init__({"chan": In(CHANNELS), "pins": Out(pins(CHANNELS)),
                          **self.master.signature.members})

    def elaborate(self, platform):
        m = Module()
        m.submodules.pinout = pinout = Pinout(CHANNELS)
        wiring.connect(m, wiring.flipped(self.chan), pinout.channels)
        wiring.connect(m, pinout.pins, wiring.flipped(self.pins))
        m.submodules.master = master = self.master
        for name, member in master.signature.members.items():
            outer, inner = getattr(self, name), getattr(master, name)
            if member.is_signature:
                for k in range(len(outer)) if isinstance(outer, list) else [None]:
                    o, i = (outer, inner) if k is None else (outer[k], inner[k])
                    wiring.connect(m, wiring.flipped(o), i)
            else:
                m.d.comb += inner.eq(outer) if member.flow == In else outer.eq(inner)
        return m


@dataclass
class Traffic:
    """What a bench sends: raw bursts (AR items, of which the last ``gated`` wait for
    every B; AW items and their W beats) and the master's reads and writes."""

    ar: list
    aw: list
    w: list
    gated: int = 0
    tagged: tuple = ((), ())
    ordered: tuple = ()
    writes: tuple = ()


@dataclass(frozen=True)
class HarnessRun:
    cycles: int
    outputs: dict
    raw: object             # tb.axi_native.AxiRun of the raw side's memory
    master: object          # and of the master's


class HarnessBench(Bench):
    """``traffic`` through the :class:`Harness`, the raw side's memory holding ``image``
    and the master's ``words`` (``WORD`` bits each, at their stride); ``interleave``
    says for each whether R may interleave bursts."""

    def __init__(self, traffic, image, words, seed, rates, interleave):
        super().__init__(Harness(), seed)
        t, self.traffic = traffic, traffic
        beats = sum(a["len"] + 1 for a in t.ar)
        after = [0] * (len(t.ar) - t.gated) + [len(t.aw)] * t.gated
        sources = [self.source_on("chan__read__ar", t.ar, rates["ar"],
                                  after={"chan__write__b": after}),
                   self.source_on("chan__write__aw", t.aw, rates["aw"]),
                   self.source_on("chan__write__w", t.w, rates["w"])]
        for k, reads in enumerate(t.tagged):
            sources.append(self.source_on(f"tagged__{k}__request", Columns(
                {"addr": list(reads), "tag": list(range(len(reads)))}), rates["port"]))
        sources.append(self.source_on("ordered__0__request", np.array(t.ordered, dtype=int),
                                      rates["port"]))
        sources.append(self.source_on("write__0__request", Columns(
            {"addr": [a for a, _ in t.writes], "data": [d for _, d in t.writes]}),
            rates["port"]))
        sinks = [self.sink_on("chan__read__r", rates["r"], beats),
                 self.sink_on("chan__write__b", rates["b"], len(t.aw)),
                 *(self.sink_on(f"tagged__{k}__response", rates["port"], len(reads))
                   for k, reads in enumerate(t.tagged)),
                 self.sink_on("ordered__0__response", rates["port"], len(t.ordered))]
        axi = {c: rates[c] for c in ("ar", "aw", "w", "r", "b")}
        packed = b"".join(int(v).to_bytes(STRIDE, "little") for v in words)
        self.raw = AxiDram(self, "pins", image, axi, interleave=interleave[0],
                           writes=len(t.aw), **SIZES)
        self.memory = AxiDram(self, "m_axi", packed, axi, interleave=interleave[1],
                              writes=len(t.writes), **SIZES)
        self.drivers = [*sources, *sinks, self.raw, self.memory]
        slowest = min(rates.values())
        dram = sum(-(-((a["len"] + 1) << a["size"]) // 64) + 1 for a in t.ar + t.aw)
        work = beats + len(t.w) + 3 * (len(t.ordered) + len(t.writes) + sum(map(len, t.tagged)))
        self.max_cycles = int(4 * (work + dram * timing().burst) / slowest) + 4 * timing().worst

    def finished(self):
        return super().finished() and self.raw.done() and self.memory.done()

    def from_outputs(self, cycles, outputs):
        return HarnessRun(cycles, outputs, self.raw.result(), self.memory.result())


# -- the traffic and its model -----------------------------------------------------------

READ_ONLY, WRITTEN = 384 << 10, 448 << 10   # regions of the raw side's image
IMAGE = WRITTEN + 2048                       # not on a page boundary: a burst crosses it


def burst(rng, id_, low, high, size=None, beats=None):
    """A legal INCR burst inside ``[low, high)`` and one 4 KiB page."""
    size = rng.choice([0, 1, 2, 3, 3]) if size is None else size
    beats = rng.choice([1, 1, 2, 4, 8, 16, 64]) if beats is None else beats
    beats = min(beats, (high - low) >> size, 4096 >> size)
    while True:
        addr = rng.randrange(low, high - (beats << size) + 1) >> size << size
        if addr % 4096 + (beats << size) <= 4096:
            return {"id": id_, "addr": addr, "len": beats - 1, "size": size, "burst": 1}


def raw_traffic(rng, reads=40, writes=16):
    """Reads of the read-only region (several IDs, repeated), writes with random
    strobes to the written region, then reads of it after every B, and accesses past the
    image: a read wholly past it, one across its end, and a write past it."""
    ar = [burst(rng, rng.randrange(8), 0, READ_ONLY) for _ in range(reads)]
    aw, w = [], []
    for _ in range(writes):
        aw.append(burst(rng, rng.randrange(4), READ_ONLY, WRITTEN))
    aw.append(burst(rng, 1, IMAGE, CAPACITY, 3, 2))
    for a in aw:
        for k in range(a["len"] + 1):
            lane = (a["addr"] + (k << a["size"])) % 8
            lanes = ((1 << (1 << a["size"])) - 1) << lane
            w.append({"data": rng.getrandbits(64), "strb": rng.getrandbits(8) & lanes,
                      "last": k == a["len"]})
    ar.append(burst(rng, 2, IMAGE, CAPACITY, 3, 4))
    ar.append({"id": 3, "addr": IMAGE - 16, "len": 3, "size": 3, "burst": 1})
    gated = [burst(rng, rng.randrange(8), READ_ONLY, WRITTEN) for _ in range(8)]
    return Traffic(ar + gated, aw, w, gated=len(gated))


def model(image, traffic):
    """The raw side's final bytes, and each ID's R beats ``{id, data, resp, last}`` in
    order, reads before the gate seeing the image and those after it every write."""
    final = bytearray(image)
    beats = iter(traffic.w)
    resps = []
    for a in traffic.aw:
        bad = False
        for k in range(a["len"] + 1):
            beat, at = next(beats), a["addr"] + (k << a["size"])
            for b in range(8):
                if beat["strb"] >> b & 1:
                    byte = at - at % 8 + b
                    bad |= byte >= len(final)
                    if byte < len(final):
                        final[byte] = beat["data"] >> (8 * b) & 0xFF
        resps.append({"id": a["id"], "resp": SLVERR if bad else OKAY})
    reads = {}
    for n, a in enumerate(traffic.ar):
        memory = image if n < len(traffic.ar) - traffic.gated else final
        for k in range(a["len"] + 1):
            at, width = a["addr"] + (k << a["size"]), 1 << a["size"]
            bad = at + width > len(memory)
            value = 0 if bad else int.from_bytes(memory[at:at + width], "little") << 8 * (at % 8)
            reads.setdefault(a["id"], []).append(
                {"id": a["id"], "data": value, "resp": SLVERR if bad else OKAY,
                 "last": int(k == a["len"])})
    return bytes(final), reads, resps


def by_id(items):
    out = {}
    for item in items:
        out.setdefault(item["id"], []).append(item)
    return out


def master_traffic(rng, n=60_000):
    """Tagged reads on both tagged ports (a tag each, so none is in flight twice),
    in-order reads, posted writes to a range of their own, and one tagged read past the
    image (SLVERR)."""
    tagged = tuple([rng.randrange(n) for _ in range(40)] for _ in range(2))
    tagged[1][-1] = n + 700                 # past the image of n + 512 words
    ordered = tuple(rng.randrange(n) for _ in range(60))
    writes = tuple((n + rng.randrange(200), rng.getrandbits(WORD)) for _ in range(40))
    return Traffic([], [], [], tagged=tagged, ordered=ordered, writes=writes)


def check_master(run, words, traffic):
    """Every master read answered with its word (0 past the image), every write landed;
    returns how often a tagged port's answer came before one of a read sent earlier."""
    image = list(words)
    for k, reads in enumerate(traffic.tagged):
        got = run.outputs[f"tagged__{k}__response"]
        assert sorted(r["tag"] for r in got) == list(range(len(reads)))
        for r in got:
            addr = reads[r["tag"]]
            assert r["data"] == (image[addr] if addr < len(image) else 0), (k, r)
    assert [int(v) for v in run.outputs["ordered__0__response"]] == \
        [image[a] for a in traffic.ordered]
    for addr, value in dict(traffic.writes).items():
        image[addr] = value
    final = run.master.image
    assert [int.from_bytes(final[a * STRIDE:(a + 1) * STRIDE], "little") for a in
            range(len(image))] == image
    assert run.master.errors == wire.word_beats(WORD, DATA)[0]     # the read past the image
    tags = [[r["tag"] for r in run.outputs[f"tagged__{k}__response"]] for k in range(2)]
    return sum(a > b for port in tags for a, b in itertools.pairwise(port))


RATES = {"ar": .7, "aw": .6, "w": .7, "r": .6, "b": .5, "port": .7}


def make(seed, interleave, rates=None):
    """The bench of ``seed``: both sides' traffic and images."""
    rng = random.Random(seed)
    image = rng.randbytes(IMAGE)
    words = [rng.getrandbits(WORD) for _ in range(60_512)]
    t = raw_traffic(rng)
    m = master_traffic(rng)
    t.tagged, t.ordered, t.writes = m.tagged, m.ordered, m.writes
    return HarnessBench(t, image, words, seed, rates or RATES, interleave), image, words


def check(bench, run, image, words):
    """Every answer and final byte of both sides as the model says; the counters."""
    t = bench.traffic
    final, reads, resps = model(image, t)
    got = run.outputs["chan__read__r"]
    assert by_id(got) == reads
    assert by_id(run.outputs["chan__write__b"]) == by_id(resps)
    assert run.raw.image == final
    assert run.raw.read_bursts == len(t.ar) and run.raw.write_bursts == len(t.aw)
    assert run.raw.bytes_read == sum((a["len"] + 1) << a["size"] for a in t.ar)
    assert run.raw.bytes_written == sum((a["len"] + 1) << a["size"] for a in t.aw)
    assert run.raw.errors == 4 + 2 + 1      # the read past, two beats across, the write
    return check_master(run, words, t)


def order_measures(bench, run):
    """Raw reads that finished before an older one of another ID, and beats that broke
    into another burst."""
    t, got = bench.traffic, run.outputs["chan__read__r"]
    queue = by_id([{"id": a["id"], "n": n} for n, a in enumerate(t.ar)])
    finished, broke, open_ = [], 0, None
    for beat in got:
        if open_ is not None and beat["id"] != open_:
            broke += 1
        open_ = None if beat["last"] else beat["id"]
        if beat["last"]:
            finished.append(queue[beat["id"]].pop(0)["n"])
    overtakes = sum(any(f > g for f in finished[:i]) for i, g in enumerate(finished))
    return overtakes, broke


# -- tests -------------------------------------------------------------------------------

pytestmark = pytest.mark.verilator


@pytest.fixture(scope="module")
def native_run(tmp_path_factory):
    """A native run: the raw side's R interleaving, the master's not."""
    bench, image, words = make(seed_from_env(11), (True, False))
    run = native.simulate(bench, work_dir=tmp_path_factory.mktemp("axi"))
    return bench, run, image, words


def test_raw_traffic_and_the_master_are_exact_natively(native_run):
    bench, run, image, words = native_run
    overtaken = check(bench, run, image, words)
    assert overtaken > 0, "the master's tagged reads came back in order"
    assert run.cycles < bench.max_cycles


def test_answers_overtake_across_ids_and_interleave_only_when_allowed(native_run):
    bench, run, *_ = native_run
    overtakes, broke = order_measures(bench, run)
    assert overtakes > 0 and broke > 0
    assert run.raw.overtakes > 0 and run.raw.interleaved == broke
    assert run.master.overtakes > 0 and run.master.interleaved == 0


def _spanned(bursts):
    """The DRAM bursts (64 bytes) the INCR ``bursts`` span, worked from their addresses."""
    size = timing().part.burst_bytes
    spans = 0
    for a in bursts:
        start = a["addr"] >> a["size"] << a["size"]
        spans += (start + ((a["len"] + 1) << a["size"]) - 1) // size - start // size + 1
    return spans


def test_counters_add_up(native_run):
    """Every DRAM burst an AXI burst spans is counted once: on the data bus, or answered
    with the burst booked just before (the master's words, 8 bytes at 8-byte strides,
    each within one; the raw side's bursts, up to 512 bytes at any size, over several;
    tests/test_axi_native_dram.py counts the shared ones by hand)."""
    bench, run, *_ = native_run
    t = bench.traffic
    assert run.master.read_bursts == sum(map(len, t.tagged)) + len(t.ordered)
    assert run.master.write_bursts == len(t.writes)
    assert run.master.bytes_read == STRIDE * run.master.read_bursts     # two 4-byte beats
    assert 0 < run.raw.read_cycles <= run.cycles
    m, r = run.master, run.raw
    assert m.dram_reads + m.shared_reads == m.read_bursts
    assert m.dram_writes + m.shared_writes == m.write_bursts
    assert r.dram_reads + r.shared_reads == _spanned(t.ar) > len(t.ar)
    assert r.dram_writes + r.shared_writes == _spanned(t.aw) > len(t.aw)
    assert min(m.dram_reads, m.dram_writes, r.dram_reads, r.dram_writes) > 0


def test_the_python_memory_gives_the_same_data(native_run):
    """The same bench on Amaranth's simulator with the checking AxiMemory: the same
    answers per ID, the same final memories; only the cycles differ."""
    bench, run, image, words = native_run
    twin, *_ = make(bench.seed, (True, False))
    python = pysim(twin)
    check(twin, python, image, words)
    assert python.raw.image == run.raw.image and python.master.image == run.master.image
    assert by_id(python.outputs["chan__read__r"]) == by_id(run.outputs["chan__read__r"])
    assert python.cycles != run.cycles


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(20, 28))
def test_soak_new_images_and_settings_reuse_the_build(native_run, seed, tmp_path):
    """Other seeds (images, traffic, coins and their rates) and every choice of
    interleaving on the two sides: exact, no build after the first, no interleaving
    where it is off, and the master's reads answered out of order."""
    rates = {c: random.Random(seed).choice([.3, .6, 1.0]) for c in RATES}
    interleave = (seed % 2 == 0, seed // 2 % 2 == 0)
    bench, image, words = make(seed_from_env(seed), interleave, rates)
    run = native.run(bench, work_dir=tmp_path)
    assert run.run.build_seconds == 0.0
    result = bench.from_outputs(run.cycles, run.outputs)
    check(bench, result, image, words)
    broke = order_measures(bench, result)[1]
    assert result.raw.interleaved == broke
    if not interleave[0]:
        assert broke == 0
    if not interleave[1]:
        assert result.master.interleaved == 0
    assert result.master.overtakes > 0


def test_bad_parameters():
    with pytest.raises(ParameterError, match="capacity=3"):
        AxiDramMemory(0, 0, 16, 64, 2, 2, timing(), 3)
    with pytest.raises(ParameterError, match="reads=1"):
        AxiDramMemory(0, 0, 16, 64, 2, 2, timing(), 1 << 10, reads=1)
    AxiDramMemory(0, 0, 16, 64, 2, 2, timing(), 8, reads=2, writes=2)   # the least
    AxiDramMemory(0, 0, 16, 512, 2, 2, timing(), 64, reads=64, writes=64)   # the most
    with pytest.raises(ParameterError, match="reads=128"):
        AxiDramMemory(0, 0, 16, 64, 2, 2, timing(), 1 << 10, reads=128)
    with pytest.raises(ParameterError, match="data_width=1024"):
        AxiDramMemory(0, 0, 16, 1024, 2, 2, timing(), 1 << 10)
    with pytest.raises(ParameterError, match="capacity=4"):
        AxiDramMemory(0, 0, 16, 64, 2, 2, timing(), 4)
    bench, *_ = make(1, (True, True))
    with pytest.raises(ParameterError, match="capacity"):
        AxiDram(bench, "pins", bytes(CAPACITY + 1), capacity=CAPACITY)
    AxiDram(bench, "pins", bytes(CAPACITY), capacity=CAPACITY)


def test_the_memory_lints_clean(tmp_path):
    """``verilator --lint-only -Wall`` on the memory's Verilog (the component's and the
    wrapper that calls its C++ model): not a warning."""
    path = tmp_path / "axi_dram.v"
    path.write_text(lint_text(addr_width=20, data_width=64, read_id=3, write_id=2,
                              timing_=timing(), capacity=CAPACITY, reads=2, writes=2,
                              bookings=2) + VERILOG)
    proc = subprocess.run([verilator_on_path(), "--lint-only", "-Wall", "-Wno-DECLFILENAME",
                           "--top-module", "axi_dram", str(path)], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "%Warning" not in proc.stdout + proc.stderr, \
        proc.stdout + proc.stderr
