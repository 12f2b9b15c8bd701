"""``bench sim``'s accelerator line (its run is the soak's and the benchmark's, not here):
what it prints of a measurement, and a refusal without the shared data."""

import pytest

from sparseforge.bench import sim
from sparseforge.cli import main

ACCEL = {"block": "accel", "pes": "4x4", "matrix": "nr-bio-dmela.mtx", "nnz": 51138,
         "columns": 16, "cycles": 6_794_465, "native_rate": 400_000.0,
         "native_cpu_rate": 500_000.0, "native_run_seconds": 16.99,
         "native_run_cpu_seconds": 13.59,
         "seconds": {"host": 1.0, "verilog": 0.1, "build": 0.0, "start": 0.05, "run": 16.99,
                     "read": 0.2, "total": 18.5},
         "cpu_seconds": 15.5, "whole_over_run": 18.5 / 16.99,
         "whole_over_run_cpu": 15.5 / 13.59, "later_over_run": 18.4 / 16.99}


def test_the_accelerator_line_and_its_targets(capsys):
    """The accelerator alone: its rates (wall and CPU), the whole run over the simulation
    proper with and without the once-made Verilog and build, and in CPU time, and only its
    own targets."""
    sim._human({"blocks": {"accel": ACCEL}})
    out = capsys.readouterr().out
    assert "6,794,465 cycles in 16.99 s (400,000 cycles/s)" in out
    assert "13.59 CPU s (500,000 cycles/CPU s)" in out
    assert "whole run 18.5 s = 1.09 x the simulation proper" in out
    assert "in CPU time 15.5 s = 1.14 x the simulation proper's" in out
    assert "0.40M/s wall, 0.50M/s CPU" in out
    assert "1.09x (1.08x built; 1.14x in CPU time), 18 s end to end (16 CPU s)" in out
    rows = [line.split("|")[0].strip() for line in out.splitlines() if "|" in line]
    assert rows == ["measure", "accel_rate", "accel_whole"]


def test_the_accelerator_without_the_shared_data_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(sim, "shared_data_dir", lambda: None)
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "sim", "--only", "accel"])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1
    assert "nr-bio-dmela.mtx" in err


def test_the_pe_array_is_checked_before_any_work(monkeypatch, capsys, tmp_path):
    """``--pes`` takes the arrays ``run accel`` builds: the most PE rows pass, one more is
    refused in one line before the workload is made."""
    from sparseforge.run.accel import most_pe_rows

    most = most_pe_rows()
    assert sim.accel_config(f"{most}x2").pes == most
    monkeypatch.setattr(sim, "shared_data_dir", lambda: tmp_path)
    monkeypatch.setattr(sim, "measure_accel", lambda *args: pytest.fail("measured"))
    for pes, why in ((f"{most + 1}x2", f"at most {most} PE rows"), ("4by4", "expected RxC")):
        with pytest.raises(SystemExit) as exit_:
            main(["bench", "sim", "--only", "accel", "--pes", pes])
        err = capsys.readouterr().err.strip()
        assert exit_.value.code == 2 and len(err.splitlines()) == 1
        assert f"--pes {pes}" in err and why in err
