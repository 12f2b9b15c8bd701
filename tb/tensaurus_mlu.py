# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus MLU (``tensaurus_mlu``) and the matrix memory it reads.

Matrices are laid out in words of ``cols`` chunks as
:class:`~sparseforge.hw.tensaurus_mlu.MluSignature` says, by
:func:`~sparseforge.sw.wire.mlu_words` (a row is its words in order, row after row; each
load's matrices after the previous load's). The memory answers each load's reads out of
order within a window of reads (:func:`~sparseforge.tb.tensaurus_tlu.out_of_order`, the
TLU's memory), each answer offered once its read has been made and then at random.
"""

from dataclasses import dataclass

import numpy as np

from ..sw import wire
from . import native
from .streams import Bench
from .tensaurus_tlu import answers

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


def memory(loads, cols, vlen, dw, tags, window, rng):
    """``(starts, reads, responses, after)`` of ``loads`` (each one or two matrices) laid
    one after the other in memory: each load's start fields, then as
    :func:`~sparseforge.tb.tensaurus_tlu.answers`."""
    starts, words, addrs = [], [], []
    for mats in loads:
        images = [[int(w) for w in wire.mlu_words(m, cols, vlen, dw)] for m in mats]
        base = len(words)
        starts.append({"base0": base, "rows0": mats[0].shape[0], "base1": base + len(images[0]),
                       "rows1": mats[1].shape[0] if len(mats) > 1 else 0})
        words += [w for image in images for w in image]
        addrs.append(range(base, len(words)))
    return starts, *answers(addrs, words, tags, window, rng)


@dataclass(frozen=True)
class MluRun:
    cycles: int
    reads: list         # {addr, tag}
    fills: list         # per column


class MluBench(Bench):
    """The MLU loading ``mats`` (one or two ``rows x R`` integer matrices; with
    ``broadcast`` the second is ``rows x b_chunks * vlen``) into the scratchpads'
    ``half``; or, ``mats`` a list of such loads, each after the other into alternate
    halves from ``half``. The memory answers out of order within ``window`` reads
    (default: the MLU's tags; 1, in order)."""

    def __init__(self, component, mats, seed, rates=None, broadcast=False, half=0,
                 window=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "request", "response", "fills"), RATE),
                 **(rates or {})}
        loads = [mats] if isinstance(mats[0], np.ndarray) else mats
        halves = [(half + n) % 2 for n in range(len(loads))]
        c = component
        starts, self.reads, responses, after = memory(
            loads, c.cols, c.vlen, c.dw, c.tags, window or c.tags, np.random.default_rng(seed))
        wants = [expected_fills(m, c.cols, c.vlen, broadcast, h)
                 for m, h in zip(loads, halves, strict=True)]
        self.want = [[fill for want in wants for fill in want[q]] for q in range(c.cols)]
        starts = [{**start, "half": h, "broadcast": int(broadcast)}
                  for start, h in zip(starts, halves, strict=True)]
        self.sources = [self.source_on("start", starts, rates["start"]),
                        self.source_on("mem__response", responses, rates["response"],
                                       after={"mem__request": after})]
        self.sinks = [self.sink_on("mem__request", rates["request"], len(self.reads))]
        self.sinks += [self.sink_on(f"fills__{q}", rates["fills"], len(self.want[q]))
                       for q in range(c.cols)]
        self.drivers = [*self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        cols = self.component.cols
        return MluRun(cycles, list(outputs["mem__request"]),
                      [outputs[f"fills__{q}"] for q in range(cols)])


def simulate(component, mats, seed, rates=None, engine="native", work_dir=None,
             broadcast=False, half=0, window=None):
    """``(run, bench)`` of the MLU loading ``mats`` (a load, or loads back to back) into
    ``half``."""
    bench = MluBench(component, mats, seed, rates, broadcast, half, window)
    return native.simulate(bench, engine, work_dir), bench
