"""An ``accel`` run's memory, as the host lays it out, and its registers.

Memory is byte-addressed; every region starts on a 4 KiB page and holds words of one
width, word ``n`` at ``base + n * word_bytes(width)``
(:func:`~sparseforge.sw.wire.word_bytes`), as the AXI master reads them:

- ``a_rowptr``, ``a_colid``, ``a_values``: A as the user stores it, CSR's three arrays
  (row pointers of ``addr_width`` bits, column ids of ``iw``, values of ``dw``), nothing
  converted;
- ``b``: B as the MLU reads it, one panel of ``R`` columns after another, each its K rows
  of ``tlen`` words of ``cols`` chunks (:func:`~sparseforge.sw.wire.mlu_words`); in SpMV
  b's rows of ``per`` values (:func:`~sparseforge.sw.wire.mv_layout`), a word each, the
  row in its first chunk;
- for SpMTTKRP, instead of A: the tensor as COO sorted by ``(i, j, k)``, its i ids in
  ``a_rowptr``, j ids in ``a_colid``, k ids in ``a_kid`` (``iw`` bits each) and values
  in ``a_values``; and ``c``, C's panels as B's, K rows each;
- ``tiles``: the tile list (:func:`~sparseforge.sw.accel_plan.tile_words`);
- ``out``: where the MSU writes Y, one panel of R columns after another, each M rows of
  ``tlen * cols`` words of ``vlen`` accumulators (:func:`~sparseforge.sw.wire.
  tensaurus_out_word`).

Host memory follows the nonzeros and B's and Y's own sizes.
"""

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from . import accel_plan, wire
from .wire import from_bytes, to_bytes

PAGE = 4096
ADDR_WIDTH = 24
"""Bits of a word address on every port of the accelerator
(:attr:`~sparseforge.hw.compose.accel.Accel.ADDR`), and of a row pointer: A's nonzeros
at most ``2**24 - 1``."""


@dataclass(frozen=True)
class Region:
    """``count`` words of ``width`` bits from byte ``base``."""

    base: int
    width: int
    count: int

    @property
    def word(self):
        return wire.word_bytes(self.width)

    @property
    def size(self):
        return self.count * self.word

    @property
    def word_base(self):
        """The base as a word address of this region's width."""
        return self.base // self.word


def layout(plan_, nnz):
    """``{name: Region}`` of a run of ``plan_`` on a matrix of ``nnz`` nonzeros."""
    c, m = plan_.config, plan_.shape[0]
    chunks = c.tlen * c.cols
    mlu = c.cols * c.vlen * c.dw
    a = ({"a_rowptr": (c.iw, nnz), "a_colid": (c.iw, nnz), "a_kid": (c.iw, nnz)}
         if plan_.mttkrp else {"a_rowptr": (ADDR_WIDTH, m + 1), "a_colid": (c.iw, nnz)})
    sizes = {**a, "a_values": (c.dw, nnz), "b": (mlu, plan_.b_words),
             **({"c": (mlu, plan_.c_words)} if plan_.mttkrp else {}),
             "tiles": (wire.width(wire.ACCEL_TILE),
                       sum(len(band.inputs) for band in plan_.bands)),
             "out": (c.vlen * c.acc_width, plan_.passes * m * chunks)}
    return place(sizes)


def place(sizes, skew=None):
    """``{name: Region}`` for ``sizes`` (``{name: (width, count)}``): each region on its
    own pages, in order from the second page (address 0 is no operand's), ``skew[name]``
    bytes into its first page (0 where not given), checked."""
    regions, at, skew = {}, PAGE, skew or {}
    for name, (width, count) in sizes.items():
        regions[name] = Region(at + skew.get(name, 0), width, count)
        at += -(-(skew.get(name, 0) + max(regions[name].size, 1)) // PAGE) * PAGE
    check(regions)
    return regions


def blank(regions):
    """A run's memory, zeroed: every byte of ``regions``, to the end of the last page."""
    end = max(r.base + r.size for r in regions.values())
    return np.zeros(-(-end // PAGE) * PAGE, dtype=np.uint8)


def check(regions):
    """Refuse ``regions`` (``{name: Region}``) the accelerator would read wrongly: a base
    off its words, a word past :data:`ADDR_WIDTH` bits of address (the port's address
    wraps onto the image's start), or two regions sharing a byte. :func:`layout`'s are
    paged apart; a layout made by hand is checked here."""
    for name, r in regions.items():
        if r.base % r.word:
            raise ParameterError(f"region {name} at byte {r.base:#x}: not on its "
                                 f"{r.word}-byte words")
        if r.base + r.size > r.word << ADDR_WIDTH:
            raise ParameterError(f"region {name} ends at byte {r.base + r.size:#x}: past "
                                 f"{ADDR_WIDTH}-bit word addresses of {r.word} bytes "
                                 f"({r.word << ADDR_WIDTH:#x})")
    spans = sorted((r.base, r.base + r.size, name) for name, r in regions.items() if r.size)
    for (_, end, name), (base, _, other) in itertools.pairwise(spans):
        if end > base:
            raise ParameterError(f"regions {name} and {other} overlap: {name} ends at byte "
                                 f"{end:#x}, {other} starts at {base:#x}")


def image(plan_, matrix, b):
    """``(memory, regions)``: the bytes of a run's memory (the output's zeroed) and its
    :func:`layout`. For SpMTTKRP ``matrix`` is the tensor and ``b`` the factors ``(B,
    C)``."""
    c = plan_.config
    if plan_.mttkrp:
        coo = accel_plan.tensor_image(matrix, c)
        factors = [np.asarray(f, dtype=np.int64) for f in b]
        stored = {"a_rowptr": coo.i, "a_colid": coo.col, "a_kid": coo.k,
                  "a_values": coo.bits.astype(np.int64)}
        nnz, b = len(coo.i), factors[0]
    else:
        a = sp.csr_array(matrix)
        b = np.asarray(b, dtype=np.int64).reshape(a.shape[1], -1)
        stored = {"a_rowptr": a.indptr, "a_colid": a.indices,
                  "a_values": a.data.astype(np.int64) & ((1 << c.dw) - 1)}
        nnz = a.nnz
    regions = layout(plan_, nnz)
    memory = blank(regions)
    contents = {
        **stored,
        "b": wire.mlu_words(_b_rows(plan_, b), c.cols, c.vlen, c.dw),
        "tiles": accel_plan.tile_words(plan_),
    }
    if plan_.mttkrp:
        contents["c"] = wire.mlu_words(_b_rows(plan_, factors[1]), c.cols, c.vlen, c.dw)
    for name, values in contents.items():
        put(memory, regions[name], values)
    return memory, regions


def _b_rows(plan_, b):
    """B's rows as the MLU loads them: each pass's panel of ``R`` columns, panel after
    panel; in SpMV b's values ``per`` a row, padded to ``vlen`` lanes."""
    c = plan_.config
    if plan_.mv:
        per = wire.mv_layout(c.vlen)[0]
        rows = np.pad(b[:, 0], (0, -len(b) % per)).reshape(-1, per)
        return np.pad(rows, ((0, 0), (0, c.vlen - per)))
    R = c.width
    panels = np.zeros((plan_.passes, b.shape[0], R), dtype=np.int64)
    for p in range(plan_.passes):
        part = b[:, p * R:(p + 1) * R]
        panels[p, :, :part.shape[1]] = part
    return panels.reshape(-1, R)


def put(memory, region, values):
    """Write ``values`` (ints; Python ints past 64 bits) as ``region``'s words."""
    memory[region.base:region.base + region.size] = to_bytes(values, region.word)


def read(memory, region):
    """``region``'s words in ``memory``, as :func:`from_bytes` gives them."""
    return from_bytes(memory[region.base:region.base + region.size], region.word)


def region_registers(regions):
    """The registers naming ``regions``: the tile list's base and count, every other
    region's base and size (``{name}_base``, ``{name}_size``)."""
    values = {"tiles_base": regions["tiles"].base, "tiles_count": regions["tiles"].count}
    for name, region in regions.items():
        if name != "tiles":
            values[f"{name}_base"], values[f"{name}_size"] = region.base, region.size
    return values


def registers(plan_, regions):
    """The run's register values (``{name: value}``, :mod:`~sparseforge.sw.regmap`'s RW
    registers) for its ``regions``."""
    c = plan_.config
    kernel = wire.TensaurusKernel[{"spmm": "MM", "spmv": "MV",
                                   "spmttkrp": "MTTKRP"}[plan_.kernel]]
    values = {"kernel": int(kernel), "passes": plan_.passes,
              "b_panel": plan_.shape[1] * c.tlen * regions["b"].word,
              "out_panel": plan_.shape[0] * c.tlen * c.cols * regions["out"].word,
              **region_registers(regions)}
    if plan_.mttkrp:
        values |= {"c_panel": plan_.shape[2] * c.tlen * regions["c"].word,
                   "c_rows": plan_.shape[2]}
    return values


def output(plan_, memory, regions):
    """Y (``M x N``, int64) read from the output region of ``memory``."""
    c, m = plan_.config, plan_.shape[0]
    words = read(memory, regions["out"])
    values = wire.tensaurus_out_values(words.astype(object), c.vlen, c.acc_width)
    panels = values.reshape(plan_.passes, m, -1)
    return np.concatenate(list(panels), axis=1)[:, :plan_.columns]


def out_words(plan_, y):
    """The output region's words of a run whose output is ``y``, as the engine writes
    them (the inverse of :func:`output`): panels of ``R`` columns, each row's
    ``tlen * cols`` chunks of ``vlen``; padding zero, as the zero-padded operands make
    it."""
    c, m = plan_.config, plan_.shape[0]
    padded = np.zeros((m, plan_.passes * c.width), dtype=np.int64)
    padded[:, :y.shape[1]] = y
    chunks = padded.reshape(m, plan_.passes, c.tlen * c.cols, c.vlen).transpose(1, 0, 2, 3)
    return wire.tensaurus_out_words(chunks.reshape(-1, c.vlen), c.acc_width)
