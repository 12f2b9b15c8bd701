"""Bad inputs to the newer commands (hyte, run tensaurus, sweep, synth, the benches'
plots): each refused in one line and exit 2 before any long work starts, each at its
edge where it has one; and the inputs near them that are legal, accepted."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.sw.formats import Tensor
from sparseforge.sw.tensaurus_job import plan
from tests.clicheck import refused

MTX = "%%MatrixMarket matrix coordinate integer general\n"


def sf(capsys, *args):
    """``sparseforge ARGS`` in this process, as the installed command runs it."""
    with pytest.raises(SystemExit) as stop:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return SimpleNamespace(returncode=stop.value.code, stdout=out.out, stderr=out.err)


def ok(capsys, *args):
    """``sparseforge ARGS --json`` run to the end: its JSON object."""
    main([str(a) for a in args] + ["--json"])
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def files(tmp_path):
    """A 3 x 3 matrix, a 2 x 2 x 2 tensor and a one-mode tensor, with factors."""
    (tmp_path / "m.mtx").write_text(MTX + "3 3 3\n1 1 1\n2 2 2\n3 3 3\n")
    (tmp_path / "t.tns").write_text("1 1 1 2\n2 2 2 3\n")
    (tmp_path / "v.tns").write_text("1 2\n3 4\n")
    (tmp_path / "half.tns").write_text("1 1 1 2.5\n2 2 2 3\n")
    (tmp_path / "r.mtx").write_text("%%MatrixMarket matrix coordinate real general\n"
                                    "3 3 2\n1 1 1.5\n2 2 2\n")
    arrays = {"b": np.ones((2, 2), int), "b2": np.ones((3, 2), int), "b3": np.ones((3, 3), int),
              "bu": np.array([[2**64 - 1, 1], [1, 1]], dtype=np.uint64),
              "big": np.array([[70000, 1], [1, 1]]), "a": np.ones((3, 3), int),
              "bf": np.ones((3, 2))}
    for name, array in arrays.items():
        np.save(tmp_path / f"{name}.npy", array)
    return tmp_path


def _no_work(monkeypatch, target):
    def work(*args, **kwargs):
        raise AssertionError("the work started before the refusal")
    monkeypatch.setattr(target, work)


# The refusals ------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    # a factor that int64 cannot hold, named by its file
    (["run", "tensaurus", "--kernel", "spmttkrp", "@t.tns", "--factors", "@bu.npy",
      "@b.npy", "--out", "@y.npy"], ["bu.npy", "18446744073709551615", "64-bit"]),
    # a value past dw: the file, the value and the dw that holds it
    (["run", "tensaurus", "--kernel", "spmttkrp", "@t.tns", "--factors", "@big.npy",
      "@b.npy", "--out", "@y.npy"], ["big.npy", "70000", "dw=16", "dw=18"]),
    (["run", "tensaurus", "--kernel", "spmttkrp", "@half.tns", "--factors", "@b.npy",
      "@b.npy", "--out", "@y.npy"], ["half.tns", "integers"]),
    # an output file the command does not write
    (["run", "tensaurus", "--kernel", "spmm", "@m.mtx", "--factors", "@b2.npy", "--out",
      "@y.txt"], ["y.txt", ".npy"]),
    (["run", "tensaurus", "--kernel", "spmm", "@m.mtx", "--factors", "@b2.npy", "--out",
      "@nodir/y.npy"], ["nodir", "does not exist"]),
    # a vector kernel takes a vector
    (["run", "tensaurus", "--kernel", "gemv", "@a.npy", "--factors", "@b2.npy", "--out",
      "@y.npy"], ["b2.npy", "(3, 2)", "vector"]),
    (["run", "tensaurus", "--kernel", "spmv", "@m.mtx", "--factors", "@b3.npy", "--out",
      "@y.npy"], ["b3.npy", "(3, 3)", "vector"]),
    # a one-mode tensor is a vector: stored and converted, never a kernel's operand
    (["run", "tensaurus", "--kernel", "spmv", "@v.tns", "--factors", "@b.npy", "--out",
      "@y.npy"], ["v.tns", "2-mode", "not 1"]),
    (["ciss", "@v.tns", "--pes", "2"], ["v.tns", "1-mode"]),
    # the accelerator computes on integers; its build's sizes have their rules
    (["run", "accel", "--kernel", "spmm", "@r.mtx", "--factors", "@b2.npy", "--out",
      "@y.npy"], ["r.mtx", "--pattern"]),
    (["run", "accel", "--kernel", "spmm", "@m.mtx", "--factors", "@bf.npy", "--out",
      "@y.npy"], ["bf.npy", "float64"]),
    (["run", "accel", "--kernel", "spmm", "@m.mtx", "--factors", "@b2.npy", "--out",
      "@y.npy", "--spm-rows", "48"], ["--spm-rows 48", "power of two"]),
    (["run", "accel", "--kernel", "spmm", "@m.mtx", "--factors", "@b2.npy", "--out",
      "@y.npy", "--buffer-kb", "0"], ["--buffer-kb"]),
    (["run", "accel", "--kernel", "spmv", "@m.mtx", "--factors", "@b3.npy", "--out",
      "@y.npy"], ["b3.npy", "(3, 3)", "vector"]),
    # every numeric option has a range
    (["hyte", "@m.mtx", "--buffer-kb", "99999999999999999999"], ["--buffer-kb"]),
    (["hyte", "@m.mtx", "--buffer-kb", "1048577"], ["--buffer-kb", "1048577"]),
    (["run", "tensaurus", "--kernel", "spmm", "@m.mtx", "--factors", "@b2.npy", "--out",
      "@y.npy", "--dw", "33"], ["--dw", "33"]),
    # options that do not apply
    (["synth", "buffet", "--target", "generic", "--device", "85k"], ["--device 85k", "generic"]),
    (["sweep", "buffet", "--target", "ice40", "--device", "85k"], ["--device 85k", "ice40"]),
    # outputs checked before the work
    (["synth", "--report", "--csv", "/proc/x.csv"], ["/proc/x.csv", "cannot be written"]),
    (["synth", "--report", "--md", "@r.txt"], ["r.txt", ".md"]),
    (["swiftiles", "@m.mtx", "--buffer", "4", "--plot", "@p.doc"], ["p.doc", ".png"]),
    (["ciss", "@m.mtx", "--pes", "2", "-o", "@c.txt"], ["c.txt", ".npz"]),
    (["convert", "@m.mtx", "--to", "csr", "-o", "@nodir/c.npz"], ["nodir", "does not exist"]),
])
def test_a_bad_input_is_refused_in_one_line(capsys, files, args, words):
    # "@name": the file name in the test's folder
    argv = [files / a[1:] if a.startswith("@") else a for a in args]
    refused(sf(capsys, *argv), *words)


@pytest.mark.parametrize("args, where, output", [
    (["sweep", "buffet", "-p", "depth=16", "--plot"], "sparseforge.sweep._sweep", "out.txt"),
    (["sweep", "buffet", "-p", "depth=16", "--csv"], "sparseforge.sweep._sweep", "nodir/r.csv"),
    (["bench", "tensaurus", "--plot"], "sparseforge.bench.tensaurus.measure", "out.txt"),
    (["bench", "tensaurus", "--plot"], "sparseforge.bench.tensaurus.measure", "nodir/r.png"),
    (["run", "tensaurus", "--kernel", "spmm", "m.mtx", "--factors", "b2.npy", "--out"],
     "sparseforge.run.tensaurus.plan", "nodir/y.npy"),
])
def test_an_output_is_refused_before_the_work(capsys, monkeypatch, files, args, where,
                                              output):
    monkeypatch.chdir(files)
    _no_work(monkeypatch, where)
    refused(sf(capsys, *args, output), output)


def test_a_named_scheduler_is_reached_even_when_nothing_needs_it(capsys, monkeypatch,
                                                                  tmp_path):
    # Every point cached or not, the address the user gave is checked first.
    monkeypatch.setenv("SPARSEFORGE_CACHE", str(tmp_path))
    _no_work(monkeypatch, "sparseforge.sweep._sweep")
    refused(sf(capsys, "sweep", "buffet", "-p", "depth=16", "--scheduler",
               "tcp://127.0.0.1:1"), "tcp://127.0.0.1:1", "no scheduler answered")


# The edges, and the legal inputs beside them --------------------------------------------

def test_the_largest_buffer_is_scheduled(capsys, files):
    assert ok(capsys, "hyte", files / "m.mtx", "--buffer-kb", 1 << 20)["buffer_kb"] == 1 << 20


@pytest.mark.parametrize("dataflow", ["gust", "op"])
def test_a_huge_matrix_of_three_entries_is_scheduled_from_its_nonzeros(capsys, tmp_path,
                                                                         dataflow):
    # 10^12 x 10^12: a CSR of it would take 7.3 TiB of row pointers. A A has one
    # product, A(0,0) A(0,0): the others meet empty rows.
    n = 10**12
    path = tmp_path / "huge.mtx"
    path.write_text(MTX.replace("integer", "real") + f"{n} {n} 3\n1 1 1.0\n5 7 2.0\n"
                    f"{n - 1} {n} 3.0\n")
    result = ok(capsys, "hyte", path, "--buffer-kb", 64, "--dataflow", dataflow)
    assert result["shape_a"] == [n, n]
    assert result["eff_mac_est"] == 1 and result["nnz_c_est"] == 1
    assert result["sampled_rows"] == 3 and result["sampled_cols"] == 3


@pytest.mark.parametrize("value, bits", [(2**15 - 1, None), (-(2**15), None),
                                         (2**15, 17), (-(2**15) - 1, 17)])
def test_a_value_at_the_edge_of_dw(value, bits):
    tensor = Tensor(np.array([[0, 0, 0], [1, 1, 1]]), np.array([value, 1]), (2, 2, 2))
    factors = [np.ones((2, 2), int), np.ones((2, 2), int)]
    if bits is None:
        assert plan("spmttkrp", tensor, factors).golden[0, 0] == value
        return
    with pytest.raises(ParameterError, match=f"T.tns: value {value} is past 16-bit two's "
                                             rf"complement \(dw=16; dw={bits} holds it\)"):
        plan("spmttkrp", tensor, factors, names=["T.tns", "B.npy", "C.npy"])


@pytest.mark.parametrize("total, bits", [(2**31 - 1, None), (-(2**31), None),
                                         (2**31, 33), (-(2**31) - 1, 33)])
def test_an_output_at_the_edge_of_the_accumulator(total, bits):
    # y[0] = A(0,0) B(0) + A(0,1) B(1), each B half the total (dw=32 holds them).
    half, rest = divmod(total, 2)
    a = Tensor(np.array([[0, 0], [0, 1]]), np.array([1, 1]), (1, 2))
    b = np.array([[half], [half + rest]])
    if bits is None:
        assert plan("spmm", a, [b], dw=32).golden[0, 0] == total
        return
    with pytest.raises(ParameterError, match=rf"the output: value {total} is past 32-bit "
                                             rf"two's complement \(acc_width=32; "
                                             rf"acc_width={bits} holds it\)"):
        plan("spmm", a, [b], dw=32)


@pytest.mark.parametrize("shape", [(3,), (3, 1)])
def test_a_vector_kernel_takes_a_vector_either_way(shape):
    matrix = Tensor(np.array([[0, 0], [2, 1]]), np.array([5, 7]), (3, 3))
    job = plan("spmv", matrix, [np.arange(1, 4).reshape(shape)])
    assert job.golden.shape == (3, 1)
    assert job.golden[:, 0].tolist() == [5, 0, 14]


def test_a_one_mode_tensor_converts(capsys, files):
    result = ok(capsys, "convert", files / "v.tns", "--to", "csf", "-o", files / "v.npz")
    assert result["shape"] == [3] and result["nnz"] == 2
