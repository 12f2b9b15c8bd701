"""``sparseforge convert``: real files in every format, one JSON object, one-line refusals."""

import json

import numpy as np
import pytest

from sparseforge.cli import main
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import read_matrix, read_tensor
from tests.test_conversion import assert_same, change

MATRIX = "matrices/suitesparse/west0067.mtx"  # 67 x 67
TENSOR = "tensors/movielens-latest-small_user-movie-tag.tns"


def run(capsys, *args):
    """The JSON object of a successful run; nothing on stderr."""
    main(["convert", *map(str, args), "--json"])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and err == ""
    return json.loads(out)


def refused(capsys, *args):
    """The one error line of a run that must exit 2 with nothing on stdout."""
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", *map(str, args)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err


@pytest.mark.parametrize("fmt", cv.FORMATS)
def test_a_real_matrix_in_every_format(shared_data, tmp_path, capsys, fmt):
    source = shared_data / MATRIX
    out = tmp_path / f"out{cv.suffix(fmt, 2)}"
    extra = {"bsr": ["--block", "1,67"], "rlc": ["--run-bits", "6"]}.get(fmt, [])
    result = run(capsys, source, "--to", fmt.upper(), "-o", out, *extra)
    matrix = read_matrix(source)
    expected = cv.convert(matrix, fmt, **{"bsr": {"block": (1, 67)},
                                          "rlc": {"run_bits": 6}}.get(fmt, {}))
    assert_same(cv.load(out), expected)
    assert result == {"input": str(source), "output": str(out), "from": "coo", "to": fmt,
                      "engine": "sw", "shape": [67, 67], "nnz": matrix.nnz,
                      "block": [1, 67] if fmt == "bsr" else None,
                      "run_bits": 6 if fmt == "rlc" else None,
                      "seconds": result["seconds"], "cycles": None, "stages": None}


def test_chained_conversions_end_where_they_started(shared_data, tmp_path, capsys):
    path = shared_data / MATRIX
    for fmt in ("rlc", "zvc", "csf", "bsr", "csc", "dense", "csr"):
        out = tmp_path / f"{fmt}{cv.suffix(fmt, 2)}"
        block = ["--block", "67,1"] if fmt == "bsr" else []
        result = run(capsys, path, "--to", fmt, "-o", out, *block)
        assert result["nnz"] == read_matrix(shared_data / MATRIX).nnz
        path = out
    assert_same(cv.load(path), cv.convert(read_matrix(shared_data / MATRIX), "csr"))


def test_a_real_tensor_to_csf_and_back(shared_data, tmp_path, capsys):
    tensor = read_tensor(shared_data / TENSOR)
    csf = run(capsys, shared_data / TENSOR, "--to", "csf", "-o", tmp_path / "t.npz")
    assert csf["from"] == "coo" and csf["shape"] == list(tensor.shape)
    assert csf["nnz"] == tensor.nnz
    coo = run(capsys, tmp_path / "t.npz", "--to", "coo", "-o", tmp_path / "t.tns")
    assert coo["from"] == "csf"
    assert_same(read_tensor(tmp_path / "t.tns"), tensor)


def test_human_output(shared_data, tmp_path, capsys):
    main(["convert", str(shared_data / MATRIX), "--to", "rlc", "-o", str(tmp_path / "r.npz")])
    out = capsys.readouterr().out
    assert out.startswith(f"{shared_data / MATRIX} (coo, 67 x 67, ")
    assert f"-> {tmp_path / 'r.npz'} (rlc)" in out and out.count("\n") == 1


def malformed(tmp_path, fmt, **arrays):
    """A valid RLC, ZVC or CSF file with some arrays replaced."""
    path = tmp_path / f"bad_{fmt}.npz"
    np.savez(path, **change(fmt, **arrays))
    return path


@pytest.mark.parametrize("args, words", [
    (["--to", "ell"], ["'--to'", "'ell'"]),
    (["--to", "bsr", "--block", "0,2"], ["block 0,2", "at least 1"]),
    (["--to", "bsr", "--block", "2,2"], ["block 2,2", "does not divide the 67 x 67"]),
    (["--to", "bsr", "--block", "two"], ["--block", "R,C"]),
    (["--to", "bsr"], ["block size"]),
    (["--to", "csr", "--block", "1,1"], ["BSR only"]),
    (["--to", "csr", "--run-bits", "4"], ["RLC only"]),
    (["--to", "rlc", "--run-bits", "0"], ["--run-bits", "0"]),
    (["--to", "rlc", "--run-bits", "33"], ["--run-bits", "33"]),
    (["--to", "csr", "--engine", "fpga"], ["--engine", "fpga"]),
])
def test_bad_requests_on_a_matrix(shared_data, tmp_path, capsys, args, words):
    err = refused(capsys, shared_data / MATRIX, *args, "-o", tmp_path / "out.npz")
    assert all(word in err for word in words), err
    assert not (tmp_path / "out.npz").exists()


@pytest.mark.parametrize("fmt", cv.MATRIX_FORMATS)
def test_a_tensor_is_refused_where_a_matrix_is_needed(shared_data, tmp_path, capsys, fmt):
    block = ["--block", "1,1"] if fmt == "bsr" else []
    err = refused(capsys, shared_data / TENSOR, "--to", fmt, *block, "-o", tmp_path / "o.npz")
    assert f"{fmt.upper()} holds matrices" in err and "3-D tensor" in err


@pytest.mark.parametrize("fmt, arrays, words", [
    ("rlc", {"runs": np.ones(11, np.uint8)}, "runs cover 22 positions"),
    ("rlc", {"values": None}, "no 'values' array"),
    ("zvc", {"mask": np.array([0b1100, 1], np.uint8)}, "marks 3 nonzeros but 7"),
    ("zvc", {"shape": np.array([4, 4, 4])}, "two non-negative sizes"),
    ("csf", {"fptr0": np.array([0, 2, 1])}, "fptr0"),
    ("csf", {"fids0": np.array([1, 0])}, "fids0 does not rise"),
])
def test_malformed_files_are_refused(tmp_path, capsys, fmt, arrays, words):
    path = malformed(tmp_path, fmt, **arrays)
    err = refused(capsys, path, "--to", "coo", "-o", tmp_path / "out.npz")
    assert str(path) in err and words in err, err


def test_bad_files_and_outputs(shared_data, tmp_path, capsys):
    (tmp_path / "text.npz").write_text("not an archive")
    for args, words in [
        ([tmp_path / "missing.mtx", "--to", "csr", "-o", tmp_path / "o.npz"], "no such file"),
        ([tmp_path / "text.npz", "--to", "csr", "-o", tmp_path / "o.npz"], "not a readable"),
        ([tmp_path / "m.txt", "--to", "csr", "-o", tmp_path / "o.npz"], "unknown extension"),
        ([tmp_path, "--to", "csr", "-o", tmp_path / "o.npz"], "directory"),
        ([shared_data / MATRIX, "--to", "csr", "-o", tmp_path / "o.mtx"], "written as a .npz"),
        ([shared_data / MATRIX, "--to", "dense", "-o", tmp_path / "o.npz"], "written as a .npy"),
        ([shared_data / TENSOR, "--to", "coo", "-o", tmp_path / "o.npz"], "written as a .tns"),
        ([shared_data / MATRIX, "--to", "csr", "-o", tmp_path / "no" / "o.npz"], "o.npz"),
        ([shared_data / MATRIX, "--to", "csr"], "'-o'"),
    ]:
        assert words in refused(capsys, *args)


def test_the_rtl_engine_refuses_a_coordinate_given_twice(tmp_path, capsys):
    """The converter blocks take each coordinate's one value (the software engine adds
    repeats): a .mtx repeating one is refused in one line naming the file and its lines."""
    path = tmp_path / "twice.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 3\n"
                    "1 1 1.0\n2 3 2.0\n1 1 4.0\n")
    err = refused(capsys, path, "--to", "csr", "--engine", "rtl", "-o", tmp_path / "o.npz")
    assert str(path) in err and "(1, 1)" in err, err
    assert not (tmp_path / "o.npz").exists()
    run(capsys, path, "--to", "csr", "-o", tmp_path / "sw.npz")        # sw adds them
