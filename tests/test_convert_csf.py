# amaranth: UnusedElaboratable=no
"""The Dense-to-CSF converter (MINT Fig. 8f) and the COO-to-CSF and CSF-to-COO converters:
their units alone, the blocks on Amaranth's simulator (the paper's example, tensors with empty
slices and fibers, their throughput), natively on Verilator on real tensors against
:func:`sparseforge.sw.conversion.convert` under random back-pressure on every stream,
``convert --engine rtl``, lint and the synthesis report."""

import json

import numpy as np
import pytest
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_csf import (
    MODES,
    CooToCsf,
    CooToCsfSignature,
    CsfToCoo,
    CsfToCooSignature,
    DenseToCsf,
    DenseToCsfSignature,
    LaneCoordinates,
    LevelPacker,
    TreeMarks,
)
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import Tensor, read_tensor
from sparseforge.tb import native
from sparseforge.tb.convert import conversions, route, rtl_convert
from sparseforge.tb.convert_csf import (
    LEVELS,
    RTL,
    CooToCsfBench,
    CsfBench,
    CsfToCooBench,
    check_fits,
    run_native,
)
from sparseforge.tb.convert_rlc import UnitBench
from sparseforge.tb.mint import PipelineBench

FULL = dict.fromkeys(("shape", "dense", *LEVELS), 1.0)
REAL = RTL                           # the block convert --engine rtl builds: one build for all
MOVIELENS = "tensors/movielens-100k_user-item-day.tns"
LASTFM = "tensors/lastfm-hetrec2011_user-artist-tag.tns"
TAGS = "tensors/movielens-latest-small_user-movie-tag.tns"


def box(shared_data, name, size):
    """The corner ``size`` of a real tensor, dense."""
    tensor = read_tensor(shared_data / name)
    keep = np.all(tensor.coords < np.array(size), axis=1)
    dense = np.zeros(size, dtype=tensor.values.dtype)
    dense[tuple(tensor.coords[keep].T)] = tensor.values[keep]
    return dense


def densest(shared_data, name, size):
    """A real tensor restricted to the indices of each mode that hold the most nonzeros
    (``size[m]`` of mode m, in their order), dense."""
    tensor = read_tensor(shared_data / name)
    coords = tensor.coords
    kept = [np.sort(np.argsort(-np.bincount(coords[:, m]), kind="stable")[:n])
            for m, n in enumerate(size)]
    inside = np.all([np.isin(coords[:, m], k) for m, k in enumerate(kept)], axis=0)
    dense = np.zeros(size, dtype=tensor.values.dtype)
    dense[tuple(np.searchsorted(k, coords[inside, m]) for m, k in enumerate(kept))] = \
        tensor.values[inside]
    return dense


def assert_converted(result, tensors):
    assert len(result.csf) == len(tensors)
    for got, dense in zip(result.csf, tensors, strict=True):
        assert cv.same(got, cv.convert(dense, "csf")), dense.shape


def fig8f():
    """The tensor of Fig. 3b as tests/test_conversion.py builds it."""
    tensor = np.zeros((4, 4, 4))
    for value, coord in enumerate([(0, 1, 0), (0, 1, 3), (0, 3, 2), (2, 0, 1), (3, 2, 2),
                                   (3, 3, 0)], 1):
        tensor[coord] = value
    return tensor


# -- the units -------------------------------------------------------------------------

@pytest.mark.parametrize(("shape", "lanes"), [((3, 4, 5), 4), ((2, 3, 8), 8), ((1, 1, 9), 8),
                                              ((4, 1, 4), 4), ((2, 5, 3), 1), ((3, 2, 6), 2),
                                              ((1, 1, 8), 8), ((1, 2, 4), 4), ((1, 1, 1), 1)])
def test_lane_coordinates_step_as_unravel_says(shape, lanes):
    unit = LaneCoordinates(lanes, 4)
    size = int(np.prod(shape))
    vectors = -(-size // lanes)

    async def testbench(ctx):
        ctx.set(unit.dims, dict(zip(("dim0", "dim1", "dim2"), shape, strict=True)))
        ctx.set(unit.start, 1)
        await ctx.tick()
        ctx.set(unit.start, 0)
        for vector in range(vectors):
            position = vector * lanes + np.arange(lanes)
            assert ctx.get(unit.last) == (vector == vectors - 1)
            for lane, p in enumerate(position):
                got = ctx.get(unit.lanes[lane])
                assert got.valid == (p < size)
                if p < size:
                    i, j, k = np.unravel_index(p, shape)
                    assert [got.coord[n] for n in range(MODES)] == [i, j, k]
                    assert (got.fiber, got.slice) == (k == 0, j == k == 0)
            ctx.set(unit.step, vector % 3 != 2)       # a vector held for a cycle now and then
            await ctx.tick()
            if vector % 3 == 2:
                ctx.set(unit.step, 1)
                await ctx.tick()
            ctx.set(unit.step, 0)

    sim = Simulator(unit)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def tree_marks(given, lanes):
    """TreeMarks by its definition: the first leaf of each fiber and slice, across vectors."""
    out, fiber_seen, slice_seen = [], False, False
    for item in given:
        marks = {"level0": 0, "level1": 0, "level2": item["leaves"]}
        for lane in range(lanes):
            leaf = item["leaves"] >> lane & 1
            fiber_seen &= not item["fiber_starts"] >> lane & 1
            slice_seen &= not item["slice_starts"] >> lane & 1
            if leaf and not fiber_seen:
                marks["level1"] |= 1 << lane
            if leaf and not slice_seen:
                marks["level0"] |= 1 << lane
            fiber_seen |= bool(leaf)
            slice_seen |= bool(leaf)
        marks["held"] = sum(1 << n for n in range(MODES) if marks[f"level{n}"])
        out.append(marks)
    return out


@pytest.mark.parametrize("lanes", [1, 4, 8])
def test_tree_marks_find_each_fiber_and_slice_first_leaf(lanes):
    rng = np.random.default_rng(seed_from_env(lanes))
    bits = rng.random((300, 3, lanes)) < [[0.4], [0.2], [0.05]]
    bits[:, 1] |= bits[:, 2]                    # a slice starts where a fiber does
    weights = 1 << np.arange(lanes)
    given = [{"leaves": int(b[0] @ weights), "fiber_starts": int(b[1] @ weights),
              "slice_starts": int(b[2] @ weights)}
             for b in bits]
    expected = tree_marks(given, lanes)
    result = pysim(PipelineBench(TreeMarks(lanes), "given", given, "marked", expected, lanes))
    assert result.outputs == expected


# -- the block on Amaranth's simulator ---------------------------------------------------

def test_fig8f_the_paper_example():
    tensor = fig8f()
    result = pysim(CsfBench(DenseToCsf(lanes=4, index_width=2, count_width=4,
                                       value_width=64), [tensor], seed_from_env(3), FULL))
    csf = result.csf[0]
    assert [ids.tolist() for ids in csf.fids] == [[0, 2, 3], [1, 3, 0, 2, 3],
                                                  [0, 3, 2, 1, 2, 0]]
    assert [ptr.tolist() for ptr in csf.fptr] == [[0, 2, 3, 5], [0, 2, 3, 4, 5, 6]]
    assert csf.values.tolist() == [1, 2, 3, 4, 5, 6]
    assert_converted(result, [tensor])


def directed(lanes):
    """Tensors with empty slices and fibers, none or all nonzero, one element, and a last
    mode of exactly and just over ``lanes``."""
    rng = np.random.default_rng(lanes)
    gaps = np.zeros((5, 4, lanes + 3))
    gaps[1, 2, [0, lanes + 2]] = [1, 2]         # slices 0, 2, 4 and most fibers empty
    gaps[3, :, lanes - 1] = [3, 4, 5, 6]        # a column through every fiber of a slice
    sparse = rng.random((3, 3, 2 * lanes)) * (rng.random((3, 3, 2 * lanes)) < 0.2)
    one = np.zeros((2, 3, lanes))
    one[1, 2, lanes - 1] = 7
    return [fig8f() if lanes <= 4 else sparse, gaps, np.zeros((2, 2, lanes)),
            np.arange(1.0, 1 + 2 * 3 * lanes).reshape(2, 3, lanes), one,
            np.ones((1, 1, lanes + 1)), sparse]


@pytest.mark.parametrize("lanes", [1, 2, 4, 8])
@pytest.mark.parametrize("rates", [FULL, {}, {"level2": 0.3, "level0": 0.5, "dense": 0.9}])
def test_directed_tensors_back_to_back(lanes, rates):
    tensors = directed(lanes)
    block = DenseToCsf(lanes=lanes, index_width=4, count_width=8, value_width=64)
    assert_converted(pysim(CsfBench(block, tensors, seed_from_env(lanes), rates)), tensors)


def test_integer_values_random_tensors_and_negative_zeros():
    rng = np.random.default_rng(seed_from_env(5))
    tensors = [(rng.integers(-9, 9, (3, 4, 12)) * (rng.random((3, 4, 12)) < d))
               .astype(np.int16) for d in (0.05, 0.3, 0.9)]
    block = DenseToCsf(lanes=4, index_width=4, count_width=8, value_width=16)
    assert_converted(pysim(CsfBench(block, tensors, 5)), tensors)
    signed = -np.eye(4)[None].repeat(2, axis=0)      # -1.0 on the diagonals, -0.0 elsewhere
    block = DenseToCsf(lanes=4, index_width=4, count_width=8, value_width=64)
    assert_converted(pysim(CsfBench(block, [signed], 6)), [signed])


def test_one_vector_a_cycle():
    """Without stalls, the block takes a vector every cycle, records on every level or not."""
    tensor = np.arange(1.0, 1 + 4 * 3 * 16).reshape(4, 3, 16)
    tensor[:, :, 5:] = 0
    bench = CsfBench(DenseToCsf(**REAL), [tensor], 0, FULL)
    assert_converted(pysim(bench), [tensor])
    taken = [cycle for cycle, _ in bench.sources[1].accepted]
    assert np.all(np.diff(taken) == 1) and len(taken) == tensor.size // 8


@pytest.mark.parametrize(("dense", "message"), [
    (np.zeros((2, 3, 4)), "the last at least lanes = 8"),
    (np.zeros((2, 3)), "converts 3-D tensors; this one is 2-D"),
    (np.zeros((65537, 1, 8)), "modes of 1 to 65536"),
    (np.zeros((2, 2, 8), dtype=complex), "values of type complex128 do not stream"),
])
def test_tensors_the_block_does_not_take_are_refused(dense, message):
    with pytest.raises(ParameterError, match=message):
        CsfBench(DenseToCsf(**REAL), [dense], 0)


# -- natively on Verilator, real tensors ---------------------------------------------------

@pytest.mark.verilator
@pytest.mark.soak
def test_real_tensor_slices_natively_against_the_golden_converter(shared_data):
    tensors = [box(shared_data, MOVIELENS, (16, 64, 215)),
               densest(shared_data, LASTFM, (8, 32, 64)),
               densest(shared_data, TAGS, (16, 16, 32)),
               densest(shared_data, MOVIELENS, (16, 32, 215))]
    assert_converted(run_native(DenseToCsf(**REAL), tensors, seed_from_env(31)), tensors)
    outputs = {"level0": 0.3, "level1": 0.4, "level2": 0.25, "dense": 0.9}
    assert_converted(run_native(DenseToCsf(**REAL), tensors[1:], seed_from_env(32), outputs),
                     tensors[1:])


@pytest.mark.verilator
def test_native_and_python_driven_runs_take_the_same_cycles(shared_data):
    tensor = densest(shared_data, LASTFM, (4, 8, 16))
    bench = CsfBench(DenseToCsf(**REAL), [tensor], seed_from_env(33))
    python = pysim(CsfBench(DenseToCsf(**REAL), [tensor], bench.seed))
    run = native.run(bench)
    assert run.cycles == python.cycles
    assert cv.same(bench.rebuild([run.outputs[s.name] for s in bench.sinks])[0], python.csf[0])


@pytest.mark.verilator
def test_convert_rtl_writes_exactly_what_sw_writes(shared_data, tmp_path, capsys):
    source = tmp_path / "lastfm.npy"
    np.save(source, densest(shared_data, LASTFM, (8, 32, 64)))
    out = {}
    for engine in ("sw", "rtl"):
        main(["convert", str(source), "--to", "csf", "--engine", engine, "-o",
              str(tmp_path / f"{engine}.npz"), "--json"])
        out[engine] = json.loads(capsys.readouterr().out)
    assert (tmp_path / "rtl.npz").read_bytes() == (tmp_path / "sw.npz").read_bytes()
    assert out["rtl"]["from"] == "dense" and out["rtl"]["cycles"] >= 8 * 32 * 64 // 8


@pytest.mark.verilator
def test_the_rtl_block_takes_a_last_mode_shorter_than_its_lanes_padded():
    tensor = np.zeros((3, 2, 5), dtype=np.float32)
    tensor[0, 1, 4], tensor[2, 0, 0], tensor[2, 1, 2] = 1.5, -2.0, 3.0
    got, _ = rtl_convert(tensor, "csf")
    assert cv.same(got, cv.convert(tensor, "csf"))


def test_the_rtl_block_takes_modes_of_65536_and_refuses_one_more():
    block = DenseToCsf(**RTL)
    check_fits(np.zeros((1, 65536, 8), dtype=np.uint8), block.lanes, block.index_width,
               block.count_width, block.value_width)
    with pytest.raises(ParameterError, match="modes of 1 to 65536"):
        rtl_convert(np.zeros((1, 65537, 8), dtype=np.uint8), "csf")


def test_the_rtl_engine_takes_a_dense_matrix_to_csf_through_coo():
    """Dense-to-CSF takes 3-D tensors; a matrix goes to COO, then COO-to-CSF takes it."""
    assert route(np.eye(3), "csf") == ["dense", "coo", "csf"]
    assert route(np.eye(3)[None], "csf") == ["dense", "csf"]


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(400, 403))
def test_soak_larger_real_tensor_slices(shared_data, seed):
    tensors = [box(shared_data, MOVIELENS, (64, 128, 215)),
               densest(shared_data, LASTFM, (32, 128, 256)),
               box(shared_data, TAGS, (58, 256, 256))]
    rates = dict.fromkeys(("shape", "dense", *LEVELS), 0.5 + 0.1 * (seed % 3))
    assert_converted(run_native(DenseToCsf(**REAL), tensors, seed, rates), tensors)


# -- COO to CSF and CSF to COO --------------------------------------------------------------

COO_FULL = dict.fromkeys(("records", *LEVELS), 1.0)
SMALL = {"lanes": 4, "index_width": 4, "count_width": 8, "value_width": 64}


def coo(dense):
    """A dense 3-D tensor's COO Tensor, as the golden converter gives it."""
    return cv.convert(dense, "coo")


def csf_of_coo(tensors, seed, rates=None, params=SMALL, run=pysim):
    """``tensors`` (COO) through ``coo_to_csf``, checked against the golden converter."""
    bench = CooToCsfBench(CooToCsf(**params), tensors, seed, rates)
    result = run(bench)
    assert len(result.csf) == len(tensors)
    for got, tensor in zip(result.csf, tensors, strict=True):
        assert cv.same(got, cv.convert(tensor, "csf")), tensor.shape
    return result, bench


def coo_of_csf(tensors, seed, rates=None, params=SMALL, run=pysim, scatter=True):
    """``tensors`` (CSF) through ``csf_to_coo``, checked against the golden converter."""
    bench = CsfToCooBench(CsfToCoo(**params), tensors, seed, rates, scatter)
    result = run(bench)
    assert len(result.coo) == len(tensors)
    for got, csf in zip(result.coo, tensors, strict=True):
        assert cv.same(got, cv.convert(csf, "coo")), csf.shape
    return result, bench


def native_simulate(bench):
    return native.simulate(bench)


def packed(items, lanes):
    """LevelPacker by its definition: ``(nodes, mask, last, total)`` of each record."""
    out, nodes, total = [], [], 0
    for item in items:
        if item["held"]:
            nodes.append(item["node"])
            total += 1
        if len(nodes) == lanes or item["last"]:
            out.append((nodes, (1 << len(nodes)) - 1, item["last"], total))
            nodes, total = [], 0 if item["last"] else total
    return out


@pytest.mark.parametrize("lanes", [1, 4])
def test_level_packer_fills_records_from_lane_zero_and_closes_them_on_last(lanes):
    rng = np.random.default_rng(seed_from_env(50 + lanes))
    items = [{"node": {"id": int(rng.integers(16)), "data": int(rng.integers(256))},
              "held": int(rng.random() < 0.6), "last": int(rng.random() < 0.08)}
             for _ in range(300)]
    items[-1]["last"] = 1
    expected = packed(items, lanes)
    result = pysim(UnitBench(LevelPacker(lanes, 4, 8, 8), {"nodes": items},
                             {"level": len(expected)}, seed_from_env(lanes), 0.6))
    got = [([r["lanes"][n] for n in range(lanes) if r["mask"] >> n & 1], r["mask"], r["last"],
            r["total"]) for r in result.outputs["level"]]
    assert got == expected


def test_fig3b_coo_to_csf_the_paper_example():
    result, _ = csf_of_coo([coo(fig8f())], seed_from_env(40), COO_FULL)
    csf = result.csf[0]
    assert [ids.tolist() for ids in csf.fids] == [[0, 2, 3], [1, 3, 0, 2, 3],
                                                  [0, 3, 2, 1, 2, 0]]
    assert [ptr.tolist() for ptr in csf.fptr] == [[0, 2, 3, 5], [0, 2, 3, 4, 5, 6]]
    assert csf.values.tolist() == [1, 2, 3, 4, 5, 6]


def test_fig3b_csf_to_coo_the_paper_example():
    result, _ = coo_of_csf([cv.convert(fig8f(), "csf")], seed_from_env(41), COO_FULL)
    tensor = result.coo[0]
    assert tensor.coords.tolist() == [[0, 1, 0], [0, 1, 3], [0, 3, 2], [2, 0, 1], [3, 2, 2],
                                      [3, 3, 0]]
    assert tensor.values.tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(("lanes", "rates"), [
    (1, COO_FULL), (2, {}), (4, {"level2": 0.3, "level0": 0.5, "records": 0.9}), (8, COO_FULL),
    (8, {"level1": 0.3, "records": 0.5})])
def test_directed_tensors_back_to_back_both_ways(lanes, rates):
    """Empty slices and fibers, an empty tensor, every element nonzero, one nonzero; each
    level's node count at and past a multiple of the lanes."""
    tensors = [*directed(lanes), np.ones((2, 2, 2)), np.ones((1, 1, 2 * lanes))]
    params = {**SMALL, "lanes": lanes}
    csf_of_coo([coo(t) for t in tensors], seed_from_env(lanes), rates, params)
    coo_of_csf([cv.convert(t, "csf") for t in tensors], seed_from_env(lanes), rates, params)


def test_csf_to_coo_takes_records_packed_or_scattered_and_an_empty_final_record():
    """Nodes from lane 0, L a record (a level of a multiple of L nodes then ends in an empty
    record), or a random number a record in random lanes, empty records between."""
    tensors = [cv.convert(t, "csf") for t in directed(4)]
    for scatter in (False, True):
        coo_of_csf(tensors, seed_from_env(42), {}, scatter=scatter)


def test_coo_records_of_value_zero_make_no_node():
    """A zero between nonzeros of one fiber, a zero where a slice would begin, a zero as the
    tensor's final record, and a tensor of zeros only."""
    values = np.array([5.0, 0.0, 6.0, 0.0, 7.0, 0.0])
    coords = np.array([[0, 0, 1], [0, 0, 2], [0, 0, 3], [1, 0, 0], [1, 2, 1], [2, 1, 1]])
    zeros = Tensor(coords[:2], np.zeros(2), (3, 3, 4))
    tensors = [Tensor(coords, values, (3, 3, 4)), zeros, Tensor(coords[:1], values[:1],
                                                               (3, 3, 4))]
    csf_of_coo(tensors, seed_from_env(43))


def test_values_as_their_bits_integers_and_negative_zeros():
    rng = np.random.default_rng(seed_from_env(44))
    ints = (rng.integers(-9, 9, (3, 4, 6)) * (rng.random((3, 4, 6)) < 0.4)).astype(np.int16)
    signed = Tensor(np.array([[0, 0, 0], [0, 1, 1]]), np.array([-0.0, -1.0]), (1, 2, 2))
    params = {**SMALL, "value_width": 16}
    csf_of_coo([coo(ints)], 44, params=params)
    coo_of_csf([cv.convert(ints, "csf")], 44, params=params)
    csf_of_coo([signed], 45)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([1, 2, 4]),
       st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 6),
                          st.floats(0, 1)), min_size=1, max_size=3),
       st.integers(0, 2**16))
def test_hypothesis_small_tensors_both_ways(lanes, shapes, seed):
    rng = np.random.default_rng(seed)
    tensors = [rng.integers(1, 100, (a, b, c)) * (rng.random((a, b, c)) < d)
               for a, b, c, d in shapes]
    rates = {name: 0.3 + 0.7 * rng.random() for name in ("records", *LEVELS)}
    params = {**SMALL, "lanes": lanes}
    csf_of_coo([coo(t) for t in tensors], seed, rates, params)
    coo_of_csf([cv.convert(t, "csf") for t in tensors], seed, rates, params)


def test_one_record_a_cycle_both_ways():
    """Without stalls, COO-to-CSF takes a record every cycle and CSF-to-COO gives a leaf's
    record every cycle, and one more cycle a tensor for its end."""
    dense = densest_free()
    _, bench = csf_of_coo([coo(dense)] * 2, 0, COO_FULL, RTL)
    taken = [cycle for cycle, _ in bench.source.accepted]
    assert np.all(np.diff(taken) == 1) and len(taken) == 2 * np.count_nonzero(dense)
    _, bench = coo_of_csf([cv.convert(dense, "csf")] * 2, 0, COO_FULL, RTL, scatter=False)
    given = [cycle for cycle, _ in bench.sink.received]
    nnz = np.count_nonzero(dense)
    assert np.all(np.diff(given[:nnz]) == 1) and np.all(np.diff(given[nnz:]) == 1)
    assert given[nnz] - given[nnz - 1] == 2


def densest_free():
    """A tensor whose fibers and slices start often: every third element nonzero."""
    dense = np.zeros(3 * 5 * 7)
    dense[::3] = np.arange(1, 1 + len(dense[::3]))
    return dense.reshape(3, 5, 7)


def test_the_largest_coordinates_and_values_pass_the_rtl_blocks():
    """Modes of 65,536 (16-bit coordinates, the largest) and 64-bit values of all ones."""
    top = (1 << 16) - 1
    coords = np.array([[0, 0, 0], [0, 0, top], [top, 0, 0], [top, top, top]])
    values = np.array([1, -1, 2**62, np.iinfo(np.int64).min], dtype=np.int64)
    tensor = Tensor(coords, values, (top + 1,) * 3)
    csf_of_coo([tensor], seed_from_env(46), params=RTL)
    coo_of_csf([cv.convert(tensor, "csf")], seed_from_env(46), params=RTL)


@pytest.mark.parametrize(("source", "to", "message"), [
    (Tensor(np.zeros((1, 4), np.int64), np.ones(1), (2, 2, 2, 2)), "csf",
     "the coo_to_csf block converts 3-D tensors and matrices; this one is 4-D"),
    (cv.convert(np.ones((2, 2, 2, 2)), "csf"), "coo",
     "the csf_to_coo block converts 3-D tensors and matrices; this one is 4-D"),
    (cv.convert(np.ones(3), "csf"), "coo",
     "the csf_to_coo block converts 3-D tensors and matrices; this one is 1-D"),
    (Tensor(np.array([[0, 1, 0], [0, 0, 1]]), np.ones(2), (2, 2, 2)), "csf",
     r"lexicographic order, one per coordinate: entry 1 \(0, 0, 1\) follows \(0, 1, 0\)"),
    (Tensor(np.array([[1, 1, 0], [1, 1, 0]]), np.ones(2), (2, 2, 2)), "csf",
     r"entry 1 \(1, 1, 0\) follows \(1, 1, 0\)"),
    (Tensor(np.array([[0, 0, 0]]), np.ones(1), (1, 65537, 2)), "csf",
     "does not fit the 16-bit coordinates: modes of 1 to 65536"),
    (cv.convert(Tensor(np.array([[0, 0, 0]]), np.ones(1), (1, 2, 65537)), "csf"), "coo",
     "does not fit the 16-bit coordinates: modes of 1 to 65536"),
    (Tensor(np.array([[0, 0, 0]]), np.ones(1, dtype=complex), (1, 1, 1)), "csf",
     "values of type complex128 do not stream"),
])
def test_the_blocks_refuse_what_they_do_not_take(source, to, message):
    with pytest.raises(ParameterError, match=message):
        conversions()[(cv.format_of(source), to)](source)


@pytest.mark.parametrize(("source", "to"), [
    (Tensor(np.zeros((1, 4), np.int64), np.ones(1), (2, 2, 2, 2)), "csf"),
    (cv.convert(np.ones((2, 2, 2, 2)), "csf"), "coo")])
def test_the_rtl_engine_finds_no_chain_for_other_orders(source, to):
    with pytest.raises(ParameterError, match=f"nor chain of them, does .* -> {to.upper()} "
                                             "for a 4-D operand"):
        rtl_convert(source, to)


@pytest.mark.soak
@pytest.mark.verilator
def test_matrices_are_one_slice_tensors_both_ways():
    rng = np.random.default_rng(seed_from_env(47))
    dense = rng.integers(1, 9, (9, 13)) * (rng.random((9, 13)) < 0.3)
    dense[4] = 0
    matrix = cv.convert(dense.astype(np.float32), "coo")
    got, stages = rtl_convert(matrix, "csf")
    assert cv.same(got, cv.convert(matrix, "csf"))
    assert [(s.block, s.cycles >= matrix.nnz) for s in stages] == [("coo_to_csf", True)]
    back, stages = rtl_convert(got, "coo")
    assert cv.same(back, matrix) and [s.block for s in stages] == ["csf_to_coo"]


def test_an_empty_matrix_both_ways():
    empty = cv.convert(np.zeros((3, 4)), "coo")
    run = conversions()
    got, _ = run[("coo", "csf")](empty, seed=seed_from_env(48), engine="pysim")
    assert cv.same(got, cv.convert(empty, "csf"))
    back, _ = run[("csf", "coo")](got, seed=seed_from_env(48), engine="pysim")
    assert cv.same(back, empty)


@pytest.mark.soak
@pytest.mark.verilator
def test_real_tensors_natively_under_back_pressure_both_ways(shared_data):
    """The smallest real tensor whole and a corner of MovieLens-100k, back to back, with
    random back-pressure on every stream."""
    tags = read_tensor(shared_data / TAGS)
    corner = coo(box(shared_data, MOVIELENS, (48, 192, 215)))
    rates = {"records": 0.6, "level0": 0.4, "level1": 0.5, "level2": 0.7}
    csf_of_coo([tags, corner], seed_from_env(48), rates, RTL, native_simulate)
    coo_of_csf([cv.convert(t, "csf") for t in (tags, corner)], seed_from_env(49), rates, RTL,
               native_simulate)


@pytest.mark.soak
@pytest.mark.verilator
def test_convert_rtl_writes_exactly_what_sw_writes_both_ways(shared_data, tmp_path, capsys):
    source = shared_data / TAGS
    out = {}
    for engine in ("sw", "rtl"):
        main(["convert", str(source), "--to", "csf", "--engine", engine, "-o",
              str(tmp_path / f"{engine}.npz"), "--json"])
        out[engine] = json.loads(capsys.readouterr().out)
        main(["convert", str(tmp_path / "sw.npz"), "--to", "coo", "--engine", engine, "-o",
              str(tmp_path / f"{engine}.tns"), "--json"])
        out[f"{engine} back"] = json.loads(capsys.readouterr().out)
    assert (tmp_path / "rtl.npz").read_bytes() == (tmp_path / "sw.npz").read_bytes()
    assert (tmp_path / "rtl.tns").read_bytes() == (tmp_path / "sw.tns").read_bytes()
    assert [s["block"] for s in out["rtl"]["stages"]] == ["coo_to_csf"]
    assert [s["block"] for s in out["rtl back"]["stages"]] == ["csf_to_coo"]
    assert out["rtl"]["cycles"] >= 3683 and out["rtl back"]["cycles"] >= 3683


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(410, 412))
def test_soak_whole_real_tensors_both_ways(shared_data, seed):
    tensors = [read_tensor(shared_data / MOVIELENS), read_tensor(shared_data / LASTFM)]
    rates = dict.fromkeys(("records", *LEVELS), 0.5 + 0.2 * (seed % 2))
    csf_of_coo(tensors, seed, rates, RTL, native_simulate)
    coo_of_csf([cv.convert(t, "csf") for t in tensors], seed, rates, RTL, native_simulate)


# -- parameters, interface, Verilog, report -------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"lanes": 3}, r"lanes=3: expected a power of two in \[1, 16\]"),
    ({"index_width": 0}, r"index_width=0: expected an integer in \[1, 32\]"),
    ({"count_width": 49}, "count_width=49"), ({"value_width": 65}, "value_width=65"),
])
def test_bad_parameters_are_named_with_their_range(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        DenseToCsf(**kwargs)


def test_declares_its_named_signature():
    assert dict(DenseToCsf(**REAL).signature.members) == \
        dict(DenseToCsfSignature(8, 16, 32, 64).members)
    assert dict(CooToCsf(**REAL).signature.members) == \
        dict(CooToCsfSignature(8, 16, 32, 64).members)
    assert dict(CsfToCoo(**REAL).signature.members) == \
        dict(CsfToCooSignature(8, 16, 32, 64).members)
    levels = {name: DenseToCsf(**REAL).signature.members[name] for name in LEVELS}
    assert {name: CooToCsf(**REAL).signature.members[name] for name in LEVELS} == levels
    assert {name: CsfToCoo(**REAL).signature.members[name].flip() for name in LEVELS} == levels


LINTED = [{}, {"lanes": 1, "index_width": 1, "count_width": 1, "value_width": 1},
          {"lanes": 16, "index_width": 32, "count_width": 48, "value_width": 64}]


@pytest.mark.parametrize(("name", "params"), [
    *(("dense_to_csf", params) for params in LINTED),
    *((name, params) for name in ("coo_to_csf", "csf_to_coo") for params in LINTED[1:])])
def test_verilog_lints_clean_with_wall(lint, name, params):
    """Every block at its narrowest and widest; Dense-to-CSF at its defaults too."""
    assert lint(name, params) == ""


@pytest.mark.parametrize("name", ["dense_to_csf", "coo_to_csf", "csf_to_coo"])
def test_in_the_synthesis_report(name):
    blk = get(name)
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))
