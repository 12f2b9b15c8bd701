# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus MLU (``tensaurus_mlu``) and the matrix memory it reads.

Matrices are laid out as :class:`~sparseforge.hw.tensaurus_mlu.MluSignature` says (a row is
its chunk words in order, row after row) by :func:`~sparseforge.sw.wire.chunk_words`;
the memory answers
reads in order, each answer offered once its read has been made and then at random (a
random latency). The composite's bench (:mod:`sparseforge.tb.tensaurus`) uses the same
memory.
"""

from dataclasses import dataclass

import numpy as np

from ..sw import wire
from . import native
from .streams import Bench

RATE = 0.7


def expected_fills(mats, cols, vlen, broadcast=False, half=0):
    """Each column's fills ``{half, operand, row, chunk, lanes}`` of ``mats`` into
    ``half``, in order (with ``broadcast``, operand 1's chunks to every column)."""
    fills = [[] for _ in range(cols)]
    for operand, matrix in enumerate(mats):
        whole = broadcast and operand == 1
        for r in range(matrix.shape[0]):
            for g in range(matrix.shape[1] // vlen):
                fill = {"half": half, "operand": operand, "row": r,
                        "chunk": g if whole else g // cols,
                        "lanes": [int(v) for v in matrix[r, g * vlen:(g + 1) * vlen]]}
                for q in range(cols) if whole else [g % cols]:
                    fills[q].append(fill)
    return fills


def load(mats, vlen, dw):
    """``(start, words, reads)``: the MLU's start item for ``mats`` (one or two matrices)
    laid from address 0, the memory's words and the reads it must see."""
    words = [[int(w) for w in wire.chunk_words(m, vlen, dw)] for m in mats]
    start = {"base0": 0, "rows0": mats[0].shape[0], "base1": len(words[0]),
             "rows1": mats[1].shape[0] if len(mats) > 1 else 0}
    words = [w for image in words for w in image]
    return start, words, list(range(len(words)))


@dataclass(frozen=True)
class MluRun:
    cycles: int
    reads: list
    fills: list         # per column


class MluBench(Bench):
    """The MLU loading ``mats`` (one or two ``rows x R`` integer matrices; with
    ``broadcast`` the second is ``rows x b_chunks * vlen``) into the scratchpads'
    ``half``."""

    def __init__(self, component, mats, seed, rates=None, broadcast=False, half=0):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "request", "response", "fills"), RATE),
                 **(rates or {})}
        start, words, self.reads = load(mats, component.vlen, component.dw)
        self.want = expected_fills(mats, component.cols, component.vlen, broadcast, half)
        n = len(words)
        self.sources = [self.source_on("start", [{**start, "half": half,
                                                  "broadcast": int(broadcast)}],
                                       rates["start"]),
                        self.source_on("mem__response", words, rates["response"],
                                       after={"mem__request": np.arange(1, n + 1)})]
        self.sinks = [self.sink_on("mem__request", rates["request"], n)]
        self.sinks += [self.sink_on(f"fills__{q}", rates["fills"], len(self.want[q]))
                       for q in range(component.cols)]
        self.drivers = [*self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        cols = self.component.cols
        return MluRun(cycles, [int(a) for a in outputs["mem__request"]],
                      [outputs[f"fills__{q}"] for q in range(cols)])


def simulate(component, mats, seed, rates=None, engine="native", work_dir=None,
             broadcast=False, half=0):
    """``(run, bench)`` of the MLU loading ``mats`` into ``half``."""
    bench = MluBench(component, mats, seed, rates, broadcast, half)
    return native.simulate(bench, engine, work_dir), bench
