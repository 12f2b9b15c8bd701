"""FST waveforms from every Verilator run: native runs, cocotb runs and the CLI's --waves."""

import struct
import subprocess
import sys

import numpy as np
import pytest

from sparseforge.hw.buffet import Buffet
from sparseforge.sim.runners import ENV_WAVES, verilator, waves_file
from sparseforge.tb import native
from sparseforge.tb.buffet import BuffetBench

PROGRAM = [("fill", 1), ("fill", 2), ("read", 1), ("read", 0), ("shrink", 2)]


def fst_header(path):
    """``(start, end)`` times from an FST file's header block, checking that it is one.

    An FST file opens with its header block: type 0, a big-endian length of
    329, start and end times, then e (2.718...) as a native double, the
    endianness test.
    """
    data = path.read_bytes()
    kind, length, start, end = struct.unpack(">BQQQ", data[:25])
    assert (kind, length) == (0, 329), data[:9].hex()
    assert struct.unpack("<d", data[25:33])[0] == pytest.approx(2.718281828459045)
    assert len(data) > 1 + length             # blocks after the header: the hierarchy, values
    return start, end


def test_waves_files_are_named_by_test_block_and_seed(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_WAVES, raising=False)
    assert waves_file("buffet", 3) is None
    monkeypatch.setenv(ENV_WAVES, str(tmp_path / "w"))
    path = waves_file("buffet", 3)
    assert path.parent == tmp_path / "w" and path.parent.is_dir()
    assert path.name == ("test_waves.py-test_waves_files_are_named_by_test_block_and_seed"
                         "--buffet-seed3.fst")
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert waves_file("buffet").name == "buffet.fst"


@pytest.mark.verilator
def test_a_native_run_writes_fst_from_a_build_of_its_own(tmp_path, monkeypatch):
    plain = native.run(BuffetBench(Buffet(depth=4, width=8), PROGRAM, 7),
                       work_dir=tmp_path / "plain",
                       waves=False)
    monkeypatch.setenv(ENV_WAVES, str(tmp_path / "waves"))
    traced = native.run(BuffetBench(Buffet(depth=4, width=8), PROGRAM, 7),
                        work_dir=tmp_path / "traced")
    # the cached build without tracing is not reused: it could not write a waveform
    assert traced.run.binary != plain.run.binary and traced.run.binary.endswith("-waves/obj/sim")
    assert traced.cycles == plain.cycles
    (fst,) = (tmp_path / "waves").iterdir()
    assert fst.name.endswith("--buffet-seed7.fst")
    start, end = fst_header(fst)
    assert start == 0 and end >= 10 * traced.cycles    # the whole run, 10 time units a cycle


@pytest.mark.verilator
@pytest.mark.soak
def test_a_cocotb_run_writes_fst(tmp_path):
    fst = tmp_path / "cocotb.fst"
    run = verilator("buffet", "sparseforge.tb.buffet", params={"depth": 4, "width": 8},
                    args={"program": PROGRAM}, seed=5, work_dir=tmp_path / "run", waves=fst)
    start, end = fst_header(fst)
    assert end > start and run.result.cycles > 0


@pytest.mark.verilator
def test_convert_rtl_writes_fst_with_waves(tmp_path):
    source = tmp_path / "m.npy"
    np.save(source, np.array([[5, 0, 0, 0], [0, 0, -2, 0], [0, 0, 0, 7]]))
    out = subprocess.run([sys.executable, "-m", "sparseforge", "convert", str(source), "--to",
                          "coo", "-o", str(tmp_path / "m.npz"), "--engine", "rtl", "--waves",
                          str(tmp_path / "waves")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    files = list((tmp_path / "waves").glob("*.fst"))
    assert files and all(fst_header(f)[1] > 0 for f in files)
