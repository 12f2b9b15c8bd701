# amaranth: UnusedElaboratable=no
"""The Gustavson SpGEMM engine: its golden model and host tiling alone, then the RTL on
Amaranth's simulator on directed cases (A and B of different shapes, empty rows and
columns, a row of A hitting every column, hits on one column back to back, sums that
cancel, B wider than the accumulator in column tiles, back-to-back jobs) under random
back-pressure on every stream, the parameters at their edges, lint; real matrices
natively on Verilator in the soak. C must equal scipy's ``A @ B`` and the model's
exactly, in every run."""

import numpy as np
import pytest
import scipy.sparse as sp
from amaranth.hdl import Fragment

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.gustavson import Gustavson
from sparseforge.sim.models import gustavson as model
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import gustavson as host
from sparseforge.sw.formats import read_matrix
from sparseforge.tb import gustavson as tb

SMALL = {"pes": 2, "cols": 16, "lanes": 4, "index_width": 8, "value_width": 8,
         "acc_width": 20, "inflight": 4}
ALL_READY = dict.fromkeys(("job", "a", "c", "request", "response"), 1.0)

# A is 4 x 5 and B 5 x 7: A's row 2 and B's row 3 are empty, B's column 4 too; A's row 3
# reads B's empty row alone; the sums of C(1, 0) cancel.
A = np.array([[1, 0, 2, 0, 0],
              [3, 0, 0, 0, 1],
              [0, 0, 0, 0, 0],
              [0, 0, 0, 5, 0],
              ])
B = np.array([[1, 0, -1, 0, 0, 2, 0],
              [0, 4, 0, 0, 0, 0, 1],
              [0, 3, 0, 1, 0, 0, 0],
              [0, 0, 0, 0, 0, 0, 0],
              [-3, 0, 0, 0, 0, 1, 0],
              ])


def exact(a, b):
    """scipy's product of integer matrices, canonical (cancelled sums dropped)."""
    c = sp.csr_matrix(np.asarray(a, dtype=np.int64)) @ sp.csr_matrix(np.asarray(
        b, dtype=np.int64))
    c.eliminate_zeros()
    c.sort_indices()
    return c


def same(got, want):
    got, want = sp.csr_matrix(got), sp.csr_matrix(want)
    assert got.shape == want.shape
    assert (got != want).nnz == 0, (got.toarray(), want.toarray())


def run(a, b, seed=0, rates=None, **params):
    """The engine's result for C = a · b on Amaranth's simulator, checked exact."""
    comp = Gustavson(**{**SMALL, **params})
    result, bench = tb.simulate(comp, sp.csr_matrix(a), sp.csr_matrix(b),
                                seed_from_env(seed), rates)
    same(result.c, exact(a, b))
    same(result.c, bench.product())
    return result


# -- the golden model and the host side -------------------------------------------------

def product(a, b, offset, cols, lanes):
    """The model's C over one tile as a CSR, and its work."""
    (rows, cs, values), work = model.tile(a, b, offset, cols, lanes)
    assert (np.diff(rows * b.shape[1] + cs) > 0).all()          # row-major, no repeats
    return sp.csr_matrix((values, (rows, cs)), shape=(a.shape[0], b.shape[1])), work


def test_model_merges_scaled_rows_and_counts_the_work():
    c, work = product(*host.operands(A, B), offset=0, cols=8, lanes=4)
    same(c, exact(A, B))
    assert (1, 0) not in set(zip(*c.nonzero(), strict=True))      # 3 - 3: dropped
    # row 0: B rows 0 (3 elements) and 2 (2); columns 0 1 2 3 5: groups 0 and 1.
    assert work[0] == model.RowWork(2, 5, 0, 2, 5)
    # row 1: B rows 0 and 4; C(1, 0) = 3 - 3 cancels: columns 2 and 5 are left.
    assert work[1] == model.RowWork(2, 5, 0, 2, 2)
    assert work[2] == model.RowWork(0, 0, 0, 1, 0)          # empty: one empty vector
    assert work[3] == model.RowWork(1, 0, 1, 1, 0)          # B's empty row answered
    assert [w.items for w in work] == [5, 5, 1, 1]
    assert model.cycles(work, 1) == sum(w.items + model.PIPELINE + w.vectors
                                        for w in work) + model.FILL


def test_model_keeps_only_its_tile():
    a, b = host.operands(A, B)
    tiles = [product(a, b, offset, 4, 2)[0] for offset in (0, 4)]
    same(host.join(A.shape[:1] + B.shape[1:], tiles), exact(A, B))
    assert set(tiles[0].indices) == {0, 1, 2, 3}
    assert set(tiles[1].indices) == {5}             # B's column 6 meets A's zero column 1


def test_column_tiles_hold_b_and_join_again():
    rng = np.random.default_rng(3)
    b = sp.random(9, 50, density=0.15, random_state=4, format="csr")
    b.data = rng.integers(1, 9, b.nnz).astype(float)
    _, b = host.operands(sp.eye(9), b)
    tiles = host.column_tiles(b, 16)
    assert [t.offset for t in tiles] == sorted({16 * (j // 16) for j in b.indices})
    for t in tiles:
        assert set(t.b.indices) <= set(range(t.offset, t.offset + 16))
    same(host.join(b.shape, [t.b for t in tiles]), b)
    # a tile without a nonzero is no job: 10^12 columns, three entries, three tiles
    wide = sp.csr_matrix(([1, 2, 3], ([0, 1, 2], [0, 10**6, 10**12 - 1])),
                         shape=(3, 10**12))
    assert [t.offset for t in host.column_tiles(wide, 64)] == [0, 10**6 // 64 * 64,
                                                              (10**12 - 1) // 64 * 64]


def test_a_entries_stream_rows_and_mark_empty_ones():
    got = host.a_entries(sp.csr_matrix(A), 8)
    assert got["k"].tolist() == [0, 2, 0, 4, 0, 3]
    assert got["value"].tolist() == [1, 2, 3, 1, 0, 5]
    assert got["row_end"].tolist() == [0, 1, 0, 1, 1, 1]
    assert got["empty"].tolist() == [0, 0, 0, 0, 1, 0]
    assert got["last"].tolist() == [0, 0, 0, 0, 0, 1]
    assert host.a_entries(sp.csr_matrix([[-128, 127]]), 8)["value"].tolist() == [128, 127]
    with pytest.raises(ParameterError, match="128"):
        host.a_entries(sp.csr_matrix([[128]]), 8)


def test_operands_refuse_what_does_not_multiply():
    with pytest.raises(ParameterError, match="A's columns must be B's rows"):
        host.operands(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ParameterError, match="not integers"):
        host.operands(np.array([[0.5]]), np.ones((1, 1)))
    with pytest.raises(ParameterError, match="index_width=4"):
        host.check_fits(*host.operands(np.ones((1, 17)), np.ones((17, 1))), 4, 16)
    host.check_fits(*host.operands(np.ones((1, 16)), np.ones((16, 1))), 4, 16)
    with pytest.raises(ParameterError, match="C = A·B: value 128 is past"):
        host.check_fits(*host.operands([[8]], [[16]]), 8, 8)


# -- the RTL on Amaranth's simulator ----------------------------------------------------

def test_a_and_b_of_different_shapes_with_empty_rows_and_cancelling_sums():
    for seed, rates in ((0, ALL_READY), (1, None)):
        result = run(A, B, seed, rates)
        assert result.requests == [[0, 2], [0, 4, 3]]       # rows 0, 2 to PE 0; 1, 3 to PE 1
    # one PE, nothing stalled: the model's cycles within two (where the compactor's
    # flush of a full word falls is not modelled)
    assert abs(run(A, B, 0, ALL_READY, pes=1).cycles - model.cycles(result.work[0], 1)) <= 2


def test_a_row_hitting_every_column_and_hits_back_to_back():
    a = np.zeros((4, 6), dtype=np.int64)
    a[0] = [1, 2, 3, 4, 5, 6]               # B's rows 0..5: every column of the tile
    a[1] = [1, 1, 1, 1, 1, 1]               # rows 0..5 once more: column 0 back to back
    a[2, [2, 4]] = [7, -1]                   # column 0 two cycles apart
    a[3, 1:] = [1, -1, 2, 1, 1]              # column 0 back to back from its first hit
    b = np.zeros((6, 16), dtype=np.int64)
    b[0], b[1:, 0] = np.arange(1, 17), [2, 3, 4, 5, 6]
    b[2, 9], b[4, 9] = 1, 7
    for seed, rates in ((0, ALL_READY), (2, None)):
        result = run(a, b, seed, rates, pes=1)
    assert exact(a, b)[0].nnz == 16 and result.work[0][0].vectors == 4


def test_b_wider_than_the_accumulator_goes_in_column_tiles_back_to_back():
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (7, 9)) * (rng.random((7, 9)) < 0.4)
    b = rng.integers(-3, 4, (9, 53)) * (rng.random((9, 53)) < 0.3)
    b[:, 16:32] = 0                                   # a tile with no nonzero: no job
    result = run(a, b, 5, None, pes=3)
    assert len(result.work) == 3                      # columns 0-15, 32-47, 48-52


def test_elements_outside_the_jobs_tile_are_read_and_dropped(monkeypatch):
    wide = host.column_tiles

    def unfiltered(b, cols):
        return [host.ColumnTile(t.offset, b) for t in wide(b, cols)]

    monkeypatch.setattr(tb.host, "column_tiles", unfiltered)
    result = run(A, np.hstack([B, B, B]), 3, None, cols=8, lanes=2)
    assert sum(w.multiplies for w in result.work[1]) == 3 * 10


# -- parameters, lint, synthesis ------------------------------------------------------

def test_parameters_at_their_edges():
    largest = {"pes": 16, "cols": 4096, "lanes": 16, "index_width": 32, "value_width": 32,
               "acc_width": 64, "inflight": 256}
    Gustavson(**largest)
    # a PE of the widest tile in the narrowest lanes elaborates (its 2048 groups' ORs once
    # nested past Python's recursion limit)
    Fragment.get(Gustavson(**{**largest, "pes": 1, "lanes": 2}), None)
    Gustavson(pes=1, cols=8, lanes=4, index_width=4, value_width=2, acc_width=4,
              inflight=4)
    for name, bad in (("pes", 17), ("pes", 0), ("cols", 8192), ("cols", 4), ("cols", 48),
                      ("lanes", 32), ("lanes", 3), ("index_width", 33),
                      ("value_width", 33), ("acc_width", 65), ("inflight", 257),
                      ("inflight", 3)):
        with pytest.raises(ParameterError, match=f"{name}={bad}"):
            Gustavson(**{**largest, name: bad})
    with pytest.raises(ParameterError, match="cols=16: expected at least 2 x lanes"):
        Gustavson(cols=16, lanes=16)
    Gustavson(cols=32, lanes=16)
    with pytest.raises(ParameterError, match="acc_width"):
        Gustavson(value_width=16, acc_width=31)
    Gustavson(value_width=16, acc_width=32)
    with pytest.raises(ParameterError, match="cols=64: expected fewer than"):
        Gustavson(cols=64, index_width=6)
    Gustavson(cols=32, index_width=6)


def test_in_the_synthesis_report():
    blk = get("gustavson")
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))


def test_verilog_lints_clean_with_wall(lint):
    assert lint("gustavson", Gustavson.REPORT[0]) == ""


# -- real matrices natively on Verilator -------------------------------------------------

DATA = "matrices/suitesparse"


def real(shared_data, name, values=None):
    """A real matrix as integer CSR: its own values, or its pattern with small values
    drawn from ``values`` (a seed) where it stores reals."""
    m = sp.csr_matrix(read_matrix(shared_data / DATA / name))
    if values is not None:
        m.data = np.random.default_rng(values).integers(1, 8, m.nnz) * np.where(
            np.random.default_rng(values + 1).random(m.nnz) < 0.5, -1, 1)
    return m


@pytest.mark.soak
@pytest.mark.parametrize("name, values, transpose, params", [
    ("karate.mtx", None, False, {"pes": 2, "cols": 16, "lanes": 4}),
    ("GD97_b.mtx", 1, True, {"pes": 3, "cols": 32, "lanes": 2}),
    ("bcspwr03.mtx", None, True, {"pes": 4, "cols": 64, "lanes": 4}),
    ("494_bus.mtx", 2, False, {"pes": 2, "cols": 64, "lanes": 8}),
])
def test_real_matrices_natively(shared_data, name, values, transpose, params):
    a = real(shared_data, name, values)
    b = a.T.tocsr() if transpose else a
    comp = Gustavson(**{**Gustavson.REPORT[0], **params})
    for seed in range(3):
        result, bench = tb.simulate(comp, a, b, seed_from_env(seed), engine="native")
        same(result.c, exact(a.toarray(), b.toarray()))
        same(result.c, bench.product())
