# amaranth: UnusedElaboratable=no
"""CSR to BSR (MINT Fig. 8e) and BSR to COO: the sub-units, directed runs on Amaranth's
simulator, real matrices natively on Verilator against the golden converter, and
``convert --engine rtl``."""


import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_bsr import (
    Assembler,
    Banks,
    BsrToCoo,
    BsrToCooSignature,
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
    RECORDS,
    REQUEST,
    RESPONSE,
    WIDTH,
    BsrBench,
    BsrCooBench,
    bank_need,
    block_columns,
    blocks_to_bsr,
    pointer_columns,
    run,
    run_coo,
    slice_reads,
)
from sparseforge.tb.convert_rlc import UnitBench, records_to_coo

FULL = dict.fromkeys(("row_ptr", "entries", BLOCK_PTR, BLOCKS), 1.0)


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


# -- BSR to COO -----------------------------------------------------------------------

COO_FULL = dict.fromkeys((BLOCK_PTR, RECORDS, REQUEST, RESPONSE), 1.0)


def bsr(dense, block):
    return cv.convert(np.asarray(dense), "bsr", block=block)


def decode_all(component, matrices, seed, rates=None):
    """Each matrix's COO from one run of ``matrices`` back to back on Amaranth's simulator
    (every read address checked against the bench's), and the run's result."""
    bench = BsrCooBench(component, matrices, seed_from_env(seed), rates)
    result = pysim(bench)
    assert result.reads.tolist() == bench.outputs[REQUEST].tolist()
    out, start = [], 0
    for m, g in zip(matrices, bench.golden, strict=True):
        part = {k: v[start:start + g.nnz] for k, v in result.records.items()}
        assert part["last"].tolist() == [0] * (g.nnz - 1) + [1] * bool(g.nnz)
        out.append(records_to_coo(part, m.shape, m.dtype))
        start += g.nnz
    assert start == len(result.records["row"])
    return out, result


def assert_same_coo(coo, golden):
    assert coo.shape == golden.shape
    for name in ("row", "col", "data"):
        got, want = getattr(coo, name), getattr(golden, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name


def test_slice_reads_visit_each_block_row_r_times():
    m = bsr([[1, 0, 2, 0, 0, 3], [0, 4, 0, 0, 5, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0],
             [0, 0, 0, 0, 0, 6], [7, 0, 0, 0, 0, 0]], (2, 2))
    assert m.indptr.tolist() == [0, 3, 3, 5]
    assert slice_reads(m).tolist() == [0, 1, 2, 0, 1, 2, 3, 4, 3, 4]


@pytest.mark.parametrize("rates", [None, COO_FULL])
def test_a_fig_8e_sized_matrix_row_major_across_blocks(rates):
    # 2 x 3 blocks on 6 x 9: a block row of three blocks whose rows interleave, an
    # empty block row, one whose first row has nothing (a pass of fill only), values
    # that differ everywhere; then an all-zero matrix and the first again, back to back.
    dense = np.zeros((6, 9), dtype=np.int16)
    dense[0, [0, 4, 8]], dense[1, [1, 3, 6, 7]] = [1, 2, 3], [4, 5, 6, 7]
    dense[5, [2, 5]] = [8, -9]
    matrices = [bsr(dense, (2, 3)), bsr(np.zeros((6, 9), np.int16), (2, 3)), bsr(dense, (2, 3))]
    unit = BsrToCoo(block_rows=2, block_cols=3, width=6, value_width=16)
    got, result = decode_all(unit, matrices, 3, rates)
    for g, m in zip(got, matrices, strict=True):
        assert_same_coo(g, cv.convert(m, "coo"))
    assert [g.nnz for g in got] == [9, 0, 9]
    assert len(result.reads) == 2 * (3 * 2 + 2 * 2)        # R passes over each block row


@pytest.mark.parametrize("block", [(1, 1), (1, 4), (3, 1), (4, 4)])
def test_block_shapes_and_a_matrix_whose_last_blocks_hold_only_fill(block):
    rng = np.random.default_rng(sum(block))
    R, C = block
    dense = ((rng.random((3 * R, 4 * C)) < 0.3) * rng.integers(1, 99, (3 * R, 4 * C)))
    dense[-1] = 0                                   # the final nonzero is not in a last row
    dense[0, 0] = 5
    m = bsr(dense.astype(np.int32), block)
    unit = BsrToCoo(block_rows=R, block_cols=C, width=8, value_width=32)
    got, _ = decode_all(unit, [m, m], R * C)
    assert_same_coo(got[1], cv.convert(m, "coo"))


def test_explicit_zeros_and_negative_zero_are_fill():
    m = bsr(np.array([[1.5, 0], [0, -2.0], [0, 0], [3.0, 0]]), (2, 2))
    m.data[0, 0, 1] = -0.0
    unit = BsrToCoo(block_rows=2, block_cols=2, width=4, value_width=64)
    got, _ = decode_all(unit, [m], 1)
    assert_same_coo(got[0], cv.convert(m, "coo"))


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from([0.0, 0.1, 0.5, 1.0]), st.integers(0, 2**16))
def test_hypothesis_matrices_back_to_back(R, C, grid_rows, grid_cols, density, seed):
    rng = np.random.default_rng(seed)
    shape = (R * grid_rows, C * grid_cols)
    matrices = [bsr(((rng.random(shape) < density) * rng.integers(-99, 99, shape))
                    .astype(np.int8), (R, C)) for _ in range(2)]
    unit = BsrToCoo(block_rows=R, block_cols=C, width=6, value_width=8)
    got, _ = decode_all(unit, matrices, seed)
    for g, m in zip(got, matrices, strict=True):
        assert_same_coo(g, cv.convert(m, "coo"))


def test_one_row_slice_a_cycle():
    """Full blocks: a block row-slice of C nonzeros a cycle in would be C records a cycle
    out; one nonzero a cycle is the bound. Sparse blocks: a slice a cycle."""
    dense = np.arange(1, 8 * 8 + 1, dtype=np.int16).reshape(8, 8)
    unit = BsrToCoo(block_rows=2, block_cols=2, width=8, value_width=16)
    _, full = decode_all(unit, [bsr(dense, (2, 2))], 0, COO_FULL)
    assert 64 < full.cycles <= 64 + 12
    diagonal = np.diag(np.arange(1, 65, dtype=np.int16))
    m = bsr(diagonal, (2, 2))                           # 32 blocks: 64 slices, 64 records
    _, sparse = decode_all(unit, [m], 0, COO_FULL)
    assert sparse.cycles <= 2 * 32 + 12


def test_the_coo_bench_refuses_what_the_block_cannot_hold():
    """4-bit indices: 16 rows and 15 blocks (their pointer 15) fit; 18 rows, or a 16th
    block, do not."""
    unit = BsrToCoo(block_rows=2, block_cols=2, width=4, value_width=8)

    def blocks(count, rows=16):
        dense = np.zeros((rows, 16), np.int8)
        dense[2 * (np.arange(count) // 8), 2 * (np.arange(count) % 8)] = 1
        return bsr(dense, (2, 2))

    BsrCooBench._check(unit, blocks(15))
    with pytest.raises(ParameterError, match="a 16 x 16 matrix of 16 blocks does not fit "
                                             "the block's 4-bit indices"):
        BsrCooBench._check(unit, blocks(16))
    with pytest.raises(ParameterError, match="a 18 x 16 matrix of 1 blocks"):
        BsrCooBench._check(unit, blocks(1, rows=18))
    with pytest.raises(ParameterError, match="a BSR matrix of 1 x 2 blocks"):
        BsrCooBench._check(unit, bsr(np.eye(4, dtype=np.int8), (1, 2)))
    with pytest.raises(ParameterError, match="int16 values do not fit"):
        BsrCooBench._check(unit, bsr(np.eye(4, dtype=np.int16), (2, 2)))
    with pytest.raises(ParameterError, match="complex"):
        run_coo(bsr(np.eye(4) * 1j, (2, 2)))


@pytest.mark.parametrize(("params", "message"), [
    ({"block_rows": 0}, "block_rows=0"), ({"block_cols": 9}, "block_cols=9"),
    ({"width": 3}, "width=3"), ({"value_width": 65}, "value_width=65")])
def test_bsr_to_coo_bad_parameters_are_named_with_their_range(params, message):
    with pytest.raises(ParameterError, match=message):
        BsrToCoo(**params)


def test_bsr_to_coo_declares_its_signature_and_its_report_builds():
    unit = BsrToCoo(block_rows=3, block_cols=2, width=12, value_width=10)
    want = BsrToCooSignature((3, 2), 12, 10).members
    got = unit.signature.members
    assert [(k, m.flow) for k, m in got.items()] == [(k, m.flow) for k, m in want.items()]
    assert all(got[k] == want[k] for k in ("block_ptr", "records"))
    assert dict(got["mem"].signature.members) == dict(want["mem"].signature.members)
    block = get("bsr_to_coo")
    for config in block.cls.REPORT:
        block.cls(**block.resolve(config))


@pytest.mark.parametrize("params", [{}, {"block_rows": 1, "block_cols": 1, "width": 4,
                                         "value_width": 1}])
def test_bsr_to_coo_verilog_lints_clean_with_wall(lint, params):
    assert lint("bsr_to_coo", params) == ""


@pytest.mark.soak
@pytest.mark.verilator
def test_bsr_to_coo_on_a_real_matrix_under_back_pressure(shared_data):
    m = bsr(read_matrix(shared_data / "matrices/suitesparse/494_bus.mtx").toarray(), (2, 2))
    coo, cycles = run_coo(m, seed=seed_from_env(7))
    assert_same_coo(coo, cv.convert(m, "coo"))
    assert cycles >= 2 * int(m.indptr[-1])


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize(("name", "block"), [
    ("pypi/pyamg_bar.mtx", (2, 2)), ("suitesparse/west0479.mtx", (1, 1)),
    ("graphs/3elt.mtx", (4, 4)), ("graphs/email-Eu-core.mtx", (1, 5))])
def test_soak_bsr_to_coo_larger_real_matrices(shared_data, name, block):
    source = read_matrix(shared_data / "matrices" / name)
    shape = tuple(s - s % b for s, b in zip(source.shape, block, strict=True))
    dense = source.toarray()[:shape[0], :shape[1]]
    m = bsr(dense, block)
    coo, _ = run_coo(m, seed=seed_from_env(sum(block)))
    assert_same_coo(coo, cv.convert(m, "coo"))


@pytest.mark.soak
@pytest.mark.verilator
def test_soak_bsr_to_coo_back_to_back_natively(shared_data):
    dense = read_matrix(shared_data / "matrices/suitesparse/494_bus.mtx").toarray()
    matrices = [bsr(dense, (2, 2)), bsr(np.zeros((8, 8)), (2, 2)), bsr(dense[:100, :60], (2, 2))]
    unit = BsrToCoo(block_rows=2, block_cols=2, width=WIDTH, value_width=64)
    bench = BsrCooBench(unit, matrices, seed_from_env(9))
    native.run(bench)                           # every address and record checked inside
