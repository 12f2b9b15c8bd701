# amaranth: UnusedElaboratable=no
"""The Tensaurus PE: the model against the golden kernels, then the RTL against the
model, directed on Amaranth's simulator and on real tensors and matrices natively on
Verilator, every stream stalled at random and the scratchpad answering at random
latency."""

import numpy as np
import pytest

from sparseforge.hw.tensaurus_pe import TensaurusPe, TensaurusPeSignature
from sparseforge.sim.models import tensaurus as model
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import ciss as cissmod
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor
from sparseforge.sw.tensor_kernels import spmm, spmttkrp, spttmc
from sparseforge.sw.wire import TensaurusKernel, mv_layout
from sparseforge.tb.tensaurus_pe import forwarded, lane_items, model_items, simulate

MTTKRP, MM, TTMC, MV = TensaurusKernel
STALLS = {"lane": 0.8, "forward": 0.5, "request": 0.6, "response": 0.4, "drain": 0.3}

# Fig. 3a's shape (4 x 2 x 2): slices of one and two fibers, an empty slice.
FIG3 = Tensor(np.array([[0, 0, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0], [1, 1, 1], [3, 0, 0],
                        [3, 1, 1]]), np.array([1, 2, 3, 4, 5, 6, 7]), (4, 2, 2))


def vector_matrix(seed, shape=(5, 11), nnz=16):
    """A matrix with nonzeros in most of its columns (so b's rows and lanes all serve)
    and an empty row, for MV."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(shape[0] * shape[1], nnz, replace=False)
    coords = np.stack(np.unravel_index(np.sort(keys), shape), 1)
    coords = coords[coords[:, 0] != 2]                       # row 2 empty
    return integers(Tensor(coords, np.ones(len(coords), dtype=np.int64), shape), seed)


def integers(tensor, seed):
    """``tensor``'s pattern with small nonzero integer values (the PE computes exactly)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 8, len(tensor.values)) * rng.choice([-1, 1], len(tensor.values))
    return Tensor(tensor.coords, values, tensor.shape)


def factors(shape, rank, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(-9, 10, (n, rank)) for n in shape]


def chunks(matrix, vlen):
    """``read(operand, row, chunk)`` over one matrix per operand, chunked by ``vlen``."""
    def read(operand, row, chunk):
        return matrix[operand][row, chunk * vlen:(chunk + 1) * vlen].tolist()
    return read


def assemble(drains, shape, vlen, acc_width):
    """The output from every PE's drains: what the MSU accumulates."""
    y = np.zeros(shape, dtype=object)
    for row, chunk, lanes in drains:
        y[row, chunk * vlen:(chunk + 1) * vlen] += np.array(lanes, dtype=object)
    return np.vectorize(lambda v: model.wrap(int(v), acc_width))(y)


def wrapped(y, acc_width):
    return np.vectorize(lambda v: model.wrap(int(v), acc_width))(np.asarray(y, dtype=object))


def operands(tensor, kernel, rank, seed, r1=1, vlen=1):
    """``(matrices by operand, golden output)`` of ``kernel`` on ``tensor`` (TTMc: B of
    rank ``r1`` with zero columns after, so its last chunk is whole; the output ``I x
    r1 x rank`` flattened as the OSR's chunks; MV: b packed ``per`` elements a row of
    ``vlen`` lanes as operand 1, and ``y`` on every lane of the OSR's first chunk)."""
    mats = factors(tensor.shape, rank, seed)
    if kernel == MV:
        b = mats[1][:, 0]
        per = mv_layout(vlen)[0]
        packed = np.pad(b, (0, -len(b) % per)).reshape(-1, per)
        y = spmm(tensor, b[:, None])
        return (None, np.pad(packed, ((0, 0), (0, vlen - per)))), np.repeat(y, vlen, 1)
    if kernel == MTTKRP:
        return (mats[2], mats[1]), spmttkrp(tensor, [None, mats[1], mats[2]])
    if kernel == TTMC:
        b = factors(tensor.shape, r1, seed + 1)[1]
        golden = spttmc(tensor, [None, b, mats[2]])
        return (mats[2], np.pad(b, ((0, 0), (0, rank)))), golden.reshape(len(golden), -1)
    return (mats[1],), spmm(tensor, mats[1])


def model_output(tensor, kernel, pes, vlen, tlen, seed, acc_width=32, r1=1):
    ciss = cissmod.encode(tensor, pes, dw=16, iw=16)
    mats, golden = operands(tensor, kernel, vlen * tlen, seed, r1, vlen)
    drains = []
    for p in range(pes):
        drains += model.pe(model_items(ciss, lane_items(ciss, p)), kernel, tlen, vlen,
                           chunks(mats, vlen), acc_width, ciss.wire.idle, r1).drains
    return assemble(drains, golden.shape, vlen, acc_width), wrapped(golden, acc_width)


@pytest.mark.parametrize("pes", [1, 2, 3])
@pytest.mark.parametrize("vlen, tlen", [(1, 1), (2, 2), (4, 3)])
def test_model_is_spmttkrp_and_spmm(pes, vlen, tlen):
    tensor = integers(FIG3, pes)
    got, want = model_output(tensor, MTTKRP, pes, vlen, tlen, 1)
    assert (got == want).all()
    matrix = Tensor(tensor.coords[:, :2], tensor.values, tensor.shape[:2])
    got, want = model_output(Tensor(*_summed(matrix)), MM, pes, vlen, tlen, 2)
    assert (got == want).all()


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("vlen, tlen, r1", [(1, 1, 1), (2, 2, 1), (2, 1, 3), (4, 3, 6),
                                             (3, 2, 3)])
def test_model_is_spttmc(pes, vlen, tlen, r1):
    """TTMc: the OSR's chunk ``u * tlen + t`` is ``Y[i, u]``'s chunk ``t``; B's row is
    read in ``ceil(r1 / vlen)`` chunks, once per fiber."""
    tensor = integers(FIG3, pes + r1)
    got, want = model_output(tensor, TTMC, pes, vlen, tlen, 3, r1=r1)
    assert (got == want).all()
    ciss = cissmod.encode(tensor, 1, dw=16, iw=16)
    trace = model.pe(model_items(ciss, lane_items(ciss, 0)), TTMC, tlen, vlen,
                     lambda o, r, t: [0] * vlen, 32, ciss.wire.idle, r1)
    fibers = len(np.unique(tensor.coords[:, :2], axis=0))
    reads = [r for r in trace.requests if r[0] == 1]
    assert len(reads) == fibers * -(-r1 // vlen)
    assert len(trace.drains) == 3 * r1 * tlen         # three slices hold nonzeros


def _summed(matrix):
    """A 2-mode tensor with repeated coordinates summed (and zeros dropped)."""
    keys, inverse = np.unique(matrix.coords, axis=0, return_inverse=True)
    values = np.bincount(inverse.ravel(), weights=matrix.values).astype(np.int64)
    keep = values != 0
    return keys[keep], values[keep], matrix.shape


@pytest.mark.parametrize("pes", [1, 2, 3])
@pytest.mark.parametrize("vlen, tlen", [(1, 1), (2, 2), (3, 1), (4, 3)])
def test_model_is_spmv_on_one_osr_register(pes, vlen, tlen):
    """MV: one read of b's element a nonzero, lane ``j % per`` of row ``j // per``, and
    one drain a slice, of the OSR's first chunk, ``y[i]`` on every lane."""
    matrix = vector_matrix(pes + vlen)
    got, want = model_output(matrix, MV, pes, vlen, tlen, 4)
    assert (got == want).all()
    ciss = cissmod.encode(matrix, 1, dw=16, iw=16)
    trace = model.pe(model_items(ciss, lane_items(ciss, 0)), MV, tlen, vlen,
                     lambda o, r, t: [0] * vlen, 32, ciss.wire.idle)
    per = mv_layout(vlen)[0]
    assert trace.requests == [(1, j // per, 0) for j in matrix.coords[:, 1]]
    assert [d[:2] for d in trace.drains] == [(i, 0) for i in np.unique(matrix.coords[:, 0])]


def test_model_wraps_to_the_accumulator():
    tensor = Tensor(np.array([[0, 0, 0]]), np.array([30000]), (1, 1, 1))
    got, want = model_output(tensor, MTTKRP, 1, 1, 1, 0, acc_width=8)
    assert (got == want).all() and -128 <= int(got[0, 0]) < 128


def run_pe(component, tensor, kernel, pes, seed, rates=None, engine="pysim", work_dir=None):
    """Every PE's lane through the RTL; returns (assembled, golden, cycles)."""
    ciss = cissmod.encode(tensor, pes, dw=component.dw, iw=component.iw)
    mats, golden = operands(tensor, kernel, component.vlen * component.tlen, seed,
                            component.r1, component.vlen)
    drains, cycles = [], 0
    for p in range(pes):
        run, trace = simulate(component, ciss, p, kernel, chunks(mats, component.vlen),
                              seed + p, rates, engine, work_dir)
        assert run.requests == trace.requests, p
        assert run.drains == trace.drains, p
        assert run.forwarded == forwarded(kernel, lane_items(ciss, p))
        drains += run.drains
        cycles = max(cycles, run.cycles)
    shape = golden.shape
    return (assemble(drains, shape, component.vlen, component.acc_width),
            wrapped(golden, component.acc_width), cycles)


@pytest.mark.parametrize("vlen, tlen", [(1, 1), (2, 2), (4, 3)])
@pytest.mark.parametrize("kernel", [MTTKRP, MM])
def test_directed_fig3_tensor(vlen, tlen, kernel):
    tensor = integers(FIG3, vlen + tlen)
    if kernel == MM:
        tensor = Tensor(*_summed(Tensor(tensor.coords[:, :2], tensor.values, (4, 2))))
    component = TensaurusPe(vlen=vlen, tlen=tlen, order=3 if kernel == MTTKRP else 2)
    for seed, rates in ((seed_from_env(1), None), (seed_from_env(2), STALLS)):
        got, want, _ = run_pe(component, tensor, kernel, 2, seed, rates)
        assert (got == want).all(), (seed, got, want)


@pytest.mark.parametrize("vlen, tlen, order", [(1, 1, 2), (2, 2, 2), (3, 2, 3), (4, 1, 2)])
def test_directed_spmv_on_one_osr_register(vlen, tlen, order):
    """MV on PEs of any TLEN and VLEN (3: two elements of b a row, one lane unused), a
    tensor build's among them: every lane of the OSR's first chunk is y, and only the end
    marker goes on to the next PE of the row."""
    matrix = vector_matrix(vlen + tlen)
    component = TensaurusPe(vlen=vlen, tlen=tlen, order=order)
    for seed, rates in ((seed_from_env(1), None), (seed_from_env(2), STALLS)):
        got, want, _ = run_pe(component, matrix, MV, 2, seed, rates)
        assert (got == want).all(), (seed, got, want)


@pytest.mark.parametrize("vlen, tlen, r1", [(1, 1, 1), (2, 2, 1), (2, 2, 3), (3, 1, 6),
                                             (4, 3, 2)])
def test_directed_fig3_tensor_spttmc(vlen, tlen, r1):
    """TTMc, B's rank ``r1`` a multiple of vlen or not; then MTTKRP and MM on the same
    TTMc-capable PE (its OSR's first tlen chunks)."""
    tensor = integers(FIG3, vlen + tlen + r1)
    component = TensaurusPe(vlen=vlen, tlen=tlen, r1=r1)
    for seed, rates in ((seed_from_env(1), None), (seed_from_env(2), STALLS)):
        got, want, _ = run_pe(component, tensor, TTMC, 2, seed, rates)
        assert (got == want).all(), (seed, got, want)
    if r1 > 1:
        got, want, _ = run_pe(component, tensor, MTTKRP, 2, seed_from_env(3), STALLS)
        assert (got == want).all()
        matrix = Tensor(*_summed(Tensor(tensor.coords[:, :2], tensor.values, (4, 2))))
        got, want, _ = run_pe(component, matrix, MM, 2, seed_from_env(4), STALLS)
        assert (got == want).all()


def test_one_chunk_operation_a_cycle_when_nothing_stalls():
    """One nonzero of MTTKRP: tlen reads; its fiber's fold, tlen more; the drain, tlen."""
    tensor = Tensor(np.array([[0, 0, 0]]), np.array([3]), (1, 1, 1))
    component = TensaurusPe(vlen=2, tlen=4)
    fast = dict.fromkeys(STALLS, 1.0)
    got, want, cycles = run_pe(component, tensor, MTTKRP, 1, 0, fast)
    assert (got == want).all()
    ops = 3 * component.tlen
    assert ops <= cycles <= ops + 6 + 2, cycles      # + the datapath's two stages


def test_spttmc_one_operation_a_cycle_when_nothing_stalls():
    """One nonzero of TTMc: tlen reads; its fiber's outer product, r1 * tlen operations
    on ceil(r1 / vlen) reads; the drain, r1 * tlen."""
    tensor = Tensor(np.array([[0, 0, 0]]), np.array([3]), (1, 1, 1))
    component = TensaurusPe(vlen=2, tlen=2, r1=3)
    got, want, cycles = run_pe(component, tensor, TTMC, 1, 0, dict.fromkeys(STALLS, 1.0))
    assert (got == want).all()
    ops = component.tlen + 2 * component.olen
    bubbles = TensaurusPe.DEPTH - component.tlen    # the fold waits for its TSR
    assert ops <= cycles <= ops + 6 + 2 + bubbles, cycles


def test_spmv_one_operation_a_nonzero_when_nothing_stalls():
    """MV on a PE of TLEN 4: each nonzero one operation and each slice's drain one, not
    TLEN each."""
    matrix = vector_matrix(3, shape=(4, 40), nnz=30)
    component = TensaurusPe(vlen=2, tlen=4, order=2)
    got, want, cycles = run_pe(component, matrix, MV, 1, 0, dict.fromkeys(STALLS, 1.0))
    assert (got == want).all()
    ops = len(matrix.values) + len(np.unique(matrix.coords[:, 0])) + 1     # and the end
    assert ops <= cycles <= ops + 6 + 2, cycles


@pytest.mark.parametrize("tlen", [1, 2, 3, 4])
def test_throughput_per_tlen(tlen):
    """Nothing stalling, one operation a cycle, except that a fiber's fold (MTTKRP) or
    outer product (TTMc) reading a TSR entry still in the pipeline waits ``DEPTH - tlen``
    cycles a fiber; the outer product's later rounds forward theirs and MM has no fold:
    the same overhead for every tlen and kernel besides."""
    f = 6
    fibers = Tensor(np.array([[0, j, j] for j in range(f)]), np.arange(1, f + 1), (1, f, f))
    rows = Tensor(fibers.coords[:, :2], fibers.values, (1, f))
    overheads = set()
    for kernel, tensor, r1 in ((MTTKRP, fibers, 1), (TTMC, fibers, 3), (MM, rows, 1)):
        component = TensaurusPe(vlen=2, tlen=tlen, r1=r1, order=2 if kernel == MM else 3)
        got, want, cycles = run_pe(component, tensor, kernel, 1, 0, dict.fromkeys(STALLS, 1.0))
        assert (got == want).all()
        olen = component.olen if kernel == TTMC else tlen
        folds = 0 if kernel == MM else f
        ops = f * tlen + folds * olen + olen + 1      # scalings, folds, the drain, the end
        overheads.add(cycles - ops - folds * max(0, TensaurusPe.DEPTH - tlen))
    assert len(overheads) == 1 and overheads.pop() <= 8, overheads


@pytest.mark.parametrize("vlen, tlen, r1", [(2, 1, 1), (2, 2, 1), (1, 3, 1), (2, 1, 3),
                                             (1, 2, 4), (2, 3, 2)])
def test_back_to_back_operations_are_exact(vlen, tlen, r1):
    """Nothing stalling, every operation issues as early as it may: a fold right after its
    fiber's scalings, an outer product's rounds back to back, a drain right after them."""
    tensor = integers(FIG3, 10 * vlen + tlen + r1)
    component = TensaurusPe(vlen=vlen, tlen=tlen, r1=r1)
    fast = dict.fromkeys(STALLS, 1.0)
    for kernel in (MTTKRP, TTMC) if r1 > 1 else (MTTKRP,):
        got, want, _ = run_pe(component, tensor, kernel, 2, seed_from_env(6), fast)
        assert (got == want).all(), (kernel, got, want)


@pytest.mark.verilator
@pytest.mark.parametrize("name, kernel", [    # TTMC and MM run on Verilator in test_tensaurus
    ("tensors/movielens-latest-small_user-movie-tag.tns", MTTKRP),
    pytest.param("tensors/movielens-latest-small_user-movie-tag.tns", TTMC,
                 marks=pytest.mark.soak),
    pytest.param("matrices/suitesparse/494_bus.mtx", MM, marks=pytest.mark.soak)])
def test_real_data_on_verilator(shared_data, tmp_path, name, kernel):
    if name.startswith("tensors"):
        tensor = read_tensor(shared_data / name)
    else:
        m = read_matrix(shared_data / name).tocoo()
        tensor = Tensor(np.stack([m.row, m.col], 1), m.data, m.shape)
    tensor = integers(tensor, 3)
    component = TensaurusPe(vlen=4, tlen=2, r1=6 if kernel == TTMC else 1,
                            order=2 if kernel == MM else 3)
    got, want, _ = run_pe(component, tensor, kernel, 4, seed_from_env(5), STALLS, "native",
                          tmp_path)
    assert (got == want).all()


def test_declares_the_named_signature():
    pe = TensaurusPe(vlen=2, tlen=3, dw=8, iw=5, acc_width=20)
    def ports(signature):
        return [(path, m.flow, m.shape) for path, m in signature.members.flatten() if m.is_port]
    assert ports(pe.signature) == ports(TensaurusPeSignature(2, 3, 8, 5, 20))


@pytest.mark.parametrize("params", [{}, {"vlen": 1, "tlen": 1, "order": 2},
                                    {"vlen": 8, "tlen": 5, "dw": 8, "acc_width": 24},
                                    {"vlen": 2, "tlen": 3, "r1": 5},
                                    {"vlen": 1, "tlen": 1, "r1": 2}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tensaurus_pe", params) == ""


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("name, pes", [("movielens-100k_user-item-day", 4),
                                       ("lastfm-hetrec2011_user-artist-tag", 8)])
def test_soak_larger_real_tensors(shared_data, tmp_path, name, pes):
    tensor = integers(read_tensor(shared_data / "tensors" / f"{name}.tns"), 4)
    rng = np.random.default_rng(len(name))
    rates = {k: float(rng.choice([0.3, 0.6, 1.0])) for k in STALLS}
    component = TensaurusPe(vlen=2, tlen=3)
    got, want, _ = run_pe(component, tensor, MTTKRP, pes, 7, rates, "native", tmp_path)
    assert (got == want).all()
