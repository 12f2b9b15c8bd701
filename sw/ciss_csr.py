"""The CSR a ``csr_to_ciss`` block reads (:mod:`sparseforge.hw.convert_ciss`), prepared
and checked on the host.

The block converts the CSR as it is stored: it reads ``row_ptr[1 ..]`` and each row's
elements ``{col, value}`` (:func:`~sparseforge.sw.wire.csr_entry`) in their order, and
cannot sort, merge or drop anything. So a matrix it would convert into something other
than :func:`sparseforge.sw.ciss.encode`'s stream is refused here, in one line naming the
first place it breaks: row pointers that fall, columns out of order or repeated within
a row, a stored zero (it would read as a header), an index or a count past the block's
widths, a value past ``dw`` bits. Values go as :func:`~sparseforge.sw.ciss.value_bits`
makes them, as the encoder does.

For ``csr_tile_to_ciss``, which converts a tile ``A[i0 : i0 + rows, k0 : k1]`` at a time:
:func:`tensaurus_windows` tiles a matrix as a Tensaurus SpMM run streams it,
:func:`tile_jobs` checks the tiles against the block's band and widths and marks each
band's first window, and :func:`prepass_reads`, :func:`prepass_cycles` and
:func:`tile_cycles` are the block's reads and cycles, for the accelerator's host model.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from .ciss import value_bits


@dataclass(frozen=True, eq=False)
class CsrImage:
    """A matrix as the block reads it: ``rows``, ``row_ptr`` (int64, ``rows + 1``), and
    its elements' ``col`` (int64) and value ``bits`` (uint64, ``dw`` bits), ``kind``
    "int" or "float"."""

    rows: int
    row_ptr: np.ndarray
    col: np.ndarray
    bits: np.ndarray
    kind: str


def csr_image(matrix, dw, iw, addr_width, tiled=False):
    """The :class:`CsrImage` of ``matrix`` (scipy sparse, 2-D) for a block of ``dw``-bit
    values, ``iw``-bit indices and ``addr_width``-bit element indices; ParameterError
    (one line) where the block could not convert it as :func:`~.ciss.encode` does.
    ``tiled``: for ``csr_tile_to_ciss``, whose slices count from their tile's first row,
    so the matrix's rows need only row pointers of ``addr_width``-bit indices."""
    if not sp.issparse(matrix) or matrix.ndim != 2:
        raise ParameterError(f"expected a scipy sparse matrix, not {type(matrix).__name__}")
    csr = sp.csr_array(matrix)
    rows, nnz = csr.shape[0], csr.nnz
    if tiled and rows >= 1 << addr_width:
        raise ParameterError(f"{rows} rows: row pointers indexed by addr_width={addr_width} "
                             f"bits reach at most {(1 << addr_width) - 1} rows")
    if not tiled and rows >= 1 << iw:
        raise ParameterError(f"{rows} rows: a slice index of iw={iw} bits stays below "
                             f"{(1 << iw) - 1} (the idle lane's), so at most "
                             f"{(1 << iw) - 1} rows")
    if nnz >= 1 << addr_width:
        raise ParameterError(f"{nnz} nonzeros: row pointers of addr_width={addr_width} bits "
                             f"hold at most {(1 << addr_width) - 1}")
    row_ptr = csr.indptr.astype(np.int64)
    back = np.flatnonzero(np.diff(row_ptr) < 0)
    if len(back):
        i = int(back[0])
        raise ParameterError(f"row pointers fall at row {i}: {row_ptr[i]} then "
                             f"{row_ptr[i + 1]}")
    col = csr.indices.astype(np.int64)
    row = np.repeat(np.arange(rows), np.diff(row_ptr))
    if nnz:
        if col.max() >> iw:
            at = int(np.argmax(col))
            raise ParameterError(f"column {col[at]} (row {row[at]}) does not fit iw={iw} bits")
        bad = np.flatnonzero((np.diff(col) <= 0) & (row[1:] == row[:-1]))
        if len(bad):
            i = bad[0] + 1
            raise ParameterError(f"row {row[i]}: column {col[i]} after column {col[i - 1]}; "
                                 "the block reads a row's columns as stored, so they must "
                                 "ascend without repeats (sort_indices, sum_duplicates)")
        zero = np.flatnonzero(csr.data == 0)
        if len(zero):
            i = zero[0]
            raise ParameterError(f"a stored zero at ({row[i]}, {col[i]}): CISS marks headers "
                                 "with a zero value, so the block takes no stored zeros "
                                 "(eliminate_zeros)")
    bits, kind, _ = value_bits(csr.data, dw)
    return CsrImage(rows, row_ptr, col, bits, kind)


@dataclass(frozen=True, eq=False)
class CooImage(CsrImage):
    """A 3-D tensor as the block reads it in its tensor mode (``order`` 3): COO sorted by
    ``(i, j, k)``, its arrays ``i``, ``col`` (j) and ``k`` (int64) and value ``bits``;
    ``rows`` its slices and ``row_ptr`` the pointers its i ids stand for (the block's
    cluster counter makes them; the host's models read them here)."""

    i: np.ndarray = None
    k: np.ndarray = None


def coo_image(tensor, dw, iw, addr_width):
    """The :class:`CooImage` of ``tensor`` (a 3-D :class:`~.formats.Tensor`) for a block
    of ``dw``-bit values, ``iw``-bit indices and ``addr_width``-bit element indices:
    its stored zeros dropped and its nonzeros sorted by ``(i, j, k)``, as the block
    reads them; ParameterError (one line) for a repeated coordinate or an index past
    ``iw`` bits (a slice index below the idle lane's)."""
    if getattr(tensor, "ndim", None) != 3:
        raise ParameterError(f"expected a 3-D tensor, not {getattr(tensor, 'ndim', '?')} "
                             "modes")
    held = tensor.values != 0
    coords, values = tensor.coords[held], tensor.values[held]
    order = np.lexsort(coords.T[::-1])
    coords, values = coords[order], values[order]
    if len(values) >= 1 << addr_width:
        raise ParameterError(f"{len(values)} nonzeros: element indices of addr_width="
                             f"{addr_width} bits reach at most {(1 << addr_width) - 1}")
    if len(values):
        same = (np.diff(coords, axis=0) == 0).all(axis=1)
        if same.any():
            where = tuple(int(c) for c in coords[np.argmax(same)])
            raise ParameterError(f"coordinate {where} appears more than once")
        top = coords.max(axis=0)
        if top[0] >= (1 << iw) - 1 or (top[1:] >> iw).any():
            raise ParameterError(f"an index of {int(top.max())} does not fit iw={iw} bits "
                                 "(a slice index stays below the idle lane's)")
    bits, kind, _ = value_bits(values, dw)
    rows = tensor.shape[0]
    row_ptr = np.searchsorted(coords[:, 0], np.arange(rows + 1)).astype(np.int64)
    return CooImage(rows, row_ptr, coords[:, 1].copy(), bits, kind, coords[:, 0].copy(),
                    coords[:, 2].copy())


def coo_pointer_reads(image, jobs):
    """The i ids the block's cluster counter (:class:`~sparseforge.hw.convert_ciss.
    CooPointers`) reads for ``jobs`` of a :class:`CooImage`, in order: from each band's
    first element forward, to the first element past the band (if any), the id where the
    band before stopped not read again; a band converted again from its first."""
    reads, pos, known, band = [], 0, False, (0, 0)
    nnz = len(image.i)
    for i0, rows, first in zip(jobs.i0.tolist(), jobs.rows.tolist(), jobs.first.tolist(),
                               strict=True):
        if not first:
            continue
        if i0 == band[0]:
            pos, known = band[1], False
        elif i0 == 0:
            pos, known, band = 0, False, (0, 0)
        else:
            band = (i0, pos)
        for x in range(i0, i0 + rows + 1) if rows else ():
            while not (known and image.i[pos] >= x) and pos != nnz:
                if not known:
                    reads.append(pos)
                known = not known and image.i[pos] >= x
                if not known:
                    pos += 1
    return np.array(reads, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class TileJobs:
    """Tiles ``A[i0 : i0 + rows, k0 : k1]`` as a ``csr_tile_to_ciss`` block takes them, in
    order (int64 arrays): ``first`` is 1 on a band's first window, where the block reads
    the band's row pointers; a band's windows follow it in ascending ``k0``."""

    i0: np.ndarray
    rows: np.ndarray
    k0: np.ndarray
    k1: np.ndarray
    first: np.ndarray

    def __len__(self):
        return len(self.i0)

    def bands(self):
        """``(start, stop)`` of each band's jobs."""
        starts = np.flatnonzero(self.first)
        return list(zip(starts.tolist(), [*starts[1:].tolist(), len(self)], strict=True))


def tensaurus_windows(matrix, out_rows, spm_rows):
    """``(i0, rows, k0, k1)`` of each tile of A a Tensaurus SpMM run streams
    (:func:`sparseforge.sw.tensaurus_job.plan`): output tiles of ``out_rows`` rows, each
    split by the blocks of ``spm_rows`` columns that hold its nonzeros, in ascending order;
    an output tile without nonzeros one empty tile (its first block)."""
    coo = sp.coo_array(matrix)
    coo = sp.coo_array((coo.data[coo.data != 0], (coo.row[coo.data != 0],
                                                   coo.col[coo.data != 0])), coo.shape)
    rows, cols = coo.shape
    bands = -(-max(rows, 1) // out_rows)
    width = -(-max(cols, 1) // spm_rows)
    key = np.unique(coo.row.astype(np.int64) // out_rows * width
                    + coo.col.astype(np.int64) // spm_rows)
    empty = np.setdiff1d(np.arange(bands, dtype=np.int64), key // width) * width
    key = np.sort(np.concatenate([key, empty]))
    band, block = np.divmod(key, width)
    i0, k0 = band * out_rows, block * spm_rows
    return (i0, np.minimum(out_rows, rows - i0), k0, np.minimum(k0 + spm_rows, cols))


def tile_jobs(image, i0, rows, k0, k1, band, iw):
    """The :class:`TileJobs` of the tiles ``(i0, rows, k0, k1)`` (arrays, in the order the
    block takes them) of ``image`` (:func:`csr_image`, ``tiled``) for a block of bands of
    ``band`` rows and ``iw``-bit indices: consecutive tiles of the same rows are a band's
    windows. ParameterError (one line) for a tile the block cannot
    take: a band past ``band`` rows or past the matrix, a window past ``iw`` bits, empty
    backwards, or before the end of its band's previous window."""
    i0, rows, k0, k1 = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (i0, rows, k0, k1))

    def refuse(bad, message):
        if bad.any():
            n = int(np.argmax(bad))
            raise ParameterError(f"tile {n} (rows {i0[n]}..{i0[n] + rows[n] - 1}, columns "
                                 f"{k0[n]}..{k1[n] - 1}): " + message(n))

    refuse(rows > band, lambda n: f"a band of {rows[n]} rows; the block's band={band} "
           f"holds at most {band}")
    refuse((i0 < 0) | (rows < 0) | (i0 + rows > image.rows),
           lambda n: f"rows past the matrix's {image.rows}")
    refuse((k0 < 0) | (k1 < k0), lambda n: "a window must have 0 <= k0 <= k1")
    refuse(k1 > 1 << iw, lambda n: f"column {k1[n] - 1} past iw={iw} bits")
    first = np.ones(len(i0), dtype=np.int64)
    first[1:] = (i0[1:] != i0[:-1]) | (rows[1:] != rows[:-1])
    later = np.zeros(len(i0), dtype=bool)
    later[1:] = (first[1:] == 0) & (k0[1:] < k1[:-1])
    refuse(later, lambda n: f"a band's windows go in ascending order, but this one starts "
           f"before the previous one's end {k1[n - 1]}")
    return TileJobs(i0, rows, k0, k1, first)


def prepass_reads(image, jobs):
    """The elements the block's pre-pass reads for ``jobs`` (:class:`TileJobs`), in order,
    and how many each job reads of each of its rows (a list of int64 arrays): in each
    window, row after row, from where the band's window before left the row up to its
    first element of column ``k1`` or past, which the next window decides without reading
    it again. So an element is read in the first of its band's windows whose ``k1``
    passes the column of the element before it in the row (the row's first, in the band's
    first window), and not at all if none does."""
    reads, counts = [], []
    for start, stop in jobs.bands():
        i0, rows = jobs.i0[start], jobs.rows[start]
        at = np.arange(image.row_ptr[i0], image.row_ptr[i0 + rows], dtype=np.int64)
        row = np.repeat(np.arange(rows), np.diff(image.row_ptr[i0:i0 + rows + 1]))
        opens = np.ones(len(at), dtype=bool)
        opens[1:] = row[1:] != row[:-1]
        before = image.col[np.maximum(at - 1, 0)]
        window = np.where(opens, 0, np.searchsorted(jobs.k1[start:stop], before, side="right"))
        order = np.argsort(window, kind="stable")
        kept = window[order] < stop - start
        reads.append(at[order][kept])
        per = np.zeros((stop - start, rows), dtype=np.int64)
        held = window < stop - start
        np.add.at(per, (window[held], row[held]), 1)
        counts.extend(per)
    return np.concatenate([np.zeros(0, np.int64), *reads]), counts


def prepass_cycles(image, jobs):
    """Each job's pre-pass: its cycles before the first row (``3``, and ``rows + 2`` more
    on a band's first window; ``1`` for a tile of no rows) and its cycles by row (int64
    arrays: ``2 reads + peeked + ended``, a row's reads, whether its first element to
    decide was read by the window before, whether it ends within the window), with
    memory answering on the cycle after each request and no back-pressure
    (:class:`~sparseforge.hw.convert_ciss.CsrTileToCiss` gives the formula)."""
    _, reads = prepass_reads(image, jobs)
    costs = []
    for start, stop in jobs.bands():
        i0, rows = jobs.i0[start], jobs.rows[start]
        lo, hi = image.row_ptr[i0:i0 + rows], image.row_ptr[i0 + 1:i0 + rows + 1]
        past = [hi - _first_at(image, lo, hi, k1) for k1 in jobs.k1[start:stop]]
        for w in range(start, stop):
            cost = 2 * reads[w] + (past[w - start] == 0)
            if w > start:
                cost += past[w - start - 1] != 0
            costs.append(cost)
    return 1 + (jobs.first * (jobs.rows + 2) + 2) * (jobs.rows > 0), costs


def _first_at(image, lo, hi, k):
    """Each row's (elements ``lo`` to ``hi``) first element of column ``k`` or past, its
    end where none."""
    if not len(lo):
        return lo
    below = np.concatenate([[0], np.cumsum(image.col[lo[0]:hi[-1]] < k)])
    return lo + below[hi - lo[0]] - below[lo - lo[0]]


def tile_cycles(image, jobs, cisses):
    """Each tile's cycles in a ``csr_tile_to_ciss`` block, from the cycle its job is taken
    to the cycle its count is (the next job is taken on the cycle after), given its
    :func:`~sparseforge.sw.ciss.encode` stream in ``cisses``, with memory answering on
    the cycle after each request and no back-pressure. The pre-pass decides row ``r`` on
    cycle ``x_r = head + (its costs and those before it) - 1`` (:func:`prepass_cycles`);
    the entries then follow as :class:`~sparseforge.hw.convert_ciss.CsrTileToCiss`
    says."""
    heads, costs = prepass_cycles(image, jobs)
    cycles = np.zeros(len(jobs), dtype=np.int64)
    for n, (head, cost, ciss) in enumerate(zip(heads, costs, cisses, strict=True)):
        x = head + np.cumsum(cost) - 1
        last = x[-1] if len(x) else head - 1             # the last row decided
        if not len(ciss.slices):
            cycles[n] = last + 3
            continue
        entries = ciss.entries
        ends = np.zeros(ciss.wire.pes, dtype=np.int64)   # each lane's first idle entry
        np.maximum.at(ends, ciss.pe, ciss.start + ciss.count + 1)
        bubble = np.zeros(entries + 1, dtype=np.int64)
        bubble[ends[(ends >= 1) & (ends < entries)]] = 1
        before = np.cumsum(bubble)                       # lanes' ends up to each entry
        late = np.max(x[ciss.slices] + 5 - ciss.start - before[ciss.start])
        idle = ends.min()
        if idle < entries:
            late = max(late, last + 3 - idle - before[idle])
        cycles[n] = max(entries + 1 + before[entries - 1] + late, last + 3)
    return cycles
