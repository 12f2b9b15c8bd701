"""CSR to BSR on the ``csr_to_bsr`` block (MINT Fig. 8e): its bench, and ``convert --engine rtl``.

:class:`BsrBench` streams CSR matrices, back to back, into the block: each one's row
pointers and its nonzeros ``{col, value}`` (value bits from
:func:`~sparseforge.sw.wire.value_bits`), and takes the block-row pointers and the
blocks, with random back-pressure on all four streams. Its result is what the hardware
emitted; :func:`blocks_to_bsr` rebuilds the BSR matrix from it, and :func:`run` does
both natively on Verilator. ``convert --engine rtl`` builds one block per block shape and
value type (:data:`DEPTH`, :data:`WIDTH`), whatever the matrix's size: rows longer than
its banks go through in passes of block columns (:mod:`sparseforge.sw.passes`).

:class:`BsrCooBench` streams BSR matrices, back to back, into ``bsr_to_coo``: each one's
block-row pointers, and on its memory port the block words
(:func:`~sparseforge.sw.wire.bsr_block`) its reads ask for, each answer offered once its
read is made (in order, at random after that), as memory holding the matrices' blocks one
after the other answers them: the reads are known up front (each block row's blocks R
times), so the bench checks every address and runs natively. Its records are checked
against the golden converter's COO; :func:`run_coo` runs one natively.
"""

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..hw.convert_bsr import BsrToCoo, CsrToBsr
from ..sw import conversion, passes, wire
from . import native
from .convert import column_parts
from .convert_rlc import record_columns, records_to_coo
from .streams import Bench, Columns

ROW_PTR, ENTRIES, BLOCK_PTR, BLOCKS = "row_ptr", "entries", "block_ptr", "blocks"
REQUEST, RESPONSE, RECORDS = "mem__request", "mem__response", "records"

DEPTH, WIDTH = 1024, 32
"""The ``csr_to_bsr`` block ``--engine rtl`` builds, whatever the matrix: banks of 1,024
nonzeros and 32-bit columns, pointers and counts (beyond the shared data's largest); its
block shape is the conversion's, its values the matrix's value type. A matrix with longer
rows goes through in passes of block columns (:func:`~sparseforge.sw.passes.bank_passes`)."""

NATIVE_BITS = 128 * 32
"""The widest stream item a native run carries (128 words: ``sim/native_main.cpp``)."""


@dataclass(frozen=True)
class BsrResult:
    """What one run emitted: its cycles, the block-row pointers (``ptr``, ``last``) and
    the blocks (``block_col`` [b] and ``values`` [b, R * C] bits), in emission order."""

    cycles: int
    block_ptr: dict
    blocks: dict


@dataclass(frozen=True)
class BsrCooResult:
    """What one run of ``bsr_to_coo`` emitted: its cycles, the records' fields (arrays,
    in emission order) and the block addresses it read."""

    cycles: int
    records: dict
    reads: np.ndarray


def bank_need(matrix, rows):
    """The bank depth ``matrix`` needs with ``rows``-row blocks: its longest row that is not
    the last of its block row."""
    lengths = np.diff(matrix.indptr)
    if rows == 1 or not len(lengths):
        return 0
    return int(np.pad(lengths, (0, -len(lengths) % rows)).reshape(-1, rows)[:, :-1].max())


def pointer_columns(items):
    """Block-row pointers (dicts, as the sink took them) as ``{ptr, last}`` arrays."""
    return {name: np.array([p[name] for p in items], dtype=np.int64) for name in ("ptr", "last")}


def block_columns(items, size):
    """Blocks (dicts) as ``{block_col [b], values [b, size]}`` arrays."""
    return {"block_col": np.array([b["block_col"] for b in items], dtype=np.int64),
            "values": np.array([[b[f"value{k}"] for k in range(size)] for b in items],
                               dtype=np.uint64).reshape(len(items), size)}


def blocks_to_bsr(block_ptr, blocks, shape, block, dtype):
    """The BSR matrix of what one matrix's run emitted, with the golden converter's index
    type (int32 where the grid and the block count fit it)."""
    grid = shape[0] // block[0], shape[1] // block[1]
    count = len(blocks["block_col"])
    index = np.int32 if max(*grid, count) <= np.iinfo(np.int32).max else np.int64
    data = wire.bits_values(blocks["values"], dtype).reshape(count, *block)
    matrix = sp.bsr_array((data, blocks["block_col"].astype(index),
                           block_ptr["ptr"].astype(index)), shape=shape, blocksize=block)
    matrix.has_sorted_indices = True
    return matrix


class BsrBench(Bench):
    """Streams ``matrices`` (canonical ``csr_array`` s: columns sorted, no repeats, no
    zeros; rows a multiple of R) through a :class:`~sparseforge.hw.convert_bsr.CsrToBsr`.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7).
    :meth:`check_output` checks what came out is well-formed BSR.
    """

    def __init__(self, component, matrices, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys((ROW_PTR, ENTRIES, BLOCK_PTR, BLOCKS), 0.7), **(rates or {})}
        R, C = component.block
        for m in matrices:
            self._check(component, m)
        ptr = np.concatenate([m.indptr for m in matrices]).astype(np.int64)
        last = np.concatenate([np.arange(len(m.indptr)) == len(m.indptr) - 1
                               for m in matrices])
        col = np.concatenate([m.indices for m in matrices]).astype(np.int64)
        bits = np.concatenate([wire.value_bits(m.data)[0] for m in matrices])
        self.pointers = [m.shape[0] // R + 1 for m in matrices]
        self.counts = [_blocks(m, (R, C)) for m in matrices]
        self.sources = [self.source_on(ROW_PTR, Columns({"ptr": ptr, "last": last}),
                                       rates[ROW_PTR]),
                        self.source_on(ENTRIES, Columns({"col": col, "value": bits}),
                                       rates[ENTRIES])]
        self.sinks = [self.sink_on(BLOCK_PTR, rates[BLOCK_PTR], expected=sum(self.pointers)),
                      self.sink_on(BLOCKS, rates[BLOCKS], expected=sum(self.counts))]
        self.drivers = [*self.sources, *self.sinks]

    @staticmethod
    def _check(component, matrix):
        (R, C), shape = component.block, matrix.shape
        if shape[0] % R or shape[1] % C:
            raise ParameterError(f"block {R},{C} does not divide the {shape[0]} x {shape[1]} "
                                 "matrix")
        if wire.value_bits(matrix.data)[1] > component.value_width:
            raise ParameterError(f"{matrix.dtype} values do not fit the block's "
                                 f"{component.value_width}-bit values")
        if max(shape[1], matrix.nnz) >> component.width:
            raise ParameterError(f"a {shape[0]} x {shape[1]} matrix of {matrix.nnz} nonzeros "
                                 f"does not fit the block's {component.width}-bit indices")
        need = bank_need(matrix, R)
        if need > component.depth:
            raise ParameterError(f"a row of {need} nonzeros (not the last of its block row) "
                                 f"does not fit a scratchpad bank of depth {component.depth}")

    def check_output(self, block_ptr, blocks):
        """Fail unless each matrix's pointers rise from 0 to its block count, ``last`` on its
        final one, and its block columns rise within each block row."""
        flagged = np.flatnonzero(block_ptr["last"])
        if not np.array_equal(flagged, np.cumsum(self.pointers) - 1):
            self.fail(f"block_ptr: last on items {flagged.tolist()[:8]}")
        starts = np.cumsum([0, *self.pointers])
        first = 0
        for n, (a, b) in enumerate(itertools.pairwise(starts)):
            ptr = block_ptr["ptr"][a:b]
            if ptr[0] or ptr[-1] != self.counts[n] or (np.diff(ptr) < 0).any():
                self.fail(f"matrix {n}: block_ptr {ptr.tolist()[:8]}... does not rise from 0 "
                          f"to its {self.counts[n]} blocks")
            cols = blocks["block_col"][first:first + self.counts[n]]
            rising = np.diff(cols) > 0
            rising[ptr[(ptr > 0) & (ptr < len(cols))] - 1] = True    # a block row starts
            if not rising.all():
                self.fail(f"matrix {n}: block columns do not rise in a block row at block "
                          f"{first + int(np.argmin(rising)) + 1}")
            first += self.counts[n]

    def finished(self):
        return all(s.done for s in self.sources) and all(
            len(s.received) == s.expected for s in self.sinks)

    def result(self):
        R, C = self.component.block
        block_ptr = pointer_columns([p for _, p in self.sinks[0].received])
        blocks = block_columns([b for _, b in self.sinks[1].received], R * C)
        self.check_output(block_ptr, blocks)
        return BsrResult(self.cycle, block_ptr, blocks)


def _blocks(matrix, block):
    """How many blocks of ``block`` hold a nonzero of ``matrix``: a host count, so the sink
    knows when the run is through (the pointers must agree with it)."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr)) // block[0]
    cols = matrix.indices.astype(np.int64) // block[1]
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    return int(len(rows) and 1 + np.count_nonzero((np.diff(rows) != 0) | (np.diff(cols) != 0)))


def run(source, block, run_bits=None, seed=1):
    """``(bsr, cycles)``: the CSR matrix ``source`` in ``block`` blocks by the
    ``csr_to_bsr`` block (:data:`DEPTH`, :data:`WIDTH`), natively on Verilator under random
    back-pressure, rebuilt from what it emitted; a matrix whose rows overflow the banks
    in passes of block columns, one after the other in one run, joined on the host."""
    matrix = source
    if not matrix.has_canonical_format or np.count_nonzero(matrix.data) < matrix.nnz:
        matrix = matrix.copy()
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
    value_width = wire.value_bits(matrix.data)[1]
    bits = wire.width(wire.bsr_block(WIDTH, value_width, block))
    if bits > NATIVE_BITS:
        raise ParameterError(f"--engine rtl: a {block[0]} x {block[1]} block of "
                             f"{value_width}-bit values is a {bits}-bit transfer, wider than "
                             f"the {NATIVE_BITS} bits a native run carries")
    component = CsrToBsr(block_rows=block[0], block_cols=block[1], width=WIDTH,
                         value_width=value_width, depth=DEPTH)
    bounds = passes.bank_passes(matrix.indptr, matrix.indices, matrix.shape[1], block, DEPTH)
    bench = BsrBench(component, column_parts(matrix, bounds), seed)
    out = native.run(bench)
    R, C = block
    block_ptr = pointer_columns(out.outputs[BLOCK_PTR])
    blocks = block_columns(out.outputs[BLOCKS], R * C)
    bench.check_output(block_ptr, blocks)
    ptr, places = passes.join_block_rows(np.split(block_ptr["ptr"],
                                                  np.cumsum(bench.pointers)[:-1]))
    joined = {"block_col": np.empty_like(blocks["block_col"]),
              "values": np.empty_like(blocks["values"])}
    joined["block_col"][places] = blocks["block_col"] + np.repeat(bounds[:-1] // C, bench.counts)
    joined["values"][places] = blocks["values"]
    return blocks_to_bsr({"ptr": ptr}, joined, matrix.shape, block, matrix.dtype), out.cycles


def canonical_bsr(matrix):
    """``matrix`` with its blocks sorted by block column in each block row and repeats
    added, as the golden converter reads it (a copy where that changes it)."""
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    return matrix


def slice_reads(matrix):
    """The block indices ``bsr_to_coo`` reads for ``matrix``: each block row's blocks R
    times over, in order."""
    R = matrix.blocksize[0]
    ptr = matrix.indptr.astype(np.int64)
    sizes = np.repeat(np.diff(ptr), R)
    starts = np.repeat(ptr[:-1], R)
    return np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())


def block_words(matrix, width, value_width):
    """The memory words (:func:`~sparseforge.sw.wire.bsr_block`, ``width``-bit block
    columns, ``value_width``-bit values) of a BSR ``matrix``'s blocks, in order."""
    (R, C), n = matrix.blocksize, int(matrix.indptr[-1])
    return wire.pack_lanes(wire.bsr_block(width, value_width, (R, C)), 1, (), {
        "block_col": matrix.indices[:n, None].astype(np.uint64),
        **{f"value{k}": wire.value_bits(matrix.data[:n].reshape(n, R * C)[:, k:k + 1])[0]
           for k in range(R * C)}})


class BsrCooBench(Bench):
    """Streams ``matrices`` (canonical ``bsr_array`` s of the block's R x C blocks)
    through a :class:`~sparseforge.hw.convert_bsr.BsrToCoo`, back to back.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7:
    ``block_ptr``, ``records``, and the memory's ``mem__request`` and
    ``mem__response``). Every read's address and every record are checked (natively)
    against the golden converter's.
    """

    def __init__(self, component, matrices, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys((BLOCK_PTR, RECORDS, REQUEST, RESPONSE), 0.7),
                 **(rates or {})}
        W, V = component.width, component.value_width
        for m in matrices:
            self._check(component, m)
        blocks = [int(m.indptr[-1]) for m in matrices]
        bases = np.cumsum([0, *blocks])
        if bases[-1] > 1 << W:
            raise ParameterError(f"{bases[-1]} blocks back to back do not fit the block's "
                                 f"{W}-bit addresses")
        ptr = np.concatenate([m.indptr for m in matrices]).astype(np.int64)
        last = np.concatenate([np.arange(len(m.indptr)) == len(m.indptr) - 1
                               for m in matrices])
        words = np.concatenate([np.zeros(0, dtype=object),
                                *(block_words(m, W, V) for m in matrices)])
        addrs = np.concatenate([np.zeros(0, np.int64), *(
            base + slice_reads(m) for m, base in zip(matrices, bases[:-1], strict=True))])
        self.golden = [conversion.convert(m, "coo") for m in matrices]
        rows, cols = (np.concatenate([np.zeros(0, np.int64), *(getattr(g, k) for g in
                                                               self.golden)])
                      for k in ("row", "col"))
        bits = np.concatenate([np.zeros(0, np.uint64), *(wire.value_bits(g.data)[0]
                                                         for g in self.golden)])
        ends = np.zeros(len(bits), dtype=np.int64)
        ends[np.cumsum(np.array([g.nnz for g in self.golden], dtype=np.int64))[
            [g.nnz > 0 for g in self.golden]] - 1] = 1
        self.outputs = {REQUEST: addrs,
                        RECORDS: [{"row": int(r), "col": int(c), "value": int(v),
                                   "last": int(e)} for r, c, v, e in zip(rows, cols, bits, ends,
                                                                         strict=True)]}
        self.sources = [
            self.source_on(BLOCK_PTR, Columns({"ptr": ptr, "last": last}), rates[BLOCK_PTR]),
            self.source_on(RESPONSE, list(words[addrs]), rates[RESPONSE],
                           after={REQUEST: np.arange(1, len(addrs) + 1)})]
        self.sinks = [self.sink_on(REQUEST, rates[REQUEST], len(addrs)),
                      self.sink_on(RECORDS, rates[RECORDS], len(bits))]
        self.drivers = [*self.sources, *self.sinks]

    @staticmethod
    def _check(component, matrix):
        R, C = component.block
        if matrix.blocksize != (R, C):
            raise ParameterError(f"a BSR matrix of {matrix.blocksize[0]} x "
                                 f"{matrix.blocksize[1]} blocks: the block takes {R} x {C}")
        if wire.value_bits(matrix.data)[1] > component.value_width:
            raise ParameterError(f"{matrix.dtype} values do not fit the block's "
                                 f"{component.value_width}-bit values")
        if max(*matrix.shape, int(matrix.indptr[-1]) + 1) > 1 << component.width:
            raise ParameterError(f"a {matrix.shape[0]} x {matrix.shape[1]} matrix of "
                                 f"{int(matrix.indptr[-1])} blocks does not fit the block's "
                                 f"{component.width}-bit indices")

    def finished(self):
        return all(s.done for s in self.sources) and all(
            len(s.received) == s.expected for s in self.sinks)

    def from_outputs(self, cycles, outputs):
        records = record_columns(outputs[RECORDS])
        return BsrCooResult(cycles, records, np.asarray(outputs[REQUEST], dtype=np.int64))


def run_coo(source, block=None, run_bits=None, seed=1):
    """``(coo, cycles)``: the BSR matrix ``source`` converted by the ``bsr_to_coo`` block
    (its block shape, :data:`WIDTH`-bit indices, the matrix's value type), natively on
    Verilator under random back-pressure, rebuilt from its records."""
    matrix = canonical_bsr(source)
    R, C = matrix.blocksize
    value_width = wire.value_bits(matrix.data)[1]
    bits = wire.width(wire.bsr_block(WIDTH, value_width, (R, C)))
    if bits > NATIVE_BITS:
        raise ParameterError(f"--engine rtl: a {R} x {C} block of {value_width}-bit values "
                             f"is a {bits}-bit word, wider than the {NATIVE_BITS} bits a "
                             "native run carries")
    component = BsrToCoo(block_rows=R, block_cols=C, width=WIDTH, value_width=value_width)
    out = native.run(BsrCooBench(component, [matrix], seed))
    records = record_columns(out.outputs[RECORDS])
    return records_to_coo(records, matrix.shape, matrix.dtype), out.cycles


CONVERSIONS = {("csr", "bsr"): run, ("bsr", "coo"): run_coo}
