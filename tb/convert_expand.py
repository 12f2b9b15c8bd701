"""CSR to COO, COO to Dense, and the composites CSR to Dense and RLC to Dense: their benches,
and their conversions for ``convert --engine rtl``.

A matrix goes in as the host encodes it (:mod:`sparseforge.sw.wire`: row pointers with
``last``, CSR entries, COO records sorted row-major with ``last``, the shape header, RLC
pair vectors), matrices back to back, every stream stalling at random; the result is
rebuilt from what the hardware emitted (records, or flat dense vectors), each matrix's
``last`` checked on the way, in the formats of :mod:`sparseforge.sw.conversion`. The
benches are :class:`~sparseforge.tb.convert_dense.ConverterBench` es, so they run on
Amaranth's simulator and natively on Verilator in the same cycles. A composite runs as
one design: CSR to Dense's dense vectors come from ``csr_to_dense``, not from two runs.
"""

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..hw.compose.csr_to_dense import CsrToDense
from ..hw.compose.rlc_to_dense import RlcToDense
from ..hw.convert_expand import CooToDense, CsrToCoo
from ..sw import conversion, formats, wire
from . import native
from .convert_dense import ConverterBench
from .convert_rlc import record_columns, records_to_coo
from .streams import Columns, Static

LANES, WIDTH = 8, 32
"""Lanes and bits of a row, a column, a pointer and a position of the blocks ``--engine
rtl`` builds, whatever the matrix: up to 2**32 elements (the shared data's largest matrix,
65,536 square, included) and fewer than 2**32 rows, columns and nonzeros; a larger one is
refused. Their values are the matrix's value type."""


# -- host side: what each block can hold, the streams of a matrix ------------------------

def value_width(values):
    """The bits ``values`` stream in (complex values refused)."""
    return wire.value_bits(values)[1]


def check_csr(matrix, width):
    """Refuse a CSR matrix beyond ``width``-bit rows, columns and pointers."""
    rows, cols = matrix.shape
    if max(rows, cols) > 1 << width or matrix.nnz >> width:
        raise ParameterError(f"a {rows} x {cols} matrix of {matrix.nnz} nonzeros does not fit "
                             f"the block's {width}-bit rows, columns and pointers")


def check_shape(shape, width):
    """Refuse a dense result with no elements or beyond ``width``-bit rows, columns and
    positions."""
    rows, cols = shape
    if not rows or not cols:
        raise ParameterError(f"a {rows} x {cols} matrix has no elements to stream")
    if max(rows, cols) >> width or rows * cols > 1 << width:
        raise ParameterError(f"a {rows} x {cols} matrix does not fit the block's {width}-bit "
                             "rows, columns and positions")


def check_area(shape):
    """Refuse a dense result larger than the host holds
    (:data:`~sparseforge.sw.conversion.MAX_AREA`), as the golden converter does."""
    rows, cols = shape
    if rows * cols > conversion.MAX_AREA:
        raise ParameterError(f"a dense {rows} x {cols} array would take {rows * cols:,} "
                             f"elements; conversions refuse more than MAX_AREA = "
                             f"{conversion.MAX_AREA:,}")


def canonical_csr(matrix):
    """``matrix`` (CSR) with its columns sorted, repeats added and zeros dropped (a copy
    where it changes)."""
    if not matrix.has_canonical_format or np.count_nonzero(matrix.data) < matrix.nnz:
        matrix = matrix.copy()
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
    return matrix


def sorted_coo(matrix):
    """``matrix`` (COO) sorted row-major, repeats added and zeros dropped: the records COO
    to Dense takes (a copy where it changes)."""
    if not matrix.has_canonical_format or np.count_nonzero(matrix.data) < matrix.nnz:
        matrix = matrix.copy()
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
    if not formats.row_major(matrix.row, matrix.col):
        order = np.lexsort((matrix.col, matrix.row))
        matrix = sp.coo_array((matrix.data[order], (matrix.row[order], matrix.col[order])),
                              shape=matrix.shape)
    return matrix


def _lasts(counts):
    """A ``last`` flag on each group's final item, groups of ``counts`` items."""
    last = np.zeros(int(sum(counts)), dtype=np.uint8)
    last[np.cumsum(counts)[np.asarray(counts) > 0] - 1] = 1
    return last


def csr_streams(matrices):
    """``{row_ptr, entries}`` of canonical CSR ``matrices``, back to back."""
    return {"row_ptr": Columns({"ptr": np.concatenate([m.indptr for m in matrices]),
                                "last": _lasts([len(m.indptr) for m in matrices])}),
            "entries": Columns({"col": np.concatenate([m.indices for m in matrices]),
                                "value": np.concatenate([wire.value_bits(m.data)[0]
                                                         for m in matrices])})}


def shape_stream(matrices, nonzeros):
    """The ``shape`` header of each matrix, with its ``nonzeros``."""
    return Columns({"rows": [m.shape[0] for m in matrices], "cols": [m.shape[1] for m in matrices],
                    "nnz": nonzeros})


def coo_streams(matrices):
    """``{shape, records}`` of sorted COO ``matrices``, back to back."""
    nnz = [m.nnz for m in matrices]
    return {"shape": shape_stream(matrices, nnz),
            "records": Columns({"row": np.concatenate([m.row for m in matrices]),
                                "col": np.concatenate([m.col for m in matrices]),
                                "value": np.concatenate([wire.value_bits(m.data)[0]
                                                         for m in matrices]),
                                "last": _lasts(nnz)})}


def rlc_streams(component, matrices):
    """``{pairs, shape}`` of RLC ``matrices`` (of one shape), back to back."""
    pieces = [wire.rlc_vectors(m.runs, wire.value_bits(m.values)[0], component.lanes)
              for m in matrices]
    columns = {k: np.concatenate([p[k] for p in pieces]) for k in ("run", "value", "last")}
    words = wire.pack_lanes(wire.rlc_pair(component.run_bits, component.value_width),
                            component.lanes, wire.rlc_end(), columns)
    nnz = [int(np.count_nonzero(m.values)) for m in matrices]
    return {"pairs": words, "shape": shape_stream(matrices, nnz)}


def vectors(shape, lanes):
    """The dense vectors of a matrix of ``shape``."""
    return -(-shape[0] * shape[1] // lanes)


# -- the benches -------------------------------------------------------------------------

def _values_fit(component, matrices):
    for m in matrices:
        values = m.values if isinstance(m, conversion.RLC) else m.data
        if value_width(values) > component.value_width:
            raise ParameterError(f"{values.dtype} values do not fit the block's "
                                 f"{component.value_width}-bit values")


def bench(component, matrices, seed, rates=None):
    """The :class:`~sparseforge.tb.convert_dense.ConverterBench` of ``matrices`` (canonical
    CSR for CSR to COO and CSR to Dense, sorted COO for COO to Dense, RLC of one shape and
    the block's ``run_bits`` for RLC to Dense) back to back through ``component``."""
    _values_fit(component, matrices)
    if isinstance(component, CsrToCoo | CsrToDense):
        for m in matrices:
            check_csr(m, component.width)
    if not isinstance(component, CsrToCoo):
        for m in matrices:
            check_shape(m.shape, component.width)
    if isinstance(component, CsrToCoo):
        return ConverterBench(component, csr_streams(matrices),
                              {"records": sum(m.nnz for m in matrices)}, seed, rates)
    dense = {"dense": sum(vectors(m.shape, component.lanes) for m in matrices)}
    if isinstance(component, CooToDense):
        return ConverterBench(component, coo_streams(matrices), dense, seed, rates)
    if isinstance(component, CsrToDense):
        sources = {**csr_streams(matrices),
                   "shape": shape_stream(matrices, [m.nnz for m in matrices])}
        return ConverterBench(component, sources, dense, seed, rates)
    shape = matrices[0].shape
    for m in matrices:
        if m.shape != shape or m.run_bits != component.run_bits:
            raise ParameterError(f"a {m.shape[0]} x {m.shape[1]} RLC matrix of {m.run_bits}-bit "
                                 f"runs: this bench streams {shape[0]} x {shape[1]} matrices "
                                 f"of the block's {component.run_bits}-bit runs")
    out = ConverterBench(component, rlc_streams(component, matrices), dense, seed, rates)
    out.drivers.append(Static("columns", shape[1]))
    return out


def split_records(records, matrices):
    """Each matrix's COO from the records of one run (plain dicts), ``last`` checked."""
    columns = record_columns(records)
    counts = [m.nnz for m in matrices]
    flagged = np.flatnonzero(columns["last"])
    if len(records) != sum(counts) or not np.array_equal(flagged,
                                                         np.flatnonzero(_lasts(counts))):
        raise AssertionError(f"{len(records)} records with last on {flagged.tolist()[:8]}; "
                             f"expected {sum(counts)} ending at {np.cumsum(counts).tolist()[:8]}")
    out, start = [], 0
    for m, n in zip(matrices, counts, strict=True):
        part = {k: v[start:start + n] for k, v in columns.items()}
        out.append(records_to_coo(part, m.shape, m.dtype))
        start += n
    return out


def split_dense(items, matrices, lanes):
    """Each matrix's dense array from the flat vectors of one run, ``last`` checked."""
    counts = [vectors(m.shape, lanes) for m in matrices]
    got = [v["last"] for v in items]
    if len(items) != sum(counts) or got != _lasts(counts).tolist():
        raise AssertionError(f"{len(items)} dense vectors with last on "
                             f"{np.flatnonzero(got).tolist()[:8]}; expected {sum(counts)}, "
                             f"last ending each matrix's {counts[:8]}")
    bits = np.array([v for item in items for v in item["lanes"]], dtype=np.uint64)
    out, start = [], 0
    for m, n in zip(matrices, counts, strict=True):
        size = m.shape[0] * m.shape[1]
        out.append(wire.bits_values(bits[start:start + size], m.dtype).reshape(m.shape))
        start += n * lanes
    return out


def rebuild(component, matrices, outputs):
    """Each matrix's result (COO, or a dense array) from what ``component`` emitted."""
    if isinstance(component, CsrToCoo):
        return split_records(outputs["records"], matrices)
    return split_dense(outputs["dense"], matrices, component.lanes)


def simulate(component, matrices, seed, rates=None, engine="native"):
    """``(results, cycles)`` of ``matrices`` back to back through ``component`` on
    Verilator (``native``) or Amaranth's simulator (``pysim``)."""
    if not isinstance(component, CsrToCoo):
        for m in matrices:
            check_area(m.shape)
    done = native.simulate(bench(component, matrices, seed, rates), engine)
    return rebuild(component, matrices, done.outputs), done.cycles


# -- convert --engine rtl ------------------------------------------------------------------

def _matrix(source, to):
    """Refuse a tensor where the block takes matrices."""
    if len(source.shape) != 2:
        raise ParameterError(f"the {to} blocks take matrices, not a {len(source.shape)}-D "
                             "tensor")


def _csr_to_coo(source, _block, _run_bits, seed):
    matrix = canonical_csr(source)
    component = CsrToCoo(width=WIDTH, value_width=value_width(matrix.data))
    (coo,), cycles = simulate(component, [matrix], seed)
    return coo, cycles


def _coo_to_dense(source, _block, _run_bits, seed):
    """A 3-D tensor goes through as the ``(I * J) x K`` matrix its dense array is laid out
    as, row-major: record ``(i, j, k)`` is ``(i * J + j, k)``, as the address generator
    reading it gives it, and the block's dense rows are the tensor's fibers."""
    if len(source.shape) == 3:
        (i, j, k), (_, J, K) = source.coords.T, source.shape
        flat = sp.coo_array((source.values, (i * J + j, k)), shape=(source.shape[0] * J, K))
        dense, cycles = _coo_to_dense(flat, _block, _run_bits, seed)
        return dense.reshape(source.shape), cycles
    _matrix(source, "COO to Dense")
    matrix = sorted_coo(source)
    component = CooToDense(lanes=LANES, width=WIDTH, value_width=value_width(matrix.data))
    (dense,), cycles = simulate(component, [matrix], seed)
    return dense, cycles


_coo_to_dense.orders = (2, 3)


def _csr_to_dense(source, _block, _run_bits, seed):
    matrix = canonical_csr(source)
    component = CsrToDense(lanes=LANES, width=WIDTH, value_width=value_width(matrix.data))
    (dense,), cycles = simulate(component, [matrix], seed)
    return dense, cycles


def _rlc_to_dense(source, _block, _run_bits, seed):
    component = RlcToDense(lanes=LANES, run_bits=source.run_bits, width=WIDTH,
                           value_width=value_width(source.values))
    (dense,), cycles = simulate(component, [source], seed)
    return dense, cycles


CONVERSIONS = {("csr", "coo"): _csr_to_coo, ("coo", "dense"): _coo_to_dense,
               ("csr", "dense"): _csr_to_dense, ("rlc", "dense"): _rlc_to_dense}
"""The conversions these blocks do, for :mod:`sparseforge.tb.convert`; CSR to Dense and RLC
to Dense each run as one composite design."""
