# amaranth: UnusedElaboratable=no
"""The Eureka 4x4 sub-array: model, Amaranth-simulator runs, Verilator co-simulation, lint."""

import numpy as np
import pytest

from sparseforge.core.errors import FormatError, ParameterError
from sparseforge.hw.eureka_array import EurekaArray
from sparseforge.hw.interfaces import beat_layout, slot_layout
from sparseforge.sim.models import eureka as model
from sparseforge.sim.runners import pysim, seed_from_env, verilator
from sparseforge.sw.compaction import compact
from sparseforge.sw.eureka_format import EurekaFormat
from sparseforge.sw.eureka_plan import plan
from sparseforge.sw.layers import dlmc_layers, real_slice, squeezenet_layers
from sparseforge.sw.suds import displace, optimal
from sparseforge.sw.wire import width
from sparseforge.tb.eureka import ArrayBench
from sparseforge.tb.streams import Codec

FREE = {"filter": 1.0, "inputs": 1.0, "outputs": 1.0}


def figure_7():
    """Figure 7(a): row 0 holds four values, the others two or fewer."""
    a = np.zeros((4, 4), dtype=np.int64)
    a[0] = [1, 2, 3, 4]
    a[1, 2], a[2, 2], a[3, 3] = -5, 6, 7
    return a


def run(weights, activations, compaction=1, seed=0, rates=None, **kwargs):
    """Plan and run W X on the sub-array in Amaranth's simulator; return the bench."""
    bench = ArrayBench(EurekaArray(compaction=compaction),
                       plan(weights, activations, compaction, **kwargs),
                       seed, rates)
    pysim(bench)
    return bench


# -- the model ------------------------------------------------------------------

@pytest.mark.parametrize("compaction", [1, 2, 4])
@pytest.mark.parametrize("dense", [False, True])
def test_model_computes_w_x_on_a_real_layer(shared_data, compaction, dense):
    weights, activations = real_slice(dlmc_layers(shared_data)[5], (0, 64), (0, 256), 8, 2)
    work = plan(weights, activations, compaction, dense=dense)
    tiles = model.tiles(work.placed, work.slabs, dense, ids=work.ids)
    product = model.product(tiles, work.ids, work.grid, weights.shape[0])
    assert np.array_equal(product, work.weights @ work.activations)


@pytest.mark.parametrize("rotation", range(4))
def test_unrotate_puts_mac_row_m_on_output_row_m_plus_rotation(rotation):
    acc = np.arange(8).reshape(1, 4, 2) + 100
    tile = model.unrotate(acc, [rotation])[0]
    assert [tile[(m + rotation) % 4].tolist() for m in range(4)] == acc[0].tolist()


def test_model_rejects_a_displaced_value_on_mac_row_0():
    placed = displace(compact(figure_7(), 1), optimal(compact(figure_7(), 1).counts))
    placed.displaced[0, 0, 0] = True
    with pytest.raises(model.ModelError, match="MAC row 0"):
        model.tiles(placed, np.zeros((1, 4, 4)))


# -- directed, on Amaranth's simulator ----------------------------------------------

def test_figure_7_runs_in_two_cycles_with_rotation_undone():
    activations = np.arange(16).reshape(4, 4) - 8
    bench = run(figure_7(), activations, rates=FREE)
    out = bench.result()
    assert bench.run.records and out.tiles == 1
    assert out.busy == out.span == 2  # compaction alone: 4 cycles; greedy SUDS: 3
    assert np.array_equal(bench.received[0], figure_7() @ activations)


def test_dense_mode_takes_4p_cycles_and_ignores_metadata():
    activations = np.arange(32).reshape(8, 4) - 16
    weights = np.zeros((4, 8), dtype=np.int64)
    weights[0, [1, 6]] = [3, -2]   # compacted: row 0 = [3, -2] in columns 1, 6
    out = run(weights, activations, compaction=2, rates=FREE, dense=True).result()
    assert out.busy == out.span == 8
    assert np.array_equal(out.product, weights @ activations)


def test_empty_block_passes_in_one_cycle_with_a_zero_tile():
    weights = np.zeros((4, 12), dtype=np.int64)
    weights[2, [0, 9]] = [5, -6]    # blocks 0 and 2 hold a value, block 1 is empty
    activations = np.arange(48).reshape(12, 4)
    bench = run(weights, activations, rates=FREE, send_empty=True)
    out = bench.result()
    assert bench.run.records and out.tiles == 3
    assert not np.any(bench.received[1])
    assert out.busy == 2 and out.span == 3
    assert np.array_equal(out.product, weights @ activations)


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_back_to_back_blocks_run_in_the_model_cycles(shared_data, compaction):
    """No back-pressure: the array computes every cycle from first block to last."""
    weights, activations = real_slice(squeezenet_layers(shared_data)[4], (0, 16), (0, 96),
                                      4, 1)
    bench = run(weights, activations, compaction, rates=FREE)
    out = bench.result()
    assert out.busy == out.span == bench.run.cycles
    fill = EurekaArray(compaction=compaction).latency  # the pipeline's
    assert out.drained == out.span + fill
    assert np.array_equal(out.product, bench.run.weights @ bench.run.activations)


@pytest.mark.parametrize("compaction", [1, 4])
@pytest.mark.parametrize("dense", [False, True])
def test_real_slice_under_random_stalls(shared_data, compaction, dense):
    seed = seed_from_env(compaction + 10 * dense)
    weights, activations = real_slice(dlmc_layers(shared_data)[3], (0, 12), (0, 48), 4, seed)
    bench = run(weights, activations, compaction, seed=seed, dense=dense)
    out = bench.result()
    assert len(set(bench.run.placed.rotation[bench.run.ids])) > 1 or dense  # several rotations
    assert out.busy == bench.run.cycles
    assert out.span > bench.run.cycles  # the stalls did stall it
    assert np.array_equal(out.product, bench.run.weights @ bench.run.activations)


# -- parameters and Verilog -------------------------------------------------------

def test_ports_follow_the_format():
    array = EurekaArray(compaction=4, weight_width=8)
    fmt = EurekaFormat(4, 8)
    assert beat_layout(fmt).size == fmt.slot_width + 4  # rotation, last, empty
    assert len(array.filter.payload.as_value()) == beat_layout(fmt).size
    assert len(array.inputs.payload.as_value()) == 16 * 4 * 8
    assert len(array.outputs.payload.as_value()) == 4 * 4 * 32 + 2  # MAC-row tile, rotation


@pytest.mark.parametrize(("kwargs", "name"), [({"compaction": 3}, "compaction"),
                                              ({"acc_width": 8}, "acc_width"),
                                              ({"weight_width": 40}, "weight_width")])
def test_bad_parameters_name_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        EurekaArray(**kwargs)


@pytest.mark.parametrize("params", [{}, {"compaction": 2},
                                    {"compaction": 1, "weight_width": 3, "act_width": 5,
                                     "acc_width": 9}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("eureka_array", params) == ""


# -- Verilator co-simulation --------------------------------------------------------

def _verilator(tmp_path, params, layer, rows, cols, seed, dense=False, rates=None):
    """The real-layer slice planned on the host, run on Verilator; returns (plan, result)."""
    weights, activations = real_slice(layer, rows, cols, 4, seed)
    work = plan(weights, activations, params["compaction"], dense=dense)
    rtl = verilator("eureka_array", "sparseforge.tb.eureka", params=params, seed=seed,
                    args={"plan": work, "rates": rates}, work_dir=tmp_path).result
    assert np.array_equal(rtl.product, work.weights @ work.activations), "W X differs"
    return work, rtl


@pytest.mark.verilator
@pytest.mark.parametrize(("pick", "rows", "cols", "dense"), [
    pytest.param(lambda root: dlmc_layers(root)[12], (0, 32), (0, 256), False,
                 marks=pytest.mark.soak),           # a sparse slice: test_eureka.py's
    pytest.param(lambda root: squeezenet_layers(root)[10], (0, 16), (0, 288), False,
                 marks=pytest.mark.soak),           # native runs cover the sparse path
    (lambda root: squeezenet_layers(root)[10], (16, 24), (0, 96), True),
])
def test_real_layer_slices_on_verilator(tmp_path, shared_data, pick, rows, cols, dense):
    """W X exact, every tile equal to the model's (the testbench checks each), RTL compute
    cycles equal to the model's, under random stalls on every stream."""
    work, rtl = _verilator(tmp_path, {"compaction": 4}, pick(shared_data), rows, cols,
                           seed_from_env(21), dense=dense)
    assert rtl.busy == work.cycles and rtl.tiles == len(work.ids) > 0


@pytest.mark.verilator
@pytest.mark.soak
def test_verilator_runs_the_model_cycles_back_to_back(tmp_path, shared_data):
    params = {"compaction": 2}
    work, rtl = _verilator(tmp_path, params, dlmc_layers(shared_data)[7], (0, 16), (0, 128), 4,
                           rates=FREE)
    assert rtl.span == rtl.busy == work.cycles
    assert rtl == pysim(ArrayBench(EurekaArray(**params), work, 4, FREE))


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("pick", [lambda root: dlmc_layers(root)[12],
                                  lambda root: squeezenet_layers(root)[16]])
def test_soak_full_layer_on_verilator(tmp_path, shared_data, pick):
    from sparseforge.sw.formats import read_matrix

    layer = pick(shared_data)
    rows, cols = read_matrix(layer).shape
    work, rtl = _verilator(tmp_path, {"compaction": 4}, layer, (0, rows), (0, cols), 31)
    assert rtl.busy == work.cycles


def test_beats_are_one_per_cycle_and_one_per_empty_block():
    """P = 1, Figure 7 and an empty block: its beats carry the slots the records hold, in
    order, the last of each block marked, and nothing else."""
    weights = np.zeros((4, 8), dtype=np.int64)
    weights[:, :4] = figure_7()
    work = plan(weights, np.ones((8, 4), dtype=np.int64), 1, send_empty=True)
    fmt = EurekaFormat(1, 8)
    codec = Codec(beat_layout(fmt))
    beats = [codec.unpack(b) for b in fmt.beats(work.records)]
    assert len(beats) == work.cycles + 1 == 3  # two slots, then the empty block
    assert [(b["last"], b["empty"]) for b in beats] == [(0, 0), (1, 0), (1, 1)]
    slot = Codec(slot_layout(fmt))
    header = width(fmt.header)
    assert [b["slot"] for b in beats[:2]] == [
        slot.unpack(work.records[0] >> (header + t * fmt.slot_width)) for t in range(2)]
    assert not any(lane["value"] for lane in beats[2]["slot"])
    with pytest.raises(FormatError, match="claims 7 cycles"):
        fmt.beats([7 << 2])  # a header claiming 7 cycles; a record holds 4
