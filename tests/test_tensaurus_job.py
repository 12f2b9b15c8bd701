"""A Tensaurus job's work and traffic (:meth:`Job.macs`, :meth:`Job.useful_macs`,
:meth:`Job.moved_bytes`) and the measures ``run tensaurus`` and ``bench tensaurus`` print
(:func:`measures`), against figures worked by hand on jobs small enough to lay out: every
term differs from the others, so a dropped or swapped one shows. Then the output tiles the
host plans (Section 5.2.5), and where it lays them in memory."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.sw.ciss import decode
from sparseforge.sw.formats import Tensor
from sparseforge.sw.tensaurus_host import out_chunks, output_tiles, params_for
from sparseforge.sw.tensaurus_job import measures, plan

# A 3x4 matrix, 5 nonzeros: row 0 holds j = 0 and 3, row 1 j = 1, row 2 j = 0 and 2.
MATRIX = sp.csr_matrix(([2, -1, 3, 4, 5], ([0, 0, 1, 2, 2], [0, 3, 1, 0, 2])), shape=(3, 4))
B = np.array([[1, -2, 3], [4, 0, -1], [2, 5, -3], [-4, 1, 2]])     # 4 x rank 3


def test_spmm_in_two_tiles_by_hand():
    """SpMM of MATRIX by B (F = 3) on 2x2 PEs of 2 lanes: R = 4, one padded column
    (tlen 1). Scratchpads of 3 rows: tile 0 reads B's rows 0-2, tile 1 row 3.

    - MACs: 5 nonzeros x R = 20 executed, x F = 15 useful.
    - CISS, 2 PEs, lanes of dw + iw = 32 bits: an entry is 64 bits. Tile 0 holds slices
      i = 0 (1 nonzero: header and value, 2 lanes), 1 (2 lanes), 2 (3 lanes): PE 0 takes
      0, PE 1 takes 1, PE 0 (free first, at entry 2) takes 2 up to entry 5: 5 entries.
      Tile 1: slice 0 (2 lanes) on PE 0: 2 entries. 7 x 64 bits = 56 bytes.
    - Chunks of vlen = 2 values of 16 bits: B padded to 4 columns is 2 chunks a row; 3 + 1
      rows, 8 chunks x 32 bits = 32 bytes.
    - Output: 3 rows x R = 12 values of 32 bits = 48 bytes. Moved: 56 + 32 + 48 = 136.
    - One memory word a cycle: the widest port, the 64-bit entry (not 64 + 32): 8 bytes.
    - In 40 cycles, 30 computing, 8 lanes: useful ops 30, executed 40; intensity 30 / 136;
      roof min(16, 30 / 136 x 8 = 30 / 17) = 30 / 17 at our peak, the same at the
      paper's 8; 30 / 40 = 0.75 ops a cycle, 0.75 / (30 / 17) = 0.425 of the roof.
      Utilization of our peak 16: 30 / (30 x 16) = 1/16 computing, 30 / (40 x 16) = 3/64
      over the run; of the paper's 8: 1/8 and 3/32; executed, computing: 40 / 480."""
    job = plan("spmm", MATRIX, [B], rows=2, cols=2, vlen=2, spm_rows=3)
    assert [tile.stream.entries for tile in job.tiles] == [5, 2]
    assert (job.macs(), job.useful_macs()) == (20, 15)
    assert job.moved_bytes() == 56 + 32 + 48
    assert job.memory_word_bits == 64
    m = measures(job, 40, 30)
    assert (m["useful_ops"], m["executed_ops"], m["bytes"]) == (30, 40, 136)
    assert m["intensity_useful_ops_per_byte"] == pytest.approx(30 / 136)
    assert m["bandwidth_bytes_per_cycle"] == 8
    assert (m["peak_ops_per_cycle"], m["paper_peak_ops_per_cycle"]) == (16, 8)
    assert m["attainable_ops_per_cycle"] == pytest.approx(30 / 17)
    assert m["paper_attainable_ops_per_cycle"] == pytest.approx(30 / 17)
    assert m["useful_ops_per_cycle"] == pytest.approx(0.75)
    assert m["of_attainable"] == pytest.approx(0.425)
    assert m["utilization_useful"] == pytest.approx(1 / 16)
    assert m["utilization_useful_with_loading"] == pytest.approx(3 / 64)
    assert m["paper_utilization_useful"] == pytest.approx(1 / 8)
    assert m["paper_utilization_useful_with_loading"] == pytest.approx(3 / 32)
    assert m["utilization_executed"] == pytest.approx(40 / 480)


def test_spmttkrp_counts_fiber_ends_by_hand():
    """SpMTTKRP of a 3x2x3 tensor, 5 nonzeros in 3 (i, j) fibers, F = 3 (R = 4), one
    tile, 24-bit accumulators.

    - MACs: (5 nonzeros + 3 fiber ends) x R = 32 executed, x F = 24 useful.
    - CISS, lanes of dw + 2 iw = 48 bits, entries 96: slice 0 (3 nonzeros, 4 lanes) on
      PE 0, slice 2 (2 nonzeros, 3 lanes) on PE 1: 4 entries x 12 bytes = 48.
    - Chunks: C's 3 rows and B's 2, 2 chunks of 32 bits each: 10 x 4 = 40 bytes.
    - Output: 3 rows x R = 12 values of 24 bits = 36 bytes. Moved: 48 + 40 + 36 = 124.
    - One memory word: the 96-bit entry (not 96 + 32), 12 bytes a cycle: the roof at
      48 / 124 useful ops a byte is 48 / 124 x 12 under both peaks."""
    coords = np.array([[0, 0, 0], [0, 0, 2], [0, 1, 1], [2, 1, 0], [2, 1, 2]])
    tensor = Tensor(coords, np.array([3, -1, 2, 5, 4]), (3, 2, 3))
    b, c = np.array([[1, 2, -1], [0, 3, 2]]), np.array([[2, -1, 1], [1, 1, 0], [-2, 3, 4]])
    job = plan("spmttkrp", tensor, [b, c], rows=2, cols=2, vlen=2, acc_width=24)
    assert [tile.fibers for tile in job.tiles] == [3]
    assert (job.macs(), job.useful_macs()) == (32, 24)
    assert job.moved_bytes() == 48 + 40 + 36
    m = measures(job, 40, 30)
    assert m["bandwidth_bytes_per_cycle"] == 12
    assert m["attainable_ops_per_cycle"] == pytest.approx(48 / 124 * 12)
    assert m["paper_attainable_ops_per_cycle"] == pytest.approx(48 / 124 * 12)


def test_the_paper_peak_bounds_a_roof_ours_does_not():
    """GEMM of a dense 16x16 A (256 elements, zeros among them: a dense kernel computes
    them all) by B of rank 4 = R, nothing padded. The TLU reads A in its dense mode: 8
    groups of 2 slices, 16 words each of 2 x 16 bits = 128 x 4 = 512 bytes; B's 16 rows, a
    word of 2 chunks of 4 bytes each = 128; the output 16 x 4 x 4 bytes = 256: 896 bytes
    for 2 x 256 x 4 = 2048 ops. The widest word is the MLU's, 64 bits, so at 8 bytes a
    cycle the memory allows 2048 / 896 x 8 = 18.3 ops a cycle: our roof is our peak, 16,
    and the paper's its peak, 8. In 400 cycles, 320 computing: 5.12 ops a cycle, 0.32 of
    our roof; 2048 / (320 x 16) = 0.4 of our peak computing, 0.8 of the paper's."""
    a = (np.arange(256) % 17 - 8).reshape(16, 16)
    job = plan("gemm", a, [np.arange(64).reshape(16, 4) - 30], rows=2, cols=2, vlen=2)
    m = measures(job, 400, 320)
    assert (m["useful_ops"], m["executed_ops"], m["bytes"]) == (2048, 2048, 896)
    assert m["bandwidth_bytes_per_cycle"] == 8
    assert m["attainable_ops_per_cycle"] == 16
    assert m["paper_attainable_ops_per_cycle"] == 8
    assert m["of_attainable"] == pytest.approx(0.32)
    assert (m["utilization_useful"], m["paper_utilization_useful"]) == pytest.approx((0.4, 0.8))


def test_output_tiles_by_hand():
    """SpMM of MATRIX, output tiles of 2 rows, scratchpads of 3: output tile 0 (rows 0-1)
    holds j = 0, 1 (B's block 0) and j = 3 (block 1): two input tiles; output tile 1 (row
    2) j = 0 and 2: one. Slices are numbered from their output tile's first row; each
    output tile's last input tile closes it; the output is laid from word 0, 2 chunks a
    row (R = 4, vlen 2)."""
    job = plan("spmm", MATRIX, [B], rows=2, cols=2, vlen=2, spm_rows=3, out_rows=2)
    assert job.out_tile_rows == 2
    assert [(t.out, t.closes, t.rows) for t in job.tiles] == [
        ((0, 2), False, ((0, 3),)), ((0, 2), True, ((3, 1),)), ((2, 1), True, ((0, 3),))]
    held = [decode(t.stream) for t in job.tiles]
    assert [h.coords.tolist() for h in held] == [[[0, 0], [1, 1]], [[0, 0]], [[0, 0], [0, 2]]]
    assert [h.values.tolist() for h in held] == [[2, 3], [-1], [4, 5]]
    assert out_chunks(job) == 2 and params_for(job)["out_rows"] == 2
    assert output_tiles(job, 2, 2) == [{"out_base": 0, "out_rows": 2, "closes": 0},
                                       {"out_base": 0, "out_rows": 2, "closes": 1},
                                       {"out_base": 4, "out_rows": 1, "closes": 1}]


@pytest.mark.parametrize("kernel", ["spmm", "gemm", "spmv", "gemv"])
def test_every_output_row_has_one_output_tile_even_an_empty_one(kernel):
    """A 7-row matrix whose rows 2-4 are empty, output tiles of 2 rows: 4 output tiles, the
    one of rows 2-3 an empty input tile (sparse) or zeros (dense) of its own, so the MSU
    writes every row; dense and MV tiles hold their output tile's slices only."""
    a = np.zeros((7, 5), dtype=np.int64)
    a[[0, 1, 5, 6], [1, 4, 0, 2]] = [3, -2, 7, 1]
    operand = a if kernel in ("gemm", "gemv") else sp.csr_matrix(a)
    mats = [np.arange(5) - 2] if kernel.endswith("mv") else [np.arange(10).reshape(5, 2)]
    job = plan(kernel, operand, mats, rows=2, cols=1, vlen=2, spm_rows=2, out_rows=2)
    outs = [t.out for t in job.tiles if t.closes]
    assert outs == [(0, 2), (2, 2), (4, 2), (6, 1)]
    for tile in job.tiles:
        if kernel in ("gemm", "gemv"):
            assert tile.stream.slices == tile.out[1]
        else:
            assert decode(tile.stream).coords[:, 0].max(initial=0) < tile.out[1]
    empty = [t for t in job.tiles if t.out == (2, 2)]
    if not job.dense:
        assert len(empty) == 1 and empty[0].stream.nnz == 0


def test_output_tiles_past_the_msu_are_refused_at_the_edge():
    """An MSU half of 3 rows takes output tiles of 3 rows and refuses 4, naming out_rows in
    one line; an output tile of no rows is refused too."""
    tensor = Tensor(np.array([[i, 0] for i in range(8)]), np.arange(1, 9), (8, 2))
    mats = [np.ones((2, 2), dtype=np.int64)]
    assert len(output_tiles(plan("spmm", tensor, mats, out_rows=3), 3, 1)) == 3
    with pytest.raises(ParameterError, match="out_rows=4") as error:
        output_tiles(plan("spmm", tensor, mats, out_rows=4), 3, 1)
    assert "\n" not in str(error.value)
    with pytest.raises(ParameterError, match="out_rows=0"):
        plan("spmm", tensor, mats, out_rows=0)
