"""Pruned GEMM on the accelerator's Eureka build: the host's plan, memory image,
registers and Y read back, checked by hand on a tiny layer whose W and X differ and run
through the engine's model (W X exact from the image alone); the build co-simulated on
Amaranth's simulator against an AXI memory with random delays, two runs back to back,
exact, its traffic as the host counts it; the refusals at their edges; a slice of a real
pruned layer."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.accel import Accel
from sparseforge.sim.models import accel_eureka as engine
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import (
    accel_eureka,
    accel_eureka_model,
    accel_image,
    accel_model,
    layers,
    regmap,
    wire,
)
from sparseforge.tb.accel import params_of, pysim_runs

# W is 6 x 10: at P = 1 a grid of 2 x 3 blocks of 4 x 4. Block (0, 0) holds rows 0 (three
# values) and 1 (one), block (0, 2) row 3's W(3, 9), blocks (1, 1) and (1, 2) row 5's two;
# blocks (1, 0) and (0, 1) are empty and not sent.
W = np.zeros((6, 10), dtype=np.int64)
W[0, [0, 1, 2]] = [1, -2, 3]
W[1, 0] = 4
W[3, 9] = -5
W[5, [4, 8]] = [6, 7]
X = np.arange(60).reshape(10, 6) % 7 - 3          # 6 columns: two panels of 4 at cols=1
TINY = accel_eureka.EurekaConfig(compaction=1, cols=1, acc_width=20)


def through_engine(plan):
    memory, regions = accel_eureka.image(plan)
    engine.run(memory, accel_eureka.registers(plan, regions), plan.config)
    return accel_eureka.output(plan, memory, regions)


def test_tiny_layer_by_hand():
    """The sent blocks, their SUDS cycles, the registers and the traffic by hand.

    Block (0, 0)'s rows hold 3 and 1 values: row 0 displaces one value onto the MAC row
    below it, so it takes 2 cycles, the others 1: 5 a pass, 10 over the two panels.
    Words in memory (bytes): a block's place 2 x 16 + 1 bits, 8; a record 5 + 4 x 4 x (8
    + 2 + 1) = 181 bits, 32; a slab 4 x 4 x 8 bits, 16; a tile 4 x 4 x 20 bits, 64. On a
    64-bit bus a record crosses in 3 beats (24 bytes), a tile in 5 (40). A pass reads 4
    blocks' places, records and slabs, 4 x (8 + 24 + 16) = 192, two passes 384; it
    writes a tile of each of the two block rows, 2 x 2 x 40 = 160."""
    plan = accel_eureka.plan(W, X, TINY)
    assert plan.grid == (2, 3) and plan.panels == 2
    assert plan.placed.block_rows.tolist() == [0, 0, 1, 1]
    assert plan.placed.block_cols.tolist() == [0, 2, 1, 2]
    assert plan.placed.cycles.tolist() == [2, 1, 1, 1]
    assert accel_eureka.array_cycles(plan) == 10
    assert accel_eureka.dense_cycles(plan) == 2 * 6 * 4        # every block, 4P cycles
    assert accel_eureka.traffic(plan) == (384, 160)
    memory, regions = accel_eureka.image(plan)
    regs = accel_eureka.registers(plan, regions)
    assert regs["kernel"] == wire.AccelKernel.PRUNED_GEMM == 5
    assert (regs["passes"], regs["tiles_count"], regs["b_panel"], regs["out_panel"]) == (
        2, 4, 48, 128)
    assert (regs["w_records_size"], regs["b_size"], regs["out_size"]) == (128, 96, 256)
    assert regmap.writes(regs)[-1] == (regmap.by_name()["start"].offset, 1)
    # X's first slab word: rows 0-3 of X's columns 0-3, row-major, lane 0 lowest.
    first = int(accel_image.read(memory, regions["b"])[0])
    assert [(first >> (8 * k) & 0xFF) for k in range(4)] == [(v & 0xFF) for v in X[0, :4]]
    assert not memory[regions["out"].base:regions["out"].base + regions["out"].size].any()
    y = through_engine(plan)
    assert np.array_equal(y, W @ X)
    assert y[0, 0] == 1 * -3 + -2 * 3 + 3 * 2 and not y[2].any() and not y[4].any()


def test_the_model_of_the_tiny_layer_by_hand():
    """Two passes of 4 sent blocks: 8 blocks, 24 reads; 4 tile writes (2 block rows a
    pass). Beats on R a block: a place 1, a record 3 (181 bits), a slab 2 (128): 48.
    DRAM bursts: every word within one burst (a place 8 bytes, a record 32, a slab 16, a
    tile 64), 24 + 4 = 28, a quarter at tCCD_L: 28 x 4 + 7 x 1 = 119 bus cycles.
    At R ready half of cycles: 48 x 2 + 24 x 1 = 120 cycles of R bound it past the
    bus's 119 and the array's 10; two round trips of 10: 140. At the default DRAM's 0.7:
    R 48 / 0.7 + 24 x 0.43 = 78.9, so the bus bounds: 119 + 2 x 18.5 = 156."""
    plan = accel_eureka.plan(W, X, TINY)
    half = accel_model.Memory(latency=0, ordered=10, rate=0.5, burst=4.25)
    p = accel_eureka_model.predict(plan, half)
    assert (p.reads, p.writes, p.beats, p.dram_bursts) == (24, 4, 48, 28)
    assert p.parts == {"r": 120, "dram": 119, "array": 10} and p.cycles == 140
    assert (p.bytes_read, p.bytes_written) == accel_eureka.traffic(plan)
    d = accel_eureka_model.predict(plan)
    assert round(d.parts["r"], 1) == 78.9 and d.cycles == 156
    ideal = accel_model.Memory(latency=0, ordered=0, rate=1.0)     # no DRAM: R alone
    assert accel_eureka_model.predict(plan, ideal).cycles == 48


def test_the_build_back_to_back_exact_with_counted_traffic():
    """The tiny layer, then W negated against X's first four columns (one panel), on one
    build never reset, the memory's channels ready 70% of cycles at random: Y exact, the
    counters the host's traffic."""
    second = accel_eureka.plan(-W, X[:, :4], TINY)
    plans = [accel_eureka.plan(W, X, TINY), second]
    dut = Accel(**params_of(TINY), tags=4, data=64)
    runs = pysim_runs(dut, [(p, p.w, p.x) for p in plans], seed_from_env(5), limit=4000)
    for run, plan in zip(runs, plans, strict=True):
        assert np.array_equal(run.y, plan.golden)
        assert run.status == {"done": 1, "error": 0, "busy": 0, "refused": 0}
        assert (run.bytes_read, run.bytes_written) == accel_eureka.traffic(plan)
        assert accel_eureka.array_cycles(plan) < run.cycles < 2000
    assert runs[1].bytes_written == 80 and runs[1].y[5, 0] == -21


def test_the_eureka_build_lints_clean_with_wall(lint):
    assert lint("accel", params_of(accel_eureka.EurekaConfig(compaction=2, cols=2))) == ""


@pytest.mark.parametrize("compaction", [1, 2, 4])
@pytest.mark.parametrize("cols", [1, 2])
def test_every_compaction_and_width_exact(compaction, cols):
    plan = accel_eureka.plan(W, -2 * X, accel_eureka.EurekaConfig(compaction, cols))
    assert np.array_equal(through_engine(plan), W @ (-2 * X))


def test_all_zero_weights_give_zeros():
    plan = accel_eureka.plan(np.zeros((5, 3), dtype=int), X[:3], TINY)
    assert len(plan.records) == 0
    assert np.array_equal(through_engine(plan), np.zeros((5, 6)))


def test_the_widest_values_accepted_the_first_past_refused():
    top = accel_eureka.EurekaConfig(compaction=1, acc_width=16)
    w = np.array([[127, -128]])
    x = np.array([[127], [-128]])          # 127^2 + 128^2 = 32513 < 2^15
    plan = accel_eureka.plan(w, x, top)
    assert through_engine(plan)[0, 0] == 32513
    with pytest.raises(ParameterError, match=r"W.*dw"):
        accel_eureka.plan(np.array([[128, 0]]), x, top)
    with pytest.raises(ParameterError, match=r"X.*dw"):
        accel_eureka.plan(w, np.array([[127], [-129]]), top)
    with pytest.raises(ParameterError, match="acc_width=15"):
        accel_eureka.plan(w, x, accel_eureka.EurekaConfig(compaction=1, acc_width=15))


def test_bad_input_refused_in_one_line():
    with pytest.raises(ParameterError, match="needs X of W's columns") as err:
        accel_eureka.plan(W, X[:9], TINY)
    assert "\n" not in str(err.value)
    with pytest.raises(ParameterError, match="integers"):
        accel_eureka.plan(W * 0.5, X, TINY)
    with pytest.raises(ParameterError, match="nothing to compute"):
        accel_eureka.plan(W, X[:, :0], TINY)
    with pytest.raises(ParameterError, match="iw=2"):
        accel_eureka.plan(np.ones((16, 4), dtype=int), X[:4],
                          accel_eureka.EurekaConfig(compaction=1, iw=2))
    accel_eureka.plan(np.ones((12, 4), dtype=int), X[:4],
                      accel_eureka.EurekaConfig(compaction=1, iw=2))     # 3 block rows fit


def test_a_real_pruned_layer_slice(shared_data):
    path = layers.dlmc_layers(shared_data)[0]
    w, x = layers.real_slice(path, (0, 40), (0, 96), 12, seed=3)
    plan = accel_eureka.plan(w, x, accel_eureka.EurekaConfig(compaction=4, cols=2))
    assert 0 < len(plan.records) < plan.grid[0] * plan.grid[1] + 1
    assert np.array_equal(through_engine(plan), w @ x)


@pytest.fixture
def files(tmp_path):
    """The tiny W as a layer file, X, X of the wrong rows, of values past int8, of
    floats, a tensor and a file that holds no matrix."""
    from scipy.io import mmwrite

    paths = {"w": tmp_path / "w.mtx", "t": tmp_path / "t.tns", "junk": tmp_path / "junk.mtx"}
    mmwrite(paths["w"], sp.coo_matrix(W))
    paths["t"].write_text("1 1 1 2\n")
    paths["junk"].write_text("this is no matrix\n")
    for name, x in (("x", X), ("short", X[:9]), ("wide", X * 100), ("real", X * 0.5)):
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], x)
    return paths


@pytest.mark.parametrize("args, word", [
    (["{w}", "--factors", "{short}"], "W is 6 x 10 and X 9 x 6"),
    (["{w}", "--factors", "{wide}"], "X: value 300"),
    (["{w}", "--factors", "{real}"], "float64 values"),
    (["{t}", "--factors", "{x}"], "a tensor; pruned-gemm takes"),
    (["{junk}", "--factors", "{x}"], "junk.mtx"),
    (["{w}"], "needs --factors"),
    (["{w}", "{w}", "--factors", "{x}"], "one layer W, not 2"),
    (["{w}", "--factors", "{x}", "--pes", "5"], "--pes 5: pruned-gemm takes 1 to 4"),
])
def test_bad_input_is_one_line(files, tmp_path, capsys, args, word):
    paths = {k: str(v) for k, v in files.items()}
    args = [a.format(**paths) for a in args]
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "accel", "--kernel", "pruned-gemm", *args, "--out",
              str(tmp_path / "y.npy")])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == "" and err.count("\n") == 1, err
    assert word in err


@pytest.mark.soak
@pytest.mark.parametrize("layer, rows, cols, columns, compaction, pes, seed", [
    ("dlmc", None, None, 8, 4, 2, 1),
    ("fire2_conv3x3_2", None, None, 12, 2, 2, 2),
    ("conv_final", (0, 96), (0, 160), 4, 1, 1, 3),
    ("conv_final", (500, 640), (256, 512), 16, 4, 4, 4),
])
def test_real_layers_natively_exact(tmp_path, capsys, shared_data, layer, rows, cols,
                                    columns, compaction, pes, seed):
    """Y = W X of real pruned layers (a DLMC ResNet-50 pattern, SqueezeNet's quantized
    layers whole and sliced) natively under the DRAM model's random delays: exact, and
    the traffic the host counts."""
    from scipy.io import mmwrite

    path = (layers.dlmc_layers(shared_data)[0] if layer == "dlmc"
            else shared_data / layers.SQUEEZENET / f"{layer}.mtx")
    w = layers.int8_layer(path, seed).tocsr()
    if rows:
        w = w[slice(*rows), slice(*cols)]
        path = tmp_path / "slice.mtx"
        mmwrite(path, w)
    x = np.random.default_rng(seed).integers(-128, 128, size=(w.shape[1], columns))
    np.save(tmp_path / "x.npy", x)
    main(["run", "accel", "--kernel", "pruned-gemm", str(path), "--factors",
          str(tmp_path / "x.npy"), "--out", str(tmp_path / "y.npy"), "--compaction",
          str(compaction), "--pes", str(pes), "--seed", str(seed), "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and np.array_equal(np.load(tmp_path / "y.npy"), w @ x)
    assert (r["dram_bytes_read"], r["dram_bytes_written"]) == (
        r["model_bytes_read"], r["model_bytes_written"])
    assert r["array_cycles"] < r["dense_cycles"] and r["array_cycles"] < r["cycles"]
    accesses = sum(r["dram_bursts"].values())         # bursts and the few answered shared
    assert abs(r["model_error"]) <= 0.05 and r["model_dram_bursts"] == accesses
