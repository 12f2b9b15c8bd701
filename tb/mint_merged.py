# amaranth: UnusedElaboratable=no
"""Testbench of the merged converter (``mint_merged``, MINT_m): each of its modes runs a
matrix (a tensor for Dense to CSF, its CSF for CSF to COO) exactly as the separate
converter of that conversion does (:mod:`.convert_dense`, :mod:`.convert_rlc`,
:mod:`.convert_csf`, :mod:`.convert_bsr`, :mod:`.convert_ciss`), its streams renamed to the
merged ones, and the result is rebuilt by that converter's own rebuilding, so MINT_m and
MINT_b are held to one check. The memory ports (BSR to COO's, CSR to CISS's lanes')
answer each read once it is made, the reads known up front and checked. :class:`MixedBench`
runs matrices and tensors back to back, the mode and the sizes changing between them once
the one before has left.
"""

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..hw.compose.csr_to_dense import CsrToDense
from ..hw.convert_bsr import BsrToCoo, CsrToBsr
from ..hw.convert_ciss import CsrToCiss
from ..hw.convert_csc import CsrToCsc
from ..hw.convert_csf import CsfToCoo, DenseToCsf
from ..hw.convert_dense import DenseToCoo, DenseToCsr, DenseToZvc, ZvcToDense
from ..hw.convert_expand import CooToDense
from ..hw.convert_rlc import DenseToRlc, RlcToCoo, rlc_vector_layout
from ..hw.mint_merged import ciss_width
from ..sw import ciss as ciss_golden
from ..sw import conversion, wire
from ..sw.ciss_csr import csr_image
from ..sw.wire import MintMode
from . import convert_expand as expand
from . import native
from .convert_bsr import (
    _blocks,
    bank_need,
    block_columns,
    block_words,
    blocks_to_bsr,
    canonical_bsr,
    pointer_columns,
    slice_reads,
)
from .convert_ciss import EntryWords, element_words, lane_reads
from .convert_csc import CscBench, check_fits
from .convert_csf import (
    LEVELS,
    MODES,
    level_words,
    levels_to_csf,
    record_counts,
    records_to_tensors,
)
from .convert_csf import check_fits as check_tensor
from .convert_dense import RATE, SPECS, ConverterBench, ConverterResult, _bits
from .convert_rlc import vectors_to_rlc
from .streams import Bench, Codec, Columns, Static
from .tensaurus_tlu import entry_ints

SEPARATE = {MintMode.DENSE_TO_COO: DenseToCoo, MintMode.DENSE_TO_CSR: DenseToCsr,
            MintMode.DENSE_TO_ZVC: DenseToZvc, MintMode.ZVC_TO_DENSE: ZvcToDense,
            MintMode.RLC_TO_COO: RlcToCoo, MintMode.DENSE_TO_CSF: DenseToCsf,
            MintMode.CSR_TO_BSR: CsrToBsr, MintMode.CSR_TO_CSC: CsrToCsc,
            MintMode.DENSE_TO_RLC: DenseToRlc, MintMode.COO_TO_DENSE: CooToDense,
            MintMode.CSR_TO_DENSE: CsrToDense, MintMode.COO_TO_CSC: CsrToCsc,
            MintMode.BSR_TO_COO: BsrToCoo, MintMode.CSF_TO_COO: CsfToCoo,
            MintMode.CSR_TO_CISS: CsrToCiss}
"""The separate converter (MINT_b) each mode stands for."""

STREAMS = {MintMode.DENSE_TO_COO: {"coo": "words"},
           MintMode.DENSE_TO_CSR: {"entries": "words", "row_ptr": "marks"},
           MintMode.DENSE_TO_ZVC: {"mask": "marks", "values": "words"},
           MintMode.ZVC_TO_DENSE: {"dense": "expanded"},
           MintMode.RLC_TO_COO: {"coo": "words"},
           MintMode.DENSE_TO_CSF: {name: name for name in LEVELS},
           MintMode.CSR_TO_BSR: {"block_ptr": "block_ptr", "blocks": "blocks"},
           MintMode.CSR_TO_CSC: {"col_ptr": "col_ptr", "csc": "csc"},
           MintMode.DENSE_TO_RLC: {"pairs": "rlc"},
           MintMode.COO_TO_DENSE: {"dense": "expanded"},
           MintMode.CSR_TO_DENSE: {"dense": "expanded"},
           MintMode.COO_TO_CSC: {"col_ptr": "col_ptr", "csc": "csc"},
           MintMode.BSR_TO_COO: {"coo": "words", "mem__request": "bsr_mem__request"},
           MintMode.CSF_TO_COO: {"records": "tensor"},
           MintMode.CSR_TO_CISS: {"ciss": "ciss", "count": "ciss_count"}}
"""Each mode's outputs: the separate converter's stream name -> the merged one's (RLC and
BSR to COO's records come out in the words Dense to COO's do; Dense to RLC's ``pairs`` on
``rlc``, as the merged ``pairs`` is RLC to COO's input; COO and CSR to Dense's vectors on
``expanded``, as ZVC to Dense's). CSR to CISS's lanes' reads are on ``ciss_mem``
(:func:`outputs_of`)."""


def outputs_of(component, mode=None):
    """The merged converter's outputs (a memory port's reads among them): all of them, or
    ``{separate name: merged name}`` of ``mode``'s."""
    if mode is None:
        return ("words", "marks", "expanded", *LEVELS, "block_ptr", "blocks", "col_ptr",
                "csc", "rlc", "bsr_mem__request", "tensor", "ciss", "ciss_count",
                *(f"ciss_mem__{p}__request" for p in range(component.pes)))
    if mode == MintMode.CSR_TO_CISS:
        return {**STREAMS[mode], **{f"mem__{p}__request": f"ciss_mem__{p}__request"
                                    for p in range(component.pes)}}
    return STREAMS[mode]


@dataclass(frozen=True)
class Answers:
    """A memory port's answers: ``words`` in the order of its reads, ``addrs``, which
    ``request`` (the port's read stream) must carry; each answer is offered once its read
    is made."""

    words: list
    request: str
    addrs: np.ndarray
    span: int = 0
    """Addresses the matrix takes: the next matrix's reads on the port start past them."""

    def __len__(self):
        return len(self.words)

    def tolist(self):
        return list(self.words)


@dataclass(frozen=True)
class CissEntries:
    """CSR to CISS's result: its entries (each as an int, lane 0 lowest) and its count."""

    entries: tuple
    count: int

DIVIDES = (MintMode.DENSE_TO_COO, MintMode.DENSE_TO_CSR, MintMode.RLC_TO_COO,
           MintMode.DENSE_TO_CSF, MintMode.CSR_TO_BSR)
"""The modes that compute positions and divide them by the column count."""


def sizes(mode, source):
    """``(columns, fibers)`` of ``source`` in ``mode``: a tensor's ``dim2`` and ``dim1``, a
    matrix's column count (and no fibers)."""
    if mode == MintMode.DENSE_TO_CSF:
        return source.shape[2], source.shape[1]
    return source.shape[1], 0


def quotient(component, mode, source):
    """The largest quotient the divider gives for ``source`` in ``mode`` (a mode in
    :data:`DIVIDES`): its last block column in CSR to BSR, its last fiber in Dense to
    CSF, else its last row."""
    if mode == MintMode.CSR_TO_BSR:
        return max(source.shape[1] - 1, 0) // component.block[1]
    if mode == MintMode.DENSE_TO_CSF:
        return max(source.shape[0] * source.shape[1] - 1, 0)
    return max(source.shape[0] - 1, 0)


def _flat_dense(component, dense):
    """A flat dense stream (Dense to ZVC, Dense to CSF) on the merged ``dense`` port,
    ``row_end`` 0, row-major."""
    L = component.lanes
    dense = np.asarray(dense).reshape(-1, np.shape(dense)[-1])
    vectors, flags = wire.dense_vectors(_bits(dense, component.width), L, rows=False)
    flags = {"row_end": np.zeros(len(vectors), dtype=np.uint8), **flags}
    return wire.pack_lanes((wire.Field("value", component.width),), L, wire.dense_flags(),
                           {"value": vectors, **flags})


def _pairs(component, rlc):
    """An RLC matrix's vectors on ``pairs``; an empty matrix's one vector of (0, 0) pairs."""
    L = component.lanes
    columns = wire.rlc_vectors(rlc.runs, _bits(rlc.values, component.width), L)
    if not len(columns["last"]):
        columns = {"run": np.zeros((1, L), np.uint64), "value": np.zeros((1, L), np.uint64),
                   "last": np.ones(1, np.uint64)}
    return wire.pack_lanes(wire.rlc_pair(component.run_bits, component.width), L,
                           wire.rlc_end(), columns)


def _bsr_streams(component, matrix):
    """BSR to COO's streams: the block-row pointers on ``row_ptr``, the block words the
    slice walker reads (each block row's blocks R times) answered on ``bsr_mem``; the
    words of the nonzeros (the fill dropped) and the reads out."""
    matrix = canonical_bsr(sp.bsr_array(matrix))
    if matrix.blocksize != component.block:
        raise ParameterError(f"a BSR matrix of {matrix.blocksize[0]} x "
                             f"{matrix.blocksize[1]} blocks: the converter takes "
                             f"{component.block[0]} x {component.block[1]}")
    blocks = int(matrix.indptr[-1])
    if max(blocks + 1, len(matrix.indptr)) > 1 << component.ptr_width or max(
            matrix.shape) > 1 << component.index_width:
        raise ParameterError(f"a {matrix.shape[0]} x {matrix.shape[1]} matrix of {blocks} "
                             f"blocks does not fit the converter's {component.index_width}-"
                             f"bit rows and columns and {component.ptr_width}-bit pointers")
    _bits(matrix.data, component.width)                 # refused where wider
    words = block_words(matrix, component.ptr_width, component.width)
    addrs = slice_reads(matrix)
    last = np.arange(len(matrix.indptr)) == len(matrix.indptr) - 1
    nonzeros = conversion.convert(matrix, "coo").nnz
    return ({"row_ptr": Columns({"ptr": matrix.indptr.astype(np.int64), "last": last}),
             "bsr_mem__response": Answers(list(words[addrs]), "bsr_mem__request", addrs,
                                          blocks)},
            {"words": nonzeros // component.lanes + 1, "bsr_mem__request": len(addrs)})


def check_reads(reads, outputs, fail):
    """``fail`` (a message) unless each memory port's read stream in ``outputs`` carried
    the addresses ``reads`` (``{stream: addresses}``) says."""
    for name, want in reads.items():
        got = [int(a) for a in outputs[name]]
        if got != [int(a) for a in want]:
            bad = next((i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w),
                       min(len(got), len(want)))
            fail(f"{name}: read {bad} of {len(want)} differs ({got[bad:bad + 1]} for "
                 f"{list(want[bad:bad + 1])})")


def _csf_streams(component, csf):
    """CSF to COO's streams: each level's records on ``csf0`` .. ``csf2``, ``lanes``
    nodes a record; a record a leaf (one for a tensor of none) out on ``tensor``. A 3-D
    tensor's only: a matrix's CSF (two levels) is refused."""
    if len(csf.shape) != MODES:
        raise ParameterError(f"CSF to COO takes a 3-D tensor's CSF; this one is "
                             f"{len(csf.shape)}-D")
    words = level_words(csf, component.lanes, component.index_width, component.ptr_width,
                        component.width)
    return ({f"csf{n}": packed for n, packed in enumerate(words)},
            {"tensor": max(len(csf.values), 1)})


def _ciss_streams(component, matrix):
    """CSR to CISS's streams: the rows on ``dense_shape``, the row pointers on ``row_ptr``,
    and each lane's reads of the elements of its rows (the golden encoder's schedule)
    answered on ``ciss_mem``; the entries and their count out."""
    c, matrix = component, sp.csr_array(matrix)
    dw = ciss_width(c.width)
    image = csr_image(matrix, dw, c.index_width, c.addr_width)
    golden = ciss_golden.encode(matrix, c.pes, dw, c.index_width)
    last = np.arange(image.rows + 1) == image.rows
    sources = {"row_ptr": Columns({"ptr": image.row_ptr, "last": last}),
               "dense_shape": Columns({"rows": [matrix.shape[0]], "cols": [matrix.shape[1]],
                                       "nnz": [matrix.nnz]})}
    sinks = {"ciss": golden.entries, "ciss_count": 1}
    for p in range(c.pes):
        reads = lane_reads(image, golden, p)
        sources[f"ciss_mem__{p}__response"] = Answers(
            list(element_words(image, reads, c.index_width, dw)),
            f"ciss_mem__{p}__request", reads)
        sinks[f"ciss_mem__{p}__request"] = len(reads)
    return sources, sinks


def golden_ciss(component, matrix):
    """The host encoder's CISS of ``matrix`` for the merged converter's lanes and widths, as
    :func:`rebuild` gives CSR to CISS's result."""
    golden = ciss_golden.encode(sp.csr_array(matrix), component.pes,
                                ciss_width(component.width), component.index_width)
    return CissEntries(tuple(entry_ints(golden)), golden.entries)


def _check_csr(component, matrix):
    """Refuse (ParameterError) a CSR matrix the CSR-to-BSR mode does not take."""
    (R, C), shape = component.block, matrix.shape
    if shape[0] % R or shape[1] % C:
        raise ParameterError(f"block {R},{C} does not divide the {shape[0]} x {shape[1]} "
                             "matrix")
    if max(shape[1], matrix.nnz) >> component.ptr_width:
        raise ParameterError(f"a {shape[0]} x {shape[1]} matrix of {matrix.nnz} nonzeros "
                             f"does not fit the converter's {component.ptr_width}-bit "
                             "pointers")
    need = bank_need(matrix, R)
    if need > component.depth:
        raise ParameterError(f"a row of {need} nonzeros (not the last of its block row) "
                             f"does not fit a scratchpad bank of depth {component.depth}")


def _coo_csc_streams(component, matrix):
    """COO to CSC's streams: the shape, the records' columns in their order and the
    records; how many CSC pointer vectors and entries come out. The mode is one stable
    counting sort by column, so each column's records must come in row order (row-major
    or column-major, as a Matrix Market file's usually are; any other order needs a
    first pass keyed on the rows, :func:`~sparseforge.tb.convert_csc.sort_records`'s
    plan, which this bench does not play): refused otherwise. A matrix with repeats or
    stored zeros is made canonical first (row-major)."""
    matrix = sp.coo_array(matrix)
    flat = matrix.row.astype(np.int64) * matrix.shape[1] + matrix.col
    if np.count_nonzero(matrix.data) < matrix.nnz or len(np.unique(flat)) < matrix.nnz:
        matrix = expand.sorted_coo(matrix)
    order = np.argsort(matrix.col, kind="stable")
    col, row = matrix.col[order], matrix.row[order].astype(np.int64)
    if np.any((np.diff(row) < 0) & (np.diff(col) == 0)):
        raise ParameterError("COO to CSC sorts by column in one pass: each column's records "
                             "must come in row order")
    lanes, nnz = component.lanes, matrix.nnz
    records = {"row": matrix.row.astype(np.int64), "col": matrix.col.astype(np.int64),
               "value": _bits(matrix.data, component.width),
               "last": (np.arange(nnz) == nnz - 1).astype(np.int64)}
    return ({"shape": Columns({"rows": [matrix.shape[0]], "cols": [matrix.shape[1]],
                               "nnz": [nnz]}),
             "col_ids": np.pad(records["col"], (0, -nnz % lanes)).reshape(-1, lanes).tolist(),
             "records": Columns(records)},
            {"col_ptr": matrix.shape[1] // lanes + 1, "csc": nnz})


def _csr_streams(component, matrix, mode):
    """A canonical CSR matrix's row pointers and nonzeros, and how many BSR block-row
    pointers and blocks, or CSC pointer vectors and entries, come out; CSR to CSC's
    shape and column ids before them."""
    last = np.arange(len(matrix.indptr)) == len(matrix.indptr) - 1
    sources = {"row_ptr": Columns({"ptr": matrix.indptr.astype(np.int64), "last": last}),
               "entries": Columns({"col": matrix.indices.astype(np.int64),
                                   "value": _bits(matrix.data, component.width)})}
    if mode == MintMode.CSR_TO_BSR:
        return sources, {"block_ptr": matrix.shape[0] // component.block[0] + 1,
                         "blocks": _blocks(matrix, component.block)}
    lanes = component.lanes
    sources["shape"] = Columns({"rows": [matrix.shape[0]], "cols": [matrix.shape[1]],
                                "nnz": [matrix.nnz]})
    sources["col_ids"] = np.pad(matrix.indices.astype(np.int64),
                                (0, -matrix.nnz % lanes)).reshape(-1, lanes).tolist()
    return sources, {"col_ptr": matrix.shape[1] // lanes + 1, "csc": matrix.nnz}


def _to_dense_streams(component, mode, source):
    """COO or CSR to Dense's streams of a scipy matrix, as the separate blocks' bench
    (:mod:`.convert_expand`) makes them, its ``shape`` on ``dense_shape``."""
    width = component.position_width
    expand.check_shape(source.shape, width)
    expand.check_area(source.shape)
    if mode == MintMode.COO_TO_DENSE:
        matrix = expand.sorted_coo(sp.coo_array(source))
        sources = expand.coo_streams([matrix])
    else:
        matrix = expand.canonical_csr(sp.csr_array(source))
        expand.check_csr(matrix, component.ptr_width)
        sources = {**expand.csr_streams([matrix]),
                   "shape": expand.shape_stream([matrix], [matrix.nnz])}
    if expand.value_width(matrix.data) > component.width:
        raise ParameterError(f"{matrix.dtype} values do not fit the converter's "
                             f"{component.width}-bit values")
    sources["dense_shape"] = sources.pop("shape")
    return sources, {"expanded": expand.vectors(source.shape, component.lanes)}


def streams(component, mode, source):
    """``(sources, sinks)`` of ``source`` in ``mode``: ``{input: packed payloads}`` and
    ``{output: how many}``, by the merged converter's stream names. A matrix (or tensor)
    whose positions or sizes need more than the converter's ``position_width`` bits is
    refused in a mode that divides."""
    if mode == MintMode.DENSE_TO_CSF:
        check_tensor(source, component.lanes, component.index_width, component.ptr_width,
                     component.width, "mint_merged")
    if mode == MintMode.BSR_TO_COO:
        return _bsr_streams(component, source)
    if mode == MintMode.CSF_TO_COO:
        return _csf_streams(component, source)
    if mode == MintMode.CSR_TO_CISS:
        return _ciss_streams(component, source)
    columns, fibers = sizes(mode, source)
    # the largest dividend (a position, or in CSR to BSR a column) and divisor
    largest = (columns - 1 if mode == MintMode.CSR_TO_BSR
               else max(int(np.prod(source.shape)) - 1, columns, fibers))
    named = f"a {' x '.join(map(str, source.shape))} {'tensor' if fibers else 'matrix'}"
    bsr, q = mode == MintMode.CSR_TO_BSR, component.quotient_width
    for over, widths in ((largest >> component.position_width,
                          f"{component.position_width}-bit positions"),
                         (quotient(component, mode, source) >> q, f"{q}-bit quotients "
                          "(quotient_width: rows, fibers, block columns)"),
                         (not bsr and columns > 1 << component.index_width,
                          f"{component.index_width}-bit columns")):
        if mode in DIVIDES and over:
            raise ParameterError(f"{named} does not fit the converter's {widths}")
    if mode == MintMode.CSR_TO_BSR:
        _check_csr(component, source)
        return _csr_streams(component, source, mode)
    if mode == MintMode.CSR_TO_CSC:
        check_fits(component.sorter, source)
        return _csr_streams(component, source, mode)
    if mode == MintMode.COO_TO_CSC:
        check_fits(component.sorter, source)
        return _coo_csc_streams(component, source)
    if mode == MintMode.DENSE_TO_CSF:
        counts = record_counts(np.asarray(source), component.lanes)
        return ({"dense": _flat_dense(component, source)},
                dict(zip(LEVELS, counts, strict=True)))
    if mode in (MintMode.COO_TO_DENSE, MintMode.CSR_TO_DENSE):
        return _to_dense_streams(component, mode, source)
    if mode == MintMode.DENSE_TO_RLC:
        if source.size > 1 << component.position_width:
            raise ParameterError(f"a {source.shape[0]} x {source.shape[1]} matrix does not "
                                 f"fit the converter's {component.position_width}-bit "
                                 "filler count")
        pairs = len(conversion.convert(source, "rlc", run_bits=component.run_bits).runs)
        return ({"dense": _flat_dense(component, source)},
                {"rlc": -(-pairs // component.lanes)})
    if mode == MintMode.RLC_TO_COO:
        nonzeros = int(np.count_nonzero(source.values))
        return {"pairs": _pairs(component, source)}, {"words": nonzeros // component.lanes + 1}
    spec, names = SPECS[SEPARATE[mode]], STREAMS[mode]
    sources = spec.sources(component, source)
    if mode == MintMode.DENSE_TO_ZVC:
        sources = {"dense": _flat_dense(component, source)}
    sinks = {names[name]: count for name, count in spec.sinks(component, source).items()}
    return sources, sinks


class MergedBench(ConverterBench):
    """A :class:`~.convert_dense.ConverterBench` whose sources may be a memory port's
    :class:`Answers`: each offered once its read is taken, the reads checked."""

    def __init__(self, component, sources, sinks, seed, rates=None):
        answers = {name: items for name, items in sources.items()
                   if isinstance(items, Answers)}
        plain = {name: items for name, items in sources.items() if name not in answers}
        rates = {**dict.fromkeys(answers, RATE), **(rates or {})}
        super().__init__(component, plain, sinks, seed, rates)
        if "ciss" in sinks:             # the entries as ints, as the separate block's bench
            self.codecs["ciss"] = self.streams["ciss"].codec = EntryWords(
                self.codecs["ciss"].shape)
        for name, given in answers.items():
            self.outputs[given.request] = given.addrs
            source = self.source_on(name, given.tolist(), rates[name],
                                    after={given.request: np.arange(1, len(given) + 1)})
            self.sources.append(source)
            self.drivers.append(source)


def bench(component, mode, source, seed, rates=None):
    """The :class:`MergedBench` of ``source`` through the merged ``component`` in
    ``mode``, ``columns`` held at its column count."""
    sources, sinks = streams(component, mode, source)
    run = MergedBench(component, sources, sinks, seed, rates)
    columns, fibers = sizes(mode, source)
    run.drivers[:0] = [Static("mode", mode.value), Static("columns", columns),
                       Static("fibers", fibers)]
    return run


def rebuild(component, mode, source, outputs):
    """The result of what the merged converter emitted, rebuilt as its separate
    converter's would be (RLC to COO's as Dense to COO's words are)."""
    given = {name: outputs[merged] for name, merged in STREAMS[mode].items()}
    if mode == MintMode.CSF_TO_COO:
        return records_to_tensors(given["records"], [(source.shape, source.values.dtype)])[0]
    if mode == MintMode.CSR_TO_CISS:
        if len(given["count"]) != 1:
            raise AssertionError(f"{len(given['count'])} counts for one matrix")
        return CissEntries(tuple(given["ciss"]), given["count"][0])
    if mode in (MintMode.COO_TO_DENSE, MintMode.CSR_TO_DENSE):
        return expand.split_dense(given["dense"], [source], component.lanes)[0]
    if mode == MintMode.DENSE_TO_RLC:
        codec = Codec(rlc_vector_layout(component.lanes, component.run_bits, component.width))
        held = SimpleNamespace(lanes=component.lanes, run_bits=component.run_bits,
                               value_width=component.width)
        return vectors_to_rlc([codec.pack(p) for p in given["pairs"]], held, source.shape,
                              source.dtype)
    if mode == MintMode.DENSE_TO_CSF:
        return levels_to_csf([given[name] for name in LEVELS],
                             [(source.shape, source.dtype)])[0]
    if mode in (MintMode.CSR_TO_CSC, MintMode.COO_TO_CSC):
        held = SimpleNamespace(component=component.sorter,
                               matrices=[(source.shape, source.nnz, source.dtype)])
        return CscBench.rebuild(held, given["col_ptr"], given["csc"])[0]
    if mode == MintMode.CSR_TO_BSR:
        block = component.block
        return blocks_to_bsr(pointer_columns(given["block_ptr"]),
                             block_columns(given["blocks"], block[0] * block[1]),
                             source.shape, block, source.dtype)
    if mode == MintMode.DENSE_TO_ZVC:
        given["values"] = [{**w, "lanes": [r["value"] for r in w["lanes"]]}
                           for w in given["values"]]
    block = DenseToCoo if mode in (MintMode.RLC_TO_COO, MintMode.BSR_TO_COO) else SEPARATE[mode]
    return SPECS[block].rebuild(component, source, given)


def simulate(component, mode, source, seed, rates=None, engine="native", work_dir=None):
    """``(result, cycles)`` of ``source`` through ``component`` in ``mode``, on Verilator
    (``native``) or Amaranth's simulator (``pysim``); the memory ports' reads checked."""
    run = bench(component, mode, source, seed, rates)
    done = native.simulate(run, engine, work_dir)
    check_reads(run.outputs, done.outputs, run.fail)
    return rebuild(component, mode, source, done.outputs), done.cycles


class _Schedule:
    """Drives ``mode`` and ``columns`` with the matrix of the bench's current job."""

    def __init__(self, bench):
        self.bench, self.fired = bench, None

    def idle(self, io):
        self.drive(io, 0)

    def drive(self, io, cycle):
        mode, source = self.bench.jobs[self.bench.current()]
        columns, fibers = sizes(mode, source)
        io.set("mode", mode.value)
        io.set("columns", columns)
        io.set("fibers", fibers)

    def sample(self, io, cycle):
        pass


class MixedBench(Bench):
    """``jobs`` (``[(mode, source)]``) through the merged converter back to back: every
    stream stalls at random, a job's inputs are offered only once the inputs of the jobs
    before it have all been taken and their outputs have all left, and ``mode`` and the
    sizes change then (as the converter's protocol asks). Python drivers gate the inputs,
    so it runs on Amaranth's simulator."""

    def __init__(self, component, jobs, seed, rates=None):
        super().__init__(component, seed)
        self.jobs, self.names = list(jobs), outputs_of(component)
        owners, items, requests, spans = {}, {}, {}, {}
        self.reads = {}                     # a memory port's reads, over every job
        self.ends, self.consumed = [], []   # per job: each output's, input's count through it
        through = dict.fromkeys(self.names, 0)
        for j, (mode, source) in enumerate(self.jobs):
            sources, sinks = streams(component, mode, source)
            for name, words in sources.items():
                items.setdefault(name, []).extend(
                    words.tolist() if hasattr(words, "tolist") else list(words))
                owners.setdefault(name, []).extend([j] * len(words))
                if isinstance(words, Answers):
                    requests[name], base = words.request, spans.get(words.request, 0)
                    self.reads.setdefault(words.request, []).extend(words.addrs + base)
                    spans[words.request] = base + words.span
            for name, count in sinks.items():
                through[name] += count
            self.ends.append(dict(through))
            self.consumed.append({name: len(given) for name, given in owners.items()})
        rates = {**dict.fromkeys([*items, *self.names], 0.7), **(rates or {})}
        self.codecs["ciss"] = EntryWords(self.codecs["ciss"].shape)

        def gate(name):
            return lambda n, o=owners[name]: o[n] == self.current()

        def after(name):
            return ({requests[name]: np.arange(1, len(items[name]) + 1)} if name in requests
                    else None)

        self.sources = {name: self.source_on(name, items[name], rates[name], after(name),
                                             gate=gate(name)) for name in items}
        self.sinks = {name: self.sink_on(name, rates[name], through[name])
                      for name in self.names}
        self.drivers = [_Schedule(self), *self.sources.values(), *self.sinks.values()]

    def current(self):
        """The first job whose inputs have not all been taken or whose outputs have not all
        left (the last once all have): a matrix of no nonzeros through CSR to CSC sends its
        last output (its pointers) before it takes its row pointers."""
        for j, (ends, taken) in enumerate(zip(self.ends, self.consumed, strict=True)):
            if (any(len(self.sinks[name].received) < ends[name] for name in self.names)
                    or any(len(self.sources[name].accepted) < count
                           for name, count in taken.items())):
                return j
        return len(self.jobs) - 1

    def check(self, io, cycle):
        ends = self.ends[self.current()]
        for name, sink in self.sinks.items():
            if len(sink.received) > ends[name]:
                self.fail(f"{name}: an item past the {ends[name]} its jobs so far emit")

    def from_outputs(self, cycles, outputs):
        return ConverterResult(cycles, outputs)

    def results(self, outputs):
        """Each job's result, rebuilt from its share of ``outputs``; the memory ports'
        reads checked."""
        check_reads(self.reads, outputs, self.fail)
        done, start = [], dict.fromkeys(self.names, 0)
        for (mode, source), ends in zip(self.jobs, self.ends, strict=True):
            share = {name: outputs[name][start[name]:ends[name]] for name in self.names}
            done.append(rebuild(self.component, mode, source, share))
            start = ends
        return done
