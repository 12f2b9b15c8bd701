# amaranth: UnusedElaboratable=no
"""The AXI4 master with a word width for each port: ports of 16, 24, 64 and 128 bits on
one bus, each region an array of its own words, against the checking AXI memory
(random readiness, delays, reads answered out of order and interleaved across IDs)."""

import random

import pytest
from amaranth.back import rtlil
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.core.export import clean_verilog
from sparseforge.core.tools import verilator_lint
from sparseforge.hw.axi_master import AxiMaster
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import wire
from sparseforge.tb.axi import (
    AxiCopy,
    AxiMemory,
    OrderedReads,
    Pins,
    TaggedReads,
    Writes,
    simulate,
)

STALLS = {c: 0.5 for c in ("ar", "r", "aw", "w", "b")}
PAGE = 4096
MIXED = {"tagged": (16, 24, 128), "ordered": (64,), "write": (16, 24, 64, 128)}
"""A CSR's column ids (16 bits) and row pointers (24), the tile list (128) and the MLU's
matrix words (64, in order) read; each width written."""
BUS = {"addr_width": 14, "axi_addr": 20, "tag": 3}


def base(page, width):
    """The word address of the first word on page ``page``, in words of ``width`` bits."""
    return page * PAGE // wire.word_bytes(width)


def words(n, width):
    """``n``, or as many words of ``width`` bits as a page holds if fewer."""
    return min(n, PAGE // wire.word_bytes(width))


def transfer(dut, memory, rng, reads, writes=()):
    """Runs ``reads`` (``(read port, [(addr, value wanted)])``, tagged ports first) and
    posts ``writes`` (a list of ``(addr, value)`` a write port) at once; checks every
    answer (tagged ones in any order, in-order ones in order) and R's beat count, each
    port's words its own ``word_beats``. Returns, for each tagged port, whether its
    answers came in another order than its reads."""
    v, widths = dut.params, [*dut.widths["tagged"], *dut.widths["ordered"]]
    drivers = []
    for k, pairs in reads:
        port, cls = ((dut.tagged[k], TaggedReads) if k < v["reads"] else
                     (dut.ordered[k - v["reads"]], OrderedReads))
        drivers.append(cls(port, [a for a, _ in pairs], rng, .7, .6))
    posts = [Writes(dut.write[j], mine, rng, .7) for j, mine in enumerate(writes)]
    before = memory.r_beats
    simulate(dut, memory, [*drivers, *posts], lambda ctx: ctx.get(dut.idle),
             limit=1000 * max(len(p) for _, p in reads))
    for (k, pairs), driver in zip(reads, drivers, strict=True):
        if k < v["reads"]:
            assert sorted(driver.got) == sorted(pairs), widths[k]
        else:
            assert driver.got == [value for _, value in pairs], widths[k]
    assert memory.r_beats - before == sum(len(pairs) * wire.word_beats(widths[k], v["data"])[0]
                                          for k, pairs in reads)
    return [[a for a, _ in driver.got] != [a for a, _ in pairs]
            for (k, pairs), driver in zip(reads, drivers, strict=True) if k < v["reads"]]


def serve_mixed(widths, data, seed, n=24, per_port=32, bus=BUS):
    """Every port of ``widths`` (an :class:`AxiMaster`'s) busy at once on a bus of
    ``data`` bits, read port ``k``'s region on page ``k``, write port ``j``'s on the page
    after the read ports' ``j``-th; every landed byte checked, nothing written outside
    the regions; then each written word read back through a read port of its width
    (each write width must have one). A region holds ``n`` words, or a page's. Returns
    the memory and :func:`transfer`'s answer for the first run."""
    rng = random.Random(seed)
    dut = AxiMaster(reads=len(widths["tagged"]), ordered=len(widths["ordered"]),
                    writes=len(widths["write"]), data=data, widths=widths, **bus)
    memory = AxiMemory(Pins(dut.m_axi), data, 1 << 17, rng, STALLS)
    readers = [*widths["tagged"], *widths["ordered"]]
    reads = []
    for k, width in enumerate(readers):
        values = [rng.getrandbits(width) for _ in range(words(n, width))]
        for a, value in enumerate(values):
            memory.store(base(k, width) + a, width, value)
        addrs = [rng.randrange(len(values)) for _ in range(per_port)]
        reads.append((k, [(base(k, width) + a, values[a]) for a in addrs]))
    pages = range(len(readers), len(readers) + len(widths["write"]))
    writes = [[(base(page, width) + rng.randrange(words(n, width)), rng.getrandbits(width))
               for _ in range(per_port)] for page, width in zip(pages, widths["write"],
                                                                 strict=True)]
    landed = [dict(mine) for mine in writes]
    before = bytearray(memory.memory)
    shuffled = transfer(dut, memory, rng, reads, writes)
    for j, width in enumerate(widths["write"]):
        size = wire.word_bytes(width)
        for addr, value in landed[j].items():
            before[addr * size:(addr + 1) * size] = value.to_bytes(size, "little")
    assert memory.memory == before, "a byte other than a written word's changed"
    back = {}                           # read port: its width's written words
    for j, width in enumerate(widths["write"]):
        back.setdefault(readers.index(width), []).extend(
            (a, landed[j][a]) for a in rng.choices(list(landed[j]), k=per_port))
    transfer(dut, memory, rng, list(back.items()))
    return memory, shuffled


@pytest.mark.parametrize("data", [64, 32])
def test_ports_of_their_own_widths_share_one_bus(data):
    """On 64 bits the 16- and 24-bit words are narrow beats on their lanes, the 128-bit
    word a burst of two; on 32 bits the 64-bit word is a burst of two and the 128-bit
    one of four, interleaved with the other IDs' beats."""
    memory, shuffled = serve_mixed(MIXED, data, seed_from_env(31 + data))
    assert memory.interleaved > 0 and all(shuffled), "answered in order"


def test_ports_of_one_wide_width_keep_their_beats_apart():
    """Two tagged and two in-order ports of one width of four beats (each width's buffer
    holds its own ports' tags, the port's place among them above its tag) beside a
    width of two beats, on 32 bits: their beats interleaved, every word exact."""
    widths = {"tagged": (128, 24, 128), "ordered": (64, 128, 128), "write": (24, 64, 128)}
    memory, shuffled = serve_mixed(widths, 32, seed_from_env(41))
    assert memory.interleaved > 0 and all(shuffled), "answered in order"


@pytest.mark.parametrize("data", [64, 32])
def test_mixed_widths_lint_clean_with_wall(tmp_path, data):
    dut = AxiMaster(reads=3, ordered=1, writes=4, data=data, widths=MIXED, **BUS)
    path = tmp_path / "axi_master.v"
    path.write_text(clean_verilog(rtlil.convert(dut, name="axi_master", emit_src=False)))
    assert verilator_lint(path) == ""


class _Start:
    """Gives a copy harness its ``src``, ``dst`` and ``count`` and pulses ``start`` in the
    first cycle."""

    def __init__(self, copy, **inputs):
        self.copy, self.inputs, self.cycle = copy, inputs, 0

    def drive(self, ctx):
        for name, value in self.inputs.items():
            ctx.set(getattr(self.copy, name), value)
        ctx.set(self.copy.start, self.cycle == 0)

    def sample(self, ctx):
        self.cycle += 1

    def done(self):
        return self.cycle > 1


@pytest.mark.parametrize("read, write, data", [(16, 24, 32), (128, 64, 64), (24, 16, 64)])
def test_copy_harness_between_ports_of_different_widths(read, write, data):
    """The copy harness reads words of one width and writes them as words of another:
    zero-extended, or cut to the narrower width."""
    rng = random.Random(seed_from_env(read + write))
    copy = AxiCopy(data=data, widths={"tagged": (read,), "write": (write,)}, **BUS)
    memory = AxiMemory(Pins(copy.m_axi), data, 1 << 17, rng, STALLS)
    count, src, dst = 40, base(1, read) + 3, base(3, write) + 5
    values = [rng.getrandbits(read) for _ in range(count)]
    for i, value in enumerate(values):
        memory.store(src + i, read, value)
    simulate(copy, memory, [_Start(copy, src=src, dst=dst, count=count)],
             lambda ctx: ctx.get(copy.done) and not ctx.get(copy.error), limit=20_000)
    mask = (1 << write) - 1
    assert [memory.load(dst + i, write) for i in range(count)] == [v & mask for v in values]


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(300, 312))
def test_soak_ports_of_random_widths(seed):
    """Up to three tagged, two in-order and three write ports, each of a width drawn from
    1 to 256 bits (the accelerator's 16, 24, 64 and 128 among them), on buses of 8 to
    128 bits, longer runs."""
    rng = random.Random(seed)
    pool = [16, 24, 64, 128, *(rng.randint(1, 256) for _ in range(4))]
    tagged = [rng.choice(pool) for _ in range(rng.randint(1, 3))]
    ordered = [rng.choice(pool) for _ in range(rng.randint(0, 2))]
    write = [rng.choice([*tagged, *ordered]) for _ in range(rng.randint(1, 3))]
    serve_mixed({"tagged": tagged, "ordered": ordered, "write": write},
                rng.choice([8, 32, 64, 128]), seed, n=200, per_port=400,
                bus={"addr_width": 17, "axi_addr": 24, "tag": rng.randint(1, 4)})


@settings(max_examples=6, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 160), min_size=2, max_size=3), st.sampled_from([8, 32, 64]),
       st.integers(0, 2**32 - 1))
def test_any_widths_and_addresses(widths, data, seed):
    """A tagged port and a write port of each of two or three widths (some may be
    equal), random word addresses across each port's page, a bus of 8 to 64 bits: every
    word exact."""
    rng = random.Random(seed)
    dut = AxiMaster(reads=len(widths), ordered=0, writes=len(widths), data=data,
                    widths={"tagged": widths, "write": widths}, addr_width=16, axi_addr=24)
    memory = AxiMemory(Pins(dut.m_axi), data, 1 << 17, rng, STALLS)
    reads, writes = [], []
    for k, width in enumerate(widths):
        count = PAGE // wire.word_bytes(width)
        addrs = [base(2 * k, width) + rng.randrange(count) for _ in range(12)]
        values = {a: rng.getrandbits(width) for a in addrs}
        for a, value in values.items():
            memory.store(a, width, value)
        reads.append((k, [(a, values[a]) for a in addrs]))
        writes.append([(base(2 * k + 1, width) + rng.randrange(count),
                        rng.getrandbits(width)) for _ in range(12)])
    transfer(dut, memory, rng, reads, writes)
    for j, width in enumerate(widths):
        for addr, value in dict(writes[j]).items():
            assert memory.load(addr, width) == value


def test_a_port_width_is_refused_at_the_first_illegal_value():
    AxiMaster(data=8, tag=8, widths={"tagged": (2048, 1), "ordered": (1,)})   # 256 beats
    for widths, text in [({"tagged": (64, 0)}, r"widths\['tagged'\]\[1\]=0"),
                         ({"write": (4097,)}, r"widths\['write'\]\[0\]=4097"),
                         ({"tagged": (64,)}, r"widths\['tagged'\]: 1 widths for 2 ports"),
                         ({"reads": (64,)}, "no such ports")]:
        with pytest.raises(ParameterError, match=text):
            AxiMaster(widths=widths)
    with pytest.raises(ParameterError, match="word=2056"):      # 257 beats of 8 bits
        AxiMaster(data=8, addr_width=8, widths={"write": (2056,)})
    with pytest.raises(ParameterError, match="addr_width=29"):  # 128-bit words: 33 bits
        AxiMaster(addr_width=29, axi_addr=32, widths={"ordered": (128,)})
    AxiMaster(addr_width=28, axi_addr=32, widths={"ordered": (128,)})


def test_ports_are_listed_and_named_as_an_array_would_be():
    dut = AxiMaster(reads=2, ordered=1, writes=1, widths={"tagged": (16, 24)})
    assert dut.tagged == [dut.tagged__0, dut.tagged__1] and dut.ordered == [dut.ordered__0]
    assert [len(p.response.payload.data) for p in dut.tagged] == [16, 24]
    assert len(dut.ordered[0].response.payload) == len(dut.write[0].request.payload.data) \
        == 64
    names = {"__".join(map(str, path)) for path, _, _ in dut.signature.flatten(dut)}
    assert {"tagged__1__request__valid", "write__0__request__payload"} <= names
