# amaranth: UnusedElaboratable=no
"""Systolic composition of 4x4 sub-arrays: 8x8 and 16x16 running the systolic schedule."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.eureka_systolic import EurekaSystolic
from sparseforge.sim.runners import pysim, seed_from_env, verilator
from sparseforge.sw.eureka_plan import systolic_plan
from sparseforge.sw.layers import dlmc_layers, real_slice, squeezenet_layers
from sparseforge.tb.eureka import SystolicBench

FREE = {"filter": 1.0, "inputs": 1.0, "outputs": 1.0, "slots": 1.0}


def planned(layer, rows, cols, scheduled=True, seed=0, shape=((0, 16), (0, 128))):
    weights, activations = real_slice(layer, *shape, 4 * cols, seed)
    return systolic_plan(weights, activations, 4, rows, scheduled=scheduled)


def run(layer, rows, cols, scheduled=True, rates=None, seed=0, shape=((0, 16), (0, 128))):
    """Plan and run on Amaranth's simulator; W X checked; returns (plan, result)."""
    work = planned(layer, rows, cols, scheduled, seed, shape)
    out = pysim(SystolicBench(EurekaSystolic(rows=rows, cols=cols), work, seed, rates))
    assert np.array_equal(out.product, work.rows[0].weights @ work.rows[0].activations)
    return work, out


@pytest.mark.parametrize(("rows", "cols", "scheduled"), [
    (2, 2, True), (2, 2, False), (4, 4, True),
    pytest.param(4, 4, False, marks=pytest.mark.soak)])
def test_runs_the_schedule_in_its_cycles_with_its_bubbles(shared_data, rows, cols, scheduled):
    """No back-pressure: slot after slot, each as long as its longest row's work."""
    work, out = run(dlmc_layers(shared_data)[3], rows, cols, scheduled, FREE)
    assert out.span == work.cycles
    assert out.drained == out.span + EurekaSystolic(rows=rows, cols=cols).latency
    assert rows * out.span - sum(out.busy) == work.bubbles
    assert out.busy == [row.cycles for row in work.rows]


def test_scheduling_removes_bubbles_on_the_rtl(shared_data):
    layer = squeezenet_layers(shared_data)[10]
    _, scheduled = run(layer, 2, 1, True, FREE, shape=((0, 32), (0, 144)))
    _, in_order = run(layer, 2, 1, False, FREE, shape=((0, 32), (0, 144)))
    assert sum(scheduled.busy) == sum(in_order.busy)
    assert scheduled.span < in_order.span


def test_random_stalls_on_every_stream(shared_data):
    seed = seed_from_env(5)
    work, out = run(dlmc_layers(shared_data)[9], 2, 2, True, None, seed)
    assert out.busy == [row.cycles for row in work.rows]
    assert out.span > work.cycles


@pytest.mark.parametrize(("kwargs", "name"), [({"rows": 0}, "rows"), ({"cols": 5}, "cols"),
                                              ({"compaction": 3}, "compaction"),
                                              ({"acc_width": 10}, "acc_width")])
def test_bad_parameters_name_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        EurekaSystolic(**kwargs)


# The 16x16 (4 x 4 sub-arrays) runs only in the soak, and its lint there too (the longest).
@pytest.mark.parametrize("params", [{"rows": 2, "cols": 2},
                                    pytest.param({"rows": 4, "cols": 4}, marks=pytest.mark.soak),
                                    {"rows": 3, "cols": 1, "compaction": 1}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("eureka_systolic", params) == ""


def _verilator(tmp_path, params, work, seed, rates=None):
    return verilator("eureka_systolic", "sparseforge.tb.eureka", params=params, seed=seed,
                     args={"plan": work, "rates": rates}, work_dir=tmp_path).result


# The 8x8's Verilator run under random stalls is a soak test too; the default run keeps
# its RTL runs on the real layer's schedule (test_runs_the_schedule_in_its_cycles_...).
@pytest.mark.soak
@pytest.mark.verilator
def test_8x8_on_verilator(tmp_path, shared_data):
    """Random stalls on every stream; the testbench checks every tile, here W X and the
    rows' computing cycles. Then free-running: cycles and bubbles equal to the schedule's,
    and the same result as Amaranth's simulator."""
    layer = dlmc_layers(shared_data)[12]
    params = {"rows": 2, "cols": 2, "compaction": 4}
    seed = seed_from_env(8)
    work = planned(layer, 2, 2, seed=seed)
    stalled = _verilator(tmp_path / "stalled", params, work, seed)
    assert stalled.busy == [row.cycles for row in work.rows]
    assert np.array_equal(stalled.product, work.rows[0].weights @ work.rows[0].activations)
    work = planned(layer, 2, 2, seed=8)
    free = _verilator(tmp_path / "free", params, work, 8, FREE)
    assert free.span == work.cycles
    assert 2 * free.span - sum(free.busy) == work.bubbles
    assert free == pysim(SystolicBench(EurekaSystolic(**params), work, 8, FREE))


@pytest.mark.soak
@pytest.mark.verilator
def test_soak_16x16_on_verilator(tmp_path, shared_data):
    work = planned(dlmc_layers(shared_data)[12], 4, 4, seed=9, shape=((0, 64), (0, 512)))
    out = _verilator(tmp_path, {"rows": 4, "cols": 4, "compaction": 4}, work, 9, FREE)
    assert out.span == work.cycles
    assert np.array_equal(out.product, work.rows[0].weights @ work.rows[0].activations)
