# amaranth: UnusedElaboratable=no
"""The Ampere 2:4 MAC and the Eureka SUDS MAC: Figure 8's four cases, parameters, lint."""

import pytest
from amaranth.sim import Simulator

from sparseforge.errors import ParameterError
from sparseforge.hw.eureka_mac import AmpereMac, EurekaMac


def step(mac, cycles):
    """Drive ``mac`` with one dict of port values per cycle; return (product, acc) after each."""
    seen = []

    async def bench(ctx):
        for values in cycles:
            for name, value in values.items():
                port = getattr(mac, name)
                if name == "operands":
                    for i, v in enumerate(value):
                        ctx.set(port[i], v)
                else:
                    ctx.set(port, value)
            product = ctx.get(mac.product)
            await ctx.tick()
            seen.append((product, ctx.get(mac.acc)))

    sim = Simulator(mac)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return seen


OPERANDS = [(-1) ** i * (i + 3) for i in range(16)]  # 3, -4, 5, ..., -18


def test_operand_mux_selects_each_of_sixteen_inputs_signed():
    mac = EurekaMac(from_below=0)
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
def test_figure_8_cases(displaced, below_displaced, added):
    mac = EurekaMac()
    local, below = 5 * OPERANDS[2], -1234
    first = {"weight": 5, "operands": OPERANDS, "select": 2, "displaced": displaced,
             "below": below, "below_displaced": below_displaced, "enable": 1, "clear": 1}
    seen = step(mac, [first, {**first, "clear": 0}, {**first, "clear": 0, "enable": 0}])
    expected = {"local": local, "local+below": local + below, "nothing": 0,
                "below": below}[added]
    assert [acc for _, acc in seen] == [expected, 2 * expected, 2 * expected]
    assert all(product == local for product, _ in seen)  # the wire up is always driven


def test_extremes_accumulate_without_overflow():
    mac = AmpereMac()
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


@pytest.mark.parametrize(("cls", "kwargs", "name"), [
    (EurekaMac, {"compaction": 3}, "compaction"),
    (EurekaMac, {"compaction": 8}, "compaction"),
    (EurekaMac, {"from_below": 2}, "from_below"),
    (AmpereMac, {"weight_width": 1}, "weight_width"),
    (AmpereMac, {"act_width": 33}, "act_width"),
    (AmpereMac, {"acc_width": 15}, "acc_width"),      # narrower than a product
    (EurekaMac, {"weight_width": 16, "acc_width": 20}, "acc_width"),
])
def test_bad_parameters_name_the_parameter(cls, kwargs, name):
    with pytest.raises(ParameterError, match=name):
        cls(**kwargs)


@pytest.mark.parametrize(("name", "params"), [
    ("ampere_mac", {}), ("ampere_mac", {"weight_width": 3, "act_width": 5, "acc_width": 8}),
    ("eureka_mac", {}), ("eureka_mac", {"from_below": 0}),
    ("eureka_mac", {"compaction": 1, "weight_width": 16, "act_width": 16, "acc_width": 48}),
])
def test_verilog_lints_clean_with_wall(lint, name, params):
    assert lint(name, params) == ""


@pytest.mark.parametrize("name", ["ampere_mac", "eureka_mac", "eureka_array", "eureka_systolic"])
def test_in_the_synthesis_report(name):
    from sparseforge.registry import get

    blk = get(name)
    assert blk.cls.REPORT
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))  # every report configuration is a valid design
