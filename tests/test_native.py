# amaranth: UnusedElaboratable=no
"""Native runs: a bench's sources and sinks inside the simulator, cycle for cycle as in Python."""

import random
import re

import pytest

from sparseforge.core.errors import ParameterError, ToolError
from sparseforge.core.tools import sim_optimization
from sparseforge.hw.buffet import Buffet
from sparseforge.hw.compose.spmv_tailor import SpmvTailor
from sparseforge.hw.eureka_array import EurekaArray
from sparseforge.hw.tailor import Tailor
from sparseforge.sim import native as runner
from sparseforge.sim.runners import pysim
from sparseforge.sw.eureka_plan import plan
from sparseforge.sw.layers import dlmc_layers, real_slice
from sparseforge.tb import native
from sparseforge.tb.buffet import BuffetBench, random_program
from sparseforge.tb.eureka import ArrayBench
from sparseforge.tb.spmv import SpmvBench
from sparseforge.tb.tailor import TileBench, random_tiles

from .test_spmv import WIDTHS, bcspwr01

pytestmark = pytest.mark.verilator


def both(make):
    """The Python-driven result on Amaranth's simulator and the native result of ``make()``."""
    return pysim(make()), native.run(make())


def test_the_buffet_runs_natively_cycle_for_cycle():
    program = random_program(random.Random(3), 8, 16, 3000)
    python, run = both(lambda: BuffetBench(Buffet(depth=8, width=16), program, 3))
    assert run.cycles == python.cycles and run.run.end == "done"
    assert run.outputs["child__read_data"].tolist() == python.read_data


def test_the_tailor_runs_natively_cycle_for_cycle():
    tiles = random_tiles(random.Random(5), 16, 4, [0.5, 1, 1.5, 2, 4, 3.25], 4, 0.3, 0.6)
    rates = {"owfill": 0.5, "read_data": 0.5}
    python, run = both(lambda: TileBench(Tailor(depth=16, width=8, fifo=4, tile=128), tiles, 5,
                                         rates))
    assert run.cycles == python.cycles
    assert run.outputs["child__read_data"].tolist() == python.read_data


def test_the_spmv_engine_runs_natively_cycle_for_cycle():
    trace, stream, golden = bcspwr01(7)
    params = {"depth": 8, "fifo": 2, "tile": 32, **WIDTHS}
    python, run = both(lambda: SpmvBench(SpmvTailor(**params), trace.tiles, stream, golden, 7))
    assert run.cycles == python.cycles and run.outputs["y"].tolist() == python.y


def test_the_eureka_array_runs_natively_with_wide_payloads(shared_data):
    weights, activations = real_slice(dlmc_layers(shared_data, sparsity="0.8")[12], (0, 16),
                                      (0, 128), 4, 1)
    work = plan(weights, activations, 4, 8)
    python, run = both(lambda: ArrayBench(EurekaArray(compaction=4), work, 1))
    assert run.cycles == python.cycles and len(run.outputs["outputs"]) == python.tiles


def test_a_deadlock_ends_the_native_run_at_once():
    bench = BuffetBench(Buffet(depth=4, width=8), [("fill", 1), ("shrink", 2)], 9)
    with pytest.raises(AssertionError, match=r"deadlock after 10\d\d cycles.*SEED=9"):
        native.run(bench)


def test_an_output_other_than_expected_names_its_index():
    bench = BuffetBench(Buffet(depth=4, width=8),
                        [("fill", 1), ("fill", 2), ("read", 0), ("read", 1)], 0)
    bench.outputs["child__read_data"] = [1, 3]
    with pytest.raises(AssertionError, match="read_data item 1 is 2, expected 3"):
        native.run(bench)


def test_a_passing_run_removes_its_images_and_a_failing_one_keeps_them(monkeypatch, tmp_path):
    """Images can be as large as the input: gone once the run has passed, kept (in the
    cache's ``native-runs``) where it failed, for a look."""
    from sparseforge.core import tools

    cache_dir = tools.cache_dir

    def runs_here(*parts):          # the built simulator stays in the shared cache
        if parts[0] != "native-runs":
            return cache_dir(*parts)
        path = tmp_path.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    monkeypatch.setattr(tools, "cache_dir", runs_here)
    runs = tmp_path / "native-runs"
    program = [("fill", 1), ("fill", 2), ("read", 0), ("read", 1)]
    assert native.run(BuffetBench(Buffet(depth=4, width=8), program, 0)).run.end == "done"
    assert not any(runs.iterdir())
    bench = BuffetBench(Buffet(depth=4, width=8), program, 0)
    bench.outputs["child__read_data"] = [1, 3]
    with pytest.raises(AssertionError):
        native.run(bench)
    (kept,) = runs.iterdir()
    assert (kept / "source0.bin").exists()


def test_a_truncated_image_is_refused_in_one_line(tmp_path):
    bench = BuffetBench(Buffet(depth=4, width=8), [("fill", 1), ("read", 0)], 0)
    run = native.run(bench, work_dir=tmp_path).run
    image = tmp_path / "source0.bin"
    image.write_bytes(image.read_bytes()[:-2])
    with pytest.raises(ToolError, match=r"source0\.bin: truncated") as error:
        runner.execute(run.binary, [], [], tmp_path)     # the images already in the folder
    assert "\n" not in str(error.value)


def test_a_failed_build_names_its_log():
    with pytest.raises(ToolError, match=r"failed to build .* log: .*build\.log"):
        runner.build("module top(input clk, input rst, output done, output moved);\n"
                      "  assign done = nosuch;\nendmodule\n", "broken")


def test_verilators_runtime_is_compiled_once_for_every_design(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEFORGE_CACHE", str(tmp_path))
    logs = []
    for depth in (4, 8):
        program = random_program(random.Random(depth), depth, 8, 40)
        assert native.run(BuffetBench(Buffet(depth=depth, width=8), program, 1)).run.end == "done"
        new, = set((tmp_path / "native").glob("buffet-*/build.log")) - set(logs)
        logs.append(new)
    assert "verilated.cpp" in logs[0].read_text()
    assert "verilated.cpp" not in logs[1].read_text()
    # The model, the main and the C++ beside it at the run's optimization: the last -O of
    # each compile line, where Verilator's makefile would put its own -Os after ours.
    opt = sim_optimization(runner.OPTIMIZATION)
    compiles = [line for line in logs[1].read_text().splitlines()
                if line.startswith("c++") and " -c " in line]
    assert len(compiles) == 2 and all(
        re.findall(r"(?<!\S)-O\w*", line)[-1] == opt for line in compiles)


def test_the_simulators_optimization_is_o3_unless_set(monkeypatch):
    monkeypatch.delenv("SPARSEFORGE_SIM_OPT", raising=False)
    assert sim_optimization("-O3") == "-O3" and sim_optimization("-Os") == "-Os"
    monkeypatch.setenv("SPARSEFORGE_SIM_OPT", "-O1")
    assert sim_optimization("-O3") == "-O1"
    monkeypatch.setenv("SPARSEFORGE_SIM_OPT", "-O4")
    with pytest.raises(ToolError, match="SPARSEFORGE_SIM_OPT='-O4': expected one of -O0"):
        sim_optimization("-O3")


def test_a_workload_that_does_not_fit_the_block_is_refused():
    with pytest.raises(ParameterError, match="an index 4 does not fit a buffer of depth 4"):
        BuffetBench(Buffet(depth=4, width=8), [("fill", 1), ("read", 4)], 0)
    with pytest.raises(ParameterError, match="longer than the Tailor's tile = 8"):
        TileBench(Tailor(depth=4, width=8, fifo=2, tile=8),
                  [{"length": 9, "passes": 1, "reads": [[8]]}], 0)


@pytest.mark.soak
def test_a_long_run_shows_a_progress_bar_on_request(tmp_path, capfd):
    """Past 2^22 cycles a run reports its progress: a bar on stderr when asked, silence
    otherwise; the result is the same."""
    import numpy as np

    from sparseforge.hw.tensaurus_mlu import TensaurusMlu
    from sparseforge.tb.tensaurus_mlu import MluBench

    mats = [np.ones((15_000, 8), dtype=np.int64)]            # 60,000 words, ~100 cycles each
    rates = {"start": 1.0, "request": 1.0, "response": 0.01, "fills": 1.0}

    def make():
        bench = MluBench(TensaurusMlu(cols=1, tlen=4, vlen=2, dw=8), mats, 3, rates)
        bench.patience = 100_000        # a 1% memory may keep a word back for long
        return bench
    quiet = native.run(make(), work_dir=tmp_path)
    assert quiet.cycles > 1 << 22 and "mlu load" not in capfd.readouterr().err
    shown = native.run(make(), work_dir=tmp_path, progress="mlu load")
    assert shown.cycles == quiet.cycles
    assert make().from_outputs(1, shown.outputs) == make().from_outputs(1, quiet.outputs)
    assert "mlu load" in capfd.readouterr().err
