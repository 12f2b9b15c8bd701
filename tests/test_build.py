# amaranth: UnusedElaboratable=no
"""``sparseforge build``: the self-check wrapper on Amaranth's simulator, and real bitstreams."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.sim import Simulator

from sparseforge.board import buffet_program, self_check
from sparseforge.hw.buffet import Buffet
from sparseforge.hw.selfcheck import SelfCheck
from sparseforge.hw.stream_units import Skid

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
