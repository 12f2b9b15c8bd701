# amaranth: UnusedElaboratable=no
"""A native run's Verilog generated once for its design (sparseforge.tb.native.top_verilog):
kept by the component's class and parameters and the drivers' units, made anew after an
edit of the package, never kept for a component that does not say what it is made of."""

import random

import pytest

from sparseforge.core import export
from sparseforge.hw.buffet import Buffet
from sparseforge.hw.regfile import RegisterFile
from sparseforge.tb import native
from sparseforge.tb.accel import AccelHarness
from sparseforge.tb.buffet import BuffetBench, random_program
from sparseforge.tb.lite_host import HostedRegisters

from .test_lite_host import HostOnRegisters


@pytest.fixture
def conversions(monkeypatch, tmp_path):
    """The cache in ``tmp_path``; the list of the designs converted to RTLIL since."""
    monkeypatch.setenv("SPARSEFORGE_CACHE", str(tmp_path))
    made, convert = [], native.rtlil.convert

    def counted(top, **kwargs):
        made.append(type(top.bench.component).__name__)
        return convert(top, **kwargs)
    monkeypatch.setattr(native.rtlil, "convert", counted)
    return made


def _bench(depth, seed=1):
    program = random_program(random.Random(seed), depth, 8, 40)
    return BuffetBench(Buffet(depth=depth, width=8), program, seed)


def test_a_designs_verilog_is_generated_once_and_again_after_an_edit(conversions, tmp_path,
                                                                     capfd, monkeypatch):
    first = native.top_verilog(native.NativeTop(_bench(4)), "buffet")
    assert conversions == ["Buffet"]
    out, err = capfd.readouterr()       # progress on stderr alone (stdout is --json's)
    assert not out and "buffet: generating the design's Verilog" in err
    # Another program, seed and rates: the same design, its Verilog from the cache.
    again = native.top_verilog(native.NativeTop(_bench(4, seed=2)), "buffet")
    assert again == first and conversions == ["Buffet"]
    assert capfd.readouterr() == ("", "")
    # No half-written file is left for a parallel worker to read.
    assert not list((tmp_path / "verilog").rglob("*.part"))
    assert len(list((tmp_path / "verilog" / "native").glob("*.v"))) == 1
    # An edit of the package's source: made anew.
    monkeypatch.setattr(export, "source_digest", lambda: "edited")
    assert native.top_verilog(native.NativeTop(_bench(4)), "buffet") == first
    assert conversions == ["Buffet", "Buffet"]


def test_the_drivers_units_key_it_their_run_time_settings_do_not():
    """A stream's width and the counts it waits for are in the Verilog; its items, coin
    and seed are images read at run time."""
    def units(bench):
        return native.NativeTop(bench).units()
    assert units(_bench(4, seed=1)) == units(_bench(4, seed=2))
    assert units(_bench(4))[0] == ("source", "parent__fill", 8, [])
    assert units(_bench(4))[-1] == ("sink", "child__read_data", 8)
    assert units(_bench(8))[1] == ("source", "child__read", 3, ["child__shrink", "update"])


def test_only_components_that_say_what_they_are_made_of_are_kept():
    assert native.design_identity(Buffet(depth=4, width=8)) == [
        "sparseforge.hw.buffet.Buffet", Buffet(depth=4, width=8).block_params]
    assert native.design_identity(Buffet(depth=8, width=8)) != native.design_identity(
        Buffet(depth=4, width=8))

    class Other(Buffet):                # a subclass may hold state of its own
        pass
    assert native.design_identity(Other(depth=4, width=8)) is None
    # A harness says its target's: the accelerator's parameters.
    harness = AccelHarness(pes=2, cols=1, depth=8, fifo=2)
    target = harness.design["target"]
    assert target[0] == "sparseforge.hw.compose.accel.Accel" and target[1]["pes"] == 2
    assert native.design_identity(harness)[1]["passed"] == ("m_axi",)
    assert native.design_identity(HostedRegisters(RegisterFile(addr_width=8))) is not None
    assert native.design_identity(HostOnRegisters(40)) is None         # its delay unsaid


@pytest.mark.verilator
@pytest.mark.soak
def test_a_second_native_run_skips_the_conversion(monkeypatch):
    """The real cache: the second run converts nothing and takes the same cycles."""
    made, convert = [], native.rtlil.convert
    monkeypatch.setattr(native.rtlil, "convert",
                        lambda top, **kw: made.append(1) or convert(top, **kw))
    first = native.run(_bench(4, seed=3))
    made.clear()
    second = native.run(_bench(4, seed=3))
    assert not made and second.cycles == first.cycles
    assert second.outputs["child__read_data"].tolist() == \
        first.outputs["child__read_data"].tolist()
