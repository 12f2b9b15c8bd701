"""HYTE's static scheduler: the estimators against the exact figures (scipy), on
hand-checked cases, random matrices and every real matrix; the search space and the
cost model; ``sparseforge hyte`` and its refusals."""

import glob
import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.sw import hyte_estimate as h
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.hyte_schedule import (
    Hardware,
    Stats,
    controller_config,
    cost,
    drt_scheme,
    harp_scheme,
    search,
    space,
    tailors_scheme,
)
from sparseforge.sw.wire import HYTE_ORDERS


def random_pair(seed, n=300, density=0.02):
    a = sp.random_array((n, n), density=density, rng=seed, format="csr")
    b = sp.random_array((n, n // 2), density=density, rng=seed + 1, format="csr")
    return a, b


def test_exact_figures_by_hand():
    a = sp.csr_array(np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1]]))
    b = sp.csr_array(np.array([[1, 0], [1, 1], [0, 1]]))
    assert h.exact_eff_mac(a, b) == 1 * 1 + 2 * 2 + 1 * 1
    # C = [[2,1],[1,1],[0,1]]: 5 nonzeros; by k-tile of 1 every product is its own.
    assert h.exact_nnz_ctk(a, b) == {1: 6, 2: 5, 3: 5}


def test_small_matrices_are_sampled_whole_and_exact():
    a, b = random_pair(1, n=200)
    e = h.estimate(a, b, seed=3)
    # Sampled whole: every row of A and column of B that holds a nonzero.
    assert (e.rows, e.cols) == (len(np.unique(a.tocoo().row)), len(np.unique(b.tocoo().col)))
    assert (e.rows, e.cols) != (200, 100)
    assert e.eff_mac == h.exact_eff_mac(a, b)
    exact = h.exact_nnz_ctk(a, b)
    for size, value in exact.items():
        assert abs(e.nnz_ctk[size] - value) <= 0.1 * value, size


@pytest.mark.parametrize("pair", ["by hand", "random"])
def test_exact_branch_at_as_many_minimum_values_as_pairs_of_c(pair):
    if pair == "by hand":
        # The pair of test_exact_figures_by_hand: C holds 5 nonzeros; effMAC 6 and
        # nnzCTk {1: 6, 2: 5, 3: 5}, as worked there.
        a = sp.csr_array(np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1]]))
        b = sp.csr_array(np.array([[1, 0], [1, 1], [0, 1]]))
    else:
        a, b = random_pair(1, n=200)
    exact = h.exact_nnz_ctk(a, b)
    nnz_c = exact[a.shape[1]]
    # Keeping exactly as many minimum values as C has nonzeros (sk = nnz(C)), every
    # product is kept, the largest hash included: the figures are exact, not estimated.
    e = h.estimate(a, b, seed=3, min_sk=nnz_c)
    assert e.sk == nnz_c and (e.fraction_i, e.fraction_j) == (1.0, 1.0)
    assert e.eff_mac == h.exact_eff_mac(a, b)
    assert e.nnz_ctk == exact
    # One value fewer and it is the sketch's estimate.
    assert h.estimate(a, b, seed=3, min_sk=nnz_c - 1).nnz_c != nnz_c


def test_deterministic_under_seed_and_seed_matters():
    a, b = random_pair(2, n=3000, density=0.002)
    first, again, other = (h.estimate(a, b, seed=s) for s in (5, 5, 6))
    assert first == again
    assert first.nnz_c != other.nnz_c


def test_nnz_ctk_runs_from_eff_mac_to_nnz_c():
    a, b = random_pair(4, n=4000, density=0.001)
    e = h.estimate(a, b, seed=0)
    sizes = sorted(e.nnz_ctk)
    assert sizes[0] == 1 and sizes[-1] == 4000
    values = [e.nnz_ctk[s] for s in sizes]
    assert all(x >= y * 0.95 for x, y in itertools.pairwise(values))


def test_refuses_a_pair_whose_inner_dimensions_differ():
    with pytest.raises(ParameterError, match="A's columns must equal B's rows"):
        h.estimate(sp.csr_array((3, 4)), sp.csr_array((5, 2)))


def test_every_real_matrix_within_the_error_target(shared_data):
    """The public simulator errs by 17% (effMAC) and 12% (nnz(C)) at the median; ours
    must reach half of that, deterministically, on every real matrix."""
    errors = []
    for path in sorted(glob.glob(str(shared_data / "matrices" / "**" / "*.mtx"),
                               recursive=True)):
        a = read_matrix(path)
        b = a if a.shape[0] == a.shape[1] else a.T
        if a.nnz > 300_000:
            continue            # the exact product is the slow part; the bench runs them
        e = h.estimate(a, b, seed=1)
        exact_c = h.exact_nnz_ctk(a, b, [a.shape[1]])[a.shape[1]]
        errors.append((abs(h.relative_error(e.eff_mac, h.exact_eff_mac(a, b))),
                       abs(h.relative_error(e.nnz_c, exact_c))))
    eff, nnz_c = np.median(np.array(errors), axis=0)
    assert len(errors) > 50
    assert eff <= 0.085 and nnz_c <= 0.06, (eff, nnz_c)


STATS = Stats(i=4096, k=4096, j=4096, nnz_a=40_000, nnz_b=40_000, eff_mac=400_000.0,
              nnz_ctk={1: 400_000.0, 64: 300_000.0, 4096: 150_000.0})


def test_the_pruned_space_leaves_the_outermost_loop_untiled():
    for dataflow, dim in (("gust", 0), ("ip", 0), ("op", 1)):
        shapes = {tile for tile, _ in space(STATS, dataflow)}
        assert {tile[dim] for tile in shapes} == {4096}
        assert len(shapes) * 4 == len(list(space(STATS, dataflow)))
        assert len(list(space(STATS, dataflow, pruned=False))) == 13 ** 3 * 4


def test_cost_model_is_the_slowest_of_pe_dram_and_sram():
    scheme = cost(STATS, Hardware(buffer_bytes=1 << 16), "gust", (4096, 64, 4096), "k")
    assert scheme.cycles == max(scheme.parts.values())
    assert scheme.parts["pe"] == STATS.eff_mac / 32
    assert sum(scheme.allocation.values()) <= 1 << 16


# A small product whose operands differ (A: 24 nonzeros, B: 40; I != J), on hardware
# whose DRAM and SRAM move one byte and one word a cycle, so that the parts are the
# bytes and words themselves: a swapped, dropped or misread term changes them.
SMALL = Stats(i=8, k=8, j=16, nnz_a=24, nnz_b=40, eff_mac=120.0,
              nnz_ctk={1: 120.0, 2: 100.0, 4: 80.0, 8: 60.0})


def small_hw(buffer_bytes):
    return Hardware(macs=4, buffer_bytes=buffer_bytes, dram_bytes=1.0, sram_words=1.0,
                    nonzero_bytes=8, metadata_bytes=4)


def test_nnz_ctk_at_a_measured_tile_size_is_that_sizes_own():
    # At a measured T_k the figure is its own (the boundary of "at or above"); between
    # two it is the one above; at K, nnz(C).
    assert [SMALL.ctk(tk) for tk in (1, 2, 3, 4, 8)] == [120.0, 100.0, 80.0, 80.0, 60.0]
    assert SMALL.nnz_c == 60.0


# Each case's figures worked by hand (n_x: tiles along x; tiles A = n_i n_k, B = n_k n_j,
# C = n_i n_j; DRAM of x = fetched * 8 + metadata * 4, metadata = tiles * min(segments,
# nonzeros per tile) * fetched / nonzeros).
COST_CASES = {
    # Gust, tile (8, 2, 4), intra-tile reuse only, a buffer of 10 bytes, all on B.
    # n_i = 1, n_k = 4, n_j = 4: tiles A 4, B 16, C 4; C's traffic nnzCTk(2) = 100.
    # Repeats: A n_j = 4, B n_i = 1. Segments: A T_i = 8, B T_k = 2, C T_i = 8.
    # SRAM: A 24 * 4 = 96, B effMAC = 120, C 100: 316.
    # Tile bytes: B 40 / 16 * 8 = 20, so B's hit is 10 / 20 = 1/2.
    # A: fetched 24 * 4 = 96, metadata 4 * min(8, 6) * 96 / 24 = 96: 768 + 384 = 1152.
    # B: fetched 40 * 1 + (120 - 40) * 1/2 = 80, metadata 16 * min(2, 2.5) * 80 / 40
    #    = 64: 640 + 256 = 896.
    # C: fetched 100, metadata 4 * min(8, 25) * 1 = 32: 800 + 128 = 928.
    # DRAM 1152 + 896 + 928 = 2976; PE 120 / 4 = 30.
    "gust": (("gust", (8, 2, 4), None, 10),
             {"pe": 30.0, "dram": 2976.0, "sram": 316.0}, {"A": 0, "B": 10, "C": 0}),
    # Gust, tile (8, 2, 4), j innermost (A's tile stays), a buffer of 44 bytes: B gets
    # its tile, 20 bytes (it fits exactly: hit 1), A the other 24 of its 24 / 4 * 8 =
    # 48 (hit 1/2).
    # A: fetched 24 + (24 * 4 - 24) * 1/2 = 60, metadata 4 * 6 * 60 / 24 = 60:
    #    480 + 240 = 720.
    # B: fetched 40 + (120 - 40) * 0 = 40, metadata 16 * 2 * 1 = 32: 320 + 128 = 448.
    # C: as above, 928. DRAM 720 + 448 + 928 = 2096; SRAM 316.
    "gust, A reused": (("gust", (8, 2, 4), "j", 44),
                       {"pe": 30.0, "dram": 2096.0, "sram": 316.0},
                       {"A": 24, "B": 20, "C": 0}),
    # Inner product, tile (4, 4, 4), intra-tile reuse only, a buffer of 10 bytes on B.
    # n_i = 2, n_k = 2, n_j = 4: tiles A 4, B 8, C 8; C's traffic nnzCTk(4) = 80.
    # Repeats: A 4, B 2. Segments: A T_i = 4, B T_j = 4, C T_i = 4.
    # SRAM: A 24 * 4 = 96, B's tile reread per row of A 40 * I = 320, C 80: 496.
    # Tile bytes: B 40 / 8 * 8 = 40, hit 10 / 40 = 1/4.
    # A: fetched 96, metadata 4 * min(4, 6) * 4 = 64: 768 + 256 = 1024.
    # B: fetched 40 * 2 + (320 - 80) * 3/4 = 260, metadata 8 * min(4, 5) * 260 / 40
    #    = 208: 2080 + 832 = 2912.
    # C: fetched 80, metadata 8 * min(4, 10) * 1 = 32: 640 + 128 = 768.
    # DRAM 1024 + 2912 + 768 = 4704.
    "ip": (("ip", (4, 4, 4), None, 10),
           {"pe": 30.0, "dram": 4704.0, "sram": 496.0}, {"A": 0, "B": 10, "C": 0}),
    # Outer product, tile (4, 4, 4), k innermost (C buffered and reused), 20 bytes on C.
    # Tiles and repeats as for ip. Segments: A T_k = 4, B T_k = 4, C T_i = 4.
    # SRAM: A 96, B 40 * 2 = 80, C a partial sum per product 120: 296.
    # Tile bytes: C 80 / 8 * 8 = 80, hit 20 / 80 = 1/4.
    # A: 1024 as for ip. B: fetched 80, metadata 8 * 4 * 2 = 64: 640 + 256 = 896.
    # C: nnz(C) 60 + (80 - 60) * 3/4 = 75, plus the rereads (120 - 80) * 3/4 = 30: 105;
    #    metadata 8 * 4 * 105 / 80 = 42: 840 + 168 = 1008.
    # DRAM 1024 + 896 + 1008 = 2928.
    "op": (("op", (4, 4, 4), "k", 20),
           {"pe": 30.0, "dram": 2928.0, "sram": 296.0}, {"A": 0, "B": 0, "C": 20}),
}


@pytest.mark.parametrize("case", COST_CASES)
def test_cost_model_against_figures_worked_by_hand(case):
    (dataflow, tile, innermost, buffer_bytes), parts, allocation = COST_CASES[case]
    scheme = cost(SMALL, small_hw(buffer_bytes), dataflow, tile, innermost)
    assert scheme.parts == parts
    assert scheme.cycles == parts["dram"]
    assert scheme.allocation == allocation


@pytest.mark.parametrize("tile, innermost, logs, order, bufsize", [
    # j innermost: i > k > j; a 44-byte buffer, 20 bytes of it B's: 2 nonzeros.
    ((8, 2, 4), "j", (3, 2, 1), "ikj", 2),
    # A whole dimension that is not a power of two (5, 3) rounds up; 1 is 2**0; no
    # inter-tile reuse keeps k innermost and the whole buffer on B (10 bytes: 1).
    ((5, 1, 3), None, (3, 2, 0), "ijk", 1),
    ((1, 8, 16), "i", (0, 4, 3), "jki", 1),
])
def test_the_controller_is_programmed_with_the_schemes_tile_order_and_b_buffer(
        tile, innermost, logs, order, bufsize):
    hw = small_hw(44 if innermost == "j" else 10)
    scheme = cost(SMALL, hw, "gust", tile, innermost)
    config = controller_config(SMALL, scheme, hw)
    assert config == {"i": 8, "j": 16, "k": 8, "log_ti": logs[0], "log_tj": logs[1],
                      "log_tk": logs[2], "order": HYTE_ORDERS.index(order),
                      "bufsize": bufsize}


def test_drt_grows_k_then_i_then_j_while_every_mean_tile_fits_its_share():
    """SMALL (A 8 x 8 of 24, B 8 x 16 of 40) in 20 words: A's room 1, B's 9, C's 10.
    Mean tiles at (T_i, T_k, T_j): A 0.375 T_i T_k, B 0.3125 T_k T_j, C nnzCTk(T_k)
    T_i T_k T_j / 1024. k to 2 (A 0.75); i to 2 refused (A 1.5); j to 2, 4, 8 (B 5), k
    to 4 refused (A 1.5); j to 16 refused (B 10): (1, 2, 8), i innermost. Growing i
    first would give (2, 1, 16). The cost, Gust, 160 bytes all on B (reused, buffered):
    n_i 8, n_k 4, n_j 2; tiles A 32, B 8, C 16; C's traffic nnzCTk(2) = 100.
    SRAM: A 24 * 2 + effMAC 120 + 100 = 268. B's tile 40 bytes, hit 1.
    A: fetched 48, metadata 32 * min(1, 0.75) * 2 = 48: 384 + 192 = 576.
    B: fetched 40, metadata 8 * min(2, 5) = 16: 320 + 64 = 384.
    C: fetched 100, metadata 16 * min(1, 6.25) = 16: 800 + 64 = 864. DRAM 1824."""
    scheme = drt_scheme(SMALL, small_hw(160), "gust")
    assert (scheme.tile, scheme.innermost) == ((1, 2, 8), "i")
    assert scheme.parts == {"pe": 30.0, "dram": 1824.0, "sram": 268.0}
    assert scheme.allocation == {"A": 0, "B": 160, "C": 0} and scheme.cycles == 1824.0


@pytest.mark.parametrize("words, tile", [
    # A's room 0.75 at 15 words holds a (1, 2) tile of A exactly (0.75): k grows, then j
    # to 8 (B 5 in 6.75); at 14 (room 0.7) k stays 1 and j grows to 16 (B 5 in 6.3).
    (15, (1, 2, 8)), (14, (1, 1, 16)),
    # At 30 (room 1.5) a (2, 2) tile of A fits exactly; at 29 i stays 1.
    (30, (2, 2, 16)), (29, (1, 2, 16)),
])
def test_drt_takes_an_exact_fit_and_refuses_past_it(words, tile):
    assert drt_scheme(SMALL, small_hw(words * 8), "gust").tile == tile


def test_harp_tiles_i_alone_while_a_and_c_fit_their_shares():
    """SMALL in 400 words: A's and C's rooms 18 each (4.5%). k and j whole: A's mean
    tile 3 T_i, C's nnzCTk(8) = 60 over 8 / T_i: 7.5 T_i. T_i 2 (C 15) taken, 4 (C 30)
    refused: (2, 8, 16), i innermost. (Taking C's traffic at T_k = 1, 120, would stop
    at 1.) The cost, Gust, 3200 bytes on B: n_i 4, n_k 1, n_j 1; tiles A 4, B 1, C 4.
    SRAM: A 24 + 120 + 60 = 204. B's tile 320 bytes, hit 1.
    A: fetched 24, metadata 4 * min(2, 6) = 8: 192 + 32 = 224.
    B: fetched 40, metadata 1 * min(8, 40) = 8: 320 + 32 = 352.
    C: fetched 60, metadata 4 * min(2, 15) = 8: 480 + 32 = 512. DRAM 1088."""
    scheme = harp_scheme(SMALL, small_hw(3200), "gust")
    assert (scheme.tile, scheme.innermost) == ((2, 8, 16), "i")
    assert scheme.parts == {"pe": 30.0, "dram": 1088.0, "sram": 204.0}
    assert scheme.allocation == {"A": 0, "B": 3200, "C": 0} and scheme.cycles == 1088.0
    # One word short of A's and C's rooms holding a 2-row tile (15 / 0.045 = 333.3):
    # one row a tile; at 334 words, two.
    assert harp_scheme(SMALL, small_hw(333 * 8), "gust").tile == (1, 8, 16)
    assert harp_scheme(SMALL, small_hw(334 * 8), "gust").tile == (2, 8, 16)


def test_search_finds_the_cheapest_of_its_space_and_beats_no_worse_than_exhaustive():
    hw = Hardware(buffer_bytes=1 << 15)
    best, count = search(STATS, hw, "gust")
    every = [cost(STATS, hw, "gust", t, o) for t, o in space(STATS, "gust")]
    assert count == len(every) and best.cycles == min(s.cycles for s in every)
    optimum, _ = search(STATS, hw, "gust", pruned=False)
    assert optimum.cycles <= best.cycles
    for baseline in (tailors_scheme, drt_scheme, harp_scheme):
        assert baseline(STATS, hw, "gust").cycles >= optimum.cycles


def test_bad_buffer_and_dataflow():
    with pytest.raises(ParameterError, match="buffer"):
        Hardware(buffer_bytes=0)
    with pytest.raises(ParameterError, match="--dataflow xp"):
        search(STATS, Hardware(), "xp")


def test_command_json(shared_data, capsys):
    path = shared_data / "matrices" / "graphs" / "email-Eu-core.mtx"
    main(["hyte", str(path), "--buffer-kb", "64", "--seed", "2", "--json"])
    first = json.loads(capsys.readouterr().out)
    for key in ("eff_mac_est", "nnz_c_est", "tile_shape", "inter_tile_order",
                "buffer_allocation", "modeled_cycles", "schedule_seconds"):
        assert key in first
    main(["hyte", str(path), str(path), "--buffer-kb", "64", "--seed", "2", "--json"])
    second = json.loads(capsys.readouterr().out)
    assert second["nnz_c_est"] == first["nnz_c_est"]


@pytest.mark.parametrize("args, message", [
    (["--buffer-kb", "0"], "--buffer-kb"),
    (["--buffer-kb", "-3"], "--buffer-kb"),
    (["--buffer-kb", "8", "--dataflow", "xp"], "--dataflow"),
])
def test_command_bad_input_is_one_line(shared_data, capsys, args, message):
    path = shared_data / "matrices" / "graphs" / "email-Eu-core.mtx"
    with pytest.raises(SystemExit) as stop:
        main(["hyte", str(path), *args])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1


def test_command_refuses_mismatched_inner_dimensions(shared_data, capsys):
    a = shared_data / "matrices" / "graphs" / "email-Eu-core.mtx"
    b = shared_data / "matrices" / "suitesparse" / "494_bus.mtx"
    with pytest.raises(SystemExit) as stop:
        main(["hyte", str(a), str(b), "--buffer-kb", "8"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "must equal B's rows" in err and err.count("\n") == 1
