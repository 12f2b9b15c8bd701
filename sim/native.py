"""Native runs: a design with its stream sources and sinks inside, on Verilator, from C++.

:func:`build` turns the Verilog of a top module (a block wrapped by
:mod:`sparseforge.tb.native` with the sources and sinks that play its
workload) into a Verilator executable with ``sim/native_main.cpp`` as its
main: it loads each source's memory image, resets the design, toggles the
clock until the top raises ``done``, and writes what each sink took. Per-cycle
work never leaves the simulator, so a run goes at Verilator's speed.
Executables are cached by the Verilog text and the toolchain, as the cocotb
runner's builds are (:mod:`sparseforge.sim.runners`).

:func:`execute` writes the images, runs the executable and reads the sinks
back. Image files (little-endian 32-bit words), in the run folder:

- ``source<i>.bin``: ``items`` (two words), ``rate``, ``seed``, ``words``;
  then ``items x words`` words, one item per ``words``.
- ``sink<i>.cfg``: the same header, ``items`` the count the sink expects;
  the run writes ``sink<i>.bin``, ``words`` words per item taken.
"""

import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from importlib.metadata import version
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..core.errors import ToolError
from ..core.tools import cache_dir, fst_flags, locked, sim_optimization, status, verilator_on_path

FLAGS = ["--cc", "--exe", "--build", "-O3", "--x-assign", "fast", "--x-initial", "fast",
         "--noassert", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--top-module", "top",
         "--output-split", "0", "--output-split-cfuncs", "1000", "-j", "2"]
"""Verilator's flags: a model compiled for speed, in one file (``--output-split 0``, see
:func:`sparseforge.sim.runners.build_verilog`) but its evaluation cut into functions of
about 1,000 statements (``--output-split-cfuncs``): one function of a whole design's
clock edge takes the C++ compiler longer and runs slower than its pieces."""

OPTIMIZATION = "-O2"
"""The C++ optimization of a native build unless ``SPARSEFORGE_SIM_OPT`` says otherwise:
``-O3`` runs no faster and builds slower."""


def compile_flags(opt):
    """The C++ compiler's flags for a native build at optimization ``opt``: on the model
    and on the main and the C++ beside it alike (``OPT_FAST``, which Verilator's makefile
    would otherwise put after ``-CFLAGS`` at its ``-Os``), for this machine's processor."""
    return ["-MAKEFLAGS", f"OPT_FAST={opt}", "-CFLAGS", "-march=native"]


@dataclass(frozen=True)
class Image:
    """One stream's image: a source's ``words`` (uint32, one row per item), or a sink's
    words per item and the ``items`` it expects."""

    words: object
    rate: int               # a coin below this (of 65536) lets the stream act
    seed: int
    items: int = None       # a sink's expected count (a source's is its rows)


@dataclass(frozen=True)
class NativeRun:
    """What a native run did: cycles, how it ended, the sinks' words, the seconds spent."""

    cycles: int
    end: str                # "done", "deadlock" (no stream moved for a while) or "limit"
    taken: list             # per sink, uint32 words, one row per item
    start_seconds: float
    run_seconds: float
    build_seconds: float
    folder: str
    binary: str
    run_cpu_seconds: float = 0.0    # the run proper's CPU time (less than its seconds
                                    # on a machine that others share)

    @property
    def rate(self):
        """Simulated cycles per second of the run proper."""
        return self.cycles / self.run_seconds if self.run_seconds else float("inf")

    @property
    def cpu_rate(self):
        """Simulated cycles per CPU second of the run proper: its rate on a machine of
        its own."""
        return self.cycles / self.run_cpu_seconds if self.run_cpu_seconds else float("inf")


def build(verilog, name, waves=False, cpp=()):
    """The executable simulating top module ``top`` of ``verilog``, built or reused.

    ``waves`` builds it able to write an FST waveform (a build of its own: the
    flags are part of the cache key); ``cpp`` are the texts of C++ files the Verilog's
    DPI imports call, compiled beside the main. Returns ``(path, seconds spent
    building)``. A failed build raises :class:`~sparseforge.core.errors.ToolError`
    naming the log it kept.
    """
    exe = verilator_on_path()
    io = resources.files("sparseforge.sim").joinpath("native_io.v").read_text()
    main = resources.files("sparseforge.sim").joinpath("native_main.cpp").read_text()
    flags = [*FLAGS, *compile_flags(sim_optimization(OPTIMIZATION)),
             *([*fst_flags(), "-CFLAGS", "-DSF_WAVES"] if waves else [])]
    toolchain = f"{exe}\n{version('verilator')}\n{' '.join(flags)}\n{sys.version}\n"
    units = {f"unit{k}.cpp": text for k, text in enumerate(cpp)}
    digest = hashlib.sha256((toolchain + verilog + io + main + "".join(cpp)).encode()
                            ).hexdigest()[:12]
    folder = cache_dir("native", f"{name}-{digest}" + ("-waves" if waves else ""))
    binary = folder / "obj" / "sim"
    runtime = cache_dir("native", "runtime-" + hashlib.sha256(toolchain.encode()).hexdigest()[:12])
    with locked(folder):
        if binary.exists():
            return binary, 0.0
        for file, text in (("top.v", verilog), ("native_io.v", io), ("native_main.cpp", main),
                           *units.items()):
            (folder / file).write_text(text)
        reused = _reuse_runtime(runtime, folder / "obj")
        assume = [arg for o in reused for arg in ("-MAKEFLAGS", f"--assume-old={o}")]
        log = folder / "build.log"
        start = time.perf_counter()
        status(f"building the native simulator of {name} (seconds to a minute, once)...")
        with open(log, "w") as out:
            proc = subprocess.run([exe, *flags, *assume, "--Mdir", "obj", "-o", "sim", "top.v",
                                   "native_io.v", "native_main.cpp", *units], cwd=folder,
                                  stdout=out, stderr=subprocess.STDOUT)
        if proc.returncode or not binary.exists():
            raise ToolError(f"Verilator failed to build the native simulator of {name}; "
                            f"log: {log}")
        _keep_runtime(runtime, folder / "obj")
        seconds = time.perf_counter() - start
        status(f"native simulator of {name} built in {seconds:.0f} s")
        return binary, seconds


def _reuse_runtime(runtime, obj):
    """Copy the kept Verilator runtime (``verilated*.o``, the same for every design built
    with the same flags) into a build's ``obj`` folder; return the names make is to take
    as built (it would otherwise remake them: they depend on the model's new makefile)."""
    with locked(runtime):
        obj.mkdir(exist_ok=True)
        kept = sorted(runtime.glob("verilated*.o"))
        for o in kept:
            shutil.copy2(o, obj / o.name)
        return [o.name for o in kept]


def _keep_runtime(runtime, obj):
    """Keep a finished build's Verilator runtime, unless one is kept already."""
    with locked(runtime):
        if not any(runtime.glob("verilated*.o")):
            for o in obj.glob("verilated*.o"):
                part = runtime / f"{o.name}.part"        # never a half-copied object kept
                shutil.copy2(o, part)
                part.replace(runtime / o.name)


def _header(items, rate, seed, words):
    return np.array([items & 0xFFFFFFFF, items >> 32, rate, seed, words], dtype=np.uint32)


def execute(binary, sources, sinks, folder, limit=10**10, patience=100_000, waves=None,
            progress=None):
    """Run ``binary`` on the ``sources`` and ``sinks`` (:class:`Image` each, by id order).

    Returns a :class:`NativeRun`; the images and the captured streams stay
    in ``folder``. ``waves`` names an FST file to write (the build must have
    waves). ``progress`` labels a progress bar on stderr (items the sinks have
    taken), shown once a run lasts past its first report, 2^22 cycles in.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for i, image in enumerate(sources):
        words = np.ascontiguousarray(image.words, dtype=np.uint32)
        with open(folder / f"source{i}.bin", "wb") as f:
            _header(len(words), image.rate, image.seed, max(words.shape[1], 1)).tofile(f)
            words.tofile(f)
    for i, image in enumerate(sinks):
        _header(image.items, image.rate, image.seed, image.words).tofile(folder / f"sink{i}.cfg")
    args = [str(binary), str(folder), str(limit), str(patience)]
    if waves:
        args.append(str(waves))
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors, bar = [], None
    for line in proc.stderr:
        if not line.startswith("progress "):
            errors.append(line)
        elif progress:
            cycles, taken, expected = map(int, line.split()[1:])
            if bar is None:
                bar = tqdm(total=expected, desc=progress, unit="item", file=sys.stderr,
                           leave=False)
            bar.n = taken
            bar.set_postfix_str(f"{cycles:,} cycles")
    stdout = proc.stdout.read()
    proc.wait()
    if bar is not None:
        bar.close()
    if proc.returncode not in (0, 3, 4) or not stdout.strip():
        raise ToolError(f"the native simulator failed (exit {proc.returncode}): "
                        f"{(''.join(errors) or stdout).strip()[-500:]}")
    report = json.loads(stdout.strip().splitlines()[-1])
    taken = [np.fromfile(folder / f"sink{i}.bin", dtype=np.uint32).reshape(-1, image.words)
             for i, image in enumerate(sinks)]
    return NativeRun(report["cycles"], report["end"], taken, report["start_seconds"],
                     report["run_seconds"], 0.0, str(folder), str(binary),
                     report["run_cpu_seconds"])

