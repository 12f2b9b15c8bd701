# amaranth: UnusedElaboratable=no
"""The Tensaurus accelerator end to end: the run's plan, then the RTL (TLU, MLU,
scratchpads, the PE array and the MSU wired through their interfaces) against the
golden kernels, with the tensor's memory answering out of order and every stream
stalled at random; directed on Amaranth's simulator, real tensors and matrices
natively on Verilator, and ``sparseforge run tensaurus``."""

import json

import numpy as np
import pytest

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.tensaurus import Tensaurus
from sparseforge.sim.models import tensaurus as model
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw.ciss import decode
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor
from sparseforge.sw.tensaurus_host import params_for
from sparseforge.sw.tensaurus_job import measures, plan
from sparseforge.sw.tensor_kernels import dttmc
from sparseforge.sw.wire import TensaurusKernel
from sparseforge.tb.tensaurus import TensaurusBench, simulate
from sparseforge.tb.tensaurus_pe import lane_items, model_items

STALLS = {"start": 1.0, "tensor": 0.5, "matrix": 0.6, "out": 0.4}

# Fig. 3a's shape, filled so that CISS hands slices 0 and 3 to PE0 and 1 and 2 to PE1,
# as Figs. 3d, 4 and 6 show.
FIG3 = Tensor(np.array([[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 0], [2, 0, 1], [3, 0, 0],
                        [3, 1, 0]]), np.array([1, 2, 3, 4, 5, 6, 7]), (4, 2, 2))


# Fig. 6b: the scratchpad reads (operand: 0 for C, 1 for B; row) of PE row 0 and PE row 1.
FIG6 = {0: [(0, 0), (0, 1), (1, 0), (0, 1), (1, 1), (0, 0), (1, 0), (0, 0), (1, 1)],
        1: [(0, 0), (1, 1), (0, 1), (1, 0)]}


def factors(shape, rank, seed, r1=None):
    """Integer factors of the modes after the first (TTMc: B of rank ``r1``)."""
    rng = np.random.default_rng(seed)
    ranks = [rank] * (len(shape) - 1) if r1 is None else [r1, rank]
    return [rng.integers(-9, 10, (n, f)) for n, f in zip(shape[1:], ranks, strict=True)]


def run(job, seed, rates=None, engine="pysim", work_dir=None, **params):
    component = Tensaurus(**{**params_for(job), **params})
    return simulate(component, job, seed, rates, engine, work_dir)


def test_fig6_spmttkrp_on_a_2x2_array():
    """Fig. 6: SpMTTKRP of the Fig. 3a tensor on 2x2 PEs of VLEN 1, rank 2: PE0's slices
    (0, 3) run on PE00 and PE01, one column of the rank each; PE1's (1, 2) on PE10 and
    PE11. Each PE does Fig. 6b's operations in its order (C rows per nonzero, a B row
    at each fiber's end, a drain per slice); the output is the golden kernel's."""
    job = plan("spmttkrp", FIG3, factors(FIG3.shape, 2, 0), rows=2, cols=2, vlen=1)
    assert job.tlen == 1
    (tile,) = job.tiles
    ciss = tile.stream
    assert [ciss.slices[ciss.pe == p].tolist() for p in (0, 1)] == [[0, 3], [1, 2]]
    for p, reads in FIG6.items():
        trace = model.pe(model_items(ciss, lane_items(ciss, p)), TensaurusKernel.MTTKRP, 1, 1,
                         lambda o, r, t: [0], 32, ciss.wire.idle)
        assert trace.requests == [(o, r, 0) for o, r in reads], p
        assert [d[0] for d in trace.drains] == ciss.slices[ciss.pe == p].tolist()
    for seed, rates in ((seed_from_env(1), None), (seed_from_env(2), STALLS)):
        got = run(job, seed, rates)
        assert np.array_equal(got.output, job.golden), (got.output, job.golden)


class CycleBench(TensaurusBench):
    """The accelerator's bench, also noting on which cycle each PE's scratchpad read is
    taken: ``ops[(p, q)]`` lists ``(cycle, operand, row)``."""

    def __init__(self, component, job, seed, rates):
        super().__init__(component, job, seed, rates)
        self.ops = {(p, q): [] for p in range(job.rows) for q in range(job.cols)}

    def check(self, io, cycle):
        for (p, q), ops in self.ops.items():
            request = self.component.pes[p][q].spm.request
            if io.ctx.get(request.valid) and io.ctx.get(request.ready):
                ops.append((cycle, io.ctx.get(request.payload.operand),
                            io.ctx.get(request.payload.row)))


def test_fig6_cycle_by_cycle():
    """Fig. 6b cycle by cycle, on memories and an output that never stall: every PE makes
    its reads in the figure's order; PE(p, 1) makes each of PE(p, 0)'s reads exactly one
    cycle later (the systolic hop); both PE rows start on the same cycle (an entry's two
    lanes arrive together); while a fiber lasts a PE reads a C row every cycle, and its
    fiber's B row follows the fiber's last C row within three cycles (the multiply in
    flight). The figure's scratchpad answers in a cycle, ours after
    ``TensaurusSpm.latency``, so the table starts later than the figure's; it is printed
    (``pytest -s``) in the figure's shape."""
    job = plan("spmttkrp", FIG3, factors(FIG3.shape, 2, 0), rows=2, cols=2, vlen=1)
    component = Tensaurus(**params_for(job))
    bench = CycleBench(component, job, 0, dict.fromkeys(STALLS, 1.0))
    got = pysim(bench)
    assert np.array_equal(got.output, job.golden)
    ops = bench.ops
    for p, want in FIG6.items():
        for q in (0, 1):
            assert [(o, r) for _, o, r in ops[p, q]] == want, (p, q)
        assert [c + 1 for c, _, _ in ops[p, 0]] == [c for c, _, _ in ops[p, 1]], p
    assert ops[0, 0][0][0] == ops[1, 0][0][0]
    for p in (0, 1):
        cycles = [c for c, _, _ in ops[p, 0]]
        for n in range(1, len(cycles)):
            after_c = ops[p, 0][n - 1][1] == 0
            gap = cycles[n] - cycles[n - 1]
            assert gap == 1 if after_c and ops[p, 0][n][1] == 0 else 1 <= gap <= 3, (p, n)
    first = min(c for seq in ops.values() for c, _, _ in seq)
    last = max(c for seq in ops.values() for c, _, _ in seq)
    print(f"\nFig. 6b on the RTL: cycle (from {first}) -> each PE's read: C[k] or B[j]")
    for cycle in range(first, last + 1):
        cells = []
        for key in sorted(ops):
            did = [f"{'CB'[o]}[{r}]" for c, o, r in ops[key] if c == cycle]
            cells.append(f"PE{key[0]}{key[1]} {did[0] if did else '-':5}")
        print(f"{cycle - first:3}  " + "  ".join(cells))


@pytest.mark.parametrize("rows, cols, vlen, rank", [(1, 1, 1, 1), (2, 3, 2, 5), (3, 2, 4, 8)])
def test_directed_arrays_spmttkrp_and_spmm(rows, cols, vlen, rank):
    job = plan("spmttkrp", FIG3, factors(FIG3.shape, rank, rank), rows, cols, vlen)
    assert np.array_equal(run(job, seed_from_env(rank), STALLS).output, job.golden)
    matrix = Tensor(np.array([[0, 1], [0, 3], [2, 0], [3, 3], [5, 2]]), np.array([4, -2, 7, 1,
                                                                                  3]), (6, 4))
    job = plan("spmm", matrix, factors(matrix.shape, rank, rank + 1), rows, cols, vlen)
    assert np.array_equal(run(job, seed_from_env(rank + 1), STALLS).output, job.golden)


MATRIX = Tensor(np.array([[0, 1], [0, 3], [0, 8], [2, 0], [3, 3], [3, 6], [5, 2], [5, 7]]),
                np.array([4, -2, 5, 7, 1, -6, 3, 2]), (6, 9))


@pytest.mark.parametrize("rows, cols, vlen, spm_rows", [
    pytest.param(1, 1, 1, None, marks=pytest.mark.soak), (2, 3, 2, None),
    pytest.param(3, 2, 4, None, marks=pytest.mark.soak), (2, 2, 3, 2)])
def test_directed_spmv_on_the_first_column(rows, cols, vlen, spm_rows):
    """SpMV (and GEMV) on the first PE column: b packed into the scratchpads' rows, in
    tiles of ``spm_rows`` of them or whole; the output is the golden y."""
    b = np.arange(MATRIX.shape[1]) * 3 - 11
    job = plan("spmv", MATRIX, [b], rows, cols, vlen, spm_rows=spm_rows)
    assert job.mode == "mv" and job.active_pes == rows
    assert (len(job.tiles) > 1) == (spm_rows is not None)
    assert np.array_equal(run(job, seed_from_env(vlen), STALLS).output, job.golden)
    dense = np.zeros(MATRIX.shape, dtype=np.int64)
    dense[tuple(MATRIX.coords.T)] = MATRIX.values
    job = plan("gemv", dense, [b], rows, cols, vlen, spm_rows=spm_rows)
    assert np.array_equal(run(job, seed_from_env(vlen + 1)).output, dense @ b[:, None])


@pytest.mark.parametrize("kernel, shape, rows, cols, vlen, spm_rows", [
    ("dmttkrp", (5, 4, 3), 3, 2, 4, 2), ("dttmc", (5, 4, 3), 2, 2, 2, None),
    ("gemm", (7, 9), 2, 2, 2, None), ("gemv", (7, 9), 3, 2, 4, 2)])
def test_dense_kernels_in_the_dense_mode(kernel, shape, rows, cols, vlen, spm_rows):
    """Fully dense operands, zeros among the values: the TLU reads dense words and builds
    the CISS entries, the scratchpads broadcast the first PE row's reads; in tiles too.
    The slices (5 or 7) do not fill the last group of PE rows."""
    rng = np.random.default_rng(rows + len(shape))
    dense = rng.integers(-9, 10, shape)
    dense[0, 0] = 0
    mats = factors(shape, 5, rows, r1=3 if kernel == "dttmc" else None)
    if kernel == "gemv":
        mats = [mats[0][:, 0]]
    job = plan(kernel, dense, mats, rows, cols, vlen, spm_rows=spm_rows)
    assert job.dense and job.nnz == dense.size
    assert (len(job.tiles) > 1) == (spm_rows is not None)
    got = run(job, seed_from_env(rows + len(kernel)), STALLS)
    assert np.array_equal(got.output, job.golden)


def test_msu_banks_take_a_pe_rows_drains_together():
    """A 2 x 4 array's SpMM with the MSU in 1, 2 and 4 banks: the same output, and with
    more banks the drains of a PE row are taken on fewer cycles, so the run is no longer;
    more banks than columns are refused."""
    matrix = Tensor(np.array([[0, 1], [0, 3], [2, 0], [3, 3], [5, 2]]), np.array([4, -2, 7, 1,
                                                                                  3]), (6, 4))
    job = plan("spmm", matrix, factors(matrix.shape, 8, 9), rows=2, cols=4, vlen=1)
    cycles = []
    for banks in (1, 2, 4):
        got = run(job, seed_from_env(11), msu_banks=banks)
        assert np.array_equal(got.output, job.golden)
        cycles.append(got.cycles)
    assert cycles[0] > cycles[1] >= cycles[2], cycles
    with pytest.raises(ParameterError, match="banks=4"):
        Tensaurus(cols=2, msu_banks=4)


@pytest.mark.parametrize("kernel, spm_rows", [("spmttkrp", 1), ("spttmc", 1), ("spmm", 2)])
def test_directed_tiles_accumulate_across_tiles(kernel, spm_rows):
    """Fig. 3a (and a matrix) in tiles of a row or two of each operand: the MSU sums every
    tile's drains, the scratchpads' halves alternate, the output is the golden one."""
    if kernel == "spmm":
        operand = Tensor(np.array([[0, 1], [0, 3], [2, 0], [3, 3], [5, 2]]),
                         np.array([4, -2, 7, 1, 3]), (6, 4))
    else:
        operand = FIG3
    mats = factors(operand.shape, 3, 4, r1=2 if kernel == "spttmc" else None)
    job = plan(kernel, operand, mats, rows=2, cols=2, vlen=1, spm_rows=spm_rows)
    assert len(job.tiles) > 1
    for seed, rates in ((seed_from_env(21), None), (seed_from_env(22), STALLS)):
        got = run(job, seed, rates)
        assert np.array_equal(got.output, job.golden), (got.output, job.golden)


def test_the_next_tile_loads_while_one_computes():
    """With memories that answer every cycle, the cycles no tile computes are fewer than
    the matrix words the tiles load: the later tiles' loads are hidden behind compute."""
    rng = np.random.default_rng(8)
    coords = np.unique(rng.integers(0, [6, 16, 16], (200, 3)), axis=0)
    tensor = Tensor(coords, rng.integers(1, 9, len(coords)), (6, 16, 16))
    job = plan("spmttkrp", tensor, factors(tensor.shape, 4, 9), rows=2, cols=2, vlen=2,
               spm_rows=4)
    words = sum(job.chunks(tile) for tile in job.tiles)
    got = run(job, seed_from_env(23), dict.fromkeys(STALLS, 1.0))
    assert np.array_equal(got.output, job.golden)
    first = job.chunks(job.tiles[0])
    assert len(job.tiles) == 16
    assert first <= got.load_cycles < words / 4, (got.load_cycles, first, words)


def operand_of(kernel, rng):
    """A small operand of ``kernel`` (a dense one's zeros among its values) and its
    factors: 7 rows (slices) of 4 x 4 (a tensor) or 9 columns (a matrix)."""
    shape = (7, 4, 4) if kernel in ("spmttkrp", "spttmc", "dmttkrp", "dttmc") else (7, 9)
    dense = rng.integers(-9, 10, shape) * (rng.random(shape) < 0.5)
    mats = factors(shape, 5, 3, r1=3 if kernel.endswith("ttmc") else None)
    if kernel.endswith("mv"):
        mats = [mats[0][:, 0]]
    if kernel in ("dmttkrp", "dttmc", "gemm", "gemv"):
        return dense, mats
    coords = np.argwhere(dense)
    return Tensor(coords, dense[tuple(coords.T)], shape), mats


@pytest.mark.parametrize("kernel", [
    "spmttkrp", "spttmc", "spmm", "spmv", "dmttkrp",
    *(pytest.param(k, marks=pytest.mark.soak) for k in ("dttmc", "gemm", "gemv"))])
def test_every_kernel_in_output_tiles(kernel):
    """Each kernel with output tiles of 3 rows (3 of them for 7 rows, the last of one)
    and scratchpads of 2 rows (several input tiles each), every stream stalled at random,
    the write port too: every output word written once, the output the golden one."""
    operand, mats = operand_of(kernel, np.random.default_rng(len(kernel)))
    job = plan(kernel, operand, mats, rows=2, cols=2, vlen=2, spm_rows=2, out_rows=3)
    outs = [tile.out for tile in job.tiles]
    assert sorted(set(outs)) == [(0, 3), (3, 3), (6, 1)]
    assert all(outs.count(out) > 1 for out in set(outs) if out != (6, 1)), outs
    got = run(job, seed_from_env(len(kernel) + 30), STALLS)
    assert np.array_equal(got.output, job.golden), (got.output, job.golden)


class WriteBackBench(TensaurusBench):
    """The accelerator's bench, also noting the cycles a PE's drain is taken (``drains``),
    the MSU closes an output tile (``closes``) and takes a write (``writes``: cycle,
    address)."""

    def __init__(self, component, job, seed, rates):
        super().__init__(component, job, seed, rates)
        self.drains, self.closes, self.writes = [], [], []

    def check(self, io, cycle):
        msu, get = self.component.msu, io.ctx.get
        if any(get(d.valid) and get(d.ready) and not get(d.payload.last) for d in msu.drains):
            self.drains.append(cycle)
        if get(msu.tiles.valid) and get(msu.tiles.ready) and get(msu.tiles.payload.closes):
            self.closes.append(cycle)
        request = msu.out_mem.request
        if get(request.valid) and get(request.ready):
            self.writes.append((cycle, get(request.payload.addr)))


def test_the_next_output_tile_accumulates_while_one_is_written():
    """SpMM of a 16-row matrix in output tiles of 4 rows on 2 x 1 PEs, rank 8 (4 chunks a
    row: 16 words an output tile), the write port taking a word about every third cycle:
    some drains of each output tile after the first are taken while the one before it
    is still being written (printed with ``pytest -s``)."""
    rng = np.random.default_rng(12)
    coords = np.unique(rng.integers(0, [16, 8], (40, 2)), axis=0)
    matrix = Tensor(coords, rng.integers(1, 9, len(coords)), (16, 8))
    job = plan("spmm", matrix, factors(matrix.shape, 8, 13), rows=2, cols=1, vlen=2,
               out_rows=4)
    component = Tensaurus(**params_for(job))
    rates = {**dict.fromkeys(STALLS, 1.0), "out": 0.3}
    bench = WriteBackBench(component, job, seed_from_env(51), rates)
    got = pysim(bench)
    assert np.array_equal(got.output, job.golden)
    words = 4 * component.olen * component.cols
    assert len(bench.closes) == 4 and len(bench.writes) == 4 * words
    for k in range(3):
        written = max(c for c, addr in bench.writes if addr // words == k)
        overlap = [c for c in bench.drains if bench.closes[k] < c < written]
        assert overlap, (k, bench.closes, written)
        print(f"output tile {k + 1}: {len(overlap)} of its drains taken while output tile "
              f"{k} was written (cycles {bench.closes[k] + 1}-{written})")


def test_a_build_takes_output_tiles_up_to_its_msu():
    """A build whose MSU half holds 2 rows runs output tiles of 2 rows and refuses 3,
    naming out_rows."""
    job = plan("spmm", MATRIX, factors(MATRIX.shape, 2, 3), rows=2, cols=1, vlen=2,
               out_rows=2)
    component = Tensaurus(**{**params_for(job), "out_rows": 2})
    assert np.array_equal(simulate(component, job, 1, engine="pysim").output, job.golden)
    job = plan("spmm", MATRIX, factors(MATRIX.shape, 2, 3), rows=2, cols=1, vlen=2,
               out_rows=3)
    with pytest.raises(ParameterError, match="out_rows=3"):
        TensaurusBench(component, job, 1)


def test_back_to_back_runs():
    """Two runs of SpMTTKRP in output tiles, one after the other in one simulation: the
    second starts once the first's stats are taken, after its last write, and writes the
    same output after the first's."""
    job = plan("spmttkrp", FIG3, factors(FIG3.shape, 3, 2), rows=2, cols=2, vlen=1,
               spm_rows=1, out_rows=2)
    component = Tensaurus(**params_for(job))
    for seed, rates in ((seed_from_env(61), None), (seed_from_env(62), STALLS)):
        got = simulate(component, job, seed, rates, engine="pysim", runs=2)
        assert np.array_equal(got.output, job.golden)


@pytest.mark.parametrize("kernel", [
    "spmttkrp", "spttmc", "spmm", "spmv", "dmttkrp",
    *(pytest.param(k, marks=pytest.mark.soak) for k in ("dttmc", "gemm", "gemv"))])
def test_every_kernel_in_the_direct_mode(kernel):
    """Each kernel accumulating directly in memory (Section 5.2.5), in several input
    tiles, every stream stalled at random, the memory too: one write a drain, the output
    the golden one."""
    operand, mats = operand_of(kernel, np.random.default_rng(len(kernel)))
    job = plan(kernel, operand, mats, rows=2, cols=2, vlen=2, spm_rows=2, out_rows=3,
               direct=True)
    assert job.direct and len(job.tiles) > 1
    assert {tile.out for tile in job.tiles} == {(0, 7)}
    got = run(job, seed_from_env(len(kernel) + 40), STALLS)
    assert np.array_equal(got.output, job.golden), (got.output, job.golden)


def test_back_to_back_runs_in_the_direct_mode():
    """Two direct runs, the second's output after the first's in memory."""
    job = plan("spmttkrp", FIG3, factors(FIG3.shape, 3, 2), rows=2, cols=2, vlen=1,
               spm_rows=1, direct=True)
    component = Tensaurus(**params_for(job))
    got = simulate(component, job, seed_from_env(63), STALLS, engine="pysim", runs=2)
    assert np.array_equal(got.output, job.golden)


def test_drains_worked_by_hand():
    """Fig. 3a's 4 slices on 2 x 2 PEs of VLEN 1, rank 2 (tlen 1): each slice drains a
    chunk from each of its PE row's 2 PEs, 8 in all, 16 on a TTMc build of r1 2; in tiles
    of one row of C and B, each tile drains its own slices; SpMV, one a slice."""
    job = plan("spmttkrp", FIG3, factors(FIG3.shape, 2, 0), rows=2, cols=2, vlen=1)
    assert job.drains() == 8 and job.drains(2) == 16
    tiled = plan("spmttkrp", FIG3, factors(FIG3.shape, 2, 0), rows=2, cols=2, vlen=1,
                 spm_rows=1)
    assert tiled.drains() == 2 * sum(len(tile.stream.slices) for tile in tiled.tiles) > 8
    spmv = plan("spmv", MATRIX, [np.arange(MATRIX.shape[1])], rows=2, cols=2, vlen=2)
    assert spmv.drains() == len(np.unique(MATRIX.coords[:, 0])) == 4


@pytest.mark.parametrize("columns, chosen, saved_bits", [(16, True, 640 - 512),
                                                          (4, False, 256 - 320)])
def test_auto_accumulates_in_memory_where_it_moves_fewer_bytes(columns, chosen, saved_bits):
    """SpMM, 1 PE of VLEN 1, rank 1, of a 4 x ``columns`` matrix with nonzeros in rows 0
    and 3, an MSU of 2 rows. Buffered: 2 output tiles, each loading all of B (``columns``
    rows of 16 bits) and writing 2 rows of 32 bits; direct: B loaded once, the 4 rows
    zeroed, and each of the 2 drains read and written. With 16 columns: 2 x 16 x 16 + 4 x
    32 = 640 bits against 16 x 16 + (4 + 2 x 2) x 32 = 512, so direct; with 4: 2 x 4 x 16
    + 128 = 256 against 64 + 256 = 320, so the buffer. The CISS is the same both ways."""
    matrix = Tensor(np.array([[0, 0], [3, columns - 1]]), np.array([2, 3]), (4, columns))
    given = dict(rows=1, cols=1, vlen=1, dw=16, acc_width=32, out_rows=2)
    mats = [np.arange(columns).reshape(-1, 1)]
    buffered, direct = (plan("spmm", matrix, mats, **given, direct=d) for d in (False, True))
    assert buffered.entries == direct.entries
    assert buffered.moved_bytes() - direct.moved_bytes() == saved_bits / 8
    auto = plan("spmm", matrix, mats, **given, direct="auto")
    assert auto.direct == chosen and auto.out_tile_rows == 2
    assert np.array_equal(run(auto, seed_from_env(64), STALLS).output, auto.golden)


@pytest.mark.parametrize("rows, cols, vlen, r1, rank", [
    (1, 1, 1, 1, 1), (2, 2, 2, 1, 3), (2, 3, 2, 3, 5), (3, 2, 4, 6, 8), (1, 2, 3, 4, 2)])
def test_directed_arrays_spttmc(rows, cols, vlen, r1, rank):
    """SpTTMc of Fig. 3a, B's rank r1 a multiple of vlen or not, C's split over the
    columns; the output Y (I x r1 x rank) as the golden kernel gives it."""
    job = plan("spttmc", FIG3, factors(FIG3.shape, rank, rank, r1), rows, cols, vlen)
    assert job.golden.shape == (4, r1, rank)
    for seed, rates in ((seed_from_env(r1), None), (seed_from_env(r1 + 1), STALLS)):
        got = run(job, seed, rates)
        assert np.array_equal(got.output, job.golden), (got.output, job.golden)


def test_dttmc_and_the_other_kernels_on_a_ttmc_build():
    """DTTMc of a small dense tensor; then SpMTTKRP and SpMM on the same build (r1 = 3):
    they use the first tlen chunks of each OSR and of the output's rows."""
    rng = np.random.default_rng(5)
    dense = rng.integers(-9, 10, (5, 4, 3)) * (rng.random((5, 4, 3)) < 0.6)
    mats = factors(dense.shape, 4, 6, r1=3)
    job = plan("dttmc", dense, mats, rows=2, cols=2, vlen=2)
    assert np.array_equal(job.golden, dttmc(dense, [None, *mats]))
    assert np.array_equal(run(job, seed_from_env(3), STALLS).output, job.golden)
    job = plan("spmttkrp", FIG3, factors(FIG3.shape, 4, 7), rows=2, cols=2, vlen=2)
    assert np.array_equal(run(job, seed_from_env(4), STALLS, r1=3).output, job.golden)
    matrix = Tensor(np.array([[0, 1], [2, 0], [3, 3]]), np.array([4, -2, 7]), (4, 4))
    job = plan("spmm", matrix, factors(matrix.shape, 4, 8), rows=2, cols=2, vlen=2)
    assert np.array_equal(run(job, seed_from_env(5), STALLS, r1=3).output, job.golden)
    job = plan("spmv", matrix, [np.array([3, -1, 4, 1])], rows=2, cols=2, vlen=2)
    assert np.array_equal(run(job, seed_from_env(6), STALLS, r1=3).output, job.golden)


def test_tiles_cover_the_nonzeros_with_local_indices():
    """Each tile's CISS, its indices shifted back by its blocks' first rows, gives the
    tensor's nonzeros exactly once; each tile loads the blocks it reads, and no more."""
    rng = np.random.default_rng(11)
    coords = np.unique(rng.integers(0, [9, 13, 7], (120, 3)), axis=0)
    tensor = Tensor(coords, rng.integers(1, 9, len(coords)), (9, 13, 7))
    for kernel, spm_rows in (("spmttkrp", 4), ("spttmc", 5), ("spmttkrp", 100)):
        job = plan(kernel, tensor, factors(tensor.shape, 2, 1), spm_rows=spm_rows)
        assert job.spm_rows == min(spm_rows, 13)
        found = []
        for tile in job.tiles:
            (k0, nk), (j0, nj) = tile.rows
            assert 0 < nk <= job.spm_rows and 0 < nj <= job.spm_rows
            held = decode(tile.stream)
            local, values = held.coords, held.values
            assert local[:, 1].max() < nj and local[:, 2].max() < nk
            found += [(int(i), int(j + j0), int(k + k0), int(v))
                      for (i, j, k), v in zip(local, values, strict=True)]
        assert sorted(found) == sorted((int(i), int(j), int(k), int(v)) for (i, j, k), v
                                       in zip(coords, tensor.values, strict=True))
        assert len(job.tiles) == len({(j // job.spm_rows, k // job.spm_rows)
                                      for _, j, k in coords})
        assert job.nnz == len(coords)
    matrix = Tensor(np.array([[0, 1], [2, 9], [3, 3], [5, 9]]), np.array([4, -2, 7, 1]),
                    (6, 10))
    job = plan("spmm", matrix, factors(matrix.shape, 2, 2), spm_rows=4)
    assert [tile.rows for tile in job.tiles] == [((0, 4),), ((8, 2),)]


def test_plan_refuses_what_the_hardware_cannot_run():
    with pytest.raises(ParameterError, match="the hardware runs"):
        plan("spttm", FIG3, factors(FIG3.shape, 2, 0))
    with pytest.raises(ParameterError, match="3-mode"):
        plan("spttmc", Tensor(np.zeros((1, 4), int), np.ones(1), (1, 1, 1, 1)),
             [np.ones((1, 2), int)] * 3)
    with pytest.raises(ParameterError, match="integers"):
        plan("spmttkrp", Tensor(FIG3.coords, FIG3.values + 0.5, FIG3.shape),
             factors(FIG3.shape, 2, 0))
    with pytest.raises(ParameterError, match="factor 1 is"):
        plan("spmttkrp", FIG3, [np.ones((2, 2), int), np.ones((3, 2), int)])
    with pytest.raises(ParameterError, match="16-bit"):
        plan("spmttkrp", FIG3, [np.full((2, 2), 40000), np.ones((2, 2), int)])
    with pytest.raises(ParameterError, match="3-mode"):
        plan("spmttkrp", Tensor(FIG3.coords[:, :2], FIG3.values, (4, 2)), [np.ones((2, 2))])


@pytest.mark.verilator
@pytest.mark.parametrize("kernel, name, spm_rows, out_rows, direct", [
    pytest.param("spmttkrp", "tensors/movielens-latest-small_user-movie-tag.tns", None, None,
                 False, marks=pytest.mark.soak),    # test_run_tensaurus_command runs it
    pytest.param("spttmc", "tensors/movielens-latest-small_user-movie-tag.tns", None, None,
                 False, marks=pytest.mark.soak),
    pytest.param("spmm", "matrices/suitesparse/494_bus.mtx", None, None, False,
                 marks=pytest.mark.soak),   # each kernel once, tiles and output tiles once,
    pytest.param("spmv", "matrices/pypi/nx_karate_club.mtx", None, 8, False,
                 marks=pytest.mark.soak),           # the direct mode
    pytest.param("spmttkrp", "tensors/movielens-latest-small_user-movie-tag.tns", 256, 128,
                 False, marks=pytest.mark.soak),
    pytest.param("spmttkrp", "tensors/movielens-latest-small_user-movie-tag.tns", 256, 128,
                 True, marks=pytest.mark.soak),
    ("spmm", "matrices/suitesparse/494_bus.mtx", 128, 100, False),
    ("spmm", "matrices/suitesparse/494_bus.mtx", 128, 100, True)])  # the same build
def test_real_data_on_verilator(shared_data, tmp_path, kernel, name, spm_rows, out_rows,
                                direct):
    path = shared_data / name
    rng = np.random.default_rng(7)
    if path.suffix == ".tns":
        operand = read_tensor(path)         # counts: integers already
    else:                                   # the pattern, with small integer values
        operand = read_matrix(path).tocsr()
        operand.data = rng.integers(1, 10, operand.nnz) * rng.choice([-1, 1], operand.nnz)
    shape = operand.shape
    rank = 1 if kernel == "spmv" else 6
    ranks = [5, rank] if kernel == "spttmc" else [rank] * (len(shape) - 1)
    mats = [rng.integers(-20, 21, (n, f)) for n, f in zip(shape[1:], ranks, strict=True)]
    if kernel == "spmv":
        mats = [mats[0][:, 0]]
    job = plan(kernel, operand, mats, rows=2, cols=2, vlen=2, spm_rows=spm_rows,
               out_rows=out_rows, direct=direct)
    assert (len(job.tiles) > 1) == (spm_rows is not None or out_rows is not None)
    got = run(job, seed_from_env(9), STALLS, "native", tmp_path)
    assert np.array_equal(got.output, job.golden)


@pytest.mark.verilator
@pytest.mark.parametrize("kernel, r1, spm_rows, out_rows", [("spmttkrp", 4, None, None),
                                                          ("spttmc", 3, 512, 200)])
def test_run_tensaurus_command(shared_data, tmp_path, capsys, kernel, r1, spm_rows, out_rows):
    rng = np.random.default_rng(3)
    tensor = shared_data / "tensors" / "movielens-latest-small_user-movie-tag.tns"
    shape = read_tensor(tensor).shape
    b, c, out = tmp_path / "b.npy", tmp_path / "c.npy", tmp_path / "y.npy"
    np.save(b, rng.integers(-5, 6, (shape[1], r1)))
    np.save(c, rng.integers(-5, 6, (shape[2], 4)))
    tiling = [] if spm_rows is None else ["--spm-rows", str(spm_rows)]
    tiling += [] if out_rows is None else ["--out-rows", str(out_rows)]
    main(["run", "tensaurus", "--kernel", kernel, str(tensor), "--factors", str(b), str(c),
          "--pes", "2x2", "--vlen", "2", *tiling, "--out", str(out), "--json"])
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1                # one JSON object, nothing else
    result = json.loads(printed)
    assert result["equal_to_golden"] and result["cycles"] > 0
    assert 0 < result["utilization_useful"] <= result["utilization_executed"] <= 1
    assert result["paper_utilization_useful"] == pytest.approx(2 * result["utilization_useful"])
    assert (result["tiles"] > 1) == (spm_rows is not None)
    job = plan(kernel, read_tensor(tensor), [np.load(b), np.load(c)], 2, 2, 2,
               spm_rows=spm_rows, out_rows=out_rows)
    assert result["tiles"] == len(job.tiles)
    assert result["out_tiles"] == (1 if out_rows is None else -(-shape[0] // out_rows))
    figures = measures(job, result["cycles"], result["compute_cycles"])
    assert {k: result[k] for k in figures} == figures
    assert np.load(out).shape == job.golden.shape
    assert np.array_equal(np.load(out), job.golden)


def test_run_tensaurus_spmv_says_which_pes_compute(shared_data, tmp_path, capsys):
    """SpMV in the human report, accumulated in memory on a build of 8 output rows: two
    of the 2x2 array's PEs compute, and it says so; one drain a row of the 34."""
    matrix = shared_data / "matrices" / "pypi" / "nx_karate_club.mtx"
    b, out = tmp_path / "b.npy", tmp_path / "y.npy"
    np.save(b, np.arange(read_matrix(matrix).shape[1]) % 7 - 3)
    main(["run", "tensaurus", "--kernel", "spmv", str(matrix), "--factors", str(b),
          "--pes", "2x2", "--vlen", "2", "--out", str(out), "--out-rows", "8",
          "--accumulate", "memory"])
    printed = capsys.readouterr().out
    assert "accumulated in memory: 34 drains, each a read and a write" in printed
    assert "PEs          2 of 2x2 compute (SpMV and GEMV: the first column)" in printed
    assert "memory       answering 100% of cycles" in printed


@pytest.mark.soak
def test_run_tensaurus_on_the_ddr4_model(shared_data, tmp_path, capsys):
    """``--memory ddr4``: the run's memories DDR4-timed, and the report says so."""
    matrix = shared_data / "matrices" / "pypi" / "nx_karate_club.mtx"
    b, out = tmp_path / "b.npy", tmp_path / "y.npy"
    np.save(b, np.arange(read_matrix(matrix).shape[1]) % 7 - 3)
    main(["run", "tensaurus", "--kernel", "spmv", str(matrix), "--factors", str(b),
          "--pes", "2x2", "--vlen", "2", "--out", str(out), "--memory", "ddr4"])
    assert "memory       DDR4-2400" in capsys.readouterr().out
    assert np.load(out).shape == (read_matrix(matrix).shape[0], 1)


@pytest.mark.parametrize("args, message", [
    (["--kernel", "spmm", "X.tns", "--factors", "b.npy", "--out", "y.npy", "--pes", "2y2"],
     "--pes 2y2"),
    (["--kernel", "spttmc", "4D.tns", "--factors", "b.npy", "c.npy", "--out", "y.npy"],
     "spttmc takes a 3-mode operand, not 4 modes"),
])
def test_run_tensaurus_bad_input_is_one_line(tmp_path, capsys, args, message):
    (tmp_path / "4D.tns").write_text("1 1 1 1 2\n2 1 2 1 3\n")
    for name in ("b.npy", "c.npy"):
        np.save(tmp_path / name, np.ones((2, 2), int))
    args = [str(tmp_path / a) if a.endswith((".tns", ".npy")) else a for a in args]
    with pytest.raises(SystemExit) as stop:
        main(["run", "tensaurus", *args])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1


@pytest.mark.verilator
@pytest.mark.parametrize("kernel, spm_rows, out_rows", [
    pytest.param("spmttkrp", None, None, marks=pytest.mark.soak),
    pytest.param("dmttkrp", 8, 16, marks=pytest.mark.soak),
    pytest.param("spmv", 64, 16, marks=pytest.mark.soak)])
def test_on_the_ddr4_model(shared_data, tmp_path, kernel, spm_rows, out_rows):
    """The tensor's and the matrices' memories DDR4-timed (a channel each), in tiles and
    output tiles: exact, and slower than memories that answer every cycle."""
    rng = np.random.default_rng(41)
    if kernel == "spmttkrp":
        operand = read_tensor(shared_data / "tensors" /
                              "movielens-latest-small_user-movie-tag.tns")
    elif kernel == "spmv":
        operand = read_matrix(shared_data / "matrices" / "pypi" / "nx_karate_club.mtx")
    else:
        operand = rng.integers(-9, 10, (30, 20, 12))
    mats = [rng.integers(-9, 10, (n, 6)) for n in operand.shape[1:]]
    if kernel == "spmv":
        mats = [mats[0][:, 0]]
    job = plan(kernel, operand, mats, rows=2, cols=2, vlen=2, spm_rows=spm_rows,
               out_rows=out_rows)
    component = Tensaurus(**params_for(job))
    fast = dict.fromkeys(STALLS, 1.0)
    got = simulate(component, job, 5, fast, "native", tmp_path, memory="dram")
    assert np.array_equal(got.output, job.golden)
    assert got.cycles > simulate(component, job, 5, fast, "native", tmp_path).cycles
    with pytest.raises(ParameterError, match="memory='hbm'"):
        simulate(component, job, 5, fast, "native", tmp_path, memory="hbm")


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("kernel, name, pes", [
    ("spmttkrp", "tensors/movielens-100k_user-item-day.tns", "3x2"),
    ("spttmc", "tensors/movielens-100k_user-item-day.tns", "2x2"),
    ("spmttkrp", "tensors/lastfm-hetrec2011_user-artist-tag.tns", "2x3"),
    ("spmm", "matrices/graphs/email-Eu-core.mtx", "4x2"),
    ("spmv", "matrices/suitesparse/bcspwr06.mtx", "3x2")])
@pytest.mark.parametrize("spm_rows, out_rows", [(None, None), (128, 256)])
def test_soak_larger_real_data(shared_data, tmp_path, kernel, name, pes, spm_rows, out_rows):
    rows, cols = map(int, pes.split("x"))
    rng = np.random.default_rng(len(name))
    if name.endswith(".tns"):
        operand = read_tensor(shared_data / name)
    else:
        operand = read_matrix(shared_data / name).tocsr()
        operand.data = rng.integers(1, 10, operand.nnz) * rng.choice([-1, 1], operand.nnz)
    ranks = [3, 5] if kernel == "spttmc" else [5] * (len(operand.shape) - 1)
    mats = [rng.integers(-20, 21, (n, f)) for n, f in zip(operand.shape[1:], ranks,
                                                           strict=True)]
    if kernel == "spmv":
        mats = [mats[0][:, 0]]
    job = plan(kernel, operand, mats, rows=rows, cols=cols, vlen=2, spm_rows=spm_rows,
               out_rows=out_rows)
    rates = {k: float(rng.choice([0.3, 0.6, 1.0])) for k in STALLS}
    got = run(job, 31, rates, "native", tmp_path)
    assert np.array_equal(got.output, job.golden)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("kernel, shape", [("dmttkrp", (37, 24, 20)), ("dttmc", (37, 24, 20)),
                                           ("gemm", (150, 120)), ("gemv", (150, 120))])
@pytest.mark.parametrize("pes, vlen, spm_rows, out_rows", [("3x2", 2, None, None),
                                                           ("4x4", 4, 16, 64)])
def test_soak_dense_kernels(tmp_path, kernel, shape, pes, vlen, spm_rows, out_rows):
    """The dense mode on larger fully dense operands (zeros among the values), whole and
    in input and output tiles, every stream stalled at random, the MSU a bank a column."""
    rows, cols = map(int, pes.split("x"))
    rng = np.random.default_rng(len(kernel) + rows)
    dense = rng.integers(-9, 10, shape)
    mats = [rng.integers(-9, 10, (n, 9)) for n in shape[1:]]
    if kernel == "dttmc":
        mats[0] = mats[0][:, :3]
    if kernel == "gemv":
        mats = [mats[0][:, 0]]
    job = plan(kernel, dense, mats, rows=rows, cols=cols, vlen=vlen, spm_rows=spm_rows,
               out_rows=out_rows)
    assert (len(job.tiles) > 1) == (spm_rows is not None)
    rates = {k: float(rng.choice([0.3, 0.6, 1.0])) for k in STALLS}
    got = run(job, 37, rates, "native", tmp_path, msu_banks=cols)
    assert np.array_equal(got.output, job.golden)


@pytest.mark.parametrize("params", [{"spm_rows": 8, "out_rows": 8},
                                    {"rows": 1, "cols": 2, "r1": 2, "out_rows": 5,
                                     "msu_banks": 2, "order": 2}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tensaurus", params) == ""
