# amaranth: UnusedElaboratable=no
"""The Ampere 2:4 MAC and the Eureka SUDS MAC: Figure 8's four cases, pipeline depths, the
pre-adder, FP16 bit for bit against the numpy model, parameters, lint."""

import math

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from sparseforge.core.errors import ParameterError
from sparseforge.hw.eureka_mac import AmpereMac, EurekaMac
from sparseforge.hw.float import fp32_add
from sparseforge.sim.models import eureka as model
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.layers import squeezenet_layers


def apply(ctx, mac, values):
    """Set ``mac``'s input ports to ``values`` (port name -> value; ``operands`` a list)."""
    for name, value in values.items():
        port = getattr(mac, name)
        if name == "operands":
            for i, v in enumerate(value):
                ctx.set(port[i], v)
        else:
            ctx.set(port, value)


def drive(mac, cycles, late=None):
    """Drive ``mac`` with one dict of port values per cycle, then idle (``enable`` 0) for
    ``mac.pipeline`` cycles; return (product, acc) seen on every cycle, acc after its edge.

    ``late`` maps a port to its values for cycle t's inputs presented on cycle
    t + ``pipeline``, as the MAC below's ``product`` arrives at ``below``.
    """
    cycles = [*cycles, *[{**cycles[-1], "enable": 0}] * mac.pipeline]
    for name, values in (late or {}).items():
        padded = [0] * mac.pipeline + list(values)
        cycles = [{**c, name: padded[t]} for t, c in enumerate(cycles)]
    seen = []

    async def bench(ctx):
        for values in cycles:
            apply(ctx, mac, values)
            product = ctx.get(mac.product)
            await ctx.tick()
            seen.append((product, ctx.get(mac.acc)))

    sim = Simulator(mac)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return seen


def step(mac, cycles, late=None):
    """:func:`drive`, the outputs of cycle t's inputs at index t: (product, acc) per cycle."""
    seen = drive(mac, cycles, late)
    return seen[mac.pipeline:]


OPERANDS = [(-1) ** i * (i + 3) for i in range(16)]  # 3, -4, 5, ..., -18


PIPELINES = pytest.mark.parametrize("pipeline", [0, 1, 2])


@PIPELINES
def test_operand_mux_selects_each_of_sixteen_inputs_signed(pipeline):
    mac = EurekaMac(from_below=0, pipeline=pipeline)
    cycles = [{"weight": -7, "operands": OPERANDS, "select": s, "enable": 1, "clear": s == 0}
              for s in range(16)]
    seen = step(mac, cycles)
    assert [p for p, _ in seen] == [-7 * v for v in OPERANDS]
    assert seen[-1][1] == -7 * sum(OPERANDS)


@pytest.mark.parametrize(("displaced", "below_displaced", "added"), [
    (0, 0, "local"),          # (1) neither value displaced
    (0, 1, "local+below"),    # (2) the value below belongs here: three-input addition
    (1, 0, "nothing"),        # (3) this value belongs above: its product goes up
    (1, 1, "below"),          # (4) both: up one hop, and the one below is added here
])
@PIPELINES
def test_figure_8_cases(displaced, below_displaced, added, pipeline):
    mac = EurekaMac(pipeline=pipeline)
    local, below = 5 * OPERANDS[2], -1234
    first = {"weight": 5, "operands": OPERANDS, "select": 2, "displaced": displaced,
             "below": below, "below_displaced": below_displaced, "enable": 1, "clear": 1}
    seen = step(mac, [first, {**first, "clear": 0}, {**first, "clear": 0, "enable": 0}])
    expected = {"local": local, "local+below": local + below, "nothing": 0,
                "below": below}[added]
    assert [acc for _, acc in seen] == [expected, 2 * expected, 2 * expected]
    assert all(product == local for product, _ in seen)  # the wire up is always driven


@PIPELINES
def test_extremes_accumulate_without_overflow(pipeline):
    mac = AmpereMac(pipeline=pipeline)
    cycles = [{"weight": -128, "operands": [-128, 127, 0, 1], "select": 0, "enable": 1,
               "clear": i == 0} for i in range(100)]
    seen = step(mac, cycles)
    assert seen[-1] == (16384, 100 * 16384)


def test_ampere_mac_has_a_four_input_mux_and_no_suds_ports():
    mac = AmpereMac()
    assert len(mac.operands) == 4 and len(mac.select) == 2
    assert not hasattr(mac, "displaced")
    assert len(EurekaMac(compaction=4).operands) == 16
    assert len(EurekaMac(compaction=2).select) == 3


class Pair(Elaboratable):
    """Two Eureka MACs of one column wired as in the sub-array: ``lower``'s product goes up."""

    def __init__(self, **kwargs):
        self.upper = EurekaMac(from_below=1, **kwargs)
        self.lower = EurekaMac(from_below=0, **kwargs)

    def elaborate(self, platform):
        m = Module()
        m.submodules.upper, m.submodules.lower = self.upper, self.lower
        m.d.comb += self.upper.below.eq(self.lower.product)
        return m


def run_pair(pair, cycles):
    """Per cycle, (upper acc, lower acc) after its edge; ``cycles`` of (upper, lower) port
    dicts (``below_displaced`` of the upper one follows the lower's ``displaced``)."""
    seen = []

    async def bench(ctx):
        for values in cycles:
            for mac, ports in zip((pair.upper, pair.lower), values, strict=True):
                apply(ctx, mac, ports)
            ctx.set(pair.upper.below_displaced, values[1].get("displaced", 0))
            await ctx.tick()
            seen.append((ctx.get(pair.upper.acc), ctx.get(pair.lower.acc)))

    sim = Simulator(pair)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return seen


def random_pair_cycles(rng, count, pipeline):
    """``count`` random cycles of a MAC pair (outputs of 1 to 6 cycles), then ``pipeline``
    idle ones."""
    cycles, clear = [], 1
    for _ in range(count):
        row = []
        for _mac in range(2):
            row.append({"weight": int(rng.integers(-128, 128)),
                        "operands": rng.integers(-128, 128, 16).tolist(),
                        "select": int(rng.integers(16)), "displaced": int(rng.random() < 0.4),
                        "enable": int(rng.random() < 0.8), "clear": clear})
        row[0]["displaced"] = 0  # the upper MAC is MAC row 0 here: nothing above it
        cycles.append(row)
        clear = int(rng.random() < 0.25)
    return cycles + [[{**c, "enable": 0} for c in cycles[-1]]] * pipeline


def test_pipeline_depths_add_their_latency_and_keep_the_results():
    rng = np.random.default_rng(seed_from_env(3))
    inputs = random_pair_cycles(rng, 60, 0)
    reference = run_pair(Pair(pipeline=0), inputs)
    for pipeline in (1, 2):
        pair = Pair(pipeline=pipeline)
        assert pair.upper.latency == pair.lower.latency == 1 + pipeline
        seen = run_pair(pair, inputs + [[{**c, "enable": 0} for c in inputs[-1]]] * pipeline)
        assert seen[:pipeline] == [(0, 0)] * pipeline  # nothing accumulated yet
        assert seen[pipeline:] == reference  # the same sums, exactly ``pipeline`` cycles later


def test_pipelined_product_is_late_by_the_depth():
    cycles = [{"weight": w, "operands": OPERANDS[:4], "select": w % 4, "enable": 1,
               "clear": w == 1} for w in range(1, 6)]
    for pipeline in (0, 1, 2):
        seen = drive(AmpereMac(pipeline=pipeline), cycles)
        products = [p for p, _ in seen]
        assert products[pipeline:] == [w * OPERANDS[w % 4] for w in range(1, 6)]


def test_pre_adder_is_one_bit_wider_than_a_product():
    # -128 * -128 + 16384 overflows a product's 16 bits: only a 17-bit pre-adder holds it.
    # (No pipeline: ``below`` then belongs to the cycle it is given on.)
    mac = EurekaMac(pipeline=0)
    base = {"weight": -128, "operands": [-128] * 16, "select": 0, "displaced": 0,
            "below_displaced": 1, "enable": 1}
    seen = step(mac, [{**base, "below": 16384, "clear": 1},
                      {**base, "weight": 127, "below": -32768, "clear": 1}])
    assert [acc for _, acc in seen] == [32768, 127 * -128 - 32768]


@pytest.mark.synth
def test_three_input_add_is_a_pre_adder_and_the_accumulator_adder():
    """Two carry chains, not one three-operand sum of LUTs: the pre-adder adds its own
    carry chain (two bits a CCU2C) and little else over the two-input MAC."""
    from sparseforge.synth.flow import logic, synthesize

    two, three = (synthesize("eureka_mac", {"from_below": f}, "ecp5", with_fmax=False)
                  for f in (0, 1))
    pre = len(EurekaMac().product) + 1
    assert three["carry"] - two["carry"] == math.ceil(pre / 2)
    # At most the chain's positions and one LUT a product bit for the second 2:1 mux.
    assert logic(three) - logic(two) <= 2 * math.ceil(pre / 2) + len(EurekaMac().product)


def f16(values):
    return np.asarray(values, dtype=np.float16).view(np.uint16).astype(np.int64).tolist()


def f32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.int64)


def fp16_check(pipeline, weights, operands, displaced, below, below_displaced, length):
    """One FP16 Eureka MAC over outputs of ``length`` cycles each: weight ``weights[t]``
    times ``operands[t]`` (selected from 16), ``below`` (float32) from the MAC below; every
    accumulator bit for bit equal to the numpy model's."""
    mac = EurekaMac(dtype="fp16", pipeline=pipeline)
    rng = np.random.default_rng(0)
    lanes = rng.integers(0, 16, len(weights))
    cycles = []
    for t in range(len(weights)):
        noise = f16(rng.standard_normal(16))
        noise[lanes[t]] = f16(operands[t])
        cycles.append({"weight": f16(weights[t]), "operands": noise,
                       "select": int(lanes[t]), "displaced": int(displaced[t]),
                       "below_displaced": int(below_displaced[t]), "enable": 1,
                       "clear": int(t % length == 0)})
    seen = step(mac, cycles, {"below": f32_bits(below).tolist()})
    seen = np.array([acc for _, acc in seen], dtype=np.int64)
    local = np.where(displaced, np.float32(0), model.products(weights, operands, "fp16"))
    below = np.where(below_displaced, np.asarray(below, dtype=np.float32), np.float32(0))
    expected = model.accumulate(local.reshape(-1, length), below.reshape(-1, length))
    mismatch = np.flatnonzero(seen != f32_bits(expected).ravel())
    assert not mismatch.size, (f"{mismatch.size} accumulators differ, first at cycle "
                               f"{mismatch[0]}: {seen[mismatch[0]]:#x}, model "
                               f"{f32_bits(expected).ravel()[mismatch[0]]:#x}")
    return len(weights)


TIE = 2.0 ** -12  # TIE * TIE is half an ulp of 1.0 in FP32


@pytest.mark.parametrize("pipeline", [0, 2])
def test_fp16_directed_cases_bit_for_bit(pipeline):
    """Ties to even, cancellation to +0, signed zeros, subnormal inputs flushed, sticky bits
    at every alignment distance, carries and long cancellations."""
    w = [1.0, TIE, 1.0, TIE, TIE, 1.0, 1.0, -1.0, -0.0, 1.0, 6e-6, 2.0, 3.0, 60000.0,
         -1.5, 1.0, 1.0, 0.0, 2.0 ** -14, -3.0, 1.0, -1.0, 0.5, 1.0, 65504.0]
    x = [1.0, TIE, 2.0 ** -10, TIE, -TIE, 1.5, -1.5, 0.0, 5.0, 6e-6, 1.0, 2.0 ** -14, 3.0,
         60000.0, 1.5, -1.0, 2.0 ** -11, -0.0, 2.0 ** -14, 1.0 / 3, -0.1, 0.1, -2.0, 1.0,
         -65504.0]
    n = len(w)
    rng = np.random.default_rng(1)
    below = model.products(rng.standard_normal(n), rng.standard_normal(n), "fp16")
    below[::5] = -model.products(w[::5], x[::5], "fp16")  # the same magnitude: cancellation
    zero = np.zeros(n, dtype=bool)
    for displaced, below_displaced in ((zero, zero), (zero, rng.random(n) < 0.5),
                                       (rng.random(n) < 0.3, rng.random(n) < 0.5)):
        fp16_check(pipeline, w, x, displaced, below, below_displaced, 5)


class Adder(Elaboratable):
    def __init__(self):
        self.a, self.b, self.out = Signal(32), Signal(32), Signal(32)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.out.eq(fp32_add(m, self.a, self.b))
        return m


def test_fp32_adder_rounds_as_numpy_at_every_alignment():
    """Random sums of FP16 products (the adder's domain) at exponent distances 0 to 30."""
    rng = np.random.default_rng(seed_from_env(5))
    count = 3000

    def spread():  # FP16 values over the whole normal range
        return (rng.choice([-1, 1], count) * (1 + rng.integers(0, 1024, count) / 1024)
                * 2.0 ** rng.integers(-14, 16, count))
    a = model.products(spread(), spread(), "fp16")
    b = model.products(spread(), spread(), "fp16")
    b[::7] = -a[::7] * np.float32(1 + 2.0 ** -20)  # near-cancellations
    expected = f32_bits(a + b)
    adder, got = Adder(), []

    async def bench(ctx):
        for x, y in zip(f32_bits(a).tolist(), f32_bits(b).tolist(), strict=True):
            ctx.set(adder.a, x)
            ctx.set(adder.b, y)
            got.append(ctx.get(adder.out))

    sim = Simulator(adder)
    sim.add_testbench(bench)
    sim.run()
    assert (np.array(got) == expected).all()


def test_fp16_on_a_real_pruned_layer_bit_for_bit(shared_data):
    """A real SqueezeNet layer's FP16 weights row by row against real-valued FP16
    activations; the products of the next row arrive from below, some displaced."""
    layer = read_matrix(squeezenet_layers(shared_data)[1]).tocsr()
    rng = np.random.default_rng(seed_from_env(7))
    length, outputs = 16, 60
    rows = [r for r in range(layer.shape[0] - 1)
            if np.diff(layer.indptr)[r] >= length and np.diff(layer.indptr)[r + 1] >= length]
    activations = rng.standard_normal(layer.shape[1]).astype(np.float16)
    weights, operands, below = [], [], []
    for r in rows[:outputs]:
        for row, into in ((r, (weights, operands)), (r + 1, None)):
            start = layer.indptr[row]
            cols = layer.indices[start:start + length]
            values = layer.data[start:start + length].astype(np.float16)
            if into:
                into[0].extend(values)
                into[1].extend(activations[cols])
            else:
                below.extend(model.products(values, activations[cols], "fp16"))
    n = len(weights)
    assert n == length * outputs
    displaced, below_displaced = rng.random(n) < 0.3, rng.random(n) < 0.4
    fp16_check(2, weights, operands, displaced, np.array(below, dtype=np.float32),
               below_displaced, length)


@pytest.mark.parametrize(("cls", "kwargs", "name"), [
    (EurekaMac, {"compaction": 3}, "compaction"),
    (EurekaMac, {"compaction": 8}, "compaction"),
    (EurekaMac, {"from_below": 2}, "from_below"),
    (AmpereMac, {"weight_width": 1}, "weight_width"),
    (AmpereMac, {"act_width": 33}, "act_width"),
    (AmpereMac, {"acc_width": 15}, "acc_width"),      # narrower than a product
    (EurekaMac, {"weight_width": 16, "acc_width": 20}, "acc_width"),
    (EurekaMac, {"pipeline": 3}, "pipeline"),
    (AmpereMac, {"dtype": "fp32"}, "dtype"),
])
def test_bad_parameters_name_the_parameter(cls, kwargs, name):
    with pytest.raises(ParameterError, match=name):
        cls(**kwargs)


@pytest.mark.parametrize(("name", "params"), [
    *[("ampere_mac", c) for c in AmpereMac.REPORT], *[("eureka_mac", c) for c in EurekaMac.REPORT],
    ("ampere_mac", {"weight_width": 3, "act_width": 5, "acc_width": 8}),
    ("eureka_mac", {"compaction": 1, "weight_width": 16, "act_width": 16, "acc_width": 48}),
    *[("eureka_mac", {"pipeline": p, "dtype": d}) for p in (0, 1) for d in ("int8", "fp16")],
    ("eureka_mac", {"dtype": "fp16", "from_below": 0}),
])
def test_verilog_lints_clean_with_wall(lint, name, params):
    assert lint(name, params) == ""


@pytest.mark.parametrize("name", ["ampere_mac", "eureka_mac", "eureka_array", "eureka_systolic"])
def test_in_the_synthesis_report(name):
    from sparseforge.core.registry import get

    blk = get(name)
    assert blk.cls.REPORT
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))  # every report configuration is a valid design
