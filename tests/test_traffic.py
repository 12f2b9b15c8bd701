"""DRAM-traffic model of tiled SpMSpM (sw/traffic.py): hand-computed cases and a reference."""

import numpy as np
import pytest
import scipy.sparse

from sparseforge.core.errors import ParameterError
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.occupancy import Pattern
from sparseforge.sw.swiftiles import a_tile_shape, prescient_tiling, swiftiles, uniform_tiling
from sparseforge.sw.traffic import spmspm_traffic


def pattern(dense):
    return Pattern.from_matrix(scipy.sparse.coo_array(np.asarray(dense)))


def reference(a, b, a_tile, b_tile, buffer):
    """The model's rules, tile by tile over dense arrays: (a_stream, fills, tailors, buffets)."""
    (tm, tk), tn = a_tile, b_tile[1]
    fills = tailors = buffets = 0
    used_columns = set()
    for k0 in range(0, b.shape[0], tk):
        passes = sum(a[m0:m0 + tm, k0:k0 + tk].any() for m0 in range(0, a.shape[0], tm))
        for n0 in range(0, b.shape[1], tn):
            size = int(np.count_nonzero(b[k0:k0 + tk, n0:n0 + tn]))
            if size:
                used_columns.add(n0)
            if not size or not passes:
                continue
            fills += size
            if size <= buffer:
                tailors += size
                buffets += size
            else:
                tailors += buffer + passes * (size - buffer)
                buffets += passes * size
    return len(used_columns) * np.count_nonzero(a), fills, tailors, buffets


def test_overbooked_tile_twice_the_buffer():
    # one B tile of L = 4 nonzeros in a buffer of D = 2; A has 3 non-empty row tiles
    a, b = pattern(np.ones((3, 4))), pattern(np.ones((4, 1)))
    traffic = spmspm_traffic(a, b, (1, 4), (4, 1), buffer=2)
    assert traffic.a_stream == 12
    assert traffic.b_fills == 4
    assert traffic.b_tailors == 2 + 3 * 2  # D resident once, L - D re-streamed every pass
    assert traffic.b_buffets == 3 * 4  # whole tile refetched every pass
    assert traffic.streaming_overhead == pytest.approx((8 - 4) / (12 + 4))
    # one pass over the tile (A in a single tile): nothing to re-stream
    single = spmspm_traffic(a, b, (3, 4), (4, 1), buffer=2)
    assert single.b_tailors == single.b_buffets == single.b_fills == 4


def test_traversals_charge_bumped_data_every_use():
    # r traversals per A tile: the bumped L - D is re-streamed r * passes - 1 more times
    a, b = pattern(np.ones((3, 4))), pattern(np.ones((4, 1)))
    once = spmspm_traffic(a, b, (1, 4), (4, 1), buffer=2)
    four = spmspm_traffic(a, b, (1, 4), (4, 1), buffer=2, traversals=4)
    assert once == spmspm_traffic(a, b, (1, 4), (4, 1), buffer=2, traversals=1)
    assert four.b_tailors == 4 + (3 * 4 - 1) * 2 and four.b_fills == once.b_fills
    assert four.streaming_overhead > once.streaming_overhead
    fits = spmspm_traffic(a, b, (1, 4), (4, 1), buffer=4, traversals=16)
    assert fits.streaming_overhead == 0
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ParameterError, match="traversals"):
            spmspm_traffic(a, b, (1, 4), (4, 1), buffer=2, traversals=bad)


def test_fitting_tile_is_fetched_once():
    a, b = pattern(np.ones((3, 4))), pattern(np.ones((4, 1)))
    traffic = spmspm_traffic(a, b, (1, 4), (4, 1), buffer=4)
    assert traffic.tailors == traffic.buffets == traffic.baseline == 12 + 4
    assert traffic.streaming_overhead == 0


def test_passes_per_shared_range():
    b = np.zeros((4, 2))
    b[[0, 1, 2], 0] = 1
    b[3, 1] = 1
    a = np.zeros((3, 4))
    a[[0, 1, 2], [0, 1, 0]] = 1  # A meets only the first k range
    traffic = spmspm_traffic(pattern(a), pattern(b), (1, 2), (2, 1), buffer=1)
    # only B tile (k 0-1, n 0) is met, by 3 A tiles; A streams once per used column of B tiles
    assert (traffic.a_stream, traffic.b_fills, traffic.b_tailors, traffic.b_buffets) == (
        2 * 3, 2, 1 + 3 * 1, 3 * 2)


@pytest.mark.parametrize("seed", range(6))
def test_matches_tile_by_tile_reference(seed):
    rng = np.random.default_rng(seed)
    m, k, n = rng.integers(5, 30, size=3)
    a = rng.random((m, k)) < 0.2
    b = rng.random((k, n)) < rng.uniform(0.05, 0.5)
    tk, tm, tn = rng.integers(1, k + 1), rng.integers(1, m + 1), rng.integers(1, n + 1)
    buffer = int(rng.integers(1, 12))
    traffic = spmspm_traffic(pattern(a), pattern(b), (tm, tk), (tk, tn), buffer)
    assert (traffic.a_stream, traffic.b_fills, traffic.b_tailors, traffic.b_buffets) == (
        reference(a, b, (tm, tk), (tk, tn), buffer))


def test_tilings_on_a_real_matrix(shared_data):
    a = Pattern.from_matrix(read_matrix(shared_data / "matrices/graphs/power.mtx"))
    buffer = 256
    traffic = {}
    for tiling in (uniform_tiling(a, buffer), prescient_tiling(a, buffer), swiftiles(a, buffer)):
        traffic[tiling.strategy] = spmspm_traffic(
            a, a, a_tile_shape(tiling.tile_size, a.shape), tiling.tile_shape, buffer)
    # no uniform or prescient tile overbooks: their traffic is the baseline, buffets or not
    for name in ("uniform", "prescient"):
        assert traffic[name].tailors == traffic[name].buffets == traffic[name].baseline
    ob, p, n = traffic["swiftiles"], traffic["prescient"], traffic["uniform"]
    assert ob.b_tailors > ob.b_fills  # some tiles overbook and pay for re-streaming
    assert ob.tailors <= ob.buffets
    assert ob.tailors < p.tailors < n.tailors  # the paper's trend


def test_rejects_mismatched_operands():
    a, b = pattern(np.ones((3, 4))), pattern(np.ones((4, 2)))
    with pytest.raises(ParameterError, match="columns to match"):
        spmspm_traffic(b, b, (1, 4), (4, 1), 2)
    with pytest.raises(ParameterError, match="share tk"):
        spmspm_traffic(a, b, (1, 2), (4, 1), 2)
    with pytest.raises(ParameterError, match="buffer"):
        spmspm_traffic(a, b, (1, 4), (4, 1), 0)
