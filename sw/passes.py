"""Passes of a matrix through a converter's fixed buffers (MINT Section V), planned on the host.

A converter is built once, its buffers sized by its parameters; a matrix larger than them
goes through in passes, as a real converter's must, and the host joins the passes' outputs.
CSR to CSC (Fig. 8c) counts each column in a counter memory of ``max_cols`` columns and
places the nonzeros in a scratchpad of ``max_nnz``: a pass is a run of whole columns
(:func:`column_passes`), its CSR the matrix's entries in those columns, renumbered from the
run's first (:func:`column_slices`); every row's pointer goes through every pass, so the
block gives each entry its row. COO records in any order pass the same way, each pass its
records in those columns in their order (:func:`record_slices`), carrying their rows. A
column lands whole in one pass, so the passes' CSC outputs, one after the other, are the
matrix's CSC with each pass's pointers moved up by the nonzeros before it
(:func:`join_columns`): the block did the sort, the host adds.

The block carries each entry's row as an id of its ``max_rows`` bits: a matrix of more rows
goes through in row bands (:func:`row_bands`), each band a matrix of its own rows, renumbered
from its first, through the column passes above. A band also keeps each column's nonzeros in
it within the scratchpad, so a column longer than the scratchpad goes through in pieces. The
bands' CSCs join column by column (:func:`join_groups`): a column's entries of the first band,
then of the second, each band's rows moved up by its first row, so rows still ascend.

CSR to BSR (Fig. 8e) holds each row of a block row but the last in a scratchpad bank of
``depth`` nonzeros until the last row comes: a pass is a run of whole block columns in
which no such row has more (:func:`bank_passes`), sliced as for CSC. A block row's blocks
are then its blocks of each pass, one pass after the other (:func:`join_block_rows`).

numpy only. Host memory follows the nonzeros, the columns (the CSC pointers need them) and
each pass's row pointers (the block takes them, at most a band's), never the matrix's area.
"""

import numpy as np

from ..core.errors import ParameterError


def column_passes(indices, cols, max_cols, max_nnz):
    """The columns of each pass: bounds ``[0, c1, ..., cols]`` (int64), each pass
    ``[bounds[p], bounds[p + 1])`` at most ``max_cols`` columns and ``max_nnz`` nonzeros,
    each as long as both allow (greedy from column 0: the fewest passes). A matrix of no
    columns is one pass of none.

    ``indices`` are the column ids of the matrix's nonzeros, in any order. Raises
    ParameterError naming a column of more than ``max_nnz`` nonzeros (no pass holds it).
    """
    indices = np.asarray(indices, dtype=np.int64)
    counts = np.bincount(indices, minlength=cols)
    if len(counts) and counts.max() > max_nnz:
        heavy = int(np.argmax(counts))
        raise ParameterError(f"column {heavy} holds {counts[heavy]} nonzeros, more than the "
                             f"{max_nnz} a pass of the converter holds")
    before = np.concatenate([[0], np.cumsum(counts)])      # nonzeros before each column
    bounds = [0]
    while bounds[-1] < cols:
        lo = bounds[-1]
        fits = int(np.searchsorted(before, before[lo] + max_nnz, side="right")) - 1
        bounds.append(min(lo + max_cols, fits, cols))
    return np.array(bounds if cols else [0, 0], dtype=np.int64)


def column_slices(indptr, indices, bounds):
    """Each pass's CSR, as ``(indptr, indices, order)`` per pass: its row pointers over
    every row, its column ids less the pass's first column, and ``order``, where its
    entries are in the matrix's (so ``data[order]`` are its values).

    ``indptr``, ``indices``: the matrix's CSR; ``bounds``: :func:`column_passes`'.
    Entries keep their CSR order within a pass.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    rows = len(indptr) - 1
    row_of = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
    out = []
    for p, mine in enumerate(record_slices(indices, bounds)):   # CSR order in each
        ptr = np.concatenate([[0], np.cumsum(np.bincount(row_of[mine], minlength=rows))])
        out.append((ptr, indices[mine] - bounds[p], mine))
    return out


def record_slices(cols, bounds):
    """Each pass's records, for records in any order (COO): per pass, where its records
    are among them (int64), in their order. ``cols`` are the records' columns, ``bounds``
    :func:`column_passes`'. A record needs no row pointer, so a pass of COO records is its
    records alone."""
    cols = np.asarray(cols, dtype=np.int64)
    pass_of = np.searchsorted(bounds, cols, side="right") - 1
    order = np.argsort(pass_of, kind="stable")
    ends = np.searchsorted(pass_of[order], np.arange(len(bounds)), side="left")
    return [order[ends[p]:ends[p + 1]] for p in range(len(bounds) - 1)]


def sort_passes(rows, cols, by):
    """How many stable counting sorts by one coordinate put COO records (``rows``,
    ``cols``, in their order) in order by ``by`` (``"column"``: CSC's order, rows
    ascending within a column; ``"row"``: CSR's): 1 where the records' other coordinate
    already ascends among each key's records (the sort keeps them so: row-major records
    for CSC), else 2, as an LSD radix sort, the other coordinate first.

    Raises ParameterError naming a coordinate two records share: a converter places each
    record, so its records must be one a coordinate.
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    key, other = (cols, rows) if by == "column" else (rows, cols)
    order = np.argsort(key, kind="stable")
    k, o = key[order], other[order]
    if ((k[1:] != k[:-1]) | (o[1:] > o[:-1])).all():
        return 1
    order = np.lexsort((other, key))           # stable: a repeat follows its first
    k, o = key[order], other[order]
    same = np.flatnonzero((k[1:] == k[:-1]) & (o[1:] == o[:-1]))
    if len(same):
        first, later = sorted(order[same[0]:same[0] + 2])
        raise ParameterError(f"records {first} and {later} are both at ({rows[first]}, "
                             f"{cols[first]}) (0-based): a converter takes one record a "
                             "coordinate (add repeats first)")
    return 2


def join_columns(pointers):
    """The matrix's CSC column pointers from each pass's (``pointers[p]``, over the pass's
    columns and one past): each pass's moved up by the nonzeros of the passes before it.
    The entries themselves join by following one another."""
    parts, base = [], 0
    for ptr in pointers:
        ptr = np.asarray(ptr, dtype=np.int64)
        parts.append(ptr[:-1] + base)
        base += int(ptr[-1])
    return np.concatenate([*parts, [base]]).astype(np.int64)


def bank_passes(indptr, indices, cols, block, depth):
    """The columns of each pass through CSR to BSR's banks: bounds ``[0, ..., cols]``,
    multiples of ``block = (R, C)``'s C but the last, each pass as long as no row but the
    last of its block row has more than ``depth`` nonzeros in it (greedy: the fewest passes).

    ``indptr``, ``indices``: the matrix's CSR, columns sorted within each row. Raises
    ParameterError where a row has more than ``depth`` nonzeros in one block column.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    (R, C), rows = block, len(indptr) - 1
    held = np.arange(rows) % R != R - 1                  # rows that wait in a bank
    starts, ends = indptr[:-1][held], indptr[1:][held]
    bounds = [0]
    while bounds[-1] < cols:
        lo = bounds[-1]
        before = np.concatenate([[0], np.cumsum(indices < lo)])
        over = starts + before[ends] - before[starts] + depth   # a row's first past depth
        limit = int(indices[over[over < ends]].min(initial=cols))
        hi = min(cols, limit // C * C)
        if hi <= lo:
            raise ParameterError(f"a row has more than {depth} nonzeros in the block column "
                                 f"of columns {lo} to {lo + C - 1}: no pass of the converter's "
                                 f"banks holds them")
        bounds.append(hi)
    return np.array(bounds if cols else [0, 0], dtype=np.int64)


def join_groups(pointers):
    """Passes over the same groups joined group by group: ``(ptr, places)``, the joined
    pointers and where each of the passes' items (one pass after the other) goes. A group's
    items are its items of the first pass, then of the second, and so on: BSR block rows
    joined over column passes (``join_block_rows``), CSC columns over row bands.

    ``pointers``: each pass's pointers over the groups (the same groups in every pass).
    Memory follows the groups and the items, not the passes times the groups.
    """
    pointers = [np.asarray(p, dtype=np.int64) for p in pointers]
    total = np.zeros(len(pointers[0]) - 1, np.int64)
    for mine in pointers:
        total += np.diff(mine)
    ptr = np.concatenate([[0], np.cumsum(total)])
    ahead, places = ptr[:-1].copy(), []              # a group's next free place
    for mine in pointers:
        count = np.diff(mine)
        group = np.repeat(np.arange(len(count)), count)
        places.append(ahead[group] + np.arange(mine[-1]) - mine[group])
        ahead += count
    return ptr, np.concatenate([np.zeros(0, np.int64), *places])


join_block_rows = join_groups             # CSR to BSR joins its column passes so


def row_bands(rows_of, cols_of, rows, max_rows, max_nnz):
    """The rows of each band: bounds ``[0, r1, ..., rows]`` (int64), each band ``[bounds[b],
    bounds[b + 1])`` at most ``max_rows`` rows in which no column holds more than ``max_nnz``
    nonzeros, each as long as both allow (greedy from row 0: the fewest bands). A matrix of
    no rows is one band of none.

    ``rows_of``, ``cols_of``: the rows and columns of the matrix's nonzeros, in any order, one
    a coordinate (a row holds at most one nonzero of a column, so a band of one row always
    fits a scratchpad of ``max_nnz >= 1``).
    """
    rows_of = np.asarray(rows_of, dtype=np.int64)
    order = np.argsort(rows_of, kind="stable")
    r, c = rows_of[order], np.asarray(cols_of, dtype=np.int64)[order]
    cols = int(c.max(initial=-1)) + 1
    by_col = np.argsort(c, kind="stable")
    rank = np.empty(len(c), np.int64)                  # each nonzero's place in its column
    starts = np.concatenate([[0], np.cumsum(np.bincount(c, minlength=cols))])
    rank[by_col] = np.arange(len(c)) - starts[c[by_col]]
    before = np.zeros(cols, np.int64)                  # each column's nonzeros in earlier bands
    bounds = [0]
    while bounds[-1] < rows:
        lo = bounds[-1]
        s, e = np.searchsorted(r, [lo, lo + max_rows])
        over = rank[s:e] - before[c[s:e]] >= max_nnz   # past the scratchpad in this band
        hi = min(lo + max_rows, rows, int(r[s:e][over].min(initial=rows)))
        if hi <= lo:
            raise ParameterError(f"row {lo} holds more than {max_nnz} nonzeros of one column "
                                 "(a repeated coordinate)")
        e = np.searchsorted(r, hi)
        before += np.bincount(c[s:e], minlength=cols)
        bounds.append(hi)
    return np.array(bounds if rows else [0, 0], dtype=np.int64)
