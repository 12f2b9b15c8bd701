"""``sparseforge bench tensaurus``: the RTL's results equal the golden kernels and the
figures the bench prints are there and sane (``--quick``), and its measures (useful and
executed ops, the paper's peak and ours, one memory's roof) against figures worked by
hand on tiny jobs."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.bench.tensaurus import measures
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
    (5 + 3 x 2) x F; SpMV (F = 1): 4 nonzeros x 1. The array executes each over R."""
    rng = np.random.default_rng(0)
    mttkrp = plan("spmttkrp", TENSOR, _factors(rng, (2, 3), (3, 3)))
    assert (mttkrp.useful_macs(), mttkrp.macs()) == ((5 + 3) * 3, (5 + 3) * 4)
    ttmc = plan("spttmc", TENSOR, _factors(rng, (2, 2), (3, 3)))
    assert (ttmc.useful_macs(), ttmc.macs()) == ((5 + 3 * 2) * 3, (5 + 3 * 2) * 4)
    matrix = sp.csr_matrix(([2, -1, 3, 4], ([0, 0, 1, 3], [1, 2, 0, 2])), shape=(4, 3))
    spmv = plan("spmv", matrix, [np.array([1, -2, 3])])
    assert (spmv.useful_macs(), spmv.macs()) == (4 * 1, 4 * 4)
    tiled = plan("spmttkrp", TENSOR, _factors(rng, (2, 4), (3, 4)), spm_rows=2)
    # Tiles by C's rows {0, 1} and {2}: fibers (0,0), (0,1), (2,1) and (0,0), (2,1);
    # rank 4 fills the 4 columns, so nothing is padded.
    assert tiled.useful_macs() == tiled.macs() == (5 + 5) * 4


def test_memory_word_bits_is_the_widest_port():
    """One memory word a cycle: a 3-D CISS entry for 2 PEs is 2 x (16 + 16 + 16) = 96
    bits, wider than a chunk of 2 values (32); a chunk of 8 values (128) is wider."""
    mats = _factors(np.random.default_rng(1), (2, 4), (3, 4))
    assert plan("spmttkrp", TENSOR, mats).memory_word_bits == 96
    assert plan("spmttkrp", TENSOR, mats, vlen=8).memory_word_bits == 128


def test_measures_by_hand():
    """24 useful and 32 executed MACs on 8 lanes, 100 bytes moved in 40 cycles (30
    computing), a 96-bit memory word: 48 and 64 ops; utilizations 24 / 240 and 32 / 240;
    intensity 48 / 100; our peak 16 ops a cycle, the paper's 8; the roof 12 B/cycle x
    0.48 = 5.76, of which 48 / 40 = 1.2 ops a cycle is 1.2 / 5.76."""
    m = measures(24, 32, 8, 100, 40, 30, 96)
    assert (m["useful_ops"], m["executed_ops"], m["bytes"]) == (48, 64, 100)
    assert m["utilization_useful"] == pytest.approx(0.1)
    assert m["utilization_executed"] == pytest.approx(32 / 240)
    assert m["intensity_useful_ops_per_byte"] == pytest.approx(0.48)
    assert m["useful_ops_per_cycle"] == pytest.approx(1.2)
    assert m["executed_ops_per_cycle"] == pytest.approx(1.6)
    assert (m["peak_ops_per_cycle"], m["paper_peak_ops_per_cycle"]) == (16, 8)
    assert m["bandwidth_bytes_per_cycle"] == 12
    assert m["attainable_ops_per_cycle"] == pytest.approx(5.76)
    assert m["of_attainable"] == pytest.approx(1.2 / 5.76)
    # 10 bytes: intensity 4.8, 4.8 x 12 = 57.6 past the peak, so the roof is the peak.
    m = measures(24, 32, 8, 10, 40, 30, 96)
    assert m["attainable_ops_per_cycle"] == 16
    assert m["of_attainable"] == pytest.approx(1.2 / 16)


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
