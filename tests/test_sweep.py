"""Design-space sweeps on Dask: a local cluster, a cluster started by hand, the cache,
failed points, and one-line errors for bad input."""

import csv
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import Client, LocalCluster, get_task_stream

from sparseforge.cli import main
from sparseforge.sweep import sweep

DASK = str(Path(sys.executable).with_name("dask"))
MEASURED = ("lut", "carry", "ff", "bram", "fmax_mhz", "critical_path")


def sf(*args, env=None):
    return subprocess.run([sys.executable, "-m", "sparseforge", "sweep", *args],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def client():
    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address="127.0.0.1:0") as cluster,
          Client(cluster) as c):
        yield c


@pytest.fixture
def hand_cluster():
    """``dask scheduler`` and two ``dask worker`` processes on free loopback ports."""
    address = f"tcp://127.0.0.1:{free_port()}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port",
                               address.rpartition(":")[2], "--no-dashboard",
                               "--dashboard-address", "127.0.0.1:0"], **quiet)]
    try:
        worker = [DASK, "worker", address, "--nthreads", "1", "--host", "127.0.0.1",
                  "--no-nanny", "--no-dashboard"]
        procs += [subprocess.Popen(worker, **quiet) for _ in range(2)]
        with Client(address, timeout=30) as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for group in (procs[1:], procs[:1]):         # the workers, then the scheduler
            for proc in group:
                proc.terminate()
            for proc in group:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()


@pytest.mark.synth
@pytest.mark.soak
def test_a_failed_point_keeps_its_error_and_a_repeat_comes_from_the_cache(client, tmp_path):
    # depth 8192 x 32 bits needs 64 block RAMs; the iCE40 UP5K has 30.
    grid = {"depth": ["16", "32", "8192"], "width": ["32"]}
    rows = sweep("buffet", grid, "ice40", seeds=(1,), client=client, cache=tmp_path,
                 progress=False)
    assert [r["params"]["depth"] for r in rows] == [16, 32, 8192]
    good, bad = rows[:2], rows[2]
    for r in good:
        assert r["pass"] and r["error"] is None and not r["cached"]
        assert r["lut"] > 0 and r["ff"] > 0 and r["bram"] >= 1 and r["fmax_mhz"] > 0
        assert r["critical_path"]["logic_levels"] >= 1
    assert not bad["pass"] and bad["fmax_mhz"] is None
    assert "nextpnr-ice40 failed" in bad["error"] and "ICESTORM_RAM" in bad["error"]
    assert "\n" not in bad["error"]
    assert len(list(tmp_path.glob("*.json"))) == 2          # failures are not cached

    start = time.perf_counter()
    with get_task_stream(client) as tasks:
        again = sweep("buffet", {"depth": ["32", "16"], "width": ["32"]}, "ice40", seeds=(1,),
                      client=client, cache=tmp_path, progress=False)
    assert tasks.data == [] and time.perf_counter() - start < 5
    assert all(r["cached"] and r["pass"] for r in again)
    assert [[r[k] for k in MEASURED] for r in again] == [[r[k] for k in MEASURED]
                                                         for r in good[::-1]]


@pytest.mark.soak
@pytest.mark.synth
@pytest.mark.verilator
def test_the_command_line_runs_on_a_cluster_started_by_hand(hand_cluster, tmp_path):
    out = sf("buffet", "-p", "depth=4,64", "-p", "width=32", "--target", "ice40", "--seeds",
             "1", "--verify", "--scheduler", hand_cluster, "--csv", str(tmp_path / "s.csv"),
             "--plot", str(tmp_path / "s.png"), "--json",
             env={"SPARSEFORGE_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    rows = result["rows"]
    assert [r["params"]["depth"] for r in rows] == [4, 64] and result["passed"] == 2
    assert all(r["verify"] == "pass" and not r["cached"] and r["fmax_mhz"] > 0 for r in rows)
    assert result["pareto"] and "sweep" in out.stderr
    with open(tmp_path / "s.csv") as f:
        table = list(csv.DictReader(f))
    assert [t["params"].split()[:2] for t in table] == [["depth=4", "width=32"],
                                                        ["depth=64", "width=32"]]
    assert [int(t["lut"]) for t in table] == [r["lut"] for r in rows]
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    with Client(hand_cluster, timeout=10) as c:             # the work ran on those workers
        executed = c.run(lambda dask_worker: dask_worker.state.executed_count)
    assert len(executed) == 2 and sum(executed.values()) == 2


def fails(capsys, monkeypatch, cache, *args):
    """``sparseforge sweep ARGS`` in this process: its one line on stderr (exit 2)."""
    monkeypatch.setenv("SPARSEFORGE_CACHE", str(cache))
    with pytest.raises(SystemExit) as exit:
        main(["sweep", *args])
    out = capsys.readouterr()
    assert exit.value.code == 2 and out.out == ""
    assert out.err.count("\n") == 1 and "Traceback" not in out.err
    return out.err


@pytest.mark.parametrize("args, words", [
    (["buffet", "-p", "colour=red"], ["unknown parameter", "colour"]),
    (["buffet", "-p", "depth=16,48"], ["depth=48", "power of two"]),
    (["buffet", "-p", "depth=16,"], ["comma-separated"]),
    (["tailor", "-p", "depth=16", "-p", "fifo=16,32"], ["no valid point", "fifo=16"]),
    (["buffet", "--scheduler", "nonsense"], ["--scheduler nonsense", "tcp://HOST:PORT"]),
    (["buffet", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], ["--workers"]),
])
def test_bad_input_is_one_line_and_exit_2(capsys, monkeypatch, tmp_path, args, words):
    err = fails(capsys, monkeypatch, tmp_path, *args)
    assert all(w in err for w in words), err


def test_an_unreachable_scheduler_fails_within_ten_seconds(capsys, monkeypatch, tmp_path):
    address = f"tcp://127.0.0.1:{free_port()}"
    start = time.perf_counter()
    err = fails(capsys, monkeypatch, tmp_path, "buffet", "--scheduler", address)
    assert time.perf_counter() - start < 10
    assert f"--scheduler {address}: no scheduler answered within 5 s" in err


def test_a_cache_folder_that_is_not_writable_is_named(capsys, monkeypatch, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    if os.geteuid() == 0:                   # root writes anywhere but in /sys
        folder = Path("/sys")
    err = fails(capsys, monkeypatch, folder, "buffet")
    assert f"cache folder {folder}: not writable" in err
