# amaranth: UnusedElaboratable=no
"""The MINT building blocks: prefix sum (three networks), divide/modulo, zero detection,
cluster counter and sorting network, each against its model under random back-pressure."""

import itertools
import random

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.divider import DivMod, DivModSignature
from sparseforge.hw.mint_units import (
    ClusterCounter,
    ClusterCountSignature,
    ZeroDetect,
    ZeroDetectSignature,
)
from sparseforge.hw.prefix_sum import VARIANTS, PrefixSum, PrefixSumSignature
from sparseforge.hw.sorter import Sorter, SortSignature, odd_even_merge
from sparseforge.sim.models import mint as model
from sparseforge.sim.runners import pysim, seed_from_env, verilator
from sparseforge.tb.mint import divmod_bench, prefix_sum_bench, random_bench

POW2 = [1, 2, 4, 8, 16, 32, 64]


# -- the networks, as schedules ----------------------------------------------------

def scan(network, values):
    """``values`` through a prefix-sum network's levels, in Python."""
    lanes = list(values)
    for level in network:
        before = list(lanes)
        for dst, src in level:
            lanes[dst] = before[dst] + before[src]
    return lanes


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("lanes", POW2)
def test_each_network_computes_the_inclusive_scan(variant, lanes):
    network = VARIANTS[variant](lanes)
    for level in network:                      # a lane is written once a level, from below
        assert len({dst for dst, _ in level}) == len(level)
        assert all(src < dst for dst, src in level)
    values = [random.Random(lanes).randrange(1000) for _ in range(lanes)]
    assert scan(network, values) == list(itertools.accumulate(values))


@pytest.mark.parametrize("lanes", POW2)
def test_network_depths_and_adders_are_figure_9s(lanes):
    log = lanes.bit_length() - 1
    depth = {v: len(VARIANTS[v](lanes)) for v in VARIANTS}
    adders = {v: sum(map(len, VARIANTS[v](lanes))) for v in VARIANTS}
    assert depth == {"serial": lanes - 1, "brent_kung": max(2 * log - 1, 0),
                     "kogge_stone": log}
    assert adders == {"serial": lanes - 1, "brent_kung": 2 * lanes - 2 - log,
                      "kogge_stone": lanes * log - lanes + 1}
    unit = PrefixSum(lanes=lanes, width=8, variant="brent_kung", levels=2)
    assert unit.latency == -(-depth["brent_kung"] // 2) + 1
    assert unit.adders == adders["brent_kung"] + lanes


@pytest.mark.parametrize("lanes", [2, 4, 8, 16])
def test_odd_even_merge_sorts_every_zero_one_input(lanes):
    """The 0-1 principle: a network that sorts every 0/1 input sorts every input."""
    network = odd_even_merge(lanes)
    log = lanes.bit_length() - 1
    assert len(network) == log * (log + 1) // 2
    words = np.arange(1 << lanes)
    bits = (words[:, None] >> np.arange(lanes)) & 1
    for level in network:
        low, high = (np.array(side) for side in zip(*level, strict=True))
        bits[:, low], bits[:, high] = (np.minimum(bits[:, low], bits[:, high]),
                                       np.maximum(bits[:, low], bits[:, high]))
    assert (np.diff(bits, axis=1) >= 0).all()


# -- the models, against plain loops ---------------------------------------------------

def test_prefix_sum_model_restarts_after_last_and_wraps():
    rng = random.Random(1)
    counts = [[rng.choice([0, 1, 2, 255]) for _ in range(4)] for _ in range(30)]
    last = [rng.random() < 0.2 for _ in range(30)]
    for inclusive in (False, True):
        sums, totals = model.prefix_sums(counts, last, 8, inclusive)
        carry = 0
        for v, row in enumerate(counts):
            for i, c in enumerate(row):
                carry_through = carry + c
                assert sums[v][i] == (carry_through if inclusive else carry) % 256
                carry = carry_through
            assert totals[v] == carry % 256
            carry = 0 if last[v] else carry


def test_the_other_models_against_plain_loops():
    rng = random.Random(2)
    x = [[rng.randrange(256) for _ in range(3)] for _ in range(20)]
    d = [rng.choice([0, 1, 7, 255]) for _ in range(20)]
    q, r = model.divmod_lanes(x, d, 8)
    for v in range(20):
        for i in range(3):
            want = (255, x[v][i]) if d[v] == 0 else divmod(x[v][i], d[v])
            assert (q[v][i], r[v][i]) == want
    values = [[rng.choice([0, 5]) for _ in range(5)] for _ in range(20)]
    mask, count = model.zero_detect(values)
    assert mask.tolist() == [sum(1 << i for i, v in enumerate(row) if v) for row in values]
    assert count.tolist() == [sum(v != 0 for v in row) for row in values]
    keep = [[rng.random() < 0.7 for _ in range(5)] for _ in range(20)]
    counts = model.cluster_counts(values, keep, 8)
    assert counts.tolist() == [[sum(v == b and k for v, k in zip(row, ks, strict=True))
                                for b in range(8)] for row, ks in zip(values, keep, strict=True)]
    keys, data = model.stable_sort(values, [list(range(5))] * 20)
    for row, ks, ds in zip(values, keys, data, strict=True):
        want = sorted(zip(row, range(5), strict=True), key=lambda kd: kd[0])
        assert list(zip(ks, ds, strict=True)) == want


# -- each block on Amaranth's simulator, under random back-pressure ----------------------

RATES = [{}, {"counts": 1.0, "sums": 0.3, "dividends": 1.0, "results": 0.3, "values": 1.0,
              "detect": 0.3, "indices": 1.0, "histogram": 0.3, "chunk": 1.0, "sorted": 0.3}]


def run(component, vectors=150, rates=0, seed=0):
    result = pysim(random_bench(component, vectors, seed_from_env(seed), RATES[rates]))
    assert len(result.outputs) == vectors
    return result


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("lanes", "width", "inclusive", "levels"), [
    (1, 8, 0, 1), (2, 5, 1, 1), (4, 16, 0, 2), (8, 16, 0, 1), (8, 16, 1, 1), (16, 16, 0, 1),
    (16, 12, 1, 3), (32, 32, 0, 2),
])
def test_prefix_sum_matches_the_model(variant, lanes, width, inclusive, levels):
    unit = PrefixSum(lanes=lanes, width=width, variant=variant, inclusive=inclusive,
                     levels=levels)
    run(unit, rates=lanes % 3 == 1, seed=lanes + width)


def test_prefix_sum_builds_csr_to_csc_column_pointers():
    """Figure 8c step 5: the exclusive scan of the column counts is col_ptr; the last
    vector's total is the final pointer (nnz)."""
    col_ids = [2, 0, 3, 2, 1, 2, 0, 5, 5, 3, 2]
    counts = np.bincount(col_ids, minlength=8).reshape(2, 4)
    bench = prefix_sum_bench(PrefixSum(lanes=4, width=16, variant="serial"), counts, [0, 1],
                             seed_from_env(3))
    out = pysim(bench).outputs
    assert out[0]["sums"] + out[1]["sums"] == [0, 2, 3, 7, 9, 9, 11, 11]
    assert out[1]["total"] == len(col_ids)


@pytest.mark.parametrize(("lanes", "width", "levels"), [(8, 16, 1), (3, 8, 3), (1, 1, 1),
                                                        (2, 64, 8), (5, 20, 2)])
def test_divmod_matches_the_model(lanes, width, levels):
    run(DivMod(lanes=lanes, width=width, levels=levels), rates=lanes % 2, seed=width)


def test_divmod_gives_rlc_to_coo_coordinates_of_each_nonzero():
    """Figure 8d step 4: row = position // K and col = position % K, K changing between
    tensors (a new divisor applies to the vectors presented with it)."""
    positions = np.array([[0, 1, 4, 6, 9, 10, 13, 15]] * 2)
    bench = divmod_bench(DivMod(lanes=8, width=8), positions, [4, 5], seed_from_env(4))
    out = pysim(bench).outputs
    assert [(r["quotient"], r["remainder"]) for r in out[0]][:4] == [(0, 0), (0, 1), (1, 0),
                                                                     (1, 2)]
    assert [r["remainder"] for r in out[1]] == [p % 5 for p in positions[1]]


@pytest.mark.parametrize(("lanes", "width"), [(8, 16), (1, 1), (13, 7)])
def test_zero_detect_matches_the_model(lanes, width):
    run(ZeroDetect(lanes=lanes, width=width), rates=lanes % 2, seed=lanes)


@pytest.mark.parametrize(("lanes", "bins"), [(8, 16), (1, 2), (16, 4), (5, 64)])
def test_cluster_counter_matches_the_model(lanes, bins):
    run(ClusterCounter(lanes=lanes, bins=bins), rates=lanes % 2, seed=bins)


@pytest.mark.parametrize(("lanes", "key_width", "data_width", "levels"), [
    (8, 16, 16, 1), (2, 1, 1, 1), (4, 3, 8, 2), (16, 4, 5, 4)])
def test_sorter_matches_the_model(lanes, key_width, data_width, levels):
    run(Sorter(lanes=lanes, key_width=key_width, data_width=data_width, levels=levels),
        rates=levels % 2, seed=lanes)


BLOCKS = [PrefixSum(lanes=8, width=16, variant=v) for v in VARIANTS] + [
    PrefixSum(lanes=16, width=16, variant="brent_kung", levels=2), DivMod(lanes=8, width=16),
    DivMod(lanes=4, width=12, levels=5),
    ZeroDetect(), ClusterCounter(), Sorter(lanes=16, levels=3)]


@pytest.mark.parametrize("unit", BLOCKS, ids=lambda u: f"{type(u).__name__}-{u.latency}")
def test_latency_as_documented_and_one_vector_per_cycle(unit):
    source, sink = (name for name, _ in unit.signature.members.items()
                    if name not in ("divisor",))
    result = pysim(random_bench(unit, 40, 7, {source: 1.0, sink: 1.0}))
    assert result.taken == list(range(40))
    assert [g - t for g, t in zip(result.given, result.taken, strict=True)] == \
        [unit.latency] * 40


# -- parameters, interfaces, Verilog, the synthesis report -----------------------------

@pytest.mark.parametrize(("make", "message"), [
    (lambda: PrefixSum(lanes=6), r"lanes=6: expected a power of two in \[1, 64\]"),
    (lambda: PrefixSum(variant="ripple"),
     "variant='ripple': expected one of serial, brent_kung, kogge_stone"),
    (lambda: PrefixSum(variant=3), "variant=3: expected one of serial"),
    (lambda: PrefixSum(width=0), r"width=0: expected an integer in \[1, 64\]"),
    (lambda: DivMod(levels=0), r"levels=0: expected an integer in \[1, 64\]"),
    (lambda: Sorter(lanes=1), r"lanes=1: expected a power of two in \[2, 64\]"),
    (lambda: ClusterCounter(bins=3), "bins=3"),
    (lambda: ZeroDetect(lanes=65), "lanes=65"),
])
def test_bad_parameters_are_named_with_their_range(make, message):
    with pytest.raises(ParameterError, match=message):
        make()


def test_variant_by_name_or_index_as_the_command_line_gives_it():
    blk = get("prefix_sum")
    assert blk.resolve({"variant": "serial"})["variant"] == "serial"
    assert blk.resolve({"variant": "1"})["variant"] == "brent_kung"
    assert blk.resolve({})["variant"] == "kogge_stone"


def test_blocks_declare_the_named_signatures():
    pairs = [(PrefixSum(lanes=4, width=9), PrefixSumSignature(4, 9)),
             (DivMod(lanes=3, width=7), DivModSignature(3, 7)),
             (ZeroDetect(lanes=5, width=6), ZeroDetectSignature(5, 6)),
             (ClusterCounter(lanes=5, bins=8), ClusterCountSignature(5, 8)),
             (Sorter(lanes=4, key_width=5, data_width=6), SortSignature(4, 5, 6))]
    for unit, signature in pairs:
        assert dict(unit.signature.members) == dict(signature.members)


@pytest.mark.parametrize(("name", "params"), [
    ("prefix_sum", {"variant": "serial"}), ("prefix_sum", {"variant": "brent_kung"}),
    ("prefix_sum", {"lanes": 16, "inclusive": 1, "levels": 3}), ("prefix_sum", {"lanes": 1}),
    ("divmod", {}), ("divmod", {"lanes": 1, "width": 1}), ("divmod", {"levels": 3}),
    ("zero_detect", {}), ("zero_detect", {"lanes": 1, "width": 1}),
    ("cluster_counter", {}), ("cluster_counter", {"lanes": 1, "bins": 2}),
    ("sorter", {}), ("sorter", {"lanes": 2, "key_width": 1, "data_width": 1, "levels": 2}),
])
def test_verilog_lints_clean_with_wall(lint, name, params):
    assert lint(name, params) == ""


def test_in_the_synthesis_report():
    assert {(c["lanes"], c["width"], c["variant"]) for c in PrefixSum.REPORT} >= {
        (n, 16, v) for n in (8, 16) for v in VARIANTS}
    for name in ("prefix_sum", "divmod", "zero_detect", "cluster_counter", "sorter"):
        blk = get(name)
        assert blk.cls.REPORT
        for config in blk.cls.REPORT:
            blk.cls(**blk.resolve(config))


@pytest.mark.verilator
def test_verilator_and_amaranth_agree_cycle_for_cycle(tmp_path):
    params = {"lanes": 8, "width": 16, "variant": "brent_kung"}
    seed = seed_from_env(9)
    rtl = verilator("prefix_sum", "sparseforge.tb.mint", params=params,
                    args={"vectors": 400}, seed=seed, work_dir=tmp_path).result
    assert rtl == pysim(random_bench(PrefixSum(**params), 400, seed))
