"""``sparseforge bench mint --quick``: every converter block equals the golden converter
on a real matrix, and the figures the bench prints are there and sane."""

import functools
import json

import pytest

from sparseforge.bench import mint
from sparseforge.cli import main
from sparseforge.sw.sage import RATES_PATH, MintRates, rate_terms


def bench(capsys):
    main(["bench", "mint", "--quick", "--json"])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and "error" not in err
    return json.loads(out)


MERGES = ["dense_to_coo", "dense_to_csr", "dense_to_zvc", "rlc_to_coo", "zvc_to_dense"]


def check_software_area_and_sage(result):
    assert {r["conversion"] for r in result["software"]} == {"CSR->CSC", "COO->CSR", "CSR->BSR"}
    assert all(r["ratio"] > 0 for r in result["software"])
    assert result["sage"]["agree"] >= 5 and result["sage"]["fields_agree"] >= 52
    assert "bibd spgemm" in result["sage"]["not_offered"]
    area = result["area"]
    assert area["merges"] == MERGES
    assert area["merged_vs_separate"] == area["merged_logic"] / area["merges_logic"]
    assert area["merged_vs_paper_style"] == (area["merged_logic"]
                                             / area["paper_style_logic"]) <= 0.5


@pytest.mark.soak                   # synthesizes MINT_m, its divider and the converters it merges
def test_bench_mint_quick_without_its_rtl_runs(shared_data, capsys, monkeypatch):
    """The default run's bench: the software timings, the area of MINT_m and of the
    converters it merges, and SAGE's table. Its Verilator runs (every conversion on 494_bus)
    repeat what each converter's own tests run on real matrices, and the other converters'
    syntheses what the synthesis report runs, so they stay in the soak test below."""
    monkeypatch.setattr("sparseforge.bench.mint.rtl", lambda root, names, seed: [])
    monkeypatch.setattr("sparseforge.bench.mint.area",
                        functools.partial(mint.area, only=MERGES))
    before = RATES_PATH.read_text()
    result = bench(capsys)
    assert result["rtl"] == [] and result["headline"] == []
    assert list(result["area"]["separate"]) == MERGES
    assert not result["rates"]["written"] and RATES_PATH.read_text() == before
    check_software_area_and_sage(result)


def _run(conversion, matrix, shape, nnz, cycles, golden_s=1.0, scipy_s=None):
    return {"conversion": conversion, "matrix": matrix, "shape": list(shape), "nnz": nnz,
            "block": conversion.replace("->", "_to_"), "cycles": cycles, "matches_golden": True,
            "golden_s": golden_s, "scipy_s": scipy_s}


def test_fit_recovers_the_cycles_of_a_known_rate():
    """Runs made from a known rate are fitted back exactly, each term to its own
    coefficient (rows, columns and nonzeros differ, so a swapped term shows); one matrix is
    too few to fit; what the fit writes is a table SAGE reads."""
    def cycles(rows, cols, nnz):                        # 2 per nonzero, 1/8 per element
        return 2 * nnz + rate_terms(rows, cols, nnz)["elements"] / 8

    def csc(rows, cols, nnz):                           # 3 per nonzero, 1 per pointer
        return 3 * nnz + rate_terms(rows, cols, nnz)["pointers"]

    shapes = [(40, 24, 100), (100, 64, 900), (31, 77, 250)]
    runs = [_run("dense->coo", f"m{i}", (r, c), z, cycles(r, c, z))
            for i, (r, c, z) in enumerate(shapes)]
    runs += [_run("csr->csc", f"m{i}", (r, c), z, csc(r, c, z))
             for i, (r, c, z) in enumerate(shapes)]
    runs += [_run("rlc->coo", "m0", (40, 24), 100, 500)]
    runs += [_run("dense->csr", "t", (4, 4, 4), 10, 90)]   # a tensor: not fitted
    bad = _run("dense->zvc", "m0", (40, 24), 100, 5)
    runs += [bad, {**bad, "matrix": "m1"}, {**bad, "matrix": "m2", "matches_golden": False}]
    fitted = mint.fit(runs)
    assert set(fitted) == {"dense->coo", "csr->csc", "dense->zvc"}
    coo = fitted["dense->coo"]
    assert coo["block"] == "dense_to_coo" and coo["fit"]["matrices"] == ["m0", "m1", "m2"]
    assert coo["coefficients"] == pytest.approx({"nnz": 2, "elements": 0.125})
    assert fitted["csr->csc"]["coefficients"] == pytest.approx({"nnz": 3, "pointers": 1})
    assert coo["fit"]["max_relative_error"] < 1e-9
    assert fitted["dense->zvc"]["fit"]["matrices"] == ["m0", "m1"]    # wrong runs left out
    area = {"separate": {"dense_to_coo": {"params": {"lanes": 8}, "fmax_mhz": 150.0}}}
    table = mint.rates_table(runs, area)
    rates = MintRates.from_table(json.loads(json.dumps(table)))
    coo_rate = rates.rates["dense", "coo"]
    assert (coo_rate.lanes, coo_rate.fmax_mhz) == (8, 150.0)
    assert coo_rate.cycles(100, 64, 900) == pytest.approx(cycles(100, 64, 900))
    assert rates.rates["csr", "csc"].fmax_mhz is None


def test_headline_by_hand():
    """1,000 nonzeros in 2,000 cycles at 100 MHz: 5e7 nonzeros a second; the golden
    converter's 1 ms is 1e6 a second (50x), scipy's 0.1 ms 1e7 (5x)."""
    runs = [_run("csr->csc", "m", (30, 40), 1000, 2000, golden_s=1e-3, scipy_s=1e-4),
            _run("rlc->coo", "m", (30, 40), 1000, 4000, golden_s=2e-3),
            {"conversion": "csr->bsr", "matrix": "m", "skipped": "too large"}]
    fmax = {"csr_to_csc": (100.0, "this run", 16)}
    csc, rlc = mint.headline(runs, fmax)
    assert csc["rtl_nnz_per_s"] == pytest.approx(5e7)
    assert csc["golden_nnz_per_s"] == pytest.approx(1e6)
    assert csc["scipy_nnz_per_s"] == pytest.approx(1e7)
    assert csc["vs_golden"] == pytest.approx(50) and csc["vs_scipy"] == pytest.approx(5)
    assert (csc["fmax_mhz"], csc["lanes"]) == (100.0, 16)
    assert "rtl_nnz_per_s" not in rlc and rlc["scipy_nnz_per_s"] is None    # no Fmax known


@pytest.mark.soak
def test_bench_mint_quick(shared_data, capsys):
    result = bench(capsys)
    rtl = [r for r in result["rtl"] if "cycles" in r]
    conversions = {r["conversion"] for r in rtl}
    assert {"dense->coo", "dense->csr", "dense->zvc", "csr->csc", "csr->bsr",
            "rlc->coo"} <= conversions
    assert all(r["matches_golden"] for r in rtl)
    assert all(r["cycles_per_nnz"] > 0 for r in rtl)
    # the headline: every run of a block in the rate table priced at its Fmax
    assert len(result["headline"]) == len(rtl)
    tabled = {f"{r.source}->{r.target}" for r in MintRates.load().rates.values() if r.fmax_mhz}
    measured = [r for r in result["headline"] if "rtl_nnz_per_s" in r]
    assert {r["conversion"] for r in measured} >= tabled & conversions
    assert all(r["fmax_from"] and r["vs_golden"] > 0 for r in measured)
    assert all(r["vs_scipy"] > 0 for r in measured
               if r["conversion"] in ("dense->coo", "dense->csr", "csr->csc", "csr->bsr"))
    assert set(result["area"]["separate"]) >= {*MERGES, "csr_to_csc", "rlc_to_coo"}
    check_software_area_and_sage(result)
