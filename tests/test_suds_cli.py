"""``sparseforge suds`` on real pruned layers (DLMC ResNet-50, SqueezeNet Deep Compression)."""

import gzip
import json

import numpy as np
import pytest

from sparseforge.cli import main
from sparseforge.sw.suds import brute_force_cycles

DLMC = "dnn_weights/dlmc/rn50/magnitude_pruning/0.9/bottleneck_2_block_group3_2_1.smtx.gz"
SQUEEZENET = "dnn_weights/squeezenet_deep_compression/fire9_conv3x3_2.mtx"


def _run(capsys, *args):
    main(["suds", *map(str, args)])
    captured = capsys.readouterr()
    return captured.out


def _json(capsys, *args):
    out = _run(capsys, *args, "--json")
    assert out.count("\n") == 1
    return json.loads(out)


def _fails(capsys, *args):
    with pytest.raises(SystemExit) as exit_info:
        main(["suds", *map(str, args)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err


def _block_counts(row, col, shape, compaction):
    """Nonzeros per block row, [nblocks, 4], counted here without the compaction module."""
    width = 4 * compaction
    grid = -(-shape[0] // 4), -(-shape[1] // width)
    counts = np.zeros((grid[0], grid[1], 4), dtype=np.int64)
    np.add.at(counts, (row // 4, col // width, row % 4), 1)
    return counts.reshape(-1, 4)


def _check_totals(result, counts):
    """The report against the block counts: closed forms and the brute-force optimum."""
    p = result["compaction"]
    cycles = result["cycles"]
    assert result["blocks"] == len(counts)
    assert cycles["dense"] == 4 * p * len(counts)
    assert cycles["two_four"] == 2 * p * len(counts)
    assert cycles["compaction"] == counts.max(axis=1).sum()
    assert cycles["ideal"] == (-(-counts.sum(axis=1) // 4)).sum()
    assert cycles["optimal"] == brute_force_cycles(counts).sum()
    assert cycles["compaction"] >= cycles["greedy"] >= cycles["optimal"] >= cycles["ideal"]
    array = result["systolic"]
    for key in ("dense", "compaction", "greedy", "optimal", "no_suds", "eureka"):
        entry = array[key]
        assert entry["cycles"] * array["rows"] >= entry["bubbles"] >= 0
    assert array["dense"]["bubbles"] == 0 or len(counts) % array["rows"]
    assert array["eureka"]["cycles"] <= array["optimal"]["cycles"]
    assert array["no_suds"]["cycles"] <= array["compaction"]["cycles"]
    assert result["stream"]["words"] == result["blocks"] + cycles["optimal"]


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_dlmc_layer(shared_data, capsys, compaction):
    path = shared_data / DLMC
    with gzip.open(path, "rt") as file:
        rows, cols, nnz = (int(n) for n in file.readline().replace(",", " ").split())
        row_ptr = np.array(file.readline().split(), dtype=np.int64)
        col = np.array(file.readline().split(), dtype=np.int64)
    row = np.repeat(np.arange(rows), np.diff(row_ptr))
    result = _json(capsys, path, "--compaction", compaction)
    assert result["shape"] == [rows, cols] and result["nnz"] == nnz
    assert result["values"] == "int8 from seed 0"
    assert result["stream"]["value_width"] == 8
    _check_totals(result, _block_counts(row, col, (rows, cols), compaction))


def test_squeezenet_layer(shared_data, capsys):
    path = shared_data / SQUEEZENET
    entries = np.loadtxt(path, comments="%")[1:]  # after the size line
    row, col = entries[:, 0].astype(int) - 1, entries[:, 1].astype(int) - 1
    result = _json(capsys, path, "-P", 2, "--systolic-rows", 4)
    assert result["shape"] == [256, 576] and result["nnz"] == len(row)
    assert result["values"] == "file, as FP16" and result["stream"]["value_width"] == 16
    assert result["systolic"]["rows"] == 4
    _check_totals(result, _block_counts(row, col, (256, 576), 2))


def test_human_table(shared_data, capsys):
    out = _run(capsys, shared_data / SQUEEZENET)
    assert "P=4, 2304 blocks of 4x16" in out
    for label in ("dense", "2:4 (Ampere)", "greedy SUDS", "optimal SUDS", "one-sided ideal",
                  "Eureka: optimal + scheduled", "filter stream:"):
        assert label in out


def test_seed_changes_values_not_cycles(tmp_path, capsys):
    path = tmp_path / "pattern.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n"
                    "6 9 5\n1 1\n1 2\n1 3\n2 9\n6 4\n")
    first = _json(capsys, path, "-P", 1)
    second = _json(capsys, path, "-P", 1, "--seed", 7)
    assert first["values"] == "int8 from seed 0" and second["values"] == "int8 from seed 7"
    assert first["cycles"] == second["cycles"]
    assert first["cycles"]["compaction"] == 3 + 1 + 1 and first["cycles"]["optimal"] == 2 + 1 + 1


def test_npy_integer_weights(tmp_path, capsys):
    weights = np.zeros((4, 16), dtype=np.int16)
    weights[0, :8] = np.arange(1, 9) * 1000  # needs 16 bits
    np.save(tmp_path / "w.npy", weights)
    result = _json(capsys, tmp_path / "w.npy")
    assert result["values"] == "file" and result["stream"]["value_width"] == 16
    assert result["cycles"]["compaction"] == 8 and result["cycles"]["optimal"] == 4


def test_errors(tmp_path, capsys):
    assert "no such file" in _fails(capsys, tmp_path / "missing.mtx")
    assert "'--compaction' / '-P': '3'" in _fails(capsys, tmp_path / "missing.mtx", "-P", 3)
    assert "'--systolic-rows': 0" in _fails(capsys, tmp_path / "missing.mtx", "--systolic-rows", 0)
    (tmp_path / "w.txt").write_text("1 2\n")
    assert "unknown extension" in _fails(capsys, tmp_path / "w.txt")
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket matrix coordinate real general\n"
                                      "2 2 1\n3 1 1\n")
    assert "bad.mtx:3" in _fails(capsys, tmp_path / "bad.mtx")
    np.save(tmp_path / "tiny.npy", np.array([[1e-9, 0.0]]))
    assert "FP16" in _fails(capsys, tmp_path / "tiny.npy")
