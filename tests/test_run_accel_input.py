# amaranth: UnusedElaboratable=no
"""``run accel``'s measures and its refusals of bad input.

The JSON's ``refetched_bytes``, ``buffer_utilization`` and ``mac_utilization`` worked by
hand on a small input whose dimensions differ; every refusal one line, exit 2, each at
its edge (the last value accepted, the first refused). The native run is replaced by
the golden product with set counters (the RTL itself is checked in ``test_accel.py``)."""

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.run import accel as run_accel
from sparseforge.tb.accel import AccelRun

# 3 x 5, rows of 2, 0 and 3 nonzeros; B is 5 x 3.
A = sp.csr_array(np.array([[0, 2, 0, 1, 0], [0, 0, 0, 0, 0], [3, 0, 1, 0, 4]]))
B = np.arange(15).reshape(5, 3) - 7
CYCLES, REFETCHED = 1000, 6


@pytest.fixture
def benches(monkeypatch):
    """The benches ``run accel`` builds, each answered with the golden product, CYCLES
    cycles and REFETCHED entries refetched in place of a native run."""
    built = []

    def run(bench, laps):
        built.append(bench)
        return AccelRun(bench.plan.golden, CYCLES, 0, 0, REFETCHED, {"error": 0})

    monkeypatch.setattr(run_accel, "run_natively", run)
    return built


def _write(tmp_path, a=A, b=B):
    scipy.io.mmwrite(tmp_path / "a.mtx", sp.coo_matrix(a))
    np.save(tmp_path / "b.npy", b)


def _run(tmp_path, *options, kernel="spmm"):
    return main(["run", "accel", "--kernel", kernel, str(tmp_path / "a.mtx"), "--factors",
                 str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), *options,
                 "--json"])


def test_measures_by_hand(tmp_path, capsys, benches):
    """One PE of one lane: a CISS entry is one 32-bit lane, 4 bytes, and 1 KiB holds a
    Tailor of 256. A's one band is one window (K = 5 within 8 scratchpad rows): a header
    and the nonzeros of each nonempty row, 2 + 5 = 7 entries, 7/256 of the Tailor. The
    MACs: 5 nonzeros times 3 columns of B on 1 MAC for 1000 cycles."""
    _write(tmp_path)
    _run(tmp_path, "--pes", "1x1", "--vlen", "1", "--spm-rows", "8", "--buffer-kb", "1",
         "--tiling", "uniform")
    r = json.loads(capsys.readouterr().out)
    assert r["depth"] == 256 and r["bands"] == 1
    assert r["refetched_bytes"] == REFETCHED * 4
    assert r["buffer_utilization"] == 7 / 256
    assert r["mac_utilization"] == 5 * 3 / CYCLES
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), A @ B)


def _refused(tmp_path, capsys, benches, *options, kernel="spmm"):
    """The run's refusal: one line on stderr, exit 2, nothing simulated."""
    with pytest.raises(SystemExit) as exit_:
        _run(tmp_path, *options, kernel=kernel)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and not benches
    return err


def _accepted(tmp_path, capsys, benches, *options, kernel="spmm"):
    _run(tmp_path, *options, kernel=kernel)
    assert json.loads(capsys.readouterr().out)["equal_to_golden"] and len(benches) == 1
    benches.clear()


@pytest.mark.parametrize("b, kernel", [
    (B[:4], "spmm"), (np.vstack([B, B[:1]]), "spmm"),      # A's 5 columns, B's 4 or 6 rows
    (B[:, :0], "spmm"),                                     # no column of B
    (np.arange(6), "spmm"), (np.arange(4), "spmv"),         # a vector one value off
    (B[:, :2], "spmv"),                                     # spmv of two columns
    (B.reshape(5, 3, 1), "spmm")])
def test_shapes_that_do_not_match_are_refused(tmp_path, capsys, benches, b, kernel):
    """B's rows must be A's columns (5): 4 and 6 are refused, and a vector of 4 or 6,
    no column at all, spmv of two columns or a third dimension."""
    _write(tmp_path, b=b)
    err = _refused(tmp_path, capsys, benches, "--pes", "1x1", kernel=kernel)
    assert "B is" in err or "b is" in err or "spmv takes a vector" in err


@pytest.mark.parametrize("b, kernel", [
    (B[:, :1], "spmm"), (np.arange(5), "spmm"), (np.arange(5), "spmv"),
    (B[:, :1], "spmv")])
def test_shapes_at_their_edge_are_accepted(tmp_path, capsys, benches, b, kernel):
    """One column of B (2-D or a vector of A's 5 columns), spmv's vector either way."""
    _write(tmp_path, b=b)
    _accepted(tmp_path, capsys, benches, "--pes", "1x1", kernel=kernel)
    assert np.load(tmp_path / "y.npy").shape == ((3,) if b.ndim == 1 and kernel == "spmv"
                                                 else (3, 1))


@pytest.mark.parametrize("option, value, accepted", [
    ("--spm-rows", "2", True), ("--spm-rows", "1", False), ("--spm-rows", "3", False),
    ("--buffer-kb", "1", True), ("--buffer-kb", "0", False),
    ("--pes", "6x1", True), ("--pes", "7x1", False)])
def test_the_smallest_buffers_are_accepted_and_the_next_refused(
        tmp_path, capsys, benches, option, value, accepted):
    """A scratchpad row holds a pass's R columns of one row of B whatever B's columns
    (the passes split them), so the smallest scratchpads are the hardware's 2 rows for
    every B; 1 and 3 (no power of two) are refused. A Tailor needs 8 CISS entries: 1 KiB
    holds 32 of the widest (6 PE rows, the most the AXI master's 16 in-order ports serve,
    of 32-bit lanes: 32 bytes), so 1 KiB is the least for every array, 0 refused; 7 PE
    rows are refused before the build. B here is 3 columns on a pass of R = 4."""
    _write(tmp_path)
    options = ("--pes", "1x1", option, value) if option != "--pes" else \
        ("--buffer-kb", "1", option, value)
    if accepted:
        _accepted(tmp_path, capsys, benches, *options)
    else:
        assert option in _refused(tmp_path, capsys, benches, *options)


@pytest.mark.parametrize("option, value", [("--kernel", "spttmc"), ("--tiling", "best")])
def test_an_unknown_kernel_or_policy_is_one_line(tmp_path, capsys, benches, option, value):
    """click's choice refuses them; the command line says it in one line, the choices
    named."""
    _write(tmp_path)
    args = ["run", "accel", "--kernel", "spmm", str(tmp_path / "a.mtx"), "--factors",
            str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), option, value]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1
    assert value in err and ("spmm" in err if option == "--kernel" else "swiftiles" in err)


def test_the_seconds_split_the_whole_run(monkeypatch):
    """``run_natively`` laps the native run's build, start and run as the simulator
    reports them, the rest of it as ``verilog``; ``timing`` gives the simulation
    proper's cycles a second and the whole run against it."""
    from types import SimpleNamespace

    from sparseforge.tb import native

    reported = SimpleNamespace(build_seconds=2.0, start_seconds=0.5, run_seconds=10.0)
    monkeypatch.setattr(native, "run", lambda bench, progress: SimpleNamespace(
        cycles=5, outputs={}, run=reported))
    bench = SimpleNamespace(from_outputs=lambda cycles, outputs: ("run", cycles))
    laps = run_accel.Laps()
    assert run_accel.run_natively(bench, laps) == ("run", 5)
    seconds = laps.seconds
    assert list(seconds) == ["verilog", "build", "start", "run", "read"]
    assert (seconds["build"], seconds["start"], seconds["run"]) == (2.0, 0.5, 10.0)
    assert -12.5 <= seconds["verilog"] < -12.4      # the fake took no time of its own
    t = run_accel.timing(laps, 2_000_000)
    assert t["sim_cycles_per_second"] == 200_000
    assert abs(t["whole_over_run"] - t["seconds"]["total"] / 10) < 1e-3


@pytest.mark.soak
def test_spmm_on_a_real_matrix_end_to_end(tmp_path, capsys, shared_data):
    """SpMM on nr-bio-dmela (7,393 rows, 51,138 nonzeros) with B of 16 columns through
    the default build natively: Y exact, the JSON's seconds adding up to the whole run,
    and the host's part of it (everything but the design's Verilog and its Verilator
    build, made once a configuration) within the simulation proper's seconds again."""
    matrix = shared_data / "matrices/graphs/nr-bio-dmela.mtx"
    b = np.random.default_rng(1).integers(-3, 4, (7393, 16))
    np.save(tmp_path / "b.npy", b)
    main(["run", "accel", "--kernel", "spmm", str(matrix), "--factors",
          str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), "--json"])
    r = json.loads(capsys.readouterr().out)
    s = r["seconds"]
    assert r["equal_to_golden"] and r["nnz"] == 51138 and r["passes"] == 2
    assert abs(sum(v for k, v in s.items() if k != "total") - s["total"]) < 0.05
    assert s["total"] - s["verilog"] - s["build"] < 2 * s["run"]
    assert r["mac_utilization"] == 51138 * 16 / (16 * r["cycles"])


@pytest.mark.parametrize("device, luts, carries, brams, refused", [
    ("25k", 24288, 0, 56, None), ("25k", 24289, 0, 56, "--device 45k holds it"),
    ("25k", 24286, 1, 56, None), ("25k", 24288, 0, 57, "--device 45k holds it"),
    ("45k", 43848, 0, 109, "--device 85k holds it"), ("45k", 43848, 0, 108, None),
    ("85k", 83641, 0, 1, "no ECP5 here holds it")])
def test_a_block_past_the_chosen_fpga_is_refused_before_place_and_route(
        monkeypatch, capsys, tmp_path, device, luts, carries, brams, refused):
    """``synth --device D`` refuses a block whose Yosys count already passes D's LUT4s
    (a carry cell two) or block RAMs, in one line naming the device that holds it, and
    never starts nextpnr; at the device's capacity exactly it places. Yosys's count is
    stood in for here (the accelerator's own takes minutes)."""
    from sparseforge.synth import flow

    monkeypatch.setenv("SPARSEFORGE_CACHE", str(tmp_path))      # no kept result stands in
    cells = {"LUT4": luts, "CCU2C": carries, "DP16KD": brams, "TRELLIS_FF": 10}
    monkeypatch.setattr(flow, "_stat", lambda il, top, target, nodsp=False: (cells, "", False))
    placed = []
    monkeypatch.setattr(flow, "fmax", lambda *a, **k: placed.append(a) or {"mapper": False,
                                                                          "seconds": {}})
    args = ["synth", "tailor", "--device", device, "--seeds", "1", "--json"]
    if refused:
        with pytest.raises(SystemExit) as exit_:
            main(args)
        err = capsys.readouterr().err.strip()
        assert exit_.value.code == 2 and len(err.splitlines()) == 1 and not placed
        assert f"LFE5U-{device[:-1].upper()}F" in err and "Yosys counts" in err
        assert refused in err
    else:
        main(args)
        assert len(placed) == 1
