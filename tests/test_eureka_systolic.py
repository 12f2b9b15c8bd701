# amaranth: UnusedElaboratable=no
"""Systolic composition of 4x4 sub-arrays: 8x8 and 16x16 running the systolic schedule."""

import json

import numpy as np
import pytest

from sparseforge.errors import ParameterError
from sparseforge.hw.eureka_systolic import EurekaSystolic
from sparseforge.sim.runners import pysim, seed_from_env, verilator
from sparseforge.sw.layers import dlmc_layers, squeezenet_layers
from sparseforge.tb.eureka import SystolicBench, real_slice, systolic_plan

FREE = {"filter": 1.0, "inputs": 1.0, "outputs": 1.0, "slots": 1.0}


def run(layer, rows, cols, scheduled=True, rates=None, seed=0, shape=((0, 16), (0, 128))):
    weights, activations = real_slice(layer, *shape, 4 * cols, seed)
    work = systolic_plan(weights, activations, 4, rows, scheduled=scheduled)
    bench = SystolicBench(work, 8, 32, seed, rates)
    pysim(EurekaSystolic(rows, cols), bench)
    assert np.array_equal(bench.product(), weights.toarray() @ activations)
    return bench


@pytest.mark.parametrize(("rows", "cols"), [(2, 2), (4, 4)])
@pytest.mark.parametrize("scheduled", [True, False])
def test_runs_the_schedule_in_its_cycles_with_its_bubbles(shared_data, rows, cols, scheduled):
    """No back-pressure: slot after slot, each as long as its longest row's work."""
    bench = run(dlmc_layers(shared_data)[3], rows, cols, scheduled, FREE)
    assert bench.span == bench.run.cycles
    assert rows * bench.span - sum(bench.busy) == bench.run.bubbles
    assert bench.busy == [row.cycles for row in bench.run.rows]


def test_scheduling_removes_bubbles_on_the_rtl(shared_data):
    layer = squeezenet_layers(shared_data)[10]
    scheduled = run(layer, 2, 1, True, FREE, shape=((0, 32), (0, 144)))
    in_order = run(layer, 2, 1, False, FREE, shape=((0, 32), (0, 144)))
    assert sum(scheduled.busy) == sum(in_order.busy)
    assert scheduled.span < in_order.span


def test_random_stalls_on_every_stream(shared_data):
    seed = seed_from_env(5)
    bench = run(dlmc_layers(shared_data)[9], 2, 2, True, None, seed)
    assert bench.busy == [row.cycles for row in bench.run.rows]
    assert bench.span > bench.run.cycles


@pytest.mark.parametrize(("kwargs", "name"), [({"rows": 0}, "rows"), ({"cols": 5}, "cols"),
                                              ({"compaction": 3}, "compaction"),
                                              ({"acc_width": 10}, "acc_width")])
def test_bad_parameters_name_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        EurekaSystolic(**kwargs)


@pytest.mark.parametrize("params", [{"rows": 2, "cols": 2}, {"rows": 4, "cols": 4},
                                    {"rows": 3, "cols": 1, "compaction": 1}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("eureka_systolic", params) == ""


def _verilator(tmp_path, params, layer, shape, seed, **args):
    dump = tmp_path / "out.json"
    verilator("eureka_systolic", "sparseforge.tb.eureka", params=params,
              args={"layer": str(layer), "rows": shape[0], "cols": shape[1], "seed": seed,
                    "dump": str(dump), **args}, work_dir=tmp_path)
    return json.loads(dump.read_text())


@pytest.mark.verilator
def test_8x8_on_verilator(tmp_path, shared_data):
    """Random stalls on every stream; the testbench checks every tile, W X and the rows'
    computing cycles. Then free-running: cycles and bubbles equal to the schedule's."""
    layer = dlmc_layers(shared_data)[12]
    params = {"rows": 2, "cols": 2, "compaction": 4}
    stalled = _verilator(tmp_path / "stalled", params, layer, ((0, 32), (0, 256)),
                         seed_from_env(8))
    assert stalled["busy"] == stalled["work"]
    free = _verilator(tmp_path / "free", params, layer, ((0, 32), (0, 256)), 8, rates=FREE)
    assert free["span"] == free["model_cycles"]
    assert 2 * free["span"] - sum(free["busy"]) == free["model_bubbles"]


@pytest.mark.soak
@pytest.mark.verilator
def test_soak_16x16_on_verilator(tmp_path, shared_data):
    layer = dlmc_layers(shared_data)[12]
    out = _verilator(tmp_path, {"rows": 4, "cols": 4, "compaction": 4}, layer,
                     ((0, 64), (0, 512)), 9, rates=FREE)
    assert out["span"] == out["model_cycles"]
