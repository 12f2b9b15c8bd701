# amaranth: UnusedElaboratable=no
"""The Tensaurus TLU: CISS entries read from a memory that answers out of order reach
every PE row in order, with the end marker, under random stalls; in its dense mode, the
CISS lanes it builds from dense words; directed on Amaranth's simulator and on a real
tensor natively on Verilator."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.tensaurus_tlu import TensaurusTlu
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import ciss as cissmod
from sparseforge.sw.formats import Tensor, read_tensor
from sparseforge.sw.tensaurus_job import DenseStream
from sparseforge.tb.tensaurus_tlu import out_of_order, simulate

STALLS = {"start": 1.0, "request": 0.6, "response": 0.5, "lanes": 0.4}
FIG3 = Tensor(np.array([[0, 0, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0], [1, 1, 1], [3, 0, 0],
                        [3, 1, 1]]), np.array([1, 2, 3, 4, 5, 6, 7]), (4, 2, 2))


def check(run, bench):
    assert run.reads == bench.reads
    assert run.lanes == bench.want


def test_out_of_order_stays_in_its_window():
    order = out_of_order(1000, 8, np.random.default_rng(0))
    assert sorted(order) == list(range(1000)) and (order != np.arange(1000)).any()
    assert (np.abs(order - np.arange(1000)) < 8).all()


@pytest.mark.parametrize("pes, tags", [(1, 2), (2, 4), (3, 8)])
def test_directed_streams_back_to_back(pes, tags):
    streams = [cissmod.encode(FIG3, pes, dw=16, iw=16),
               cissmod.encode(Tensor(FIG3.coords[::-1], FIG3.values, FIG3.shape), pes,
                              dw=16, iw=16)]
    component = TensaurusTlu(pes=pes, tags=tags)
    for seed, rates in ((seed_from_env(1), None), (seed_from_env(2), STALLS)):
        run, bench = simulate(component, streams, seed, rates, engine="pysim")
        check(run, bench)


def test_a_stream_of_no_entries_between_two_sends_its_end_marker_alone():
    """``count`` 0: nothing is read, and each row gets the end marker at once."""
    empty = Tensor(np.zeros((0, 3), int), np.zeros(0, int), FIG3.shape)
    streams = [cissmod.encode(t, 2, dw=16, iw=16) for t in (FIG3, empty, FIG3)]
    assert streams[1].entries == 0
    run, bench = simulate(TensaurusTlu(pes=2, tags=4), streams, seed_from_env(4), STALLS,
                          engine="pysim")
    check(run, bench)
    assert sum(lane["last"] for lane in run.lanes[0]) == 3


def test_matrix_lanes_have_no_k():
    matrix = Tensor(FIG3.coords[:4, :2], FIG3.values[:4], (4, 2))
    component = TensaurusTlu(pes=2, order=2)
    run, bench = simulate(component, [cissmod.encode(matrix, 2, dw=16, iw=16)], 3,
                          engine="pysim")
    check(run, bench)
    assert "k" not in run.lanes[0][0]


def test_one_entry_a_cycle_when_nothing_stalls():
    """In order, one entry a cycle after a few cycles' latency; answered out of order
    within half its tags, the TLU loses little (what it loses is the memory's order:
    the head's answer may come last in its window)."""
    tensor = Tensor(np.array([[i, 0, 0] for i in range(400)]), np.arange(1, 401), (400, 1, 1))
    stream = cissmod.encode(tensor, 2, dw=16, iw=16)
    fast = dict.fromkeys(STALLS, 1.0)
    for window, most in ((1, stream.entries + 8), (4, int(stream.entries * 1.1) + 8)):
        run, bench = simulate(TensaurusTlu(pes=2, tags=8), [stream], 0, fast, engine="pysim",
                              window=window)
        check(run, bench)
        assert run.cycles <= most, (window, run.cycles, stream.entries)


def dense(shape, seed):
    """Small integers, a quarter of them zeros (values, not markers, in the dense mode)."""
    rng = np.random.default_rng(seed)
    return rng.integers(-9, 10, shape) * (rng.random(shape) < 0.75)


@pytest.mark.parametrize("pes, tags", [(1, 2), (2, 4), (3, 8)])
def test_dense_mode_builds_the_ciss_lanes_back_to_back_with_sparse(pes, tags):
    """Dense tensors (5 slices: the last group padded when pes does not divide 5) between
    CISS streams: each group's header, then every (j, k) on every lane, zeros as values
    (``marker`` 0); the sparse streams' lanes as before."""
    sparse = cissmod.encode(FIG3, pes, dw=16, iw=16)
    streams = [DenseStream.of(dense((5, 2, 3), pes), pes), sparse,
               DenseStream.of(dense((5, 3, 1), pes + 1), pes), sparse]
    assert any((s.words == 0).any() for s in streams[::2])
    component = TensaurusTlu(pes=pes, tags=tags)
    for seed, rates in ((seed_from_env(5), None), (seed_from_env(6), STALLS)):
        run, bench = simulate(component, streams, seed, rates, engine="pysim")
        check(run, bench)
    header = run.lanes[0][0]
    assert (header["ij"], header["marker"], run.lanes[0][1]["marker"]) == (0, 1, 0)
    assert any(item["nnz"] == 0 and not item["marker"] for item in run.lanes[0])


def test_dense_matrix_one_word_a_cycle_and_a_header_a_group():
    """A dense 8 x 50 matrix on 2 PE rows, nothing stalling, the memory in order: 4
    groups of a header and 50 words, then the end marker: 205 items a row, one a cycle
    after a few cycles' latency."""
    stream = DenseStream.of(dense((8, 50), 7), 2)
    component = TensaurusTlu(pes=2, order=2, tags=8)
    run, bench = simulate(component, [stream], 0, dict.fromkeys(STALLS, 1.0), engine="pysim",
                          window=1)
    check(run, bench)
    assert [len(lane) for lane in run.lanes] == [205, 205]
    assert run.cycles <= 205 + 8, run.cycles


@pytest.mark.verilator
def test_real_tensor_on_verilator(shared_data, tmp_path):
    tensor = read_tensor(shared_data / "tensors" / "movielens-latest-small_user-movie-tag.tns")
    stream = cissmod.encode(tensor, 4, dw=16, iw=16)
    run, bench = simulate(TensaurusTlu(pes=4, tags=16), [stream], seed_from_env(4), STALLS,
                          work_dir=tmp_path)
    check(run, bench)


@pytest.mark.parametrize("params, message", [({"tags": 3}, "tags=3"), ({"pes": 0}, "pes=0"),
                                             ({"order": 4}, "order=4")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        TensaurusTlu(**params)


@pytest.mark.parametrize("params", [{}, {"pes": 1, "order": 2, "tags": 2, "queue": 2},
                                    {"pes": 8, "tags": 16}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tensaurus_tlu", params) == ""


def test_dram_memory_same_cycles_on_both_simulators(tmp_path):
    """The DDR4 memory's model on Amaranth's simulator and its gateware natively: the
    same lanes on the same cycle count."""
    tensor = Tensor(np.array([[i % 5, i, i % 3] for i in range(60)]), np.arange(1, 61),
                    (5, 60, 3))
    streams = [cissmod.encode(tensor, 2, dw=16, iw=16), cissmod.encode(FIG3, 2, dw=16, iw=16)]
    component = TensaurusTlu(pes=2, tags=4)
    seed = seed_from_env(5)
    slow, bench = simulate(component, streams, seed, STALLS, engine="pysim", memory="dram")
    fast, _ = simulate(component, streams, seed, STALLS, work_dir=tmp_path, memory="dram")
    assert slow.lanes == bench.want and fast.lanes == bench.want
    assert slow.cycles == fast.cycles and slow.reads is None


@pytest.mark.soak
@pytest.mark.verilator
def test_real_tensor_from_dram_on_verilator(shared_data, tmp_path):
    tensor = read_tensor(shared_data / "tensors" / "movielens-latest-small_user-movie-tag.tns")
    stream = cissmod.encode(tensor, 4, dw=16, iw=16)
    run, bench = simulate(TensaurusTlu(pes=4, tags=16), [stream], seed_from_env(4), STALLS,
                          work_dir=tmp_path, memory="dram")
    assert run.lanes == bench.want


def test_unknown_memory():
    with pytest.raises(ParameterError, match="memory='ddr'"):
        simulate(TensaurusTlu(), [cissmod.encode(FIG3, 2, dw=16, iw=16)], 0, memory="ddr")
