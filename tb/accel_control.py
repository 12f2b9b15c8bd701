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
                  "out_base": bases.out, "out_panel": bases.out_panel, "mv": int(plan.mv),
                  "mttkrp": int(plan.mttkrp), "c_base": bases.c, "c_panel": bases.c_panel,
                  "c_rows": plan.shape[2] if plan.mttkrp else 0}
        config = Codec(component.config.shape()).pack(config)
        self.drivers = [Static("config", config), StartPulses(runs),
                        DramPort("tiles", image, self.codecs),
                        *(self.sink_on(name, rate, len(items))
                          for name, items in self.expected.items())]

    def from_outputs(self, cycles, outputs):
        return cycles, outputs


class ConverterFeedBench(Bench):
    """:class:`~sparseforge.hw.accel_control.ConverterFeed` between the sequencer's
    windows and a converter stand-in: each tile's entries (ints ``tile * 100 + n``)
    offered once its job is taken and the tile before has its count (as the converter
    takes a job only between tiles), its count (``counts``, the host's ``entries`` unless a
    test makes one wrong) once they are."""

    def __init__(self, component, jobs, seed, counts=None, rate=0.5):
        super().__init__(component, seed)
        sizes = [job["entries"] for job in jobs]
        counts = counts or sizes
        ciss = [t * 100 + n for t, size in enumerate(sizes) for n in range(size)]
        tile_of = [t for t, size in enumerate(sizes) for _ in range(size)]
        before = np.cumsum([0, *sizes])
        self.expected = {
            "job": [{"i0": j["i0"], "rows": j["rows"], "k0": j["k0"], "k1": j["k0"] + j["kn"],
                     "first": j["first"]} for j in jobs],
            "entries": [item for t, job in enumerate(jobs)
                        for item in ([{"data": t * 100 + n, "end": 0}
                                      for n in range(sizes[t])]
                                     + ([{"data": 0, "end": 1}] if job["closes"] else []))]}
        self.drivers = [
            self.source_on("jobs", jobs, rate),
            self.source_on("ciss", ciss, rate, after={"job": [t + 1 for t in tile_of],
                                                      "count": tile_of}),
            self.source_on("count", counts, rate,
                           after={"job": list(range(1, len(jobs) + 1)),
                                  "ciss": before[1:]}),
            self.sink_on("job", rate, len(jobs)),
            self.sink_on("entries", rate, len(self.expected["entries"])),
            Static("clear", 0)]

        self.error = False

    def check(self, io, cycle):
        self.error = self.error or bool(io.get("error"))

    def from_outputs(self, cycles, outputs):
        return outputs

    def finished(self):
        return super().finished() and self.streams["count"].done
