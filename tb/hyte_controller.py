"""Testbench of the HYTE tiling controller (``hyte_controller``): a job's config, and
after each tile command the quadrant counts of that command's B tile.

The counts come from a function of the command (random, or a real matrix's tiles as
the accessor counted them): the model
(:class:`~sparseforge.sim.models.hyte_controller.Controller`) is run with it up front,
which gives every command and the counts of each that fetches B's tile
(:func:`~sparseforge.sw.hyte_schedule.hyte_fetches`); count ``n`` waits for the ``n``-th such
command (an ``after`` gate), so the bench runs natively as well.
"""

from dataclasses import dataclass

from ..sim.models.hyte_controller import Controller, counts_dict
from ..sim.runners import pysim
from ..sw.hyte_schedule import hyte_fetches
from . import native
from .streams import Bench


@dataclass(frozen=True)
class ControllerRun:
    cycles: int
    commands: list
    command_cycles: list


def random_oracle(rng, most):
    """Counts drawn at random up to ``most``, some tiles dense in one quadrant."""
    def oracle(_command):
        scale = most if rng.random() < 0.3 else max(1, most // 8)
        return [[rng.randint(0, scale) for _ in range(2)] for _ in range(2)]
    return oracle


class ControllerBench(Bench):
    """Runs one job of ``config`` on ``component``, counts from ``oracle``."""

    def __init__(self, component, config, oracle, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("config", "counts", "tile"), 0.7), **(rates or {})}
        commands, counts = Controller(config, component.rule).commands(oracle)
        self.outputs = {"tile": commands}
        self.counts = counts
        self.fetches = hyte_fetches(commands)
        self.sources = [self.source_on("config", [config.as_dict()], rates["config"]),
                        self.source_on("counts", [counts_dict(c) for c in counts],
                                       rates["counts"],
                                       after={"tile": [n + 1 for n, fetch in enumerate(
                                           self.fetches) if fetch]})]
        self.sink = self.sink_on("tile", rates["tile"], len(commands))
        self.drivers = [*self.sources, self.sink]

    def check(self, io, cycle):
        if self.sink.fired is not None:
            n = len(self.sink.received) - 1
            if n >= len(self.outputs["tile"]) or self.sink.fired != self.outputs["tile"][n]:
                want = self.outputs["tile"][n] if n < len(self.outputs["tile"]) else None
                self.fail(f"tile {n}: {self.sink.fired}, model says {want}")
            if io.get("keep") == self.fetches[n]:
                self.fail(f"tile {n}: keep {io.get('keep')}, the model's fetches "
                          f"{self.fetches[n]}")

    def finished(self):
        return all(s.done for s in self.sources) and \
            len(self.sink.received) == self.sink.expected

    def result(self):
        return ControllerRun(self.cycle, [v for _, v in self.sink.received],
                             [c for c, _ in self.sink.received])


def simulate(component, config, oracle, seed, rates=None, engine="pysim", work_dir=None):
    """``(commands, bench)``: one job through ``component`` on either simulator."""
    bench = ControllerBench(component, config, oracle, seed, rates)
    if engine == "native":
        return native.run(bench, work_dir=work_dir).outputs["tile"], bench
    return pysim(bench).commands, bench
