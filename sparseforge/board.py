"""A block on a board: its self-check built into a bitstream with the YoWASP toolchain.

The block runs inside :class:`~sparseforge.hw.selfcheck.SelfCheck`, fed a program
whose results the host computed; two LEDs show the verdict. The accelerator (``accel``)
runs inside :class:`~sparseforge.hw.compose.accel_selftest.AccelSelfTest` instead: a
small real run (SpMM on Tensaurus, pruned GEMM on Eureka, by the ``engine`` parameter)
whose memory image, register program and expected output the host computes here. Amaranth's build
system writes the Yosys/nextpnr/pack script of the board (from amaranth-boards),
and the tools it calls are the YoWASP builds, named through the environment
variables that script reads (``YOSYS``, ``NEXTPNR_ICE40``, ``ECPPACK``...).
"""

import json
import os
import random
import subprocess
import sys
import time
from itertools import takewhile
from pathlib import Path

import numpy as np
from amaranth._toolchain import tool_env_var
from amaranth.hdl import Elaboratable, Module
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.ulx3s import (
    ULX3S_12F_Platform,
    ULX3S_25F_Platform,
    ULX3S_45F_Platform,
    ULX3S_85F_Platform,
)
from tqdm import tqdm

from .core.data import shared_data_dir
from .core.errors import ParameterError, SparseforgeError, ToolError
from .core.registry import get
from .core.tools import yowasp
from .hw.compose.accel_selftest import AccelSelfTest
from .hw.lite_host import LiteOp
from .hw.selfcheck import SelfCheck
from .sw import accel_eureka, accel_eureka_model, accel_image, accel_model, accel_plan, regmap, wire
from .sw.buffet_program import BuffetProgram
from .sw.layers import DLMC, int8_layer, real_slice
from .synth.flow import FALLBACK, achieved_mhz
from .tb.accel import commands, host_of
from .tb.buffet import port, random_program

BOARDS = {
    "icebreaker": ICEBreakerPlatform,
    "ulx3s": ULX3S_85F_Platform,
    "ulx3s-12f": ULX3S_12F_Platform,
    "ulx3s-25f": ULX3S_25F_Platform,
    "ulx3s-45f": ULX3S_45F_Platform,
    "ulx3s-85f": ULX3S_85F_Platform,
}
"""Boards by name; ``ulx3s`` is the LFE5U-85F ULX3S (the others are named by device)."""

LEDS = {0: "fail", 1: "pass"}
"""What each lit LED means (``led`` 0 is red, 1 green on the iCEBreaker; D0, D1 on the ULX3S).
Neither lit: not configured or still in reset (a run takes microseconds, and a hung
block fails after :class:`SelfCheck`'s ``patience``)."""

# Per family: each tool of the build script and the file it writes last, and the flash command.
_FAMILY = {
    "ice40": {"stages": (("yosys", "json"), ("nextpnr-ice40", "asc"), ("icepack", "bin")),
              "flash": "iceprog {bit}   (or: openFPGALoader -b icebreaker {bit})"},
    "ecp5": {"stages": (("yosys", "json"), ("nextpnr-ecp5", "config"), ("ecppack", "bit")),
             "flash": "openFPGALoader -b ulx3s {bit}   (or: fujprog {bit})"},
}


def buffet_program(depth, width, seed, n_ops):
    """A Buffet self-check: ``(ops, expected)`` for :class:`SelfCheck`.

    A random program legal in program order (filled to full, shrunk to empty,
    reads of the newest element, updates then reads), and the read data the
    host program says it returns.
    """
    program = BuffetProgram.from_ops(random_program(random.Random(seed), depth, width, n_ops))
    expected, _ = program.responses(depth)
    ops = [(port(kind), {"index": arg[0], "data": arg[1]} if kind == "update" else arg)
           for kind, arg in program.ops()]
    return ops, expected.tolist()


def _buffet_check(component, seed, n_ops):
    ops, expected = buffet_program(component.depth, component.width, seed, n_ops)
    if not expected:
        raise ParameterError(f"--ops {n_ops}: the program of seed {seed} reads nothing to "
                             "check; give more operations")
    return SelfCheck(component, ops, expected, port("read_data"))


ACCEL_DATA = {"tensaurus": Path("matrices", "suitesparse", "GD01_b.mtx"),
              "eureka": DLMC / "magnitude_pruning" / "0.8"
              / "bottleneck_1_block_group3_5_1.smtx.gz"}
"""The real data of each engine's self-test, under the shared data folder: an 18 x 18
graph of 37 nonzeros (SpMM, its pattern given seeded int8 values), and a pruned
ResNet-50 layer (pruned GEMM, a slice of it)."""

ACCEL_BUILDS = {
    "tensaurus": {"pes": 2, "cols": 2, "vlen": 2, "tlen": 2, "spm_rows": 32, "out_rows": 32,
                  "depth": 64, "fifo": 8, "tile": 1024, "tags": 4},
    "eureka": {"compaction": 2, "cols": 1, "dw": 8},
}
"""The self-test's build of each engine, under the parameters given: 2 x 2 PEs of 2 lanes
(R = 8 of B's columns a pass), a Tailor of 64 entries; one 4 x 4 Eureka sub-array at
P = 2. Small enough to fit beside its memory and check in simulation."""

SPMM_COLUMNS, SLICE, SLICE_COLUMNS = 12, ((0, 8), (0, 32)), 8
"""B's columns (two passes of 8); the layer's rows and columns in the slice, X's
columns (two panels of 4)."""


def _data(engine):
    root = shared_data_dir()
    path = root and root / ACCEL_DATA[engine]
    if path is None or not path.exists():
        raise SparseforgeError(f"{ACCEL_DATA[engine]}: the {engine} self-test's data is not "
                               "in the shared data folder (sparseforge data fetch)")
    return path


def accel_run(accel, seed):
    """``(plan, matrix, b)``: the self-test's run on ``accel``'s build, from real data
    (:data:`ACCEL_DATA`), its values and B seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    if accel.engine == "eureka":
        config = accel_eureka.EurekaConfig(accel.compaction, accel.cols, accel.dw,
                                           accel.acc_width, accel.iw)
        w, x = real_slice(_data("eureka"), *SLICE, SLICE_COLUMNS, seed)
        return accel_eureka.plan(w, x, config), w, x
    if accel.engine != "tensaurus" or accel.order != 2:
        raise ParameterError(f"engine={accel.engine}, order={accel.order}: the self-test "
                             "runs SpMM on Tensaurus (order 2) or pruned GEMM on Eureka")
    config = accel_plan.AccelConfig(**{f: getattr(accel, f) for f in (
        "pes", "cols", "vlen", "tlen", "spm_rows", "out_rows", "depth", "fifo", "dw", "iw",
        "acc_width", "order")})
    a = int8_layer(_data("tensaurus"), seed).tocsr()
    b = rng.integers(-128, 128, size=(a.shape[1], SPMM_COLUMNS))
    return accel_plan.plan(a, b, "prescient", config), a, b


def bus_words(memory, data):
    """Bytes ``memory`` as words of the ``data``-bit bus (Python ints)."""
    raw = np.concatenate([memory, np.zeros(-len(memory) % (data // 8), np.uint8)])
    return [int(w) for w in wire.from_bytes(raw, data // 8)]


def accel_program(plan, regions):
    """The self-test's commands: :func:`~sparseforge.tb.accel.commands` (the register
    writes, ``start``, a wait for ``done``, the counters read), a wait failing the run
    where ``status.error`` is set."""
    error = next(f for f in regmap.by_name()["status"].fields if f.name == "error")
    return [{**c, "fail": 1 << error.lsb if c["op"] == LiteOp.WAIT else 0}
            for c in commands(plan, regions)]


def watchdog(plan, matrix, n_commands):
    """Cycles a self-test of ``plan`` may take: twice the host model's cycles for the
    run (against the bench's memory, slower than block RAM) and 16 a command."""
    if plan.kernel == "pruned-gemm":
        cycles = accel_eureka_model.predict(plan).cycles
    else:
        cycles = accel_model.predict(plan, matrix, accel_model.BENCH, tags=4).cycles
    return int(2 * (cycles + 16 * n_commands))


def accel_selftest(accel, seed, n_ops=None, expected=None, program=None):
    """The :class:`AccelSelfTest` of ``accel``'s build on its real data, seeded by
    ``seed``: the memory image, the commands and the expected output words the host
    computes (``n_ops`` unused: the run is the data's). ``expected`` (``y -> y``) and
    ``program`` (``commands -> commands``) change the golden output or the commands, to
    check that the self-test fails."""
    plan, matrix, b = accel_run(accel, seed)
    image, regions = host_of(plan).image(plan, matrix, b)
    y = plan.golden if expected is None else expected(plan.golden.copy())
    want = image.copy()
    accel_image.put(want, regions["out"], host_of(plan).out_words(plan, y))
    out, step = regions["out"], accel.data // 8
    first, end = out.base // step, -(-(out.base + out.size) // step)
    cmds = accel_program(plan, regions)
    cmds = cmds if program is None else program(cmds)
    check = AccelSelfTest(accel, bus_words(image, accel.data), cmds, first,
                          bus_words(want[first * step:end * step], accel.data),
                          watchdog(plan, matrix, len(cmds)))
    check.workload = {"kernel": plan.kernel, "data": str(ACCEL_DATA[accel.engine]),
                      "shape": [int(d) for d in plan.shape], "nnz": int(matrix.nnz),
                      "columns": int(b.shape[1]), "memory_bytes": len(image),
                      "watchdog_cycles": check.limit}
    return check


SELF_CHECKS = {"buffet": _buffet_check, "accel": accel_selftest}
"""Blocks that can run on a board: ``name -> f(component, seed, n_ops) -> SelfCheck``
(or :class:`~sparseforge.hw.compose.accel_selftest.AccelSelfTest`, for the accelerator)."""

DEFAULTS = {"accel": lambda resolved: ACCEL_BUILDS.get(resolved["engine"], {})}
"""A block's self-check build (by its parameters as given, resolved), under them."""


class BoardTop(Elaboratable):
    """The self-check on a board: ``failed`` on ``led`` 0, ``passed`` on ``led`` 1."""

    def __init__(self, check):
        self.check = check

    def elaborate(self, platform):
        m = Module()
        m.submodules.check = self.check
        verdict = {"fail": self.check.failed, "pass": self.check.passed}
        for n, meaning in LEDS.items():
            m.d.comb += platform.request("led", n).o.eq(verdict[meaning])
        return m


def platform_for(board):
    """The amaranth-boards platform of ``board``, or :class:`ParameterError` listing them."""
    if board not in BOARDS:
        raise ParameterError(f"--board {board!r}: unknown board (known: {', '.join(BOARDS)})")
    return BOARDS[board]()


def self_check_params(name, params):
    """The parameters of block ``name``'s self-check build: ``params`` over the block's
    self-check defaults (:data:`DEFAULTS`), resolved."""
    block = get(name)
    if name not in SELF_CHECKS:
        raise SparseforgeError(f"block {name!r} has no self-check to run on a board "
                               f"(blocks with one: {', '.join(SELF_CHECKS)})")
    defaults = DEFAULTS.get(name, lambda _: {})(block.resolve(params))
    return block.resolve({**defaults, **params})


def self_check(name, params, seed, n_ops):
    """The :class:`SelfCheck` of block ``name`` with ``params``, and the resolved parameters."""
    resolved = self_check_params(name, params)
    return SELF_CHECKS[name](get(name).cls(**resolved), seed, n_ops), resolved


def _family(platform):
    return _FAMILY[platform.family.lower()]


def _run(plan, platform, outdir):
    """Run the build script of ``plan`` in ``outdir``, its stages as progress on stderr."""
    stages = _family(platform)["stages"]
    env = {**os.environ, **{tool_env_var(tool): yowasp(tool) for tool, _ in stages}}
    root = plan.extract(outdir)
    start = time.time()

    def finished(ext):      # written by this run, not left from an earlier one
        path = root / f"top.{ext}"
        return path.exists() and path.stat().st_mtime >= start

    log_path = root / "build.log"
    with open(log_path, "w") as log, \
            tqdm(total=len(stages), file=sys.stderr, bar_format="{desc} [{elapsed}]") as bar:
        proc = subprocess.Popen(["sh", f"{plan.script}.sh"], cwd=root, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        n = None
        while True:
            exited = proc.poll() is not None
            now = sum(1 for _ in takewhile(lambda stage: finished(stage[1]), stages))
            if now != n:
                n = now
                bar.update(n - bar.n)
                bar.set_description_str(f"build {n}/{len(stages)}: "
                                        + (stages[n][0] if n < len(stages) else "done"))
            if exited:
                break
            time.sleep(0.5)
    if proc.returncode:
        tail = "; ".join(log_path.read_text().strip().splitlines()[-5:])
        raise ToolError(f"{log_path}: the build failed (exit {proc.returncode}): {tail}")
    return root


def build(name, params, board, outdir=None, seed=1, n_ops=256):
    """Build block ``name``'s self-check for ``board``; return what the run produced.

    nextpnr places with HeAP and routes with the synthesis flow's :data:`FALLBACK`
    (router2): it converges on any design, and the board's clock asks no faster routes.

    A dict: ``block``, ``params``, ``board``, ``device``, ``bitstream`` (path) and
    its ``bytes``, ``clock_mhz`` (the board's clock), ``fmax_mhz`` (nextpnr's),
    ``timing_met``, ``resources`` (cell type -> ``{used, available}``, those used),
    ``ops`` and ``checked`` (operations sent, outputs checked), ``leds`` and ``flash``.
    """
    platform = platform_for(board)
    check, resolved = self_check(name, params, seed, n_ops)
    outdir = Path(outdir or Path("build", f"{name}-{board}"))
    plan = platform.prepare(BoardTop(check), name="top",
                            nextpnr_opts=" ".join(("--report report.json --timing-allow-fail",
                                                   *FALLBACK)))
    root = _run(plan, platform, outdir)
    report = json.loads((root / "report.json").read_text())
    bitstream = root / f"top.{_family(platform)['stages'][-1][1]}"
    clock = platform.default_clk_frequency / 1e6
    fmax = achieved_mhz(report)
    resources = {cell: {"used": u["used"], "available": u["available"]}
                 for cell, u in report.get("utilization", {}).items() if u["used"]}
    return {"block": name, "params": resolved, "board": board,
            "device": f"{platform.device}-{platform.package}", "bitstream": str(bitstream),
            "bytes": bitstream.stat().st_size, "clock_mhz": clock, "fmax_mhz": fmax,
            "timing_met": fmax is not None and fmax >= clock, "resources": resources,
            "margin_mhz": None if fmax is None else fmax - clock,
            "slack_ns": None if fmax is None else 1e3 / clock - 1e3 / fmax,
            "ops": len(check.program), "checked": len(check.expected), "seed": seed,
            **({"workload": check.workload} if hasattr(check, "workload") else {}),
            "leds": {str(n): meaning for n, meaning in LEDS.items()},
            "flash": _family(platform)["flash"].format(bit=bitstream)}
