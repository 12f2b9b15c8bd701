"""The accelerator's tiling policies (sparseforge.sw.accel_plan's bands): a band counted
in the CISS entries the Tailor holds, exactly as the encoder lays it out; uniform,
prescient and Swiftiles sizing bands in entries, worked by hand on rows that differ, and
Swiftiles' overbooking near its target on real matrices."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.sw import accel_plan, formats
from sparseforge.sw.accel_plan import AccelConfig, BandEntries

# Two windows of 3 columns, 2 lanes. Row 0 fills both windows (a slice of 3 and its
# header in each: 4 + 4), rows 1, 2 and 5 hold one window each, row 3 both, row 4 none.
WINDOWS = sp.csr_array(np.array([
    [1, 1, 1, 1, 1, 1],
    [1, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 1, 0],
    [1, 0, 0, 1, 0, 0],
    [0, 0, 0, 0, 0, 0],
    [0, 1, 1, 0, 0, 0],
]))

# One window of 4 columns, 2 lanes: rows of 4, 1, 1, 2, 1, 1, 4 and 0 nonzeros, slices of
# 5, 2, 2, 3, 2, 2, 5 entries (a header each).
ROWS = sp.csr_array(np.array([
    [1, 1, 1, 1],
    [1, 0, 0, 0],
    [0, 1, 0, 0],
    [0, 0, 1, 1],
    [1, 0, 0, 0],
    [0, 0, 0, 1],
    [1, 1, 1, 1],
    [0, 0, 0, 0],
]))


def _config(depth, out_rows=4):
    return AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=out_rows,
                       depth=depth, fifo=1)


def test_band_entries_by_hand():
    """Heights 1, 2, 3 of WINDOWS. Row 0 alone: 4 + 4 on one lane, the other idle: 8
    entries for 6 nonzeros (3 over the lanes). Rows 0-1: window 0 takes row 0's 4 on lane
    0 and row 1's 2 on lane 1 (4), window 1 row 0's 4: 8. Rows 2-3: window 0 row 3's 2,
    window 1 row 2's 2 and row 3's 2 side by side: 4. Rows 3-5: window 0 rows 3 and 5 (2
    and 3: 3), window 1 row 3 (2): 5, for 4 nonzeros."""
    entries = BandEntries.of(WINDOWS, pes=2, span=3)
    assert entries(np.arange(6), np.ones(6)).tolist() == [8, 2, 2, 4, 0, 3]
    assert entries([0, 2, 4], [2, 2, 2]).tolist() == [8, 4, 3]
    assert entries([0, 3], [3, 3]).tolist() == [8, 5]
    assert entries([], []).tolist() == []


def test_band_entries_drop_stored_zeros_as_the_encoder_does():
    a = sp.csr_array(WINDOWS, copy=True)
    a.data = a.data.astype(np.int64)
    a.data[:6] = 0                                  # row 0 stored, all zeros
    assert BandEntries.of(a, pes=2, span=3)([0], [1]).tolist() == [0]


@pytest.mark.parametrize("kernel, pes, spm_rows, seed", [
    ("spmm", 2, 3, 1), ("spmm", 4, 8, 2), ("spmm", 3, 5, 3), ("spmv", 2, 3, 4)])
def test_band_entries_equal_the_plans_streams(kernel, pes, spm_rows, seed):
    """Every band of every policy on random matrices: the entries counted equal the
    lengths of the CISS streams the plan encodes (SpMV's windows ``spm_rows * per``)."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((40, 30), density=0.15, rng=rng, format="csr")
    a.data = rng.integers(1, 5, a.nnz)
    a = a.tolil()
    a[5, :] = 2                                      # a long row
    a = a.tocsr()
    b = rng.integers(-2, 3, (30, 1 if kernel == "spmv" else 3))
    config = AccelConfig(pes=pes, cols=2, vlen=2, tlen=1, spm_rows=spm_rows, out_rows=16,
                         depth=24, fifo=4)
    per = 2 if kernel == "spmv" else 1
    entries = BandEntries.of(a, pes, spm_rows * per)
    for policy in accel_plan.POLICIES:
        plan = accel_plan.plan(a, b, policy, config, seed=seed, kernel=kernel)
        counted = entries([band.i0 for band in plan.bands], [band.rows for band in plan.bands])
        assert counted.tolist() == [band.entries for band in plan.bands], policy


def test_uniform_fits_the_dense_band_in_entries():
    """A dense row of ROWS takes 4 + 1 entries; a dense band of h rows ceil(h / 2) such
    lanes. A Tailor of 10 holds 4 rows (20 nonzeros' capacity counted as nonzeros would
    have given 5); one entry less holds 2; one dense row too many for the Tailor: one row,
    and the MSU's out_rows caps it."""
    def height(depth, out_rows=8):
        i0, rows, tiling = accel_plan.bands_of(ROWS, "uniform", _config(depth, out_rows))
        assert tiling.tile_shape == (4, rows[0]) and i0.tolist() == list(range(0, 8, rows[0]))
        return int(rows[0])
    assert (height(10), height(9), height(4), height(10, out_rows=3)) == (4, 2, 1, 3)


def test_prescient_sets_a_row_longer_than_the_tailor_apart():
    """A Tailor of 4 entries: rows 0 and 6 (5 entries alone) are bands of their own. The
    runs between, rows 1-5 and row 7, are cut by the tallest height whose every band fits:
    2 (rows 1-2 take 2, rows 3-4 3, row 5 2). Height 3 puts rows 1-3 in 5 entries (row 3's
    3 after row 1's 2 on lane 0) though they are 4 nonzeros, half the 8 the Tailor's lanes
    hold: counted in nonzeros it would fit."""
    i0, rows, tiling = accel_plan.bands_of(ROWS, "prescient", _config(4))
    assert list(zip(i0.tolist(), rows.tolist(), strict=True)) == [
        (0, 1), (1, 2), (3, 2), (5, 1), (6, 1), (7, 1)]
    assert tiling.tile_shape == (4, 2) and tiling.max_occupancy == 3
    entries = BandEntries.of(ROWS, pes=2, span=4)
    assert entries([1], [3]).tolist() == [5] and ROWS[1:4].nnz == 4
    # A Tailor of 5 holds rows 0 and 6 alone: no row is set apart. Height 3 fits (rows
    # 0-2 in 5, 3-5 in 4, 6-7 in 5); height 4 puts rows 0-3 in 7 (row 3's 3 after rows
    # 1 and 2 on lane 1).
    i0, rows, _ = accel_plan.bands_of(ROWS, "prescient", _config(5))
    assert (i0.tolist(), rows.tolist()) == ([0, 3, 6], [3, 3, 2])


def test_prescient_never_overbooks_but_with_a_row_longer_than_the_tailor(shared_data):
    """rajat19 at the bench's build (a Tailor of 64 entries): its rows longer than the
    Tailor are its only overbooked bands, and the rest are not one row each."""
    a, config = _real(shared_data, "rajat19")
    i0, rows, _ = accel_plan.bands_of(a, "prescient", config)
    over = BandEntries.of(a, config.pes, config.spm_rows)(i0, rows) > config.depth
    assert over.any() and (rows[over] == 1).all() and rows.max() > 1


def test_swiftiles_samples_again_at_its_estimate_by_hand():
    """ROWS, a Tailor of 4 entries: the initial height is 4 * 2 lanes / (14 / 8 nonzeros a
    row) = 4; both bands of 4 take 7 (O_k = 7 of 2 samples), so 4 * 4 / 7 = 2; at 2 the
    bands take 5, 3, 2, 5 (O_k = 5), so 2 * 4 / 5 = 1; at 1 the rows take 5, 2, 2, 3, 2,
    2, 5, 0 (O_k = 5): 1 again, where it stays. Every band is sampled (fewer than
    ceil(y / k) = 100), so the seed does not matter."""
    i0, rows, tiling = accel_plan.bands_of(ROWS, "swiftiles", _config(4), seed=3)
    assert i0.tolist() == list(range(8))
    assert tiling.tile_shape == tiling.initial_shape == (4, 1) and tiling.o_k == 5
    assert tiling.samples.tolist() == [5, 2, 2, 3, 2, 2, 5, 0]
    assert tiling.predicted_fraction == 0.25 and rows.tolist() == [1] * 8


def _real(shared_data, name):
    """A real matrix and the bench's build (``run accel --pes 4x2 --buffer-kb 1``)."""
    path = shared_data / "matrices" / "suitesparse" / f"{name}.mtx"
    if not path.exists():
        pytest.skip(f"{path} not found")
    a = sp.csr_array(formats.read_matrix(path))
    return a, AccelConfig(pes=4, cols=2, vlen=2, tlen=2, spm_rows=64, out_rows=64, depth=64,
                          fifo=4)


@pytest.mark.parametrize("name", ["Erdos971", "rajat19", "bcspwr04"])
def test_swiftiles_overbooks_about_k_of_the_bands(shared_data, name):
    """At k = 10%, Swiftiles' bands overbook the Tailor of 64 entries in 7 to 12% of them
    (in nonzeros they overbooked in 62 to 93%): some, and at most 1.5 k."""
    a, config = _real(shared_data, name)
    i0, rows, tiling = accel_plan.bands_of(a, "swiftiles", config, seed=1)
    over = BandEntries.of(a, config.pes, config.spm_rows)(i0, rows) > config.depth
    assert 0 < over.mean() <= 0.15 and tiling.k == 0.1
