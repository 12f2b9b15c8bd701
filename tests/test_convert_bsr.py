# amaranth: UnusedElaboratable=no
"""CSR to BSR (MINT Fig. 8e): the sub-units, directed runs on Amaranth's simulator, real
matrices natively on Verilator against the golden converter, and ``convert --engine rtl``."""

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_bsr import (
    Assembler,
    Banks,
    CsrToBsr,
    CsrToBsrSignature,
    Merge,
    RowBlocks,
    Tagger,
)
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.passes import bank_passes
from sparseforge.tb import native
from sparseforge.tb.convert_bsr import (
    BLOCK_PTR,
    BLOCKS,
    DEPTH,
    WIDTH,
    BsrBench,
    bank_need,
    block_columns,
    blocks_to_bsr,
    pointer_columns,
    run,
)
from sparseforge.tb.convert_rlc import UnitBench

FULL = dict.fromkeys(("row_ptr", "entries", BLOCK_PTR, BLOCKS), 1.0)


def sparseforge(*args):
    """The standard output of a successful ``sparseforge`` command."""
    done = subprocess.run([sys.executable, "-m", "sparseforge", *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_same(bsr, golden):
    """The same BSR arrays, of the same types."""
    assert bsr.shape == golden.shape and bsr.blocksize == golden.blocksize
    for name in ("indptr", "indices", "data"):
        got, want = getattr(bsr, name), getattr(golden, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name


def convert_all(component, matrices, seed, rates=None):
    """Each matrix's BSR from one run of ``matrices`` back to back on Amaranth's simulator."""
    bench = BsrBench(component, matrices, seed_from_env(seed), rates)
    result = pysim(bench)
    out, p, b = [], 0, 0
    for m, pointers, count in zip(matrices, bench.pointers, bench.counts, strict=True):
        ptr = {k: v[p:p + pointers] for k, v in result.block_ptr.items()}
        blocks = {k: v[b:b + count] for k, v in result.blocks.items()}
        out.append(blocks_to_bsr(ptr, blocks, m.shape, component.block, m.dtype))
        p, b = p + pointers, b + count
    return out, result


def csr(dense):
    return sp.csr_array(np.asarray(dense))


# -- the sub-units -------------------------------------------------------------------

def desc(lengths, last=0):
    return {"lengths": lengths, "last": last}


def test_row_blocks_turns_pointers_into_block_rows_and_end_markers():
    # Four rows; a matrix of no rows; three rows (the last block row partial).
    pointers = [0, 2, 2, 5, 9, 0, 0, 1, 2, 3]
    last = [0, 0, 0, 0, 1, 1, 0, 0, 0, 1]
    items = [{"ptr": p, "last": e} for p, e in zip(pointers, last, strict=True)]
    want = [desc([2, 0]), desc([3, 4]), desc([0, 0], 1), desc([0, 0], 1),
            desc([1, 1]), desc([1, 0]), desc([0, 0], 1)]
    out = pysim(UnitBench(RowBlocks(2, 8), {"row_ptr": items}, {"descriptors": len(want)}, 1))
    assert out.outputs["descriptors"] == want


def test_tagger_tags_each_nonzero_with_its_row_and_forwards_the_block_rows():
    descriptors = [desc([2, 1]), desc([0, 0]), desc([0, 3]), desc([0, 0], 1)]
    entries = [{"col": c, "value": 10 + c} for c in range(6)]
    out = pysim(UnitBench(Tagger(2, 8, 8), {"descriptors": descriptors, "entries": entries},
                          {"tagged": 6, "forward": 4}, 2))
    assert [t["row"] for t in out.outputs["tagged"]] == [0, 0, 1, 1, 1, 1]
    assert [t["col"] for t in out.outputs["tagged"]] == list(range(6))
    assert out.outputs["forward"] == descriptors


def test_banks_keep_each_rows_nonzeros_in_order():
    entries = [{"block_col": i, "col": i % 2, "value": i, "row": r}
               for i, r in enumerate([0, 1, 1, 0, 0, 1, 0, 0, 0, 0])]
    out = pysim(UnitBench(Banks((2, 2), 8, 8, 4), {"entries": entries},
                          {"heads__0": 7, "heads__1": 3}, 3))
    strip = [{k: e[k] for k in ("block_col", "col", "value")} for e in entries]
    assert out.outputs["heads__0"] == [s for s, e in zip(strip, entries, strict=True)
                                       if e["row"] == 0]
    assert out.outputs["heads__1"] == [s for s, e in zip(strip, entries, strict=True)
                                       if e["row"] == 1]


def test_merge_orders_a_block_row_by_block_column_then_row():
    def head(bc, value):
        return {"block_col": bc, "col": 0, "value": value}

    descriptors = [desc([3, 2]), desc([0, 0]), desc([1, 0]), desc([0, 0], 1)]
    heads0 = [head(0, 1), head(2, 2), head(5, 3), head(4, 9)]
    heads1 = [head(2, 4), head(3, 5)]
    out = pysim(UnitBench(Merge((2, 2), 8, 8), {"descriptors": descriptors,
                                                "heads__0": heads0, "heads__1": heads1},
                          {"merged": 8}, 4)).outputs["merged"]
    got = [((o["value"], o["row"]) if o["entry"] else None, o["row_end"], o["last"])
           for o in out]
    assert got == [((1, 0), 0, 0), ((2, 0), 0, 0), ((4, 1), 0, 0), ((5, 1), 0, 0),
                   ((3, 0), 1, 0), (None, 1, 0), ((9, 0), 1, 0), (None, 1, 1)]


def test_assembler_zero_fills_blocks_and_counts_them():
    def item(bc, row, col, value, entry=1, row_end=0, last=0):
        return {"block_col": bc, "row": row, "col": col, "value": value, "entry": entry,
                "row_end": row_end, "last": last}

    merged = [item(0, 0, 1, 7), item(0, 1, 0, 8), item(3, 1, 1, 9, row_end=1),
              item(3, 0, 0, 5, row_end=1), item(0, 0, 0, 0, entry=0, row_end=1),
              item(0, 0, 0, 0, entry=0, row_end=1, last=1)]
    out = pysim(UnitBench(Assembler((2, 2), 8, 8), {"merged": merged},
                          {"blocks": 3, "counts": 4}, 5)).outputs
    assert [(b["block_col"], [b[f"value{k}"] for k in range(4)]) for b in out["blocks"]] == [
        (0, [0, 7, 8, 0]), (3, [0, 0, 0, 9]), (3, [5, 0, 0, 0])]
    assert [(c["counts"][0], c["last"]) for c in out["counts"]] == [(2, 0), (1, 0), (0, 0),
                                                                    (0, 1)]


# -- the converter on Amaranth's simulator -------------------------------------------

@pytest.mark.parametrize("rates", [None, FULL])
def test_empty_block_rows_blocks_at_the_edges_and_interleaved_rows(rates):
    dense = np.zeros((8, 12), dtype=np.int16)
    dense[0, [0, 5, 11]] = [1, 2, 3]            # block columns 0, 2, 5 in row 0 ...
    dense[1, [2, 4, 5, 10]] = [4, 5, 6, 7]      # ... and 1, 2, 2, 5 in row 1
    dense[6:8, 10:12] = [[8, 9], [10, 11]]      # a full block at the bottom right corner
    dense[7, 0] = -12                           # rows 2-5: two empty block rows
    empty = np.zeros((8, 12), dtype=np.int16)
    unit = CsrToBsr(block_rows=2, block_cols=2, width=8, value_width=16, depth=8)
    got, _ = convert_all(unit, [csr(dense), csr(empty), csr(dense)], 1, rates)
    for bsr, m in zip(got, [dense, empty, dense], strict=True):
        assert_same(bsr, cv.convert(csr(m), "bsr", block=(2, 2)))
    assert got[1].indptr.tolist() == [0] * 5 and got[1].nnz == 0


def test_a_matrix_of_no_rows_and_back_to_back_shapes():
    rng = np.random.default_rng(4)
    shapes = [(0, 6), (6, 6), (3, 9), (0, 3), (12, 3)]
    mats = [csr((rng.random(s) < 0.3) * rng.integers(1, 9, s)) for s in shapes]
    got, _ = convert_all(CsrToBsr(block_rows=3, block_cols=3, width=8, value_width=64,
                                  depth=8), mats, 2)
    for bsr, m in zip(got, mats, strict=True):
        assert_same(bsr, cv.convert(m, "bsr", block=(3, 3)))


@pytest.mark.parametrize(("block", "density", "dtype"), [
    ((1, 1), 0.3, np.float64), ((3, 5), 0.2, np.int8), ((4, 1), 0.1, np.float32),
    ((8, 8), 0.05, np.int32), ((2, 4), 0.9, bool)])
def test_block_shapes_densities_and_value_types(block, density, dtype):
    rng = np.random.default_rng(block[0] * 10 + block[1])
    shape = (block[0] * 6, block[1] * 7)
    dense = ((rng.random(shape) < density) * rng.integers(-50, 50, shape)).astype(dtype)
    m = csr(dense)
    unit = CsrToBsr(block_rows=block[0], block_cols=block[1], width=10,
                    value_width=8 * m.dtype.itemsize if dtype is not bool else 1, depth=32)
    got, _ = convert_all(unit, [m], sum(block))
    assert_same(got[0], cv.convert(m, "bsr", block=block))


def test_the_last_row_of_a_block_row_streams_past_the_bank_depth():
    dense = np.zeros((4, 40), dtype=np.int16)
    dense[0, :3] = 1
    dense[1, :] = np.arange(1, 41)                  # 40 nonzeros through banks of 4
    dense[3, ::2] = 7
    m = csr(dense)
    assert bank_need(m, 2) == 3
    got, _ = convert_all(CsrToBsr(block_rows=2, block_cols=2, width=8, value_width=16,
                                  depth=4), [m], 3)
    assert_same(got[0], cv.convert(m, "bsr", block=(2, 2)))
    with pytest.raises(ParameterError, match=r"a row of 40 nonzeros .* depth 4"):
        BsrBench(CsrToBsr(block_rows=2, block_cols=2, width=8, value_width=16, depth=4),
                 [csr(dense[::-1])], 0)


def test_one_nonzero_a_cycle():
    """The nonzeros go in on consecutive cycles once the first block row's pointers are in;
    the last block row's first row waits in its bank for the last row to come."""
    dense = np.arange(1, 1 + 16 * 24, dtype=np.int32).reshape(16, 24)
    dense[dense % 3 == 0] = 0                       # rows of 16 nonzeros
    unit = CsrToBsr(block_rows=2, block_cols=2, width=10, value_width=32, depth=64)
    bench = BsrBench(unit, [csr(dense)], 0, FULL)
    result = pysim(bench)
    taken = [c for c, _ in bench.sources[1].accepted]
    assert np.diff(taken).tolist() == [1] * 255
    assert result.cycles <= taken[-1] + unit.latency + 16 + 2


def test_the_rtl_engine_refuses_blocks_wider_than_a_native_run_carries():
    with pytest.raises(ParameterError, match="8 x 8 block of 64-bit values"):
        run(csr(np.eye(8)), (8, 8))


def test_the_bench_refuses_what_the_block_cannot_hold():
    m = csr(np.eye(6, dtype=np.int16))
    with pytest.raises(ParameterError, match="block 4,4 does not divide"):
        BsrBench(CsrToBsr(block_rows=4, block_cols=4, width=8, value_width=16), [m], 0)
    with pytest.raises(ParameterError, match="8-bit values"):
        BsrBench(CsrToBsr(block_rows=2, block_cols=2, width=8, value_width=8), [m], 0)
    with pytest.raises(ParameterError, match="4-bit indices"):
        BsrBench(CsrToBsr(block_rows=2, block_cols=2, width=4, value_width=16),
                 [csr(np.eye(16, dtype=np.int16))], 0)


# -- parameters, interface, Verilog, synthesis report ---------------------------------

@pytest.mark.parametrize(("params", "message"), [
    ({"block_rows": 0}, r"block_rows=0: expected an integer in \[1, 8\]"),
    ({"block_cols": 9}, "block_cols=9"), ({"width": 3}, "width=3"),
    ({"value_width": 65}, "value_width=65"), ({"depth": 100}, "depth=100: expected a power"),
])
def test_bad_parameters_are_named_with_their_range(params, message):
    with pytest.raises(ParameterError, match=message):
        CsrToBsr(**params)


def test_the_block_declares_its_signature_and_its_report_builds():
    unit = CsrToBsr(block_rows=3, block_cols=2, width=12, value_width=20, depth=64)
    assert dict(unit.signature.members) == dict(CsrToBsrSignature((3, 2), 12, 20).members)
    block = get("csr_to_bsr")
    for config in block.cls.REPORT:
        block.cls(**block.resolve(config))


@pytest.mark.parametrize("params", [
    {}, {"block_rows": 1, "block_cols": 1, "width": 4, "value_width": 1, "depth": 4},
    {"block_rows": 3, "block_cols": 5, "width": 12, "value_width": 8, "depth": 16},
    {"block_rows": 8, "block_cols": 8, "width": 8, "value_width": 8, "depth": 4},
    {"block_rows": 5, "block_cols": 1, "width": 32, "value_width": 8, "depth": 4}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("csr_to_bsr", params) == ""


# -- real matrices, natively on Verilator ------------------------------------------------

REAL = [("pypi/pyamg_bar.mtx", (2, 2)), ("pypi/pyamg_bar.mtx", (4, 8)),
        ("suitesparse/494_bus.mtx", (2, 1)), ("graphs/email-Eu-core.mtx", (3, 5)),
        ("suitesparse/Franz6_id1959_aug.mtx", (4, 8))]


@pytest.mark.verilator
def test_native_and_amaranth_runs_agree_cycle_for_cycle():
    rng = np.random.default_rng(6)
    matrices = [csr((rng.random((6, 9)) < d) * rng.integers(1, 99, (6, 9))) for d in
                (0.3, 0.0, 0.8)]

    def make():
        return BsrBench(CsrToBsr(block_rows=3, block_cols=3, width=8, value_width=64,
                                 depth=16), matrices, 7)

    python, rtl = pysim(make()), native.run(make())
    assert rtl.cycles == python.cycles
    assert np.array_equal(pointer_columns(rtl.outputs[BLOCK_PTR])["ptr"], python.block_ptr["ptr"])
    assert np.array_equal(block_columns(rtl.outputs[BLOCKS], 9)["values"],
                          python.blocks["values"])


@pytest.mark.verilator
@pytest.mark.parametrize(("name", "block"), [      # one in the default run, the rest soak
    case if case[0] == "suitesparse/494_bus.mtx" else pytest.param(*case, marks=pytest.mark.soak)
    for case in REAL])
def test_real_matrices_under_back_pressure_match_the_golden_converter(shared_data, name,
                                                                     block):
    m = cv.convert(read_matrix(shared_data / "matrices" / name), "csr")
    bsr, cycles = run(m, block, seed=seed_from_env(sum(block)))
    assert_same(bsr, cv.convert(m, "bsr", block=block))
    assert cycles >= m.nnz


@pytest.mark.verilator
def test_one_nonzero_a_cycle_on_a_real_matrix(shared_data):
    m = cv.convert(read_matrix(shared_data / "matrices/pypi/pyamg_bar.mtx"), "csr")
    unit = CsrToBsr(block_rows=2, block_cols=2, width=WIDTH, value_width=64, depth=DEPTH)
    out = native.run(BsrBench(unit, [m], 1, FULL))
    assert out.cycles <= 1.01 * m.nnz + 60
    bsr = blocks_to_bsr(pointer_columns(out.outputs[BLOCK_PTR]),
                        block_columns(out.outputs[BLOCKS], 4), m.shape, (2, 2), m.dtype)
    assert_same(bsr, cv.convert(m, "bsr", block=(2, 2)))


@pytest.mark.verilator
def test_convert_engine_rtl_writes_what_engine_sw_writes(shared_data, tmp_path):
    source = shared_data / "matrices/suitesparse/494_bus.mtx"
    sparseforge("convert", source, "--to", "csr", "-o", tmp_path / "a.npz")
    for engine in ("sw", "rtl"):
        result = json.loads(sparseforge("convert", tmp_path / "a.npz", "--to", "bsr", "--block",
                                        "2,2", "--engine", engine, "-o",
                                        tmp_path / f"{engine}.npz", "--json"))
        assert result["engine"] == engine and (engine == "sw" or result["cycles"] > 0)
    sw, rtl = np.load(tmp_path / "sw.npz"), np.load(tmp_path / "rtl.npz")
    assert sorted(sw.files) == sorted(rtl.files)
    for name in sw.files:
        assert sw[name].dtype == rtl[name].dtype and np.array_equal(sw[name], rtl[name]), name


@pytest.mark.verilator
def test_rows_longer_than_the_banks_go_through_in_passes_of_block_columns():
    """A row of exactly the banks' depth in one pass; one more nonzero makes two; rows of
    2,500 nonzeros through banks of 1,024 take three. The passes' BSR (natively, where
    there are passes) equal to the golden."""
    rng = np.random.default_rng(seed_from_env(41))
    for first, want in ((DEPTH, 1), (DEPTH + 1, 2), (2500, 3)):
        dense = np.zeros((6, 3000))
        dense[0, rng.choice(3000, first, replace=False)] = rng.standard_normal(first)
        dense[2, ::7], dense[5, ::2] = 1.5, -2.0          # the last row of its block row
        dense[3, :1024] = 3.0                             # a full bank of its own
        m = csr(dense)
        bounds = bank_passes(m.indptr, m.indices, 3000, (2, 2), DEPTH)
        assert len(bounds) - 1 == want
        if want > 1:
            bsr, _ = run(m, (2, 2), seed=seed_from_env(42))
            assert_same(bsr, cv.convert(m, "bsr", block=(2, 2)))


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("name", "block"), [
    ("graphs/delaunay_n16.mtx", (4, 4)), ("graphs/astro-ph.mtx", (2, 2)),
    ("graphs/cora_features.mtx", (4, 1)), ("graphs/3elt.mtx", (8, 4)),
    ("graphs/ego-Facebook.mtx", (7, 7))])
def test_soak_larger_real_matrices(shared_data, name, block, seed):
    m = cv.convert(read_matrix(shared_data / "matrices" / name), "csr")
    bsr, _ = run(m, block, seed=seed_from_env(200 + seed))
    assert_same(bsr, cv.convert(m, "bsr", block=block))
