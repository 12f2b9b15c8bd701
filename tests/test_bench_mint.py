"""``sparseforge bench mint --quick``: every converter block equals the golden converter
on a real matrix, and the figures the bench prints are there and sane."""

import functools
import json
from types import SimpleNamespace

import pytest

from sparseforge.bench import mint
from sparseforge.cli import main
from sparseforge.hw.mint_merged import MintMerged
from sparseforge.sw.sage import RATES_PATH, MintRates, rate_terms


def bench(capsys):
    main(["bench", "mint", "--quick", "--json"])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and "error" not in err
    return json.loads(out)


MERGES = list(MintMerged.MERGES)
"""The separate converters MINT_m replaces, as the block names them."""


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


def _run(conversion, matrix, shape, nnz, cycles, golden_s=1.0, scipy_s=None, **more):
    return {"conversion": conversion, "matrix": matrix, "shape": list(shape), "nnz": nnz,
            "block": conversion.replace("->", "_to_"), "cycles": cycles, "matches_golden": True,
            "golden_s": golden_s, "scipy_s": scipy_s, **more}


# CSR->CSC's buffers, small enough that the shapes below take 1 to 4 passes
BUFFERS = {"max_rows": 64, "max_cols": 32, "max_nnz": 256}


def test_fit_terms():
    assert mint.fit_terms("csr", "csc") == ("nnz", "pointers", "row_passes")
    assert mint.fit_terms("csc", "csr") == ("nnz", "pointers", "col_passes")
    assert mint.fit_terms("coo", "csc") == ("nnz", "pointers")
    assert mint.fit_terms("bsr", "coo") == ("nnz", "slices")
    assert mint.fit_terms("rlc", "coo") == mint.fit_terms("dense", "csr") == ("nnz", "elements")
    assert mint.buffers() == {"max_rows": 1 << 16, "max_cols": 1024, "max_nnz": 4096}


def test_fit_recovers_the_cycles_of_a_known_rate():
    """Runs made from a known rate are fitted back exactly, each term to its own
    coefficient (rows, columns, nonzeros and slices differ, and the passes keyed on the
    columns from those on the rows, so a swapped term shows); one matrix is too few to fit;
    what the fit writes is a table SAGE reads, and prices as the runs took."""
    def cycles(rows, cols, nnz):                        # 2 per nonzero, 1/8 per element
        return 2 * nnz + rate_terms(rows, cols, nnz)["elements"] / 8

    def csc(rows, cols, nnz):             # 3 per nonzero, 1 per pointer, 2 per row a pass
        return 3 * nnz + rate_terms(rows, cols, nnz)["pointers"] \
            + 2 * rate_terms(rows, cols, nnz, buffers=BUFFERS)["row_passes"]

    def csr(rows, cols, nnz):             # the same on the transposed view
        return csc(cols, rows, nnz)

    # passes keyed on the columns 1, 2, 3; on the rows 2, 4, 1 (tests/test_sage.py's rule)
    shapes = [(40, 24, 100), (100, 64, 900), (31, 77, 250)]
    assert [rate_terms(r, c, z, buffers=BUFFERS)["row_passes"] for r, c, z in shapes] \
        == [40, 200, 93]
    assert [rate_terms(r, c, z, buffers=BUFFERS)["col_passes"] for r, c, z in shapes] \
        == [48, 256, 77]
    slices = [120, 1000, 400]                           # 1 per nonzero, 2 per slice
    runs = [_run("dense->coo", f"m{i}", (r, c), z, cycles(r, c, z))
            for i, (r, c, z) in enumerate(shapes)]
    runs += [_run(pair, f"m{i}", (r, c), z, cycle(r, c, z))
             for pair, cycle in (("csr->csc", csc), ("csc->csr", csr))
             for i, (r, c, z) in enumerate(shapes)]
    runs += [_run("bsr->coo", f"m{i}", (r, c), z, z + 2 * s, slices=s)
             for i, ((r, c, z), s) in enumerate(zip(shapes, slices, strict=True))]
    runs += [_run("rlc->coo", "m0", (40, 24), 100, 500)]
    runs += [_run("dense->csr", "t", (4, 4, 4), 10, 90)]   # a tensor: not fitted
    bad = _run("dense->zvc", "m0", (40, 24), 100, 5)
    runs += [bad, {**bad, "matrix": "m1"}, {**bad, "matrix": "m2", "matches_golden": False}]
    fitted = mint.fit(runs, BUFFERS)
    assert set(fitted) == {"dense->coo", "csr->csc", "csc->csr", "bsr->coo", "dense->zvc"}
    coo = fitted["dense->coo"]
    assert coo["block"] == "dense_to_coo" and coo["fit"]["matrices"] == ["m0", "m1", "m2"]
    assert coo["coefficients"] == pytest.approx({"nnz": 2, "elements": 0.125})
    assert fitted["csr->csc"]["coefficients"] == pytest.approx(
        {"nnz": 3, "pointers": 1, "row_passes": 2})
    assert fitted["csc->csr"]["coefficients"] == pytest.approx(
        {"nnz": 3, "pointers": 1, "col_passes": 2})
    assert fitted["bsr->coo"]["coefficients"] == pytest.approx({"nnz": 1, "slices": 2})
    assert fitted["csr->csc"]["buffers"] == BUFFERS and "buffers" not in coo
    for pair in ("dense->coo", "csr->csc", "csc->csr", "bsr->coo"):
        assert fitted[pair]["fit"]["max_relative_error"] < 1e-9
    assert fitted["dense->zvc"]["fit"]["matrices"] == ["m0", "m1"]    # wrong runs left out
    area = {"separate": {"dense_to_coo": {"params": {"lanes": 8}, "fmax_mhz": 150.0}}}
    table = mint.rates_table(runs, area, BUFFERS)
    rates = MintRates.from_table(json.loads(json.dumps(table)))
    coo_rate = rates.rates["dense", "coo"]
    assert (coo_rate.lanes, coo_rate.fmax_mhz) == (8, 150.0)
    assert rates.rates["csr", "csc"].fmax_mhz is None
    for (r, c, z), s in zip([*shapes, (200, 10, 3000)], [*slices, 5000], strict=True):
        assert coo_rate.cycles(r, c, z) == pytest.approx(cycles(r, c, z))
        assert rates.rates["csr", "csc"].cycles(r, c, z) == pytest.approx(csc(r, c, z))
        assert rates.rates["csc", "csr"].cycles(r, c, z) == pytest.approx(csr(r, c, z))
        assert rates.rates["bsr", "coo"].cycles(r, c, z, s) == pytest.approx(z + 2 * s)


def test_the_passes_priced_are_those_planned_on_the_bench_matrices(shared_data):
    """The fit and SAGE take a counting sort's passes from the operand's size
    (:func:`~sparseforge.sw.sage.counting_passes`); on the bench's four matrices they are
    the passes the host plans for the block (1 to 7 of them, so the term is fitted)."""
    from sparseforge.sw.formats import read_matrix
    from sparseforge.tb.convert_csc import band_parts, canonical_csr

    through, planned = mint.buffers(), []
    block = SimpleNamespace(**through)                      # the planner reads its buffers
    for name in mint.RTL_MATRICES:
        m = canonical_csr(read_matrix(shared_data / "matrices" / f"{name}.mtx"))
        counts = [len(band_parts(block, canonical_csr(view))[0]) for view in (m, m.T)]
        terms = rate_terms(*m.shape, m.nnz, buffers=through)
        assert (terms["row_passes"], terms["col_passes"]) == (m.shape[0] * counts[0],
                                                              m.shape[1] * counts[1])
        planned += counts
    assert (min(planned), max(planned)) == (1, 7)


def test_a_bsr_run_records_the_block_row_slices_it_reads(shared_data, monkeypatch):
    """BSR->COO reads each block once for each of its rows: 494_bus in 2 x 2 blocks is 1,211
    blocks, 2,422 slices, which the bench's row carries to the fit."""
    from sparseforge.sw import conversion

    def run(source, block, run_bits, seed):                 # the block as the golden one
        return conversion.convert(source, "coo"), 1000

    run.block = "bsr_to_coo"
    monkeypatch.setattr("sparseforge.tb.convert.conversions", lambda: {("bsr", "coo"): run})
    row, = mint.rtl(shared_data, ("suitesparse/494_bus",), 1)
    assert (row["block"], row["shape"], row["nnz"]) == ("bsr_to_coo", [494, 494], 1666)
    assert row["slices"] == 2 * 1211 and row["matches_golden"]


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


@pytest.mark.soak
def test_the_rate_table_prices_a_matrix_it_was_not_fitted_on(shared_data):
    """CSR->CSC and CSC->CSR natively under back-pressure on Franz6 (10,592 x 3,016 with
    48,472 nonzeros, not one of the bench's four: 12 passes keyed on its columns, and more
    rows than columns, so a passes term taken for the other is a third off), each equal to
    the golden converter, its cycles within 5% of the packaged table's price (measured:
    +0.9% and -0.8%; without the passes term -41% and -11%)."""
    from sparseforge.sw import conversion
    from sparseforge.sw.formats import read_matrix
    from sparseforge.tb.convert import conversions

    m = read_matrix(shared_data / "matrices/suitesparse/Franz6_id1959_aug.mtx")
    rates = MintRates.load()
    for pair in (("csr", "csc"), ("csc", "csr")):
        source = conversion.convert(m, pair[0])
        result, cycles = conversions()[pair](source, None, None, 1)
        assert conversion.same(result, conversion.convert(source, pair[1]))
        priced = rates.rates[pair].cycles(*m.shape, conversion.nonzeros(source))
        assert abs(priced - cycles) < 0.05 * cycles, (pair, priced, cycles)


def test_synthesis_places_each_block_on_the_smallest_part_that_holds_it(monkeypatch, tmp_path):
    """A full run places MINT_m, which the 25k cannot hold: each block goes to the
    smallest ECP5 that holds it, a second call takes the kept result, and ``synth`` keeps
    and finds the same result (one cache for both)."""
    from sparseforge.bench import mint
    from sparseforge.commands import synth

    calls = []

    def synthesize(name, params, target, with_fmax, device, seeds, jobs, quick):
        calls.append((device, seeds))
        return {"block": name, "params": params, "fmax_mhz": 100.0}

    monkeypatch.setenv("SPARSEFORGE_CACHE", str(tmp_path))
    monkeypatch.setattr(synth, "synthesize", synthesize)
    first = mint._synthesized("buffet", {"depth": 64, "width": 32}, with_fmax=True)
    again = mint._synthesized("buffet", {"depth": 64, "width": 32}, with_fmax=True)
    assert calls == [("auto", (1, 2, 3))] and not first["cached"] and again["cached"]
    assert synth.kept("buffet", {"depth": 64, "width": 32}, "ecp5", "auto", (1, 2, 3))["cached"]


def test_a_failed_place_and_route_leaves_the_block_its_logic_and_says_why(monkeypatch):
    """One block nextpnr cannot route does not end the bench: its logic stands, its Fmax
    is unknown with nextpnr's reason, and the clock line says so."""
    from sparseforge.bench import mint
    from sparseforge.commands import synth
    from sparseforge.core.errors import ToolError

    def kept(name, params, target, device, seeds, with_fmax=True):
        if with_fmax:
            raise ToolError("nextpnr-ecp5 failed (exit 125):\nInfo: ...\nERROR: Failed to "
                            "route arc 0.0 of net 'clk'")
        return {"block": name, "params": params, "lut": 7, "carry": 1, "ff": 3, "bram": 0}

    monkeypatch.setattr(synth, "kept", kept)
    r = mint._logic(mint._synthesized("dense_to_csf", {}, with_fmax=True))
    assert (r["lut"], r["fmax_mhz"]) == (7, None)
    assert r["pnr_error"].endswith("ERROR: Failed to route arc 0.0 of net 'clk'")
    assert mint._clock(r).startswith("Fmax unknown (nextpnr-ecp5 failed (exit 125): ...")
