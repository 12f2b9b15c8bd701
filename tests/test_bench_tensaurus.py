"""``sparseforge bench tensaurus``: the RTL's results equal the golden kernels and the
figures the bench prints are there and sane (``--quick``), and the useful MACs and memory
word its measures rest on, worked by hand on tiny jobs (the measures themselves:
``test_tensaurus_job.py``)."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.sw.formats import Tensor
from sparseforge.sw.tensaurus_job import plan

# 5 nonzeros in 3 (i, j) fibers: (0, 0) holds 2, (0, 1) 1, (2, 1) 2.
COORDS = np.array([[0, 0, 0], [0, 0, 2], [0, 1, 1], [2, 1, 0], [2, 1, 2]])
TENSOR = Tensor(COORDS, np.array([3, -1, 2, 5, 4]), (3, 2, 3))


def _factors(rng, *shapes):
    return [rng.integers(-3, 4, shape) for shape in shapes]


def test_useful_macs_exclude_padded_lanes():
    """On 2x2 PEs of 2 lanes a rank of F = 3 runs as R = 4 columns: the fourth is
    padding. MTTKRP: (5 nonzeros + 3 fiber ends) x F; TTMc with B of rank r1 = 2:
    (5 + 3 x 2) x F; SpMV (F = 1): 4 nonzeros x 1. The array executes each over R, but
    SpMV on one PE of the first column, each nonzero's product on its 2 lanes."""
    rng = np.random.default_rng(0)
    mttkrp = plan("spmttkrp", TENSOR, _factors(rng, (2, 3), (3, 3)))
    assert (mttkrp.useful_macs(), mttkrp.macs()) == ((5 + 3) * 3, (5 + 3) * 4)
    ttmc = plan("spttmc", TENSOR, _factors(rng, (2, 2), (3, 3)))
    assert (ttmc.useful_macs(), ttmc.macs()) == ((5 + 3 * 2) * 3, (5 + 3 * 2) * 4)
    matrix = sp.csr_matrix(([2, -1, 3, 4], ([0, 0, 1, 3], [1, 2, 0, 2])), shape=(4, 3))
    spmv = plan("spmv", matrix, [np.array([1, -2, 3])])
    assert (spmv.useful_macs(), spmv.macs()) == (4 * 1, 4 * 2)
    tiled = plan("spmttkrp", TENSOR, _factors(rng, (2, 4), (3, 4)), spm_rows=2)
    # Tiles by C's rows {0, 1} and {2}: fibers (0,0), (0,1), (2,1) and (0,0), (2,1);
    # rank 4 fills the 4 columns, so nothing is padded.
    assert tiled.useful_macs() == tiled.macs() == (5 + 5) * 4


def test_memory_word_bits_is_the_widest_port():
    """One memory word a cycle: a 3-D CISS entry for 2 PEs is 2 x (16 + 16 + 16) = 96
    bits, wider than the MLU's word of 2 columns' chunks of 2 values (64); of 8 values
    (256) it is the wider."""
    mats = _factors(np.random.default_rng(1), (2, 4), (3, 4))
    assert plan("spmttkrp", TENSOR, mats).memory_word_bits == 96
    assert plan("spmttkrp", TENSOR, mats, vlen=8).memory_word_bits == 256


@pytest.mark.soak
def test_bench_tensaurus_quick(shared_data, capsys, tmp_path):
    main(["bench", "tensaurus", "--quick", "--json", "--plot", str(tmp_path / "roof.png")])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and "error" not in err
    rows = json.loads(out)["workloads"]
    assert {r["kernel"] for r in rows} == {"spmttkrp", "spttmc", "spmm"}
    for r in rows:
        assert r["equal_to_golden"]
        counted = r["load_cycles"] + r["compute_cycles"]     # the accelerator's own count
        assert counted <= r["cycles"] <= counted + 10
        assert 0 < r["utilization_useful"] <= r["utilization_executed"] <= 1
        assert 0 < r["useful_ops"] <= r["executed_ops"]
        assert 0 < r["of_attainable"] <= 1
        assert (r["useful_ops_per_cycle"] <= r["attainable_ops_per_cycle"]
                <= r["peak_ops_per_cycle"] == 2 * r["paper_peak_ops_per_cycle"])
        assert 0 < r["csr_fraction"] < r["ciss_fraction"] <= 1      # Fig. 3e's point
    assert (tmp_path / "roof.png").read_bytes()[:4] == b"\x89PNG"


def test_the_papers_memories_in_rows():
    """Sec. 7's scratchpad half, 16 KB over two operands' rows of this column's chunks of
    4 values of 2 bytes: 16384 / (2 x 8) = 1024 rows at rank 32 on 8 columns (one chunk a
    row), 512 at rank 64 (two); TTMc's B of rank 8 two chunks; SpMV one. The MSU's half,
    128 KB over output rows of olen x 8 columns chunks of 4 lanes x 4 bytes: 1024 rows
    at rank 32 (olen 1), 512 at rank 64 (olen 2), 256 for TTMc of r1 = 4 (olen 4)."""
    from sparseforge.bench.tensaurus import paper_params, paper_rows
    assert paper_rows(32, 4, "spmttkrp", 4, 8, 16) == (1024, 1024)
    assert paper_rows(64, 4, "spmm", 4, 8, 16) == (512, 512)
    assert paper_rows(32, 8, "spttmc", 4, 8, 16) == (512, 128)
    assert paper_rows(32, 4, "dttmc", 4, 8, 16) == (1024, 256)
    assert paper_rows(32, 4, "gemv", 4, 8, 16) == (1024, 1024)
    params = paper_params({"out_rows": 4, "banks": 2}, 1024)
    assert (params["out_rows"], params["banks"], params["msu_banks"]) == (1024, 8, 8)
