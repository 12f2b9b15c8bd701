# amaranth: UnusedElaboratable=no
"""Testbench of the Gustavson SpGEMM engine (``gustavson``): C = A·B on either simulator.

The host cuts B into the engine's column tiles (:mod:`sparseforge.sw.gustavson`), one
job each; A's rows stream in per job, every stream stalling at random. Each PE's B port
is served by a sink of its requests and a source of its rows' elements, each element
held until the request of its row has been taken (a later cycle), so a row's answer
comes after a random latency that the response's coin draws; the requests must name the
rows the PE's entries of A name, in order. C is rebuilt from the words the engine emits
(each row's framing checked) and must equal the golden model's and scipy's ``A @ B``
exactly. The streams are gated only by their coins and the request counts, and the
sinks know their counts up front (from the model's work), so the same bench runs on
Amaranth's simulator and natively on Verilator (:mod:`sparseforge.tb.native`) alike.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..sim.models import gustavson as model
from ..sw import gustavson as host
from ..sw import wire
from ..sw.ciss import bits_values
from . import native
from .streams import Bench, Columns

RATE = 0.7
"""Each stream's chance to act on a cycle, by default (B's answers: :data:`ANSWER`)."""

ANSWER = 0.4
"""A B port's chance to offer its next element on a cycle: a row's first element comes a
geometric number of cycles (mean 1 / ANSWER) after its request, later ones as slowly."""


@dataclass(frozen=True)
class GustavsonResult:
    """One run: its cycles, C as the engine computed it (CSR of A·B's shape), the B rows
    each PE requested, and the model's work per row of every job."""

    cycles: int
    c: sp.csr_matrix
    requests: list
    work: list

    @property
    def multiplies(self):
        """B elements scaled, every job's."""
        return sum(w.multiplies for work in self.work for w in work)

    def utilization(self, pes):
        """Multiplies over the ``pes`` multipliers' cycles."""
        return self.multiplies / (pes * self.cycles)


class GustavsonBench(Bench):
    """C = ``a`` · ``b`` through ``component`` (a :class:`~sparseforge.hw.gustavson.
    Gustavson`), one job per column tile of B; each stream acts with its chance in
    ``rates`` (``job``, ``a``, ``c``, ``request``, ``response``)."""

    def __init__(self, component, a, b, seed, rates=None):
        super().__init__(component, seed)
        rates = {"job": RATE, "a": RATE, "c": RATE, "request": RATE, "response": ANSWER,
                 **(rates or {})}
        self.a, self.b = host.operands(a, b)
        L, pes, cols = component.lanes, component.pes, component.cols
        host.check_fits(self.a, self.b, component.index_width, component.acc_width)
        self.tiles = host.column_tiles(self.b, cols)
        entries, self.work, self.want = [], [], []
        requests = [[] for _ in range(pes)]
        answers = [{"col": [], "value": [], "last": [], "empty": [], "after": []}
                   for _ in range(pes)]
        row = 0                                 # C's rows dealt so far, across jobs
        for tile in self.tiles:
            entries.append(host.a_entries(self.a, component.value_width))
            (rows, cs, values), work = model.tile(self.a, tile.b, tile.offset, cols, L)
            self.work.append(work)
            self.want.append(sp.csr_matrix((values, (rows, cs)), shape=self.a.shape[:1]
                                           + self.b.shape[1:]))
            self._serve(tile, row, requests, answers, component)
            row += self.a.shape[0]
        self.requests = requests
        words = sum(w.nonzeros // L + 1 for work in self.work for w in work)
        joined = {k: np.concatenate([e[k] for e in entries]) for k in entries[0]} \
            if entries else {}
        if entries:
            ends = np.cumsum([len(e["last"]) for e in entries]) - 1
            joined["last"] = np.zeros(len(joined["k"]), dtype=np.int64)
            joined["last"][ends] = 1
        self.drivers = [
            self.source_on("job", Columns({"offset": [t.offset for t in self.tiles]}),
                           rates["job"]),
            self.source_on("a", Columns(joined), rates["a"]),
        ]
        self.drivers += self.serve_b(answers, rates)
        self.drivers.append(self.sink_on("c", rates["c"], words))
        self.patience = 1_000 + 4 * component.cols
        products = sum(w.items + w.vectors for work in self.work for w in work)
        self.max_cycles = 200 + 40 * (products + words + len(joined.get("k", ())))

    def serve_b(self, answers, rates):
        """The drivers of the B ports: each PE's requests taken by a sink (checked
        against ``self.requests``) and its answers a source, each after its request."""
        drivers = []
        for p, requests in enumerate(self.requests):
            ask, answer = f"b__{p}__request", f"b__{p}__response"
            drivers.append(self.sink_on(ask, rates["request"], len(requests)))
            after = {ask: answers[p].pop("after")}
            drivers.append(self.source_on(answer, Columns(answers[p]), rates["response"],
                                          after=after))
            self.outputs[ask] = [{"row": int(k)} for k in requests]
        return drivers

    def _serve(self, tile, first_row, requests, answers, component):
        """Each PE's requests of ``tile``'s job and their answers, A's rows dealt in turn
        from C's row ``first_row``; an answer waits for its own request."""
        a, b, pes, vw = self.a, tile.b, component.pes, component.value_width
        for i in range(a.shape[0]):
            p = (first_row + i) % pes
            for k in a.indices[a.indptr[i]:a.indptr[i + 1]]:
                requests[p].append(int(k))
                n = len(requests[p])
                lo, hi = b.indptr[k], b.indptr[k + 1]
                got = answers[p]
                if lo == hi:
                    items = {"col": [0], "value": [0], "last": [1], "empty": [1]}
                else:
                    last = np.zeros(hi - lo, dtype=np.int64)
                    last[-1] = 1
                    items = {"col": b.indices[lo:hi], "value": wire.signed_words(
                        b.data[lo:hi], vw, "B"), "last": last,
                        "empty": np.zeros(hi - lo, dtype=np.int64)}
                for key, values in items.items():
                    got[key].extend(int(v) for v in values)
                got["after"].extend([n] * len(items["last"]))

    def check(self, io, cycle):
        for driver in self.drivers:
            expected = getattr(driver, "expected", None)
            if expected is not None and len(driver.received) > expected:
                self.fail(f"{driver.name}: more than the {expected} items expected")

    def from_outputs(self, cycles, outputs):
        comp = self.component
        for p in range(comp.pes):
            if f"b__{p}__request" not in outputs:
                continue                # served inside the design
            got = [r["row"] for r in outputs[f"b__{p}__request"]]
            if got != self.requests[p]:
                bad = next(n for n, (g, w) in enumerate(zip(got, self.requests[p],
                                                           strict=False)) if g != w)
                self.fail(f"PE {p}'s request {bad} is row {got[bad]}, expected "
                          f"{self.requests[p][bad]}")
        c = rebuild(comp, self.a.shape[0], self.b.shape[1], len(self.tiles), outputs["c"])
        return GustavsonResult(cycles, c, [list(r) for r in self.requests], self.work)

    def product(self):
        """C as the model computes it (its tiles joined)."""
        return host.join((self.a.shape[0], self.b.shape[1]), self.want)


def rebuild(component, rows, cols, jobs, words):
    """C (rows x cols) from the engine's words for ``jobs`` jobs of ``rows`` rows each:
    per row, full words then one ``last`` word holding the rest."""
    L, aw = component.lanes, component.acc_width
    out_rows, out_cols, out_values = [], [], []
    row, held = 0, []
    for word in words:
        if not word["last"] and word["count"] != L:
            raise AssertionError(f"row {row % max(rows, 1)}: a word of {word['count']} "
                                 f"records before the row's last")
        held += word["lanes"][:word["count"]]
        if word["last"]:
            if word["count"] == L:
                raise AssertionError(f"row {row % rows}: a last word of {L} records")
            cs = [r["col"] for r in held]
            if cs != sorted(set(cs)):
                raise AssertionError(f"row {row % rows}: columns {cs} not increasing")
            out_rows += [row % rows] * len(held)
            out_cols += cs
            out_values += [r["value"] for r in held]
            row, held = row + 1, []
    if row != rows * jobs or held:
        raise AssertionError(f"{row} rows of C emitted, expected {rows * jobs}")
    values = bits_values(np.array(out_values, dtype=np.uint64), "int", aw)
    c = sp.csr_matrix((values, (out_rows, out_cols)), shape=(rows, cols), dtype=np.int64)
    c.sort_indices()
    return c


def simulate(component, a, b, seed, rates=None, engine="pysim", work_dir=None):
    """``(result, bench)``: C = ``a`` · ``b`` through ``component`` on Amaranth's simulator
    (``pysim``) or natively on Verilator (``native``)."""
    bench = GustavsonBench(component, a, b, seed, rates)
    return native.simulate(bench, engine, work_dir), bench
