"""Proofs by k-induction with SymbiYosys (the YoWASP builds and Boolector from PyPI).

A :class:`Proof` holds a design under a harness: the signals the solver chooses
each cycle (the design's inputs, the harness's free choices), and the harness's
``Assume`` and ``Assert`` statements. :meth:`Proof.run` writes it as RTLIL with an
``.sby`` (``mode prove``, ``smtbmc boolector``) and proves every assertion for all
time: a base case from the initial state over ``depth`` cycles, then induction
over any ``depth`` cycles in which the assertions held. A failure raises
:class:`Counterexample` with the trace's VCD, the failing assertion's source
line and the trace as a table.

The harness's clock domain has no reset: a reset returns every register to its
initial value, which is where the base case starts, so it adds no states.
Induction may start from a state no run reaches; where it does, the harness
states the invariant that excludes it (as an assertion, so it is proven too),
never the design.
"""

import functools
import linecache
import os
import re
import subprocess
import time
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import ClockDomain, Fragment, Module, Signal, Value

from ..core.errors import ToolError
from ..core.tools import cache_dir, locked, yowasp

# The executables SymbiYosys runs by name; YoWASP names each ``yowasp-<name>``.
_TOOLS = ("yosys", "yosys-smtbmc", "yosys-witness", "boolector")


class Counterexample(AssertionError):
    """A property failed: ``trace`` is the VCD, ``assertion`` the failing source line.

    ``inductive`` is False for a failure from the initial state (a real bug) and
    True for an induction step that fails from an unreachable state (the harness
    lacks an invariant, or ``depth`` is too short).
    """

    def __init__(self, message, trace, assertion, inductive):
        super().__init__(message)
        self.trace, self.assertion, self.inductive = trace, assertion, inductive


class Inside:
    """The internal signals of an elaborated design, by dotted path (``"sub.name"``).

    Invariants that make a property inductive often speak of registers a design
    keeps to itself; the harness reads them here rather than the design exporting
    them for its proofs. (This and :meth:`Proof.open` read Amaranth 0.5's
    fragments and modules, the version the project pins.)
    """

    def __init__(self, fragment):
        self.fragment = fragment

    def __getitem__(self, path):
        *subs, name = path.split(".")
        fragment = self.fragment
        for sub in subs:
            fragment = fragment.find_subfragment(sub)
        found = {id(s): s for stmts in fragment.statements.values() for stmt in stmts
                 for s in (*stmt._lhs_signals(), *stmt._rhs_signals()) if s.name == name}
        if len(found) != 1:
            raise KeyError(f"{path}: {len(found)} signals of that name in the design")
        return found.popitem()[1]


class Proof:
    """A design under a harness, proven by :meth:`run`.

    Parameters
    ----------
    name : names the proof's working folder (under the cache's ``formal/``), where
        its traces stay for viewing.
    depth : cycles of the base case and of the induction step.

    Members
    -------
    m : the harness's module; statements, ``Assume`` and ``Assert`` go here.
    """

    def __init__(self, name, depth):
        self.name, self.depth = name, depth
        self.m = Module()
        self.m.domains.sync = domain = ClockDomain(reset_less=True)
        self._free = [domain.clk]

    def open(self, design, *path):
        """``design`` elaborated, and the submodule at ``path`` (names) within it, for the
        harness to add what it needs inside (a read port on a memory) before
        :meth:`include` takes the first in the design's place.

        Returns the elaborated design and that submodule's elaborated module; each
        level on the path takes the place of the submodule it elaborates.
        """
        body = inner = design.elaborate(None)
        design._MustUse__used = True        # elaborated here rather than by Fragment.get
        for name in path:
            outer = inner
            sub, src_loc = outer._named_submodules[name]
            inner = sub.elaborate(None)
            sub._MustUse__used = True
            outer._named_submodules[name] = (inner, src_loc)
        return body, inner

    def include(self, design, name="dut"):
        """Add ``design`` (elaboratable) under the harness; return its :class:`Inside`."""
        fragment = Fragment.get(design, None)
        self.m.submodules[name] = fragment
        return Inside(fragment)

    def free(self, *values):
        """Let the solver choose ``values`` (undriven signals or views of them) each cycle."""
        self._free += [Value.cast(value) for value in values]
        return values[0] if len(values) == 1 else values

    def choice(self, name):
        """A new bit the solver chooses on every cycle."""
        return self.free(Signal(name=name))

    def registered(self, value, name=None):
        """``value`` one cycle late (its initial value on the first cycle)."""
        late = Signal.like(value, name=name or "late")
        self.m.d.sync += late.eq(value)
        return late

    def run(self):
        """Prove every assertion; return the seconds taken, or raise :class:`Counterexample`."""
        _boolector_ready()
        folder = cache_dir("formal", self.name)
        text = rtlil.convert(self.m, ports=self._free, name="top")
        with locked(folder):
            (folder / "top.il").write_text(text)
            (folder / "proof.sby").write_text(_SBY.format(depth=self.depth))
            start = time.monotonic()
            proc = subprocess.run([yowasp("sby"), "-f", "proof.sby"], cwd=folder,
                                  capture_output=True, text=True,
                                  env=_environment(folder / "bin"))
            seconds = time.monotonic() - start
        log = proc.stdout + proc.stderr
        if proc.returncode == 0:
            return seconds
        raise _failure(self.name, folder, log)


_SBY = """\
[options]
mode prove
depth {depth}

[engines]
smtbmc boolector

[script]
read_rtlil top.il
prep -top top

[files]
top.il
"""


def _environment(folder):
    """The environment with SymbiYosys's tools on PATH: links in ``folder`` to this
    interpreter's YoWASP builds (made anew, so a cache shared by two virtualenvs never
    runs the other's)."""
    folder.mkdir(exist_ok=True)
    for name in _TOOLS:
        link = folder / name
        link.unlink(missing_ok=True)
        link.symlink_to(yowasp(name))
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


@functools.cache
def _boolector_ready():
    """Run Boolector once: its first run prints a line that smtbmc would take for its answer."""
    subprocess.run([yowasp("boolector"), "--version"], capture_output=True, check=True)


def _failure(name, folder, log):
    """The :class:`Counterexample` (or :class:`ToolError`) a failed run's log describes."""
    trace = re.search(r"counterexample trace(?: \[(\w+)\])?: (\S+\.vcd)", log)
    where = re.search(r"failed assertion (\S+) at (.+):(\d+)", log)
    if not (trace and where):
        raise ToolError(f"proof {name}: SymbiYosys failed:\n" + "\n".join(log.splitlines()[-20:]))
    inductive = trace.group(1) == "induction"
    path = folder / trace.group(2)
    line = _statement(where.group(2), int(where.group(3)))
    kind = ("the induction step fails from a state no run may reach: state the invariant "
            "that excludes it, or prove deeper" if inductive
            else "counterexample from the initial state")
    return Counterexample(f"proof {name}: {kind}\n  assertion: {line}\n"
                          f"  at {where.group(2)}:{where.group(3)}\n  trace: {path}\n"
                          f"{table(path)}", path, line, inductive)


def _statement(path, number):
    """The source line ``number`` of ``path``, with the lines that close its brackets."""
    text = ""
    for n in range(number, number + 8):
        text += " " + linecache.getline(path, n).strip()
        if sum(text.count(o) - text.count(c) for o, c in ("()", "[]", "{}")) <= 0:
            break
    return text.strip()


def table(vcd):
    """The top-level signals of a VCD trace, one line each, a column per cycle."""
    names, steps, scope, step_code = {}, [], 0, None
    for line in Path(vcd).read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] in ("$scope", "$upscope"):
            scope += 1 if words[0] == "$scope" else -1
        elif words[0] == "$var" and words[4] == "smt_step":
            step_code = words[3]
        elif words[0] == "$var" and scope == 1 and words[4][0] not in "$/" and words[4] != "clk":
            names[words[3]] = words[4]
        elif words[0][0] == "b" and len(words) == 2:
            if words[1] == step_code:
                steps.append(dict(steps[-1]) if steps else {})
            elif steps:
                steps[-1][words[1]] = int(words[0][1:].replace("x", "0"), 2)
    width = max((len(n) for n in names.values()), default=0)
    rows = sorted((name, [step.get(code, 0) for step in steps]) for code, name in names.items())
    return "\n".join(f"  {name:>{width}} " + " ".join(f"{v:>3}" for v in row)
                     for name, row in rows)
