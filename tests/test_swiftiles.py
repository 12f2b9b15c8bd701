"""Swiftiles, its baselines, the SpMSpM tile construction, and their command lines."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse

from sparseforge.core.errors import ParameterError
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.occupancy import Pattern, tile_occupancy
from sparseforge.sw.swiftiles import (
    a_tile_shape,
    b_tile_shape,
    grow_shape,
    prescient_candidates,
    prescient_tiling,
    samples_for,
    spmspm_tile_shape,
    swiftiles,
    uniform_tiling,
)

# Real matrices cut into well over ceil(y/k) = 100 tiles at these buffers, so
# Swiftiles really samples.
ACCURACY_RUNS = [
    ("matrices/graphs/delaunay_n16.mtx", 256), ("matrices/graphs/astro-ph.mtx", 256),
    ("matrices/graphs/pubmed_adj.mtx", 64), ("matrices/graphs/nr-ca-CondMat.mtx", 256),
    ("matrices/graphs/nr-bio-dmela.mtx", 64), ("matrices/suitesparse/bcsstk13.mtx", 64),
    ("matrices/graphs/p2p-Gnutella24.mtx", 64), ("matrices/graphs/hep-th.mtx", 64),
]
POWER = "matrices/graphs/power.mtx"


def load(shared_data, path):
    return Pattern.from_matrix(read_matrix(shared_data / path))


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "sparseforge", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


# --- tile-shape construction -------------------------------------------------

def test_construction_grows_k_then_n_then_m():
    m, k, n = 5, 4, 3
    assert spmspm_tile_shape(2, m, k, n) == (1, 2, 1)  # k first
    assert spmspm_tile_shape(4, m, k, n) == (1, 4, 1)  # k reaches its end
    assert spmspm_tile_shape(11, m, k, n) == (1, 4, 2)  # then B's free dimension n
    assert spmspm_tile_shape(12, m, k, n) == (1, 4, 3)  # n reaches its end
    assert spmspm_tile_shape(36, m, k, n) == (3, 4, 3)  # only then A's free dimension m
    assert spmspm_tile_shape(10**9, m, k, n) == (5, 4, 3)


def test_operand_tiles_are_projections_of_the_construction():
    assert b_tile_shape(30, (8, 9)) == (8, 3)  # B is (k, n): rows first
    assert a_tile_shape(30, (9, 8)) == (3, 8)  # A is (m, k): columns first
    assert b_tile_shape(5, (8, 9)) == (5, 1)
    assert grow_shape(0.5, (3, 3), (0, 1)) == (1, 1)


# --- baselines -----------------------------------------------------------------

def test_uniform_assumes_dense_tiles(shared_data):
    pattern = load(shared_data, POWER)
    tiling = uniform_tiling(pattern, 300)
    assert tiling.tile_shape == (300, 1)
    assert tile_occupancy(pattern, tiling.tile_shape).max <= 300


@pytest.mark.parametrize("buffer", [64, 256, 1024])
def test_prescient_is_the_largest_candidate_that_fits(shared_data, buffer):
    pattern = load(shared_data, POWER)
    tiling = prescient_tiling(pattern, buffer)
    candidates = prescient_candidates(pattern, buffer)
    assert tiling.candidates == len(candidates)
    assert tiling.max_occupancy == tile_occupancy(pattern, tiling.tile_shape).max <= buffer
    later = candidates[candidates.index(tiling.tile_shape) + 1:]
    assert later, "the whole matrix cannot fit"
    assert tile_occupancy(pattern, later[0]).max > buffer
    assert all(tile_occupancy(pattern, shape).max > buffer for shape in later)
    assert tiling.tile_size > uniform_tiling(pattern, buffer).tile_size


# --- Swiftiles -----------------------------------------------------------------

def test_sample_count():
    assert samples_for(0.1, 10) == 100
    assert samples_for(0.3, 3) == 10
    assert samples_for(0.25, 10) == 40


def test_sample_count_rounding():
    # 21 / 0.35 is 60.00000000000001 in floating point: still 60 samples, not 61
    assert samples_for(0.35, 21) == 60
    # 10 / 0.3 = 33.3...: rounded up, never to nearest or down
    assert samples_for(0.3, 10) == 34


def columns_pattern(height, counts):
    """``height`` x ``len(counts)`` pattern whose column j holds ``counts[j]`` nonzeros."""
    rows = np.concatenate([np.arange(c) for c in counts])
    cols = np.repeat(np.arange(len(counts)), counts)
    return Pattern.from_matrix(scipy.sparse.coo_array((np.ones(len(rows)), (rows, cols)),
                                                      shape=(height, len(counts))))


def test_swiftiles_steps(shared_data):
    pattern = load(shared_data, "matrices/graphs/delaunay_n16.mtx")
    buffer, k = 256, 0.1
    est = swiftiles(pattern, buffer, k=k, y=10, seed=7)
    # 1. initial estimate T0 = B / d
    assert est.initial_shape == b_tile_shape(buffer / pattern.density, pattern.shape)
    # 2. ceil(y / k) random tiles of size T0
    assert len(est.samples) == 100
    # 3. O_k: at most a fraction k of the samples exceed it, and it is a sample
    assert np.count_nonzero(est.samples > est.o_k) <= k * len(est.samples)
    assert np.count_nonzero(est.samples >= est.o_k) > k * len(est.samples)
    # T = T0 * B / O_k
    assert est.tile_shape == b_tile_shape(math.prod(est.initial_shape) * buffer / est.o_k,
                                          pattern.shape)
    again = swiftiles(pattern, buffer, k=k, y=10, seed=7)
    assert again.tile_shape == est.tile_shape
    assert again.samples.tolist() == est.samples.tolist()


@pytest.mark.parametrize("seed", [0, 1])
def test_overbooking_rate_near_target_on_real_matrices(shared_data, seed):
    k = 0.1
    rates, initial, predicted = [], [], []
    for path, buffer in ACCURACY_RUNS:
        pattern = load(shared_data, path)
        est = swiftiles(pattern, buffer, k=k, seed=seed)
        rates.append(tile_occupancy(pattern, est.tile_shape).overbooked_fraction(buffer))
        initial.append(tile_occupancy(pattern, est.initial_shape).overbooked_fraction(buffer))
        predicted.append(est.predicted_fraction)
    error = np.abs(np.array(rates) - k)
    assert error.mean() < 0.05  # the paper: 5.8% MAE on its suite
    assert error.max() < 0.08
    assert np.mean(np.abs(np.array(initial) - k)) > 3 * error.mean()  # scaling matters
    assert np.mean(np.abs(np.array(predicted) - k)) < 0.04


# Column j of an n x n pattern holds j + 1 nonzeros, so with the buffer below the
# initial tiles are the n columns (T0 = buffer / density > n), all of them sampled
# (n < ceil(y / k) = 100), and the samples are exactly 1..n. Then the scaled tile is
# the same column (T = n * buffer / O_k = n), so the prediction counts the samples
# strictly above the buffer: one equal to it fits.
@pytest.mark.parametrize("n, buffer, o_k, overbooked", [
    (20, 18, 18, 2),    # k n = 2 samples above O_k: the 18th smallest of 1..20
    (15, 14, 14, 1),    # k n = 1.5, floored to 1 (not ceil or round to 2): the 14th of 15
])
def test_o_k_and_prediction_on_distinct_occupancies(n, buffer, o_k, overbooked):
    est = swiftiles(columns_pattern(n, range(1, n + 1)), buffer, k=0.1, y=10, seed=0)
    assert est.initial_shape == (n, 1)
    assert sorted(est.samples.tolist()) == list(range(1, n + 1))
    assert est.o_k == o_k
    assert est.tile_shape == (n, 1)
    assert est.predicted_fraction == overbooked / n


def test_whole_matrix_fits(shared_data):
    pattern = load(shared_data, POWER)
    est = swiftiles(pattern, pattern.nnz + 1)
    assert est.tile_shape == pattern.shape
    assert tile_occupancy(pattern, est.tile_shape).overbooked_fraction(pattern.nnz + 1) == 0


@pytest.mark.parametrize("kwargs, match", [
    ({"buffer": 0}, "buffer"), ({"buffer": 2.5}, "buffer"),
    ({"k": 0.0}, "k="), ({"k": 1.0}, "k="), ({"y": 0}, "y="),
])
def test_swiftiles_rejects_bad_parameters(kwargs, match):
    pattern = Pattern.from_matrix(scipy.sparse.eye_array(10, format="coo"))
    args = {"buffer": 4, **kwargs}
    with pytest.raises(ParameterError, match=match):
        swiftiles(pattern, args.pop("buffer"), **args)


def test_empty_matrix_is_rejected():
    with pytest.raises(ParameterError, match="no nonzeros"):
        swiftiles(Pattern.from_matrix(scipy.sparse.coo_array((5, 5))), 4)


# --- command lines -------------------------------------------------------------

def test_cli_json(shared_data, tmp_path):
    plot = tmp_path / "occupancy.png"
    result = run_cli("swiftiles", shared_data / POWER, "--buffer", 256, "--seed", 3,
                     "--plot", plot, "--json")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == 1
    out = json.loads(result.stdout)
    for key in ("tile_shape", "tile_size", "overbooked_fraction", "predicted_fraction",
                "preprocess_seconds"):
        assert key in out
    assert len(out["tile_shape"]) == 2 and math.prod(out["tile_shape"]) == out["tile_size"]
    pattern = load(shared_data, POWER)
    exact = tile_occupancy(pattern, out["tile_shape"]).overbooked_fraction(256)
    assert out["overbooked_fraction"] == pytest.approx(exact)
    assert plot.stat().st_size > 10_000


@pytest.mark.parametrize("args, message", [
    (["--buffer", 0], "'--buffer': 0"),
    (["--buffer", -5], "'--buffer': -5"),
    (["--buffer", 64, "--confidence", 1.5], "--confidence"),
    (["--buffer", 64, "--confidence", 0], "--confidence"),
])
def test_cli_rejects_bad_parameters(shared_data, args, message):
    result = run_cli("swiftiles", shared_data / POWER, *args, "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_cli_rejects_unreadable_file(tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("not a matrix market file\n")
    for path in (bad, tmp_path / "missing.mtx"):
        result = run_cli("swiftiles", path, "--buffer", 64)
        assert result.returncode == 2
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert str(path) in result.stderr


def test_bench_quick(shared_data):
    result = run_cli("bench", "swiftiles", "--quick", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    summary = out["summary"]
    assert summary["runs"] == len(out["runs"]) > 0
    assert 0 <= summary["mae"] < 0.1
    util = summary["utilization"]
    assert util["uniform"] < util["prescient"] < util["swiftiles"]
    assert summary["time_ratio"] > 1
    assert summary["traffic_p_over_n"] < 1 and summary["traffic_ob_over_p"] < 1
    assert out["paper"]["mae"] == "5.8%"
    by_r = summary["streaming_overhead_r"]
    assert by_r["1"] == summary["streaming_overhead"] <= by_r["4"] <= by_r["16"]
