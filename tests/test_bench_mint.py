"""``sparseforge bench mint --quick``: every converter block equals the golden converter
on a real matrix, and the figures the bench prints are there and sane."""

import functools
import json

import pytest

from sparseforge.bench import mint
from sparseforge.cli import main


def bench(capsys):
    main(["bench", "mint", "--quick", "--json"])
    out, err = capsys.readouterr()
    assert out.count("\n") == 1 and "error" not in err
    return json.loads(out)


MERGES = ["dense_to_coo", "dense_to_csr", "dense_to_zvc", "zvc_to_dense"]


def check_software_area_and_sage(result):
    assert {r["conversion"] for r in result["software"]} == {"CSR->CSC", "COO->CSR", "CSR->BSR"}
    assert all(r["ratio"] > 0 for r in result["software"])
    assert result["sage"]["agree"] >= 7 and result["sage"]["fields_agree"] >= 63
    area = result["area"]
    assert area["merges"] == MERGES
    assert area["merged_logic"] < area["merges_logic"]      # sharing must save logic
    assert area["merged_vs_separate"] == area["merged_logic"] / area["merges_logic"]


def test_bench_mint_quick_without_its_rtl_runs(shared_data, capsys, monkeypatch):
    """The default run's bench: the software timings, the area of MINT_m and of the
    converters it merges, and SAGE's table. Its Verilator runs (every conversion on 494_bus)
    repeat what each converter's own tests run on real matrices, and the other converters'
    syntheses what the synthesis report runs, so they stay in the soak test below."""
    monkeypatch.setattr("sparseforge.bench.mint.rtl", lambda root, names, seed: [])
    monkeypatch.setattr("sparseforge.bench.mint.area",
                        functools.partial(mint.area, only=MERGES))
    result = bench(capsys)
    assert result["rtl"] == []
    assert list(result["area"]["separate"]) == MERGES
    check_software_area_and_sage(result)


@pytest.mark.soak
def test_bench_mint_quick(shared_data, capsys):
    result = bench(capsys)
    rtl = [r for r in result["rtl"] if "cycles" in r]
    conversions = {r["conversion"] for r in rtl}
    assert {"dense->coo", "dense->csr", "dense->zvc", "csr->csc", "csr->bsr",
            "rlc->coo"} <= conversions
    assert all(r["matches_golden"] for r in rtl)
    assert all(r["cycles_per_nnz"] > 0 for r in rtl)
    assert set(result["area"]["separate"]) >= {*MERGES, "csr_to_csc", "rlc_to_coo"}
    check_software_area_and_sage(result)
