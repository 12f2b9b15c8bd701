"""The command line: one JSON object with --json, one-line errors, exit codes."""

import json
import subprocess
import sys

import pytest

from sparseforge.core.tools import verilator_lint


def sf(*args):
    return subprocess.run([sys.executable, "-m", "sparseforge", *args],
                          capture_output=True, text=True)


def test_blocks_json_lists_parameters_and_ranges():
    out = sf("blocks", "--json")
    assert out.returncode == 0
    blocks = json.loads(out.stdout)["blocks"]
    depth = next(p for p in blocks["buffet"]["params"] if p["name"] == "depth")
    assert depth["pow2"] and depth["min"] == 2 and depth["default"] == 64


def test_generate_writes_verilog_and_parameters(tmp_path):
    out = sf("generate", "buffet", "-p", "depth=32", "-p", "width=12", "-o", str(tmp_path),
             "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert json.loads((tmp_path / "buffet.json").read_text())["params"] == \
        {"depth": 32, "width": 12, "read_latency": 2}
    assert "module buffet(" in (tmp_path / "buffet.v").read_text()
    assert verilator_lint(result["verilog"]) == ""


@pytest.mark.parametrize("args, words", [
    (["-p", "depth=48"], ["depth=48", "power of two"]),
    (["-p", "width=0"], ["width=0", "[1, 1024]"]),
    (["-p", "colour=red"], ["unknown parameter", "colour"]),
    (["-p", "depth"], ["NAME=VALUE"]),
])
def test_bad_parameters_give_one_line_and_exit_2(tmp_path, args, words):
    out = sf("generate", "buffet", *args, "-o", str(tmp_path))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert all(w in lines[0] for w in words)


def test_unknown_block():
    out = sf("synth", "nonesuch")
    assert out.returncode == 2 and "unknown block 'nonesuch'" in out.stderr


@pytest.mark.synth
@pytest.mark.soak
def test_synth_ecp5_maps_the_store_to_block_ram():
    out = sf("synth", "buffet", "-p", "depth=1024", "-p", "width=32", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    # One write + one read port: the 32 Kib store lands in block RAM, and the
    # logic stays a few hundred LUTs (the two-write-port reference needs ~4,200
    # LUTs at depth 64 and does not fit an ECP5-25k at depth 1024).
    assert r["bram"] >= 2 and r["lutram"] == 0
    assert r["lut"] < 600 and r["ff"] < 200
    assert r["fmax_mhz"] > 40


@pytest.mark.synth
@pytest.mark.soak
def test_synth_ice40_and_generic_report_cells():
    ice = json.loads(sf("synth", "buffet", "-p", "depth=64", "-p", "width=8", "--target",
                        "ice40", "--json").stdout)
    assert ice["bram"] == 1 and ice["fmax_mhz"] > 10
    generic = json.loads(sf("synth", "buffet", "--target", "generic", "--json").stdout)
    assert generic["cells_total"] > 0 and "fmax_mhz" not in generic


@pytest.mark.verilator
def test_demo_passes_on_bundled_real_data():
    out = sf("demo", "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["pass"]
    for block in ("buffet", "tailor", "engine"):
        assert r[block]["spmv_matches_scipy"] and r[block]["lint_clean"]
        assert r[block]["verilator_cycles"] == r[block]["pysim_cycles"]
    tailor = r["tailor"]
    assert tailor["overbooked_tiles"] > 0
    assert tailor["transfers"] == tailor["transfers_expected"] < tailor["buffet_transfers"]


@pytest.mark.soak
@pytest.mark.verilator
def test_demo_runs_a_real_matrix_past_amaranths_reach(shared_data):
    out = sf("demo", "--matrix", str(shared_data / "matrices/suitesparse/dwt_992.mtx"), "--json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["pass"] and r["nnz"] == 16744
    assert "pysim_skipped" in r["tailor"] and r["tailor"]["verilator_cycles"] > 40_000
    assert r["buffet"]["same_cycles"]       # small enough for both simulators


@pytest.mark.parametrize("text, what", [
    ("%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 1\n", "square"),
    ("%%MatrixMarket matrix coordinate real general\n0 0 0\n", "square"),
])
def test_demo_refuses_a_matrix_it_cannot_run(tmp_path, text, what):
    path = tmp_path / "m.mtx"
    path.write_text(text)
    out = sf("demo", "--matrix", str(path))
    assert out.returncode == 2 and what in out.stderr and "Traceback" not in out.stderr


def square_matrices():
    """The square Matrix Market files of the shared data, up to 400k nonzeros."""
    import csv

    from sparseforge.core.data import shared_data_dir

    root = shared_data_dir()
    if root is None:
        return []
    with open(root / "MANIFEST_matrices.csv") as f:
        rows = list(csv.DictReader(f))
    return sorted(r["file"] for r in rows if r["rows"] == r["cols"]
                  and r["file"].endswith(".mtx") and int(r["nnz_full"]) <= 400_000)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("name", square_matrices())
def test_soak_demo_on_every_square_matrix(shared_data, name):
    out = sf("demo", "--matrix", str(shared_data / name), "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["pass"]
