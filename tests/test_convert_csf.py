# amaranth: UnusedElaboratable=no
"""The Dense-to-CSF converter (MINT Fig. 8f): its units alone, the block on Amaranth's
simulator (the paper's example, tensors with empty slices and fibers, its throughput), natively
on Verilator on slices of real tensors against :func:`sparseforge.sw.conversion.convert` under
random back-pressure on every stream, ``convert --engine rtl``, lint and the synthesis report."""

import json

import numpy as np
import pytest
from amaranth.sim import Simulator

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_csf import (
    MODES,
    DenseToCsf,
    DenseToCsfSignature,
    LaneCoordinates,
    TreeMarks,
)
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import read_tensor
from sparseforge.tb import native
from sparseforge.tb.convert import rtl_convert
from sparseforge.tb.convert_csf import LEVELS, RTL, CsfBench, check_fits, run_native
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
    check_fits(DenseToCsf(**RTL), np.zeros((1, 65536, 8), dtype=np.uint8))
    with pytest.raises(ParameterError, match="modes of 1 to 65536"):
        rtl_convert(np.zeros((1, 65537, 8), dtype=np.uint8), "csf")


def test_the_rtl_engine_refuses_a_matrix():
    with pytest.raises(ParameterError, match="nor chain of them, does DENSE -> CSF for a 2-D"):
        rtl_convert(np.eye(3), "csf")


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(400, 403))
def test_soak_larger_real_tensor_slices(shared_data, seed):
    tensors = [box(shared_data, MOVIELENS, (64, 128, 215)),
               densest(shared_data, LASTFM, (32, 128, 256)),
               box(shared_data, TAGS, (58, 256, 256))]
    rates = dict.fromkeys(("shape", "dense", *LEVELS), 0.5 + 0.1 * (seed % 3))
    assert_converted(run_native(DenseToCsf(**REAL), tensors, seed, rates), tensors)


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


@pytest.mark.parametrize("params", [{}, {"lanes": 1, "index_width": 1, "count_width": 1,
                                         "value_width": 1},
                                    {"lanes": 16, "index_width": 32, "count_width": 48,
                                     "value_width": 64}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("dense_to_csf", params) == ""


def test_in_the_synthesis_report():
    blk = get("dense_to_csf")
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))
