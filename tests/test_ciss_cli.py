"""``sparseforge ciss`` and ``sparseforge bench ciss``: real files, one JSON object,
one-line refusals."""

import json

import numpy as np
import pytest

from sparseforge.cli import main
from sparseforge.sw import ciss
from sparseforge.sw.formats import read_matrix, read_tensor

TENSOR = "tensors/movielens-latest-small_user-movie-tag.tns"  # 58 x 1572 x 1475
TENSOR_4D = "tensors/kg-wikipeople-arity3_rel-e1-e2-e3.tns"
MATRIX = "matrices/suitesparse/bcspwr01.mtx"  # 39 x 39, pattern


def run(capsys, *args):
    """The JSON object of a successful run; nothing on stderr but progress."""
    main([*map(str, args), "--json"])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and "error" not in err
    return json.loads(out)


def refused(capsys, *args):
    """The one error line of a run that must exit 2 with nothing on stdout."""
    with pytest.raises(SystemExit) as exit_info:
        main(["ciss", *map(str, args)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    return err


def test_tensor_to_npz(shared_data, tmp_path, capsys):
    source, out = shared_data / TENSOR, tmp_path / "stream.npz"
    r = run(capsys, "ciss", source, "--pes", 8, "--mode", 1, "-o", out)
    tensor = read_tensor(source)
    assert (r["shape"], r["nnz"], r["mode"], r["pes"]) == ([58, 1572, 1475], tensor.nnz, 1, 8)
    assert r["lane"] == {"nnz": 32, "ij": 32, "k": 32} and r["entry_bits"] == 768
    assert r["slices"] == len(np.unique(tensor.coords[:, 1]))
    assert sum(r["slots"].values()) == r["entries"] * 8
    assert r["slots"]["nonzero"] == tensor.nnz == sum(r["pe_nnz"])
    assert r["utilization"] == tensor.nnz / (r["entries"] * 8)
    band = r["bandwidth"]
    assert band["word_bits"] == 512 and band["peak"] == 16e9
    assert band["ciss"]["achieved"] == band["peak"] * band["ciss"]["fraction"]
    assert 0 < band["csr"]["fraction"] < band["ciss"]["fraction"] <= 1
    stream = ciss.load(out)
    assert stream.entries == r["entries"] and stream.mode == 1
    decoded = ciss.decode(stream)
    assert np.array_equal(decoded.coords, tensor.coords)
    assert np.array_equal(decoded.values, tensor.values)


def test_matrix_and_human_output(shared_data, capsys):
    source = shared_data / MATRIX
    main(["ciss", str(source), "--pes", "4", "--dw", "8", "--iw", "6"])
    out, err = capsys.readouterr()
    matrix = read_matrix(source)
    assert err == ""
    assert f"39 x 39, {matrix.nnz} nonzeros, 39 slices along mode 0" in out
    assert "CISS for 4 PEs: entries of 56 bits (4 lanes of nnz 8, ij 6), values as int" in out
    assert "lane slots" in out and "bandwidth model (64-byte words, 16 GB/s peak)" in out


@pytest.mark.parametrize(("args", "words"), [
    (["--pes", "0"], ["--pes", "0 is not in the range"]),
    (["--pes", "100000"], ["--pes", "1<=x<=1024"]),
    (["--pes", "4", "--dw", "1"], ["--dw"]),
    (["--pes", "4", "--iw", "65"], ["--iw"]),
    (["--pes", "4", "--iw", "6"], ["iw=6 is too small", "mode 1 index 1571 needs 11 bits"]),
    (["--pes", "4", "--iw", "5"], ["iw=5 is too small", "slice index 57 (mode 0) needs 6 bits"]),
    (["--pes", "4", "--dw", "24", "--mode", "3"], ["--mode"]),
    (["--pes", "4", "-o", "out.bin"], ["-o", "out.bin", ".npz"]),
    (["--pes", "four"], ["--pes", "not a valid integer"]),
    ([], ["--pes"]),
])
def test_bad_options(shared_data, capsys, args, words):
    err = refused(capsys, shared_data / TENSOR, *args)
    assert all(word in err for word in words), err


def test_bad_inputs(shared_data, tmp_path, capsys):
    err = refused(capsys, shared_data / TENSOR_4D, "--pes", "4")
    assert TENSOR_4D.split("/")[-1] in err and "not 4 modes" in err
    err = refused(capsys, shared_data / MATRIX, "--pes", "4", "--mode", "2")
    assert "mode=2: the tensor has modes 0..1" in err
    err = refused(capsys, tmp_path / "missing.tns", "--pes", "4")
    assert "missing.tns: no such file" in err
    bad = tmp_path / "bad.tns"
    bad.write_text("1 1 1 1.0\n2 x 1 2.0\n")
    err = refused(capsys, bad, "--pes", "4")
    assert "bad.tns:2" in err
    real = tmp_path / "real.mtx"
    real.write_text("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 0.5\n2 2 1.5\n")
    err = refused(capsys, real, "--pes", "2", "--dw", "8")
    assert "dw must be 16, 32 or 64, not 8" in err


def test_bench_quick(shared_data, capsys):
    r = run(capsys, "bench", "ciss", "--quick")
    assert {e["tensor"] for e in r["encoder"]} == {"movielens-latest-small_user-movie-tag"}
    assert all(e["rate"] > 0 for e in r["encoder"])
    assert {k["tensor"] for k in r["spmttkrp"]} == {"movielens-latest-small_user-movie-tag",
                                                    "kg-wikipeople-arity3_rel-e1-e2-e3"}
    assert [b["pes"] for b in r["bandwidth"]] == [1, 2, 4, 8, 16]
    s = r["summary"]
    assert s["ratio"][0] > 0 and s["csr_achieved"][1] < 16e9
    assert set(r["paper"]) == {"encoder", "spmttkrp", "add_at", "csr", "ciss", "ratio"}
