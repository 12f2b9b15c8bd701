# amaranth: UnusedElaboratable=no
"""``run accel`` on a matrix file with explicitly stored zeros: a stored zero adds nothing
to the product and would read as a CISS header, so it is dropped on reading, with or
without ``--pattern`` (whose pattern is A's nonzeros); a matrix of stored zeros alone has
no nonzeros and is refused in one line, exit 2. The native run is replaced by the golden
product, as in ``test_run_accel_memory.py``."""

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.run.accel import nonzeros
from tests.test_run_accel_memory import benches  # noqa: F401 (a fixture)

# A (4 x 5): 5 nonzeros and one stored zero at (2, 3), the last element of its row.
ROW = np.array([0, 0, 1, 2, 2, 3])
COL = np.array([0, 4, 2, 1, 3, 0])
VALUE = np.array([3, 1, 2, 4, 0, 5])


def _write(tmp_path, values):
    """A with ``values`` stored (zeros included) and b (5) on disk."""
    a = sp.coo_matrix((values, (ROW, COL)), shape=(4, 5))
    scipy.io.mmwrite(tmp_path / "a.mtx", a, field="integer")
    np.save(tmp_path / "b.npy", np.array([1, -2, 3, -1, 2]))
    return np.load(tmp_path / "b.npy")


def _run(tmp_path, kernel, *options, as_json=True):
    main(["run", "accel", "--kernel", kernel, str(tmp_path / "a.mtx"), "--factors",
          str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), "--pes", "2x1",
          "--buffer-kb", "1", *options, *(["--json"] if as_json else [])])


def test_nonzeros_drops_stored_zeros_only():
    """Of a matrix with a stored zero, the zero alone goes; of one without, nothing."""
    a = sp.coo_array((VALUE, (ROW, COL)), shape=(4, 5))
    kept, dropped = nonzeros(a)
    assert dropped == 1 and kept.nnz == 5 and (kept.data != 0).all()
    assert (kept.toarray() == a.toarray()).all()
    assert nonzeros(kept)[1] == 0


@pytest.mark.parametrize("kernel, pattern", [("spmv", True), ("spmv", False),
                                             ("spmm", True)])
def test_a_stored_zero_is_dropped(tmp_path, capsys, benches, kernel, pattern):  # noqa: F811
    """The file's stored zero is refused by the converter's host code no more: the run
    takes A's 5 nonzeros (with ``--pattern`` each 1, the zero's place still 0), its
    memory holds 5 column ids, and the JSON says one zero was dropped."""
    b = _write(tmp_path, VALUE)
    assert scipy.io.mmread(tmp_path / "a.mtx").nnz == 6
    _run(tmp_path, kernel, *(["--pattern"] if pattern else []))
    r = json.loads(capsys.readouterr().out)
    assert (r["nnz"], r["stored_zeros_dropped"]) == (5, 1)
    (bench,) = benches
    dense = sp.coo_array((VALUE, (ROW, COL)), shape=(4, 5)).toarray()
    a = (dense != 0).astype(np.int64) if pattern else dense
    np.testing.assert_array_equal(bench.plan.golden[:, 0], a @ b)
    y = np.load(tmp_path / "y.npy")
    np.testing.assert_array_equal(y if kernel == "spmv" else y[:, 0], a @ b)


def test_the_summary_says_the_zero_dropped(tmp_path, capsys, benches):  # noqa: F811
    """The human summary's first line counts A's nonzeros and the stored zero dropped."""
    _write(tmp_path, VALUE)
    _run(tmp_path, "spmv", "--pattern", as_json=False)
    assert "5 nonzeros (1 stored zero dropped)" in capsys.readouterr().out.splitlines()[0]


def test_only_stored_zeros_is_refused(tmp_path, capsys, benches):  # noqa: F811
    """Every entry a stored zero: no nonzeros once they are dropped, one line, exit 2,
    nothing run."""
    _write(tmp_path, np.zeros(6, dtype=np.int64))
    with pytest.raises(SystemExit) as exit_:
        _run(tmp_path, "spmv", "--pattern")
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no nonzeros" in err[0], err
    assert not benches
