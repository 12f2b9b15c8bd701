# amaranth: UnusedElaboratable=no
"""``run accel``'s memory options, ``--mem-latency`` and ``--mem-bytes-per-cycle``: each
edge accepted and carried to the bench's memory (its run-time settings, no new build)
and to the host model (:func:`~sparseforge.sw.accel_model.dram`), echoed in the JSON;
the first value past each edge refused in one line, exit 2. The native run itself is
replaced here (its timing is checked against the model in ``test_accel_model.py``'s
soak)."""

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.run import accel as run_accel
from sparseforge.sw import accel_model, accel_plan
from sparseforge.tb import accel as tb_accel
from sparseforge.tb import axi_native
from sparseforge.tb.accel import AccelRun


def _inputs(tmp_path):
    """A (10 x 12, 30 nonzeros) and B (12 x 3) on disk."""
    rng = np.random.default_rng(4)
    a = sp.random_array((10, 12), density=0.25, rng=rng, format="csr")
    a.data = rng.integers(1, 5, a.nnz).astype(float)
    b = rng.integers(-2, 3, (12, 3))
    scipy.io.mmwrite(tmp_path / "a.mtx", sp.coo_matrix(a))
    np.save(tmp_path / "b.npy", b)
    return sp.csr_array(a), b


def _settings(bench):
    """The memory's run-time settings as the native run reads them (one 64-bit word
    each), by name."""
    sources, _ = bench.memory.images()
    values = np.ascontiguousarray(sources[0].words).view(np.uint64).ravel()
    return dict(zip(axi_native.SETTINGS, map(int, values), strict=True))


@pytest.fixture
def benches(monkeypatch):
    """The benches ``run accel`` builds (its AxiDram included), each answered with the
    golden product in place of a native run."""
    built = []

    def run(bench, laps):
        built.append(bench)
        return AccelRun(bench.plan.golden, 1000, 0, 0, 0, {"error": 0})

    monkeypatch.setattr(run_accel, "run_natively", run)
    return built


def _run(tmp_path, *options):
    return main(["run", "accel", "--kernel", "spmm", str(tmp_path / "a.mtx"), "--factors",
                 str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), "--pes", "2x1",
                 "--buffer-kb", "1", *options, "--json"])


@pytest.mark.parametrize("latency, per_cycle", [(4095, 8.0), (0, 1 / 64)])
def test_memory_options_at_their_edges(tmp_path, capsys, benches, latency, per_cycle):
    """The largest latency with the full bus, no latency with the slowest channels: the
    bench's memory takes them (its settings packed for the native run), the model
    predicts with the matching memory, the JSON says them."""
    a, b = _inputs(tmp_path)
    _run(tmp_path, "--mem-latency", str(latency), "--mem-bytes-per-cycle", str(per_cycle))
    r = json.loads(capsys.readouterr().out)
    assert (r["mem_latency"], r["mem_bytes_per_cycle"]) == (latency, per_cycle)
    (bench,) = benches
    settings = _settings(bench)
    rate = per_cycle / 8
    assert settings["latency"] == latency
    assert all(settings[f"{c}_rate"] == round(rate * 65536) for c in axi_native.CHANNELS)
    model = accel_model.predict(bench.plan, a, accel_model.dram(latency, rate), tags=8)
    assert r["model_cycles"] == model.cycles
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), a @ b)


def test_memory_defaults_are_the_models_dram(tmp_path, capsys, benches):
    """Without the options: no latency added, 5.6 bytes a cycle (every channel at 70%),
    the model's :data:`~sparseforge.sw.accel_model.DRAM`."""
    a, _ = _inputs(tmp_path)
    _run(tmp_path)
    r = json.loads(capsys.readouterr().out)
    assert (r["mem_latency"], r["mem_bytes_per_cycle"]) == (0, 5.6)
    assert _settings(benches[0])["latency"] == 0
    plan = benches[0].plan
    assert r["model_cycles"] == accel_model.predict(plan, a, accel_model.DRAM, tags=8).cycles


@pytest.mark.parametrize("option, value", [
    ("--mem-latency", "4096"), ("--mem-latency", "-1"),
    ("--mem-bytes-per-cycle", "8.001"), ("--mem-bytes-per-cycle", "0.0156"),
    ("--mem-bytes-per-cycle", "0")])
def test_memory_options_refused_past_their_edges(tmp_path, capsys, benches, option, value):
    """The first value past each edge: one line naming the option, exit 2, nothing run."""
    _inputs(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        _run(tmp_path, option, value)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and option in err
    assert not benches


def test_the_memory_refuses_a_latency_past_its_setting(tmp_path):
    """The bench's memory itself refuses a latency its setting cannot hold."""
    a, b = _inputs(tmp_path)
    config = accel_plan.AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=4,
                                    depth=8, fifo=2)
    plan = accel_plan.plan(a, b, "prescient", config)
    harness = tb_accel.AccelHarness(**tb_accel.params_of(config), tile=64, tags=4, data=64)
    most = (1 << axi_native.LATENCY) - 1
    assert _settings(tb_accel.AccelBench(harness, plan, a, b, 1, latency=most))["latency"] \
        == most
    with pytest.raises(ValueError, match="latency=4096"):
        tb_accel.AccelBench(harness, plan, a, b, 1, latency=most + 1)
