"""A bench of the accelerator's sequencer (:class:`~sparseforge.hw.accel_control.AccelControl`):
its tile list served from a memory with DRAM timing, its jobs taken under random
back-pressure and checked against the host's (:func:`sparseforge.sw.accel_plan.jobs`)."""

import numpy as np

from ..sw import accel_plan
from .dram import DramPort
from .streams import Bench, Codec, Static


class StartPulses:
    """Pulses ``start`` once at the first cycle, and again each time ``busy`` has fallen,
    ``runs`` times in all."""

    def __init__(self, runs):
        self.runs, self.pulsed, self.was_busy, self.now = runs, 0, False, 0
        self.fired = None

    def idle(self, io):
        io.set("start", 0)

    def drive(self, io, cycle):
        self.now = int(self.pulsed < self.runs and not self.was_busy)
        io.set("start", self.now)

    def sample(self, io, cycle):
        self.pulsed += self.now
        self.fired = cycle if self.now else None
        self.was_busy = bool(io.get("busy")) or self.now


class AccelControlBench(Bench):
    """``plan`` run ``runs`` times back to back with ``bases``; ``rate`` each stream's
    readiness."""

    def __init__(self, component, plan, seed, bases=None, runs=1, rate=0.5):
        super().__init__(component, seed)
        bases = bases or accel_plan.Bases()
        words = accel_plan.tile_words(plan)
        image = np.zeros(bases.tiles + len(words), dtype=object)
        image[bases.tiles:] = words
        self.expected = {name: items * runs for name, items in
                         zip(("passes", "convert", "compute"), accel_plan.jobs(plan, bases),
                             strict=True)}
        config = {"tiles_base": bases.tiles, "tiles_count": len(words),
                  "passes": plan.passes, "b_base": bases.b, "b_panel": bases.b_panel,
                  "out_base": bases.out, "out_panel": bases.out_panel}
        config = Codec(component.config.shape()).pack(config)
        self.drivers = [Static("config", config), StartPulses(runs),
                        DramPort("tiles", image, self.codecs),
                        *(self.sink_on(name, rate, len(items))
                          for name, items in self.expected.items())]

    def from_outputs(self, cycles, outputs):
        return cycles, outputs
