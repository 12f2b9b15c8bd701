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
from sparseforge.tb import accel as tb_accel
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

    def run(bench, engine="native", work_dir=None, progress=None):
        built.append(bench)
        return AccelRun(bench.plan.golden, CYCLES, 0, 0, REFETCHED, {"error": 0})

    monkeypatch.setattr(tb_accel.native, "simulate", run)
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
