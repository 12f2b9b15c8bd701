"""A block on a board: its self-check built into a bitstream with the YoWASP toolchain.

The block runs inside :class:`~sparseforge.hw.selfcheck.SelfCheck`, fed a program
whose results the host computed; two LEDs show the verdict. Amaranth's build
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

from .core.errors import ParameterError, SparseforgeError, ToolError
from .core.registry import get
from .core.tools import yowasp
from .hw.selfcheck import SelfCheck
from .sw.buffet_program import BuffetProgram
from .synth.flow import achieved_mhz
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


SELF_CHECKS = {"buffet": _buffet_check}
"""Blocks that can run on a board: ``name -> f(component, seed, n_ops) -> SelfCheck``."""


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


def self_check(name, params, seed, n_ops):
    """The :class:`SelfCheck` of block ``name`` with ``params``, and the resolved parameters."""
    block = get(name)
    if name not in SELF_CHECKS:
        raise SparseforgeError(f"block {name!r} has no self-check to run on a board "
                               f"(blocks with one: {', '.join(SELF_CHECKS)})")
    resolved = block.resolve(params)
    return SELF_CHECKS[name](block.cls(**resolved), seed, n_ops), resolved


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

    A dict: ``block``, ``params``, ``board``, ``device``, ``bitstream`` (path) and
    its ``bytes``, ``clock_mhz`` (the board's clock), ``fmax_mhz`` (nextpnr's),
    ``timing_met``, ``resources`` (cell type -> ``{used, available}``, those used),
    ``ops`` and ``checked`` (operations sent, outputs checked), ``leds`` and ``flash``.
    """
    platform = platform_for(board)
    check, resolved = self_check(name, params, seed, n_ops)
    outdir = Path(outdir or Path("build", f"{name}-{board}"))
    plan = platform.prepare(BoardTop(check), name="top",
                            nextpnr_opts="--report report.json --timing-allow-fail")
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
            "ops": len(check.program), "checked": len(check.expected), "seed": seed,
            "leds": {str(n): meaning for n, meaning in LEDS.items()},
            "flash": _family(platform)["flash"].format(bit=bitstream)}
