# amaranth: UnusedElaboratable=no
"""``sparseforge build``: the self-check wrapper on Amaranth's simulator, and real bitstreams."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.sim import Simulator

from sparseforge.board import (
    accel_program,
    accel_run,
    accel_selftest,
    buffet_program,
    self_check,
    self_check_params,
)
from sparseforge.core.errors import ParameterError
from sparseforge.core.export import clean_verilog
from sparseforge.core.tools import verilator_lint
from sparseforge.hw.buffet import Buffet
from sparseforge.hw.compose.accel import Accel
from sparseforge.hw.lite_host import LiteOp
from sparseforge.hw.selfcheck import SelfCheck
from sparseforge.hw.stream_units import Skid
from sparseforge.sw import accel_image, regmap
from sparseforge.tb.accel import host_of

SMALL = {"depth": 8, "width": 8}


def sf(*args):
    return subprocess.run([sys.executable, "-m", "sparseforge", *args],
                          capture_output=True, text=True)


def run(check, cycles=20_000):
    """Simulate ``check`` until ``done`` and 16 cycles more (a surplus output would come
    then); return ``(passed, failed, cycle done rose on)``."""
    sim = Simulator(check)
    sim.add_clock(1e-6)
    seen = {}

    async def bench(ctx):
        for cycle in range(cycles):
            await ctx.tick()
            if ctx.get(check.done) and "cycle" not in seen:
                seen["cycle"] = cycle
            if cycle == seen.get("cycle", cycles) + 16:
                break
        seen["passed"], seen["failed"] = ctx.get(check.passed), ctx.get(check.failed)

    sim.add_testbench(bench)
    sim.run()
    assert "cycle" in seen, "the self-check never finished"
    return seen["passed"], seen["failed"], seen["cycle"]


class Tampered(wiring.Component):
    """A Buffet whose read data passes a register slice (one cycle more latency) and, if
    ``corrupt`` is given, has the low bit of that response (counted from 0) flipped."""

    def __init__(self, buffet, corrupt=None):
        self.buffet, self.corrupt = buffet, corrupt
        self.depth, self.width = buffet.depth, buffet.width
        super().__init__(buffet.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.buffet = inner = self.buffet
        m.submodules.skid = skid = Skid(self.width)
        wiring.connect(m, wiring.flipped(self.parent), inner.parent)
        child, inner_child = self.child, inner.child
        wiring.connect(m, wiring.flipped(self.update), inner.update)
        for name in ("read", "shrink"):
            wiring.connect(m, wiring.flipped(getattr(child, name)), getattr(inner_child, name))
        m.d.comb += child.occupancy.eq(inner_child.occupancy)
        wiring.connect(m, inner_child.read_data, skid.i)
        responses, flip = Signal(16), Signal()
        if self.corrupt is not None:
            m.d.comb += flip.eq(responses == self.corrupt)
        out = child.read_data
        m.d.comb += [out.valid.eq(skid.o.valid), skid.o.ready.eq(out.ready),
                     out.payload.eq(skid.o.payload ^ flip)]
        with m.If(out.valid & out.ready):
            m.d.sync += responses.eq(responses + 1)
        return m


def buffet_check(dut=None, expected=None, ops=None, **kwargs):
    dut = dut or Buffet(**SMALL)
    program, want = buffet_program(dut.depth, dut.width, seed=3, n_ops=160)
    return SelfCheck(dut, ops or program, want if expected is None else expected,
                     "child__read_data", **kwargs)


@pytest.mark.parametrize("latency", [1, 2])
@pytest.mark.parametrize("stalls", [True, False])
def test_correct_expectations_pass(latency, stalls):
    check = buffet_check(Buffet(**SMALL, read_latency=latency), stalls=stalls)
    passed, failed, cycle = run(check)
    assert passed and not failed
    # Every operation went through, one at a time; the stalls stretch the run.
    assert cycle >= len(check.program) * (1.3 if stalls else 1)


def test_the_builds_self_check_passes():
    check, params = self_check("buffet", SMALL, seed=1, n_ops=200)
    assert params["depth"] == 8 and len(check.program) == 200
    assert run(check)[:2] == (1, 0)


def test_an_extra_cycle_of_read_latency_still_passes():
    assert run(buffet_check(Tampered(Buffet(**SMALL))))[:2] == (1, 0)


@pytest.mark.parametrize("where", [0, -1])
def test_a_wrong_expected_value_fails(where):
    _, want = buffet_program(SMALL["depth"], SMALL["width"], seed=3, n_ops=160)
    want[where] ^= 0x80
    assert run(buffet_check(expected=want))[:2] == (0, 1)


@pytest.mark.parametrize("response", [0, 17])
def test_corrupted_read_data_fails(response):
    assert run(buffet_check(Tampered(Buffet(**SMALL), corrupt=response)))[:2] == (0, 1)


def test_a_surplus_output_fails():
    # The surplus read returns the one expected value again: only the count catches it.
    ops = [("parent__fill", 5), ("child__read", 0), ("child__read", 0)]
    check = buffet_check(ops=ops, expected=[5])
    assert run(check)[:2] == (0, 1)


def test_a_missing_output_fails_after_patience():
    _, want = buffet_program(SMALL["depth"], SMALL["width"], seed=3, n_ops=160)
    passed, failed, cycle = run(buffet_check(expected=[*want, 0], patience=100))
    assert (passed, failed) == (0, 1) and cycle > 100


def test_a_block_that_never_takes_an_operation_fails():
    # A read beyond the occupancy: the Buffet holds it forever.
    ops = [("parent__fill", 1), ("child__read", 3)]
    passed, failed, _ = run(buffet_check(ops=ops, expected=[1], patience=50))
    assert (passed, failed) == (0, 1)


def test_the_wrapper_rejects_unknown_ports():
    with pytest.raises(ValueError, match="'parent__credit'"):
        buffet_check(ops=[("parent__credit", 1)])


# -- the accelerator's self-test ------------------------------------------------------

def accel_build(engine):
    """The self-test ``build accel --board`` builds for ``engine``."""
    return self_check("accel", {"engine": engine}, seed=1, n_ops=0)[0]


@pytest.mark.parametrize("engine", ["tensaurus", "eureka"])
def test_the_output_words_are_what_the_host_reads_back_as_the_golden_output(engine,
                                                                             shared_data):
    accel = Accel(**self_check_params("accel", {"engine": engine}))
    plan, matrix, b = accel_run(accel, seed=1)
    image, regions = host_of(plan).image(plan, matrix, b)
    accel_image.put(image, regions["out"], host_of(plan).out_words(plan, plan.golden))
    np.testing.assert_array_equal(host_of(plan).output(plan, image, regions), plan.golden)
    assert plan.golden.any()


def test_the_spmm_self_test_passes_within_its_watchdog(shared_data):
    """SpMM of a real 18 x 18 graph (37 nonzeros) by 12 columns, two passes of 8, from the
    on-chip memory through the whole accelerator."""
    check = accel_build("tensaurus")
    accel = check.accel
    assert (accel.pes, accel.cols, accel.vlen, accel.tlen) == (2, 2, 2, 2)
    plan, matrix, _ = accel_run(accel, seed=1)
    assert matrix.shape == (18, 18) and matrix.nnz == 37 and plan.passes == 2
    # Y's words checked: 2 passes of 18 rows of tlen * cols = 4 words of vlen = 2
    # accumulators, 64 bits: a bus word each.
    assert len(check.expected) == 2 * 18 * 4
    passed, failed, cycle = run(check)
    assert (passed, failed) == (1, 0)
    assert cycle < check.limit


def test_the_pruned_gemm_self_test_fails_on_a_corrupted_expectation(shared_data):
    """The last output element off by one: every word is checked, the last one too."""
    accel = Accel(**self_check_params("accel", {"engine": "eureka"}))
    plan = accel_run(accel, 1)[0]
    # 8 x 32 at P = 2: 2 x 4 blocks; X's 8 columns two panels of 4; Y's words a block
    # row's tile of 4 x 4 accumulators of 32 bits, 8 bus words.
    assert plan.grid == (2, 4) and plan.panels == 2

    def corrupt(y):
        y[-1, -1] += 1
        return y

    check = accel_selftest(accel, 1, expected=corrupt)
    assert len(check.expected) == 2 * 2 * 8
    assert run(check)[:2] == (0, 1)


def test_a_run_never_started_hangs_and_the_watchdog_fails_it(shared_data):
    """The program without its write of ``start``: the wait for ``done`` never ends."""
    accel = Accel(**self_check_params("accel", {"engine": "eureka"}))
    start = regmap.by_name()["start"].offset
    check = accel_selftest(accel, 1, program=lambda c: [x for x in c if x["addr"] != start])
    passed, failed, cycle = run(check)
    assert (passed, failed) == (0, 1) and cycle == check.limit


def test_a_refused_register_write_fails_at_once(shared_data):
    accel = Accel(**self_check_params("accel", {"engine": "eureka"}))
    unmapped = max(r.offset for r in regmap.REGISTERS) + 4
    check = accel_selftest(accel, 1, program=lambda c: [{**c[0], "addr": unmapped}, *c])
    passed, failed, cycle = run(check)
    assert (passed, failed) == (0, 1) and cycle < 20


def test_the_self_tests_build_is_under_the_parameters_given(shared_data):
    params = self_check_params("accel", {"engine": "eureka", "compaction": 1})
    assert (params["compaction"], params["cols"], params["dw"]) == (1, 1, 8)
    assert self_check_params("accel", {"engine": 2}) == self_check_params(
        "accel", {"engine": "eureka"})
    with pytest.raises(ParameterError, match="engine=gustavson"):
        accel_run(Accel(**self_check_params("accel", {"engine": "gustavson"})), 1)


@pytest.mark.soak
def test_soak_the_pruned_gemm_self_test_passes_and_spmm_fails_a_corrupted_one(shared_data):
    check = accel_build("eureka")
    assert run(check)[:2] == (1, 0)
    accel = Accel(**self_check_params("accel", {}))

    def corrupt(y):
        y[0, 0] ^= 1
        return y

    assert run(accel_selftest(accel, 1, expected=corrupt))[:2] == (0, 1)


def test_a_response_with_a_failing_bit_fails_the_run(shared_data):
    """The wait for ``done`` fails on ``status.error``: a response's word against its
    command's ``fail`` bits, here a read of ``passes`` just written with 1."""
    accel = Accel(**self_check_params("accel", {"engine": "eureka"}))
    plan, matrix, b = accel_run(accel, 1)
    program = accel_program(plan, host_of(plan).image(plan, matrix, b)[1])
    error = next(f for f in regmap.by_name()["status"].fields if f.name == "error")
    assert [c["fail"] for c in program if c["op"] == LiteOp.WAIT] == [1 << error.lsb]
    assert not any(c["fail"] for c in program if c["op"] != LiteOp.WAIT)
    passes = regmap.by_name()["passes"].offset
    probe = [{"op": LiteOp.WRITE, "addr": passes, "data": 1, "fail": 0},
             {"op": LiteOp.READ, "addr": passes, "data": 0, "fail": 1}]
    passed, failed, cycle = run(accel_selftest(accel, 1, program=lambda c: probe + c))
    assert (passed, failed) == (0, 1) and cycle < 30


# -- the command line ---------------------------------------------------------------

def test_unknown_board_lists_the_known_ones():
    out = sf("build", "buffet", "--board", "nonesuch")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line, = out.stderr.strip().splitlines()
    assert "nonesuch" in line and "icebreaker" in line and "ulx3s" in line


def test_a_block_without_a_self_check_says_so(tmp_path):
    out = sf("build", "zero_detect", "--board", "icebreaker", "-o", str(tmp_path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line, = out.stderr.strip().splitlines()
    assert "zero_detect" in line and "no self-check" in line and "buffet" in line


def test_a_bad_parameter_names_it(tmp_path):
    out = sf("build", "buffet", "-p", "depth=12", "--board", "icebreaker", "-o", str(tmp_path))
    assert out.returncode == 2 and "depth=12" in out.stderr.strip()


def built(tmp_path, board):
    out = sf("build", "buffet", "-p", "depth=16", "-p", "width=8", "--ops", "128",
             "--board", board, "-o", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    bitstream = Path(r["bitstream"])
    assert bitstream.parent == tmp_path and bitstream.stat().st_size == r["bytes"] > 10_000
    assert r["timing_met"] and r["fmax_mhz"] > r["clock_mhz"]
    assert r["ops"] == 128 and r["checked"] > 0
    assert "build" in out.stderr          # progress went to stderr
    return r


@pytest.mark.synth
def test_icebreaker_bitstream(tmp_path):
    r = built(tmp_path, "icebreaker")
    assert r["clock_mhz"] == 12 and r["bitstream"].endswith(".bin")
    assert r["resources"]["ICESTORM_RAM"]["used"] >= 1
    assert 0 < r["resources"]["ICESTORM_LC"]["used"] < 2000
    assert r["resources"]["SB_IO"]["used"] == 3          # the clock and two LEDs


@pytest.mark.synth
def test_ulx3s_bitstream(tmp_path):
    r = built(tmp_path, "ulx3s")
    assert r["clock_mhz"] == 25 and r["bitstream"].endswith(".bit")
    assert r["device"].startswith("LFE5U-85F")
    assert 0 < r["resources"]["TRELLIS_COMB"]["used"] < 2000
    assert r["resources"]["TRELLIS_IO"]["used"] == 3     # the clock and two LEDs


@pytest.mark.soak
@pytest.mark.parametrize("engine", ["tensaurus", "eureka"])
@pytest.mark.parametrize("seed", [2, 3])
def test_soak_the_self_tests_pass_on_other_values(engine, seed, shared_data):
    check = self_check("accel", {"engine": engine}, seed=seed, n_ops=0)[0]
    passed, failed, cycle = run(check)
    assert (passed, failed) == (1, 0) and cycle < check.limit


@pytest.mark.soak
@pytest.mark.parametrize("engine", ["tensaurus", "eureka"])
def test_the_self_tests_verilog_lints_clean_with_wall(tmp_path, engine, shared_data):
    """The whole self-test as the board gets it: the accelerator, its memory, the host
    and the checker."""
    path = tmp_path / "accel_self_test.v"
    path.write_text(clean_verilog(rtlil.convert(accel_build(engine), name="accel_self_test",
                                                emit_src=False)))
    assert verilator_lint(path) == ""


@pytest.mark.soak
@pytest.mark.synth
@pytest.mark.parametrize("engine", ["tensaurus", "eureka"])
def test_ulx3s_accel_bitstream(tmp_path, engine, shared_data):
    """The accelerator's self-test on the ULX3S's 85F: its whole place and route."""
    out = sf("build", "accel", "-p", f"engine={engine}", "--board", "ulx3s",
             "-o", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["timing_met"] and r["margin_mhz"] == r["fmax_mhz"] - r["clock_mhz"] > 0
    assert r["workload"]["kernel"] == {"tensaurus": "spmm", "eureka": "pruned-gemm"}[engine]
    assert r["resources"]["DP16KD"]["used"] > 0
