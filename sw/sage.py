"""SAGE: the compression-format recommender of MINT/SAGE (Qin et al., Section VI).

For O = A·B (A is M x K and streams, B is K x N and stays in the PEs; SpGEMM:
both sparse, SpMM: B dense) SAGE picks each operand's memory compression
format (MCF, one of :data:`MCFS`) and algorithm compression format (ACF, one
of :data:`ACFS`), and with them whether MINT converts between the two, by the
lowest energy-delay product (EDP). Three models, each small enough to check by
hand; where the paper's text lost its equations the simplest model consistent
with the text is used, and the decision is written here.

Compactness (Section III-A)
    Bits of an r x c operand with z nonzeros and v-bit values:
    Dense ``r c v``; ZVC ``r c + z v`` (a one-bit mask per element); RLC
    ``(z + f)(v + run)``, f the zero-valued entries a gap longer than the run
    field needs; COO ``z (v + w_r + w_c)``; CSR ``z (v + w_c) + (r + 1) w_p``;
    CSC ``z (v + w_r) + (c + 1) w_p``. Metadata takes "the log of the maximum
    possible value": ``w_r = ceil(log2 r)``, ``w_c = ceil(log2 c)``, pointers
    ``w_p = ceil(log2(z + 1))``, unless a fixed index width is given. RLC's
    run field is not an index: it is fixed, 5 bits as in Eyeriss's RLC [17],
    and a gap of g zeros costs ``floor(g / 2**run)`` extra zero-valued
    entries; the short field is why RLC beats ZVC at ~10% density, the extra
    entries why it loses to COO at 1e-6% (Section III-B).
    RLC and ZVC linearize row-major. Expected sizes assume uniformly random
    nonzeros (Section VI): a gap is geometric, ``E[f] = z q**R / (1 - q**R)``
    with ``q = 1 - density`` and ``R = 2**run``; exact sizes count a matrix's
    own gaps.

Compute (Section IV, Fig. 6; reconstructed)
    ``macs / lanes`` PEs, each holding one stationary *tile* of B: part of one
    column, rows in a k-range. On chip a buffer entry and a bus slot hold a
    value or one metadata item, told apart by a flag (Section IV-A), so a
    metadata item takes a value's width (its own if wider): a tile holds
    ``buffer / v`` dense elements, half as many CSC nonzeros (value, row id),
    a third as many COO ones, and CSR adds a row pointer per row. A column
    takes as many k-ranges as its buffers need, and more while PEs would
    idle (N below the PE count). A round fills ``min(N, PEs)`` columns' tiles
    and broadcasts A's columns in their k-ranges over the input bus,
    ``bus_bits`` a cycle. The performance model's "flexible NoC to deliver
    non-zeros" (Section VI) packs the stream: Dense(A) sends every element
    and a row id per row segment, CSR(A) value and column id per nonzero and
    a row id per non-empty row segment, COO(A) both ids per nonzero, CSC(A)
    row ids per nonzero and a column id per non-empty column. So CSR(A)
    streams fewer entries than Dense(A) below 50% density (in Fig. 6's
    walkthrough it takes 3 cycles to Dense(A)'s 8).

    A round takes the most of its stream's cycles and its busiest PE's
    products over ``lanes`` MACs; the Oreg sums a row and writes one partial
    sum per tile. CSC(A) sends each product to another output, a
    read-modify-write of the output buffer: one product per PE per cycle.
    Products: the tile's k-range times the density of each compressed operand
    (a dense operand's zeros are multiplied, Section III footnote 1). Filling
    the tiles moves all of B's ACF bits over the bus before the streams. The
    output O and its write to DRAM are the same for every choice and left out.

Conversion (MINT, Section V; priced by the hardware)
    Only conversions a converter block performs are offered. The blocks'
    measured rates are a table, :data:`RATES_PATH`, that ``sparseforge bench
    mint`` writes from its Verilator runs on real matrices: per block pair
    (``"csr->csc"``) the cycles as a sum of coefficients times the terms of
    :func:`rate_terms` (nonzeros, elements, pointers, the pointers CSR->CSC
    presents over its passes, the block row-slices BSR->COO reads, one),
    fitted by least squares, with the block's lanes, measured Fmax and, where
    it converts in passes, its buffers. The bench fits over, and SAGE prices
    with, the same terms. A pair the table lacks
    is a chain of pairs it has (ZVC->Dense->CSR), priced as the sum of its
    stages, each at the operand's rows, columns and nonzeros; the cheapest
    chain wins, and a pair no chain reaches is not offered. Every MCF but CSC
    is row-major, as are A's ACFs but CSC; B's sparse tiles hold a column
    each, and the only block that regroups into column order is CSR->CSC, so
    a column-major ACF is reached only as CSC (B's COO and CSR tiles are not
    offered). A converter cycle is taken as an accelerator cycle: MINT sits
    beside the accelerator at its clock. MINT converts while the MCF streams
    in (end of Section V-B), so an operand's load takes ``max(DRAM cycles,
    conversion cycles)``.

Cost (Section VI)
    Delay = both operands' load cycles + fill + stream cycles; energy =
    ``e_dram_bit`` per MCF bit + ``e_sram_bit`` per bit moved on chip (the
    stream, the fills, partial sums, MINT's reads and writes) + ``e_mac`` per
    product. DRAM moves ``dram_bits_per_cycle``: the paper gives no DRAM
    bandwidth, so the TPU's 34 GB/s (the paper's 16384-MAC reference [4]) at
    MINT's 1 GHz, 272 bits a cycle. Energies are Horowitz's 45 nm figures
    [13] (640 pJ per 32-bit DRAM access, 5 pJ per 32-bit 8 KB SRAM access,
    3.7 + 0.9 pJ per fp32 multiply-add: DRAM costs the paper's 6400 adds).
    EDP in J·s at ``clock_hz``. Ties go to the combination that converts
    fewer operands. On chip, each stage of a conversion reads its input and
    writes its output.

Fixed memory format
    ``mcf_a`` given (the user's matrix is stored in one format): SAGE picks
    only among the combinations with that MCF for A.
"""

import functools
import itertools
import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
from scipy import sparse

from ..core.errors import ParameterError

MCFS = ("Dense", "RLC", "ZVC", "COO", "CSR", "CSC")
"""Memory compression formats (Section VII-A)."""

ACFS = ("Dense", "COO", "CSR", "CSC")
"""Algorithm compression formats (Section VII-A)."""

KERNELS = ("spgemm", "spmm")


def _any(p, n):
    """``1 - (1 - p)**n``: that n elements at density p hold a nonzero (accurate for tiny p)."""
    return 1.0 if p == 1 else -math.expm1(n * math.log1p(-p))


def _width(values):
    """Bits of a field that takes ``values`` distinct values: the log of the maximum possible."""
    return max(1, (int(values) - 1).bit_length())


@dataclass(frozen=True)
class Accelerator:
    """The weight-stationary accelerator of Sections IV and VII-A, MINT's rates, and energies.

    Paper: ``macs``, ``buffer_bytes`` and ``bus_bits`` (Section VII-A),
    ``lanes`` (Section IV-A, Fig. 7), ``clock_hz`` (MINT at 1 GHz, Section
    VII-B). Ours: ``rlc_run_bits`` (Eyeriss's RLC [17]),
    ``dram_bits_per_cycle`` (the TPU's 34 GB/s [4] at 1 GHz), and the
    energies in pJ from Horowitz [13]. MINT's rates are the blocks' own
    (:class:`MintRates`).
    """

    macs: int = 16384
    lanes: int = 8
    buffer_bytes: int = 512
    bus_bits: int = 512
    clock_hz: float = 1e9
    dram_bits_per_cycle: int = 272
    rlc_run_bits: int = 5
    e_dram_bit: float = 20.0
    e_sram_bit: float = 5.0 / 32
    e_mac: float = 4.6

    def __post_init__(self):
        for f in fields(self):
            if not getattr(self, f.name) > 0:
                raise ParameterError(f"accelerator {f.name} = {getattr(self, f.name)!r}: "
                                     "must be positive")
        if self.macs % self.lanes:
            raise ParameterError(f"accelerator macs = {self.macs}: not a multiple of "
                                 f"lanes = {self.lanes}")

    @property
    def pes(self):
        """Processing elements: ``macs / lanes`` vector MACs."""
        return self.macs // self.lanes

    def to_dict(self):
        return asdict(self)


def _check_bits(name, bits, allow_none=False):
    if bits is None and allow_none:
        return
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 64:
        raise ParameterError(f"{name} = {bits!r}: must be an integer in [1, 64]")


def _check_format(name, value, allowed):
    if value not in allowed:
        raise ParameterError(f"{name} {value!r}: must be one of {', '.join(allowed)}")


def _check_density(name, density):
    if not 0 < density <= 1:
        raise ParameterError(f"{name} = {density!r}: must be in (0, 1]")


def _check_dim(name, value):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ParameterError(f"{name} = {value!r}: must be a positive integer")


@dataclass(frozen=True)
class Compactness:
    """Bits of one operand in every MCF (Section III-A).

    ``nnz`` is expected (a float) unless ``exact``, when the sizes are those
    of the matrix's own structure.
    """

    rows: int
    cols: int
    nnz: float
    value_bits: int
    index_bits: int | None
    run_bits: int
    exact: bool
    bits: dict

    @property
    def density(self):
        return self.nnz / (self.rows * self.cols)

    @property
    def best(self):
        """The most compact MCF (the first of :data:`MCFS` on a tie)."""
        return min(MCFS, key=self.bits.__getitem__)

    def to_dict(self):
        return {"rows": self.rows, "cols": self.cols, "nnz": self.nnz,
                "density": self.density, "value_bits": self.value_bits,
                "index_bits": self.index_bits, "run_bits": self.run_bits, "exact": self.exact,
                "bits": dict(self.bits), "best": self.best}


def _sizes(rows, cols, nnz, rlc_entries, value_bits, index_bits):
    """The closed forms of the module docstring, given the nonzeros and RLC's entries."""
    w_r = index_bits or _width(rows)
    w_c = index_bits or _width(cols)
    w_p = index_bits or _width(round(nnz) + 1)
    return {"Dense": rows * cols * value_bits,
            "RLC": rlc_entries,
            "ZVC": rows * cols + nnz * value_bits,
            "COO": nnz * (value_bits + w_r + w_c),
            "CSR": nnz * (value_bits + w_c) + (rows + 1) * w_p,
            "CSC": nnz * (value_bits + w_r) + (cols + 1) * w_p}


def expected_compactness(rows, cols, density, value_bits=32, index_bits=None, run_bits=5):
    """Expected bits of every MCF for a uniformly random ``rows x cols`` operand."""
    _check_dim("rows", rows)
    _check_dim("cols", cols)
    _check_density("density", density)
    _check_bits("value_bits", value_bits)
    _check_bits("index_bits", index_bits, allow_none=True)
    _check_bits("run_bits", run_bits)
    rows, cols = int(rows), int(cols)
    nnz = density * rows * cols
    entries = nnz / _any(density, 2 ** run_bits)    # z (1 + q**R / (1 - q**R))
    sizes = _sizes(rows, cols, nnz, entries * (value_bits + run_bits), value_bits, index_bits)
    return Compactness(rows, cols, nnz, value_bits, index_bits, run_bits, False, sizes)


def matrix_compactness(matrix, value_bits=32, index_bits=None, run_bits=5):
    """Exact bits of every MCF for a scipy sparse matrix (explicit zeros are not stored).

    Memory follows the nonzeros: the RLC gaps come from the sorted
    coordinates, never from a dense view.
    """
    _check_bits("value_bits", value_bits)
    _check_bits("index_bits", index_bits, allow_none=True)
    _check_bits("run_bits", run_bits)
    coo = sparse.coo_array(matrix)
    coo.sum_duplicates()                            # row-major order, one entry per coordinate
    keep = coo.data != 0
    rows, cols = (int(n) for n in coo.shape)
    row, col = coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64)
    nnz = len(row)
    # row-major positions, in Python integers where rows * cols overflows int64
    dtype = np.int64 if rows * cols < 2**63 else object
    position = row.astype(dtype) * cols + col.astype(dtype)
    gaps = np.diff(position, prepend=-1) - 1
    fillers = int((gaps // 2 ** run_bits).sum()) if nnz else 0
    sizes = _sizes(rows, cols, nnz, (nnz + fillers) * (value_bits + run_bits),
                   value_bits, index_bits)
    return Compactness(rows, cols, nnz, value_bits, index_bits, run_bits, True, sizes)


@dataclass(frozen=True)
class Workload:
    """O = A·B with A ``m x k`` at ``density_a`` and B ``k x n`` at ``density_b``.

    SpMM's B is dense (``density_b`` 1). ``index_bits`` None: metadata widths
    from the dimensions (Section III-A); an integer: every index that width.
    """

    kernel: str
    m: int
    k: int
    n: int
    density_a: float
    density_b: float = 1.0
    value_bits: int = 32
    index_bits: int | None = None

    def __post_init__(self):
        if self.kernel not in KERNELS:
            raise ParameterError(f"kernel {self.kernel!r}: must be one of {', '.join(KERNELS)}")
        for name in ("m", "k", "n"):
            _check_dim(name, getattr(self, name))
        _check_density("density_a", self.density_a)
        _check_density("density_b", self.density_b)
        if self.kernel == "spmm" and self.density_b != 1:
            raise ParameterError(f"density_b = {self.density_b!r}: SpMM's B is dense (1)")
        _check_bits("value_bits", self.value_bits)
        _check_bits("index_bits", self.index_bits, allow_none=True)

    def to_dict(self):
        return asdict(self)


@dataclass(frozen=True)
class ComputeCost:
    """Cycles and energy of one ACF pair on the weight-stationary accelerator (Section IV).

    Members
    -------
    tile_k : rows of B one PE holds (its k-range).
    rounds : fills of the PE array, each followed by A's stream over its k-ranges.
    stream_bits : A's bits on the bus for one pass over all of K.
    fill_cycles, stream_cycles : filling the tiles; streaming A and multiplying.
    products : multiplications, zeros of a dense operand included.
    onchip_bits : bits moved on chip: the streams, the fills and the partial sums.
    energy_pj : ``products * e_mac + onchip_bits * e_sram_bit``.
    """

    acf_a: str
    acf_b: str
    tile_k: int
    rounds: int
    stream_bits: float
    fill_cycles: float
    stream_cycles: float
    products: float
    onchip_bits: float
    energy_pj: float

    @property
    def cycles(self):
        return self.fill_cycles + self.stream_cycles

    def to_dict(self):
        return {**asdict(self), "cycles": self.cycles}


def compute_cost(workload, acf_a, acf_b, acc=None):
    """Cycles and energy of ``workload`` computed in ``acf_a``-``acf_b`` (module docstring)."""
    acc = acc or Accelerator()
    _check_format("acf_a", acf_a, ACFS)
    _check_format("acf_b", acf_b, ACFS)
    w = workload
    v, bus = w.value_bits, acc.bus_bits
    d_a, d_b = w.density_a, w.density_b
    # on chip a metadata item takes a value's entry (Section IV-A), or its own width if wider
    w_m, w_k, w_n, w_p = (max(v, w.index_bits or _width(x))
                          for x in (w.m, w.k, w.n, round(d_b * w.k * w.n) + 1))
    buffer = acc.buffer_bytes * 8
    # the stationary tile: B's k-range one PE holds, and its bits per row of that range
    if acf_b == "Dense":
        bits_per_k = v
        tile_k = buffer // v
    elif acf_b == "CSR":
        bits_per_k = w_p + d_b * (v + w_n)
        tile_k = int(buffer // bits_per_k)
    else:
        entry = v + w_k + (w_n if acf_b == "COO" else 0)
        bits_per_k = d_b * entry
        tile_k = int((buffer // entry) / d_b)
    if tile_k < 1:
        raise ParameterError(f"acf_b {acf_b}: one row of B's tile does not fit a "
                             f"{acc.buffer_bytes}-byte PE buffer")
    # a column takes the k-ranges its buffers need, and more while PEs would idle
    tiles_per_column = max(math.ceil(w.k / tile_k), min(w.k, acc.pes // w.n))
    tile_k = math.ceil(w.k / tiles_per_column)
    columns = min(w.n, acc.pes)
    group = min(tiles_per_column, acc.pes // columns)
    passes, groups = math.ceil(w.n / columns), math.ceil(tiles_per_column / group)
    span = w.k / groups                             # A's columns streamed per round
    nonzeros = w.m * w.k * d_a
    stream_bits = {                                 # all of A once, in row segments of a span
        "Dense": w.m * w.k * v + groups * w.m * w_m,
        "CSR": nonzeros * (v + w_k) + groups * w.m * _any(d_a, span) * w_m,
        "COO": nonzeros * (v + w_m + w_k),
        "CSC": nonzeros * (v + w_m) + w.k * _any(d_a, w.m) * w_k,
    }[acf_a]
    hit = (d_a if acf_a != "Dense" else 1.0) * (d_b if acf_b != "Dense" else 1.0)
    products = w.m * w.n * w.k * hit
    if acf_a == "CSC":                              # each product updates another output
        pe_rate, partial_bits = 1, 2 * v * products
    else:                                           # the Oreg sums a row: one write per tile
        pe_rate = acc.lanes
        partial_bits = v * w.m * w.n * tiles_per_column * _any(hit, tile_k)
    round_cycles = max(stream_bits / groups / bus, w.m * tile_k * hit / pe_rate)
    rounds = passes * groups
    fill_bits = w.n * w.k * bits_per_k
    onchip = passes * stream_bits + fill_bits + partial_bits
    energy = products * acc.e_mac + onchip * acc.e_sram_bit
    return ComputeCost(acf_a, acf_b, tile_k, rounds, stream_bits, fill_bits / bus,
                       rounds * round_cycles, products, onchip, energy)


RATES_PATH = Path(__file__).with_name("mint_rates.json")
"""The converter blocks' measured rates, written by ``sparseforge bench mint``."""

RATE_TERMS = ("nnz", "elements", "pointers", "row_passes", "col_passes", "slices", "one")
"""What a conversion's cycles may grow with (:func:`rate_terms`)."""

BUFFERS = ("max_rows", "max_cols", "max_nnz")
"""The buffers a counting sort's passes are planned by (:func:`counting_passes`)."""


def chains(edges, source, target, through=None):
    """Every chain of conversions from ``source`` to ``target`` over ``edges`` (a format
    to the formats a block takes it to), each a list of formats, no format visited twice
    but ``target`` reached again where it is ``source``; ``through``, where given, the
    formats a chain may pass through on the way."""
    found, paths = [], [[source]]
    while paths:
        path = paths.pop()
        for step in edges.get(path[-1], ()):
            if step == target:
                found.append([*path, step])
            elif step not in path and (through is None or step in through):
                paths.append([*path, step])
    return found


def counting_passes(keys, others, nnz, buffers):
    """The fewest passes of a counting sort through CSR->CSC's ``buffers`` (a mapping of
    :data:`BUFFERS`) keyed on ``keys`` columns of an operand of ``others`` rows and ``nnz``
    nonzeros, as :mod:`sparseforge.sw.passes` plans them: row bands of at most ``max_rows``
    rows, each in passes of at most ``max_cols`` columns and ``max_nnz`` nonzeros (its
    share of the nonzeros, spread evenly). A plan of real data may take a few more: its
    nonzeros are not spread evenly."""
    bands = max(1, math.ceil(others / buffers["max_rows"]))
    return max(1, math.ceil(keys / buffers["max_cols"]),
               math.ceil(nnz / bands / buffers["max_nnz"]))


def rate_terms(rows, cols, nnz, slices=None, buffers=None):
    """The terms a conversion's cycles are fitted over, for a ``rows x cols`` operand with
    ``nnz`` nonzeros: the nonzeros; the elements (a dense side's work); the pointers of a
    CSR and a CSC of it (``rows + cols + 2``: CSR->CSC reads one array and writes the
    other); ``row_passes``, every row's pointer once a pass of a sort keyed on the columns
    (CSR->CSC presents them all to each of its :func:`counting_passes` through
    ``buffers``), and ``col_passes``, every column's once a pass of a sort keyed on the
    rows (CSC->CSR, the same block on the transposed view), one pass each where no
    ``buffers`` are given; ``slices``, a BSR operand's blocks times their rows (BSR->COO
    reads a block once for each of its rows, fill included), taken as the nonzeros (1 x 1
    blocks) where not given; and one (a fixed start-up)."""
    by_cols, by_rows = ((counting_passes(cols, rows, nnz, buffers),
                         counting_passes(rows, cols, nnz, buffers)) if buffers else (1, 1))
    return {"nnz": nnz, "elements": rows * cols, "pointers": rows + cols + 2,
            "row_passes": rows * by_cols, "col_passes": cols * by_rows,
            "slices": nnz if slices is None else slices, "one": 1}


@dataclass(frozen=True)
class Rate:
    """One converter block's measured rate: cycles ``sum(coefficients[t] * terms[t])``
    over :func:`rate_terms`.

    ``block`` is the registered block, ``lanes`` and ``fmax_mhz`` its report
    configuration's (``fmax_mhz`` None where it was not placed), ``buffers``
    those of the build its passes go through (None where it takes none),
    ``fit`` how the coefficients were fitted (the matrices and the relative
    errors).
    """

    source: str
    target: str
    block: str
    coefficients: dict
    lanes: int | None = None
    fmax_mhz: float | None = None
    fit: dict = field(default_factory=dict, compare=False)
    buffers: dict | None = None

    def cycles(self, rows, cols, nnz, slices=None):
        """The block's cycles for a ``rows x cols`` operand of ``nnz`` nonzeros (and, from
        BSR, ``slices`` block row-slices): what the bench fits and SAGE prices with."""
        terms = rate_terms(rows, cols, nnz, slices, self.buffers)
        return float(sum(c * terms[t] for t, c in self.coefficients.items()))


@dataclass(frozen=True)
class Stage:
    """One block of a conversion at one operand's size."""

    source: str
    target: str
    cycles: float


@dataclass(frozen=True)
class Conversion:
    """How MINT brings an operand from its MCF into its ACF: the blocks in order (none
    where the operand is already in the ACF) and their cycles, summed."""

    stages: tuple

    @property
    def cycles(self):
        return sum(stage.cycles for stage in self.stages)

    @property
    def path(self):
        """``"ZVC->Dense->CSR"``; empty where nothing is converted."""
        if not self.stages:
            return ""
        return "->".join([self.stages[0].source, *(stage.target for stage in self.stages)])


class MintRates:
    """The converter blocks' rates and the chains they form, over SAGE's formats.

    ``rates`` maps ``(source, target)`` in :mod:`sparseforge.sw.conversion`'s
    lower-case names to a :class:`Rate`; pairs of formats SAGE does not model
    (BSR, CSF) are kept but form no chain.
    """

    def __init__(self, rates):
        self.rates = dict(rates)
        names = {f.lower(): f for f in (*MCFS, *ACFS)}
        self._edges = {}
        for source, target in self.rates:
            if source in names and target in names:
                self._edges.setdefault(names[source], []).append(names[target])

    @classmethod
    def from_table(cls, table, where="the MINT rate table"):
        """From the table's JSON object; a malformed table raises ParameterError naming
        ``where`` and the entry."""
        if not isinstance(table, dict) or not isinstance(table.get("conversions"), dict):
            raise ParameterError(f"{where}: malformed (expected an object with "
                                 "'conversions', each 'source->target')")
        rates = {}
        for key, entry in table["conversions"].items():
            try:
                source, target = key.split("->")
                coefficients = {t: float(c) for t, c in entry["coefficients"].items()}
                unknown = set(coefficients) - set(RATE_TERMS)
                if unknown or not coefficients:
                    raise ValueError(f"terms {sorted(unknown) or 'none'}: expected some "
                                     f"of {', '.join(RATE_TERMS)}")
                buffers = entry.get("buffers")
                if buffers is not None:
                    buffers = {b: int(buffers[b]) for b in BUFFERS}
                    if min(buffers.values()) < 1:
                        raise ValueError(f"buffers {buffers}: each at least 1")
                elif coefficients.keys() & {"row_passes", "col_passes"}:
                    raise ValueError("passes priced without the block's buffers "
                                     f"({', '.join(BUFFERS)})")
                rates[source, target] = Rate(source, target, entry["block"], coefficients,
                                             entry.get("lanes"), entry.get("fmax_mhz"),
                                             entry.get("fit", {}), buffers)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ParameterError(f"{where}: conversion {key!r} is malformed "
                                     f"({type(exc).__name__}: {exc})") from None
        return cls(rates)

    @classmethod
    def load(cls, path=RATES_PATH):
        try:
            with open(path) as f:
                table = json.load(f)
        except (OSError, ValueError) as exc:
            raise ParameterError(f"{path}: cannot read the MINT rate table ({exc}); "
                                 "`sparseforge bench mint` writes it") from None
        return cls.from_table(table, str(path))

    def chains(self, source, target):
        """Every chain of block pairs from ``source`` to ``target`` (SAGE's names)."""
        return chains(self._edges, source, target)

    def conversion(self, mcf, acf, compactness, column_major=False):
        """The cheapest :class:`Conversion` from ``mcf`` into ``acf`` for an operand of
        ``compactness``'s size, or None where no block or chain of blocks does it.
        ``column_major``: the ACF is laid out column by column (A in CSC, B's sparse tiles),
        which only CSC is."""
        _check_format("mcf", mcf, MCFS)
        _check_format("acf", acf, ACFS)
        if column_major and acf != "CSC":
            return None
        if mcf == acf:
            return Conversion(())
        c = compactness
        best = None
        for chain in self.chains(mcf, acf):
            stages = tuple(Stage(a, b, self.rates[a.lower(), b.lower()].cycles(
                c.rows, c.cols, c.nnz)) for a, b in itertools.pairwise(chain))
            candidate = Conversion(stages)
            if best is None or (candidate.cycles, len(stages)) < (best.cycles,
                                                                    len(best.stages)):
                best = candidate
        return best


def column_major(operand, acf):
    """Whether operand ``"A"`` or ``"B"`` in ``acf`` is laid out column by column: A in CSC,
    and every sparse ACF of B, whose tiles hold part of one column."""
    return acf == "CSC" if operand == "A" else acf != "Dense"


@functools.cache
def mint_rates():
    """The rates in :data:`RATES_PATH`, read once."""
    return MintRates.load()


@dataclass(frozen=True)
class Choice:
    """One MCF/ACF combination: its cycles, energy and EDP.

    An operand's load takes the most of its DRAM and conversion cycles (MINT
    converts while the MCF streams in); ``path_a`` and ``path_b`` name the
    blocks each operand goes through (``"ZVC->Dense->CSR"``, empty where it
    is not converted); ``compute_cycles`` is the ACF pair's
    :class:`ComputeCost`. ``energy_j`` covers DRAM, MINT and compute;
    ``edp`` is ``energy_j`` times the delay in seconds.
    """

    mcf_a: str
    mcf_b: str
    acf_a: str
    acf_b: str
    dram_cycles_a: float
    conversion_cycles_a: float
    dram_cycles_b: float
    conversion_cycles_b: float
    compute_cycles: float
    energy_j: float
    edp: float
    path_a: str = ""
    path_b: str = ""

    @property
    def cycles(self):
        return (max(self.dram_cycles_a, self.conversion_cycles_a)
                + max(self.dram_cycles_b, self.conversion_cycles_b) + self.compute_cycles)

    @property
    def converts(self):
        """Operands MINT converts (or regroups)."""
        return [op for op, path in (("A", self.path_a), ("B", self.path_b)) if path]

    def to_dict(self):
        return {**asdict(self), "cycles": self.cycles, "converts": self.converts}


@dataclass(frozen=True)
class Recommendation:
    """SAGE's answer: the lowest-EDP MCF/ACF combination and the best one without MINT.

    ``direct`` computes in the memory formats (nothing converted; None where
    A's fixed MCF is no ACF); converting pays off when ``best`` has the lower
    EDP. ``compute`` maps each ACF pair to its :class:`ComputeCost`,
    ``choices`` each ``(mcf_a, mcf_b, acf_a, acf_b)`` the hardware can
    convert to its :class:`Choice`; ``mcf_a`` is A's fixed MCF, if given.
    """

    workload: Workload
    accelerator: Accelerator
    compactness_a: Compactness
    compactness_b: Compactness
    compute: dict
    best: Choice
    direct: Choice | None
    choices: dict = field(repr=False)
    mcf_a: str | None = None

    @property
    def conversion_pays(self):
        return self.direct is None or self.best.edp < self.direct.edp

    def choice(self, mcf_a, mcf_b, acf_a, acf_b):
        """Any one combination, e.g. to compare another recommender's with ``best``; None
        where no converter block (or chain of them) performs its conversions."""
        return self.choices.get((mcf_a, mcf_b, acf_a, acf_b))

    def by_acf_a(self):
        """The best choice for each ACF of A the hardware reaches, lowest EDP first (with A's
        MCF fixed: SAGE's options for the stored matrix)."""
        best = {}
        for c in self.choices.values():
            if c.acf_a not in best or (c.edp, len(c.converts)) < (best[c.acf_a].edp,
                                                                   len(best[c.acf_a].converts)):
                best[c.acf_a] = c
        return sorted(best.values(), key=lambda c: c.edp)

    def to_dict(self):
        return {"workload": self.workload.to_dict(), "accelerator": self.accelerator.to_dict(),
                "mcf_a": self.mcf_a,
                "acf_a_options": [c.to_dict() for c in self.by_acf_a()],
                "compactness": {"A": self.compactness_a.to_dict(),
                                "B": self.compactness_b.to_dict()},
                "compute": [c.to_dict() for c in self.compute.values()],
                "best": self.best.to_dict(),
                "direct": self.direct.to_dict() if self.direct else None,
                "conversion_pays": self.conversion_pays}


def _loads(operand, compactness, acc, rates):
    """``{(mcf, acf): (DRAM cycles, Conversion, energy pJ)}`` of ``operand`` (``"A"`` or
    ``"B"``), for the pairs the hardware converts."""
    loads = {}
    for mcf in MCFS:
        bits = compactness.bits[mcf]
        for acf in ACFS:
            convert = rates.conversion(mcf, acf, compactness, column_major(operand, acf))
            if convert is None:
                continue
            moved = sum(compactness.bits[s.source] + compactness.bits[s.target]
                        for s in convert.stages)
            loads[mcf, acf] = (bits / acc.dram_bits_per_cycle, convert,
                               bits * acc.e_dram_bit + moved * acc.e_sram_bit)
    return loads


def recommend(workload, acc=None, compactness_a=None, rates=None, mcf_a=None):
    """SAGE (Section VI) for ``workload``: every MCF/ACF combination the converter blocks
    (``rates``, by default :func:`mint_rates`) can reach, the lowest EDP wins; ``mcf_a``
    fixes A's memory format.

    ``compactness_a`` gives A's exact sizes (:func:`matrix_compactness`);
    without it both operands take the expected sizes at their densities.
    """
    acc = acc or Accelerator()
    rates = rates or mint_rates()
    if mcf_a is not None:
        _check_format("mcf_a", mcf_a, MCFS)
    w = workload
    size_a = compactness_a or expected_compactness(w.m, w.k, w.density_a, w.value_bits,
                                                   w.index_bits, acc.rlc_run_bits)
    if (size_a.rows, size_a.cols) != (w.m, w.k):
        raise ParameterError(f"A's sizes are for {size_a.rows} x {size_a.cols}, "
                             f"the workload's A is {w.m} x {w.k}")
    size_b = expected_compactness(w.k, w.n, w.density_b, w.value_bits, w.index_bits,
                                  acc.rlc_run_bits)
    compute = {(a, b): compute_cost(w, a, b, acc) for a in ACFS for b in ACFS}
    load_a = _loads("A", size_a, acc, rates)
    load_b = _loads("B", size_b, acc, rates)
    choices = []
    for (mcf, acf_a), (dram_a, convert_a, energy_a) in load_a.items():
        if mcf_a not in (None, mcf):
            continue
        for (mcf_b, acf_b), (dram_b, convert_b, energy_b) in load_b.items():
            cost = compute[acf_a, acf_b]
            energy = (energy_a + energy_b + cost.energy_pj) * 1e-12
            delay = (max(dram_a, convert_a.cycles) + max(dram_b, convert_b.cycles)
                     + cost.cycles) / acc.clock_hz
            choices.append(Choice(mcf, mcf_b, acf_a, acf_b, dram_a, convert_a.cycles, dram_b,
                                  convert_b.cycles, cost.cycles, energy, energy * delay,
                                  convert_a.path, convert_b.path))
    if not choices:
        raise ParameterError(f"MCF {mcf_a} of A: no converter block (or chain of them) brings "
                             "it into any ACF")

    def rank(choice):
        return choice.edp, len(choice.converts)

    best = min(choices, key=rank)
    direct = min((c for c in choices if not c.converts), key=rank, default=None)
    return Recommendation(w, acc, size_a, size_b, compute, best, direct,
                          {(c.mcf_a, c.mcf_b, c.acf_a, c.acf_b): c for c in choices}, mcf_a)


def recommend_matrix(matrix, kernel="spgemm", n=None, density_b=None, value_bits=32,
                     index_bits=None, acc=None, rates=None, mcf_a=None):
    """SAGE with ``matrix`` as A: its exact sizes, its density for the compute model;
    ``mcf_a`` fixes its memory format (the format it is stored in).

    B is ``K x n``, n defaulting to ``ceil(M / 2)`` as the paper's factor
    matrices (Section VII-A); SpGEMM's B has ``density_b``, by default A's.
    """
    acc = acc or Accelerator()
    size_a = matrix_compactness(matrix, value_bits, index_bits, acc.rlc_run_bits)
    if size_a.nnz == 0:
        raise ParameterError("the matrix has no nonzeros: SAGE needs a density above 0")
    if density_b is None:
        density_b = size_a.density if kernel == "spgemm" else 1.0
    workload = Workload(kernel, size_a.rows, size_a.cols,
                        math.ceil(size_a.rows / 2) if n is None else n,
                        size_a.density, density_b, value_bits, index_bits)
    return recommend(workload, acc, size_a, rates, mcf_a)
