"""``convert --engine rtl`` for every pair: the chain of converter blocks it takes (the
cheapest by the rate table, then the fewest blocks), each block's cycles, and the
user's BSR block and RLC run field given to the block that makes the final format."""

import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.sw import conversion as cv
from sparseforge.sw.sage import Rate
from sparseforge.tb import convert
from sparseforge.tb.convert import Stage, route, rtl_convert

A = sp.csr_array(np.array([[0, 2, 0, 0], [1, 0, 0, 3], [0, 0, 0, 0]]))   # 3 x 4, 3 nonzeros


def fake(calls, cycles):
    """A run that records what it was given and converts with the golden converter."""
    def run(source, block, run_bits, seed):
        calls.append((cv.format_of(source), block, run_bits))
        return source, cycles
    return run


@pytest.fixture
def edges(monkeypatch):
    """Blocks doing A->B (11 cycles), B->C (22), A->C (33), C->D (44)."""
    calls = []
    table = {("csr", "coo"): fake(calls, 11), ("coo", "zvc"): fake(calls, 22),
             ("csr", "zvc"): fake(calls, 33), ("zvc", "rlc"): fake(calls, 44)}
    monkeypatch.setattr(convert, "conversions", lambda: table)
    monkeypatch.setattr(convert, "_rates", lambda: {})
    return table, calls


def priced(monkeypatch, **per_nnz):
    """A rate table pricing each named pair at ``c`` cycles a nonzero."""
    rates = {tuple(key.split("_")): Rate(*key.split("_"), "x", {"nnz": c})
             for key, c in per_nnz.items()}
    monkeypatch.setattr(convert, "_rates", lambda: rates)


def test_unpriced_chains_take_the_fewest_blocks(edges):
    assert route(A, "zvc") == ["csr", "zvc"]
    assert route(A, "rlc") == ["csr", "zvc", "rlc"]
    assert route(A, "coo") == ["csr", "coo"]


def test_the_rate_table_picks_the_cheapest_chain(edges, monkeypatch):
    # 3 nonzeros: csr->coo->zvc costs 3 * (1 + 2) = 9, csr->zvc 3 * 4 = 12
    priced(monkeypatch, csr_coo=1, coo_zvc=2, csr_zvc=4, zvc_rlc=1)
    assert route(A, "zvc") == ["csr", "coo", "zvc"]
    priced(monkeypatch, csr_coo=1, coo_zvc=2, csr_zvc=3, zvc_rlc=1)    # a tie: fewer blocks
    assert route(A, "zvc") == ["csr", "zvc"]
    priced(monkeypatch, csr_coo=1, coo_zvc=2, zvc_rlc=1)     # csr->zvc unpriced: it comes after
    assert route(A, "zvc") == ["csr", "coo", "zvc"]


def test_stages_run_in_order_and_the_last_takes_the_users_fields(edges):
    _, calls = edges
    result, stages = rtl_convert(A, "rlc", run_bits=3)
    assert stages == (Stage("csr", "zvc", "csr_to_zvc", 33), Stage("zvc", "rlc", "zvc_to_rlc", 44))
    assert calls == [("csr", None, None), ("csr", None, 3)]
    assert result is A


def test_a_block_named_by_its_run(edges):
    table, _ = edges
    table["csr", "coo"].block = "csr_to_csc"
    assert rtl_convert(A, "coo")[1] == (Stage("csr", "coo", "csr_to_csc", 11),)


def test_nothing_to_convert_runs_no_block(edges):
    assert route(A, "csr") == ["csr"]
    assert rtl_convert(A, "csr") == (A, ())


def test_bsr_and_rlc_to_themselves_with_other_fields_go_round(monkeypatch):
    calls = []
    table = {("bsr", "csr"): fake(calls, 1), ("csr", "bsr"): fake(calls, 2),
             ("csr", "rlc"): fake(calls, 3), ("rlc", "csr"): fake(calls, 4)}
    monkeypatch.setattr(convert, "conversions", lambda: table)
    monkeypatch.setattr(convert, "_rates", lambda: {})
    bsr = cv.convert(A, "bsr", block=(1, 2))
    assert route(bsr, "bsr") == ["bsr"] and route(bsr, "bsr", block=(1, 2)) == ["bsr"]
    assert route(bsr, "bsr", block=(3, 4)) == ["bsr", "csr", "bsr"]
    rlc = cv.convert(A, "rlc", run_bits=2)
    assert route(rlc, "rlc", run_bits=2) == ["rlc"]
    assert route(rlc, "rlc", run_bits=5) == ["rlc", "csr", "rlc"]


def test_bsr_is_not_passed_through(monkeypatch):
    table = {("csr", "bsr"): fake([], 1), ("bsr", "coo"): fake([], 1)}
    monkeypatch.setattr(convert, "conversions", lambda: table)
    with pytest.raises(ParameterError, match="nor chain of them, does CSR -> COO for a 2-D"):
        route(A, "coo")


def test_a_tensor_takes_only_blocks_of_its_order(monkeypatch):
    calls = []
    matrix_only, tensor = fake(calls, 1), fake(calls, 2)
    tensor.orders = (3,)
    table = {("dense", "coo"): matrix_only, ("coo", "csf"): tensor, ("dense", "csf"): tensor}
    monkeypatch.setattr(convert, "conversions", lambda: table)
    monkeypatch.setattr(convert, "_rates", lambda: {})
    cube = np.zeros((2, 3, 4))
    assert route(cube, "csf") == ["dense", "csf"]
    with pytest.raises(ParameterError, match="DENSE -> COO for a 3-D operand"):
        route(cube, "coo")
    assert route(np.zeros((2, 3)), "coo") == ["dense", "coo"]


def test_a_chain_of_real_blocks_from_the_command(shared_data, tmp_path, capsys):
    """ZVC -> CSC: no block does it; ZVC -> Dense -> CSR -> CSC does, each block's cycles
    reported, the file what --engine sw writes."""
    zvc = tmp_path / "a.npz"
    cv.save(zvc, cv.convert(cv.load(shared_data / "matrices/suitesparse/494_bus.mtx"), "zvc"))
    for engine in ("sw", "rtl"):
        main(["convert", str(zvc), "--to", "csc", "--engine", engine, "-o",
              str(tmp_path / f"{engine}.npz"), "--json"])
        result = json.loads(capsys.readouterr().out)
    assert cv.same(cv.load(tmp_path / "rtl.npz"), cv.load(tmp_path / "sw.npz"))
    stages = result["stages"]
    assert stages[0]["source"] == "zvc" and stages[-1]["target"] == "csc" and len(stages) > 1
    assert all(a["target"] == b["source"] for a, b in itertools.pairwise(stages))
    assert result["cycles"] == sum(s["cycles"] for s in result["stages"]) > 0
    assert all(s["cycles"] > 0 for s in result["stages"])


def test_coo_in_file_order_is_sorted_first(monkeypatch):
    """COO records not row-major (a .mtx as its file lists them) go first through a block
    that takes them in any order; row-major ones need not."""
    sorts, plain = fake([], 1), fake([], 2)
    sorts.any_order = True
    table = {("coo", "csr"): sorts, ("coo", "dense"): plain, ("csr", "dense"): plain}
    monkeypatch.setattr(convert, "conversions", lambda: table)
    monkeypatch.setattr(convert, "_rates", lambda: {})
    ordered = sp.coo_array(([1, 2, 3], ([0, 1, 1], [2, 0, 3])), shape=(3, 4))
    scattered = sp.coo_array(([3, 1, 2], ([1, 0, 1], [3, 2, 0])), shape=(3, 4))
    assert route(ordered, "dense") == ["coo", "dense"]
    assert route(scattered, "dense") == ["coo", "csr", "dense"]
    assert route(ordered, "coo") == ["coo"]
    with pytest.raises(ParameterError, match="COO -> COO"):      # nothing sorts it back
        route(scattered, "coo")


def test_a_stage_keeps_its_passes(monkeypatch):
    from sparseforge.tb.convert_csc import Cycles, SortPass

    table = {("coo", "csr"): lambda s, b, r, seed: (s, Cycles([SortPass("column", 5, 1),
                                                               SortPass("row", 7, 2)]))}
    monkeypatch.setattr(convert, "conversions", lambda: table)
    monkeypatch.setattr(convert, "_rates", lambda: {})
    _, (stage,) = rtl_convert(sp.coo_array(([1], ([0], [0])), shape=(1, 1)), "csr")
    assert stage.cycles == 12
    assert stage.passes == ({"key": "column", "cycles": 5, "parts": 1},
                            {"key": "row", "cycles": 7, "parts": 2})
