"""A kernel as a Tensaurus run: the CISS stream, the operand matrices padded to the
array's rank, the golden output, and the run's roofline figures (Tensaurus Sections
5 and 7.1, Fig. 7).

The PEs compute on integers (exact, wrapping at ``acc_width`` bits), so values and
factors must be integers. A kernel maps to the PE's two modes:

- SpMTTKRP and DMTTKRP: ``Y[i] = sum_j B[j] * sum_k A[i,j,k] C[k]``: operand 0 is C
  (mode 2's factor), operand 1 is B (mode 1's);
- SpTTMc and DTTMc: ``Y[i,u,w] = sum_j B[j,u] sum_k A[i,j,k] C[k,w]`` (B's rank ``r1``
  and C's may differ): operand 0 is C, split over the PE columns as in MTTKRP; operand 1
  is B, each row whole in every column (``ceil(r1 / vlen)`` chunks); the output, ``I x
  r1 x R``, comes out as rows of ``r1 * R`` values;
- SpMM, GEMM, SpMV and GEMV: ``Y[i] = sum_j A[i,j] B[j]``: operand 0 is B.

A dense operand (DMTTKRP, DTTMc, GEMM, GEMV) runs as the CISS stream of its nonzeros:
the hardware's work is the same, the TLU's own dense path is not built. A rank of ``F``
runs as ``R = tlen * cols * vlen >= F`` columns, the rest zero.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from . import ciss as cissmod
from . import tensor_kernels
from .formats import Tensor

KERNELS = {"spmttkrp": "mttkrp", "dmttkrp": "mttkrp", "spttmc": "ttmc", "dttmc": "ttmc",
           "spmm": "mm", "gemm": "mm", "spmv": "mm", "gemv": "mm"}
"""The kernels a run takes, and the PE mode each runs in."""

DENSE = ("dmttkrp", "dttmc", "gemm", "gemv")


@dataclass(frozen=True, eq=False)
class Job:
    """A run: ``ciss`` the tensor's stream, ``mats`` the operand matrices (int64, ``R``
    columns; TTMc's B ``ceil(r1 / vlen) * vlen``), ``golden`` the exact output
    (``out_rows x rank``, in TTMc ``out_rows x r1 x rank``; wrapped), the array."""

    kernel: str
    mode: str               # "mttkrp", "ttmc" or "mm"
    ciss: cissmod.Ciss
    mats: tuple
    golden: np.ndarray
    rank: int               # of the output's split columns: B's (MM), C's (MTTKRP, TTMc)
    r1: int                 # B's rank in TTMc; 1 otherwise
    fibers: int             # (i, j) fibers of an MTTKRP or TTMc; 0 for MM
    rows: int
    cols: int
    vlen: int
    tlen: int
    acc_width: int

    @property
    def out_rows(self):
        return self.golden.shape[0]

    def macs(self):
        """Lane multiply-accumulates the PEs do: each PE of a row one chunk operation per
        chunk for a nonzero, and for each fiber's end (``r1`` per chunk in TTMc)."""
        return (self.ciss.nnz + self.fibers * self.r1) * self.tlen * self.cols * self.vlen


def wrap(values, bits):
    """Integers as ``bits``-bit two's complement (int64)."""
    values = np.asarray(values).astype(np.int64)
    if bits >= 64:
        return values
    shift = np.int64(64 - bits)
    return (values << shift) >> shift


def _integers(values, what):
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return values.astype(np.int64)
    if values.dtype.kind == "f" and np.isfinite(values).all() and (values == np.rint(values)).all():
        return values.astype(np.int64)
    raise ParameterError(f"{what}: the PEs compute on integers; give integer values")


def _as_tensor(operand, kernel):
    """The sparse operand as a Tensor of integer values (a dense one's nonzeros)."""
    if kernel in DENSE:
        dense = np.asarray(operand)
        want = 2 if KERNELS[kernel] == "mm" else 3
        if dense.ndim != want:
            raise ParameterError(f"{kernel} takes a dense {want}-D array, not {dense.ndim}-D")
        coords = np.argwhere(dense != 0)
        return Tensor(coords, _integers(dense[tuple(coords.T)], "the tensor"), dense.shape)
    if isinstance(operand, Tensor):
        tensor = operand
    else:
        m = operand.tocoo()
        tensor = Tensor(np.stack([m.row, m.col], 1).astype(np.int64), m.data, m.shape)
    want = 2 if KERNELS[kernel] == "mm" else 3
    if tensor.ndim != want:
        raise ParameterError(f"{kernel} takes a {want}-mode operand, not {tensor.ndim} modes")
    return Tensor(tensor.coords, _integers(tensor.values, "the tensor"), tensor.shape)


def plan(kernel, operand, factors, rows=2, cols=2, vlen=2, dw=16, iw=16, acc_width=32):
    """The :class:`Job` of ``kernel`` on ``operand`` (a Tensor, scipy sparse matrix or,
    for a dense kernel, an array) with ``factors`` (MTTKRP and TTMc: ``[B, C]``; MM:
    ``[B]``, a vector for SpMV and GEMV) on an ``rows x cols`` array of ``vlen`` lanes."""
    if kernel not in KERNELS:
        raise ParameterError(f"--kernel {kernel}: the hardware runs {', '.join(KERNELS)}")
    tensor = _as_tensor(operand, kernel)
    mode = KERNELS[kernel]
    mats = [_integers(f, f"factor {n}") for n, f in enumerate(factors)]
    if kernel in ("spmv", "gemv"):
        mats = [m.reshape(-1, 1) if m.ndim == 1 else m for m in mats]
    need = 1 if mode == "mm" else 2
    if len(mats) != need:
        raise ParameterError(f"{kernel} takes {need} factor matrices, not {len(mats)}")
    for n, (m, size) in enumerate(zip(mats, tensor.shape[1:], strict=True)):
        if m.ndim != 2 or m.shape[0] != size:
            raise ParameterError(f"factor {n} is {m.shape}: expected ({size}, rank)")
    ranks = [m.shape[1] for m in mats]
    if 0 in ranks or (mode == "mttkrp" and ranks[0] != ranks[1]):
        raise ParameterError(f"the factors' ranks differ or are 0: {ranks}")
    rank, r1 = ranks[-1], ranks[0] if mode == "ttmc" else 1
    tlen = -(-rank // (cols * vlen))
    padded = [np.pad(m, ((0, 0), (0, tlen * cols * vlen - rank))) for m in mats]
    limit = 1 << (dw - 1)
    for m in [tensor.values, *mats]:
        if m.size and (m.min() < -limit or m.max() >= limit):
            raise ParameterError(f"values beyond {dw}-bit integers (dw={dw})")
    fibers = 0
    if mode == "mm":
        golden = tensor_kernels.spmm(tensor, mats[0])
        operands = (padded[0],)
    else:
        held = tensor.values != 0
        fibers = len(np.unique(tensor.coords[held, :2], axis=0))
        if mode == "mttkrp":
            golden = tensor_kernels.spmttkrp(tensor, [None, *mats])
            operands = (padded[1], padded[0])       # operand 0: C; operand 1: B
        else:                                       # B whole: ceil(r1 / vlen) chunks
            golden = tensor_kernels.spttmc(tensor, [None, *mats])
            operands = (padded[1], np.pad(mats[0], ((0, 0), (0, -r1 % vlen))))
    ciss = cissmod.encode(tensor, rows, dw=dw, iw=iw)
    return Job(kernel, mode, ciss, operands, wrap(golden, acc_width), rank, r1, fibers, rows,
               cols, vlen, tlen, acc_width)


def roofline(job, cycles, compute_cycles, entry_bits, chunk_bits):
    """The run's place under the roofline (Fig. 7), per cycle: ``ops`` (2 per lane
    multiply-accumulate) over the bytes it moved (the CISS stream, the matrices and the
    output), its throughput, the array's peak, and the MACs' utilization over the
    computing cycles (after the matrices loaded) and over the whole run."""
    macs = job.macs()
    ops = 2 * macs
    moved = (job.ciss.entries * entry_bits
             + sum(m.shape[0] * m.shape[1] // job.vlen for m in job.mats) * chunk_bits
             + job.out_rows * job.r1 * job.tlen * job.cols * job.vlen * job.acc_width) / 8
    lanes = job.rows * job.cols * job.vlen
    return {"ops": ops, "bytes": moved, "intensity_ops_per_byte": ops / moved,
            "ops_per_cycle": ops / cycles, "peak_ops_per_cycle": 2 * lanes,
            "utilization": macs / (compute_cycles * lanes),
            "utilization_with_loading": macs / (cycles * lanes)}
