"""Golden kernels of Tensaurus's SF^3 compute pattern (Section 3, Eq. 9, Table 1).

Sparse: `spmttkrp` (Eqs. 1-3), `spttmc` (Eqs. 4-6), `spmm` (Eq. 7), `spmv`
(Eq. 8). Dense: `dmttkrp`, `dttmc`, `gemm`, `gemv`. The hardware's outputs are
checked against these.

``factors`` is one matrix per mode, SPLATT's convention: the output mode's
entry is not read (may be None). Every kernel stays in the inputs' own dtype
(numpy's result type), so integer inputs give exact int64 results.

The sparse tensor kernels run on a `FiberTree` built once per tensor and
output mode: the nonzeros sorted by output slice, then by the other modes
shortest first (SPLATT's CSF mode order: fewer fibers to multiply at the
upper levels; the sums are the same in any order), as CSF stores them. A
call computes the factored form of Eq. 3 / Eq. 6 bottom-up: a scipy CSR
product of the leaves with the last factor (``sum_k A(i,j,k) C(k,:)`` for
every fiber, no per-nonzero temporary), then per level a gather of that
level's factor rows, the Hadamard product (Kronecker: one product per column
of that factor), and a CSR product with the level's 0/1 parent matrix, which
sums each node's children (ten times faster than ``np.add.reduceat`` on
short fibers). Python loops run over levels and factor columns, never over
nonzeros. Float results may differ from another summation order in the last
bits; integer results are exact.
"""

import itertools
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from .formats import Tensor
from .occupancy import INT64_MAX, first_of_runs

MAX_OUTPUT = 1 << 28
"""Most elements of a dense output (a row per slice of the output mode)."""


def lex_order(coords, shape):
    """The permutation sorting ``coords`` ([n, ndim], within ``shape``) lexicographically,
    or None if they are already in order: an argsort of one linear index where the
    shape's size fits int64, else ``np.lexsort``."""
    if math.prod(shape) <= INT64_MAX:
        key = np.ravel_multi_index(tuple(coords.T), shape)
        return None if (key[1:] >= key[:-1]).all() else np.argsort(key)
    later = coords[1:, -1] >= coords[:-1, -1]
    for column in range(coords.shape[1] - 2, -1, -1):
        a, b = coords[1:, column], coords[:-1, column]
        later = (a > b) | ((a == b) & later)
    return None if later.all() else np.lexsort(coords.T[::-1])


@dataclass(frozen=True, eq=False)
class FiberTree:
    """A tensor's nonzeros as a CSF tree rooted at output mode ``mode``, in sparse matrices.

    Level 0 is the output mode's slices (all of them, empty or not), level l the
    distinct coordinate prefixes of length l + 1, the last level the nonzeros;
    ``modes`` gives the level order (``mode``, then the others shortest first).
    ``leaves`` is a CSR matrix [nodes of level ndim-2, size of the last mode] of the
    values, ``ups[l]`` a CSR matrix of ones [nodes of level l, nodes of level l+1]
    joining each node to its children, ``ids[l]`` each level-(l+1) node's coordinate.
    """

    shape: tuple
    modes: tuple
    ids: tuple
    ups: tuple
    leaves: sp.csr_array

    @classmethod
    def build(cls, tensor, mode=0):
        """The tree of ``tensor`` (a `Tensor` of order >= 2, or a scipy sparse matrix)."""
        coords, values, shape = coordinates(tensor)
        if isinstance(mode, bool) or mode not in range(len(shape)):
            raise ParameterError(f"mode={mode!r}: the tensor has modes 0..{len(shape) - 1}")
        if shape[mode] >= MAX_OUTPUT:
            raise ParameterError(f"mode {mode} has {shape[mode]} slices: an output of a row "
                                 f"each would be more than {MAX_OUTPUT} elements")
        modes = (mode, *sorted((m for m in range(len(shape)) if m != mode),
                               key=lambda m: (shape[m], m)))
        coords = coords[:, modes]
        order = lex_order(coords, [shape[m] for m in modes])
        if order is not None:
            coords, values = np.take(coords, order, axis=0), values[order]
        new = first_of_runs(coords[:, 0])
        starts = []  # per level 1 .. ndim-2: the first nonzero of each node
        for level in range(1, len(shape) - 1):
            new |= first_of_runs(coords[:, level])
            starts.append(np.flatnonzero(new))
        # level 0's pointers: its children counted per slice (level 1 nodes, or nonzeros)
        top = coords[starts[0], 0] if starts else coords[:, 0]
        pointers = [np.zeros(shape[mode] + 1, dtype=np.int64)]
        np.cumsum(np.bincount(top, minlength=shape[mode]), out=pointers[0][1:])
        pointers += [np.append(np.searchsorted(below, above), len(below))
                     for above, below in itertools.pairwise(starts)]
        # a matrix's rows are level 0
        leaf_pointers = np.append(starts[-1], len(values)) if starts else pointers.pop()
        leaves = sp.csr_array((values, coords[:, -1], leaf_pointers),
                              shape=(len(leaf_pointers) - 1, shape[modes[-1]]))
        ups = tuple(_ones(p, len(s)) for p, s in zip(pointers, starts, strict=True))
        ids = tuple(coords[s, level] for level, s in enumerate(starts, 1))
        return cls(tuple(shape), modes, ids, ups, leaves)

    def _check(self, factors, kernel):
        """The factor matrices of the non-output modes in level order, shapes checked, in
        the result's dtype."""
        if len(factors) != len(self.shape):
            raise ParameterError(f"{kernel}: {len(factors)} factor matrices for a "
                                 f"{len(self.shape)}-mode tensor (one per mode, the output "
                                 "mode's unused)")
        mats = []
        for m in self.modes[1:]:
            mat = np.asarray(factors[m])
            if mat.ndim != 2 or mat.shape[0] != self.shape[m]:
                raise ParameterError(f"{kernel}: factor {m} is {mat.shape}, expected "
                                     f"({self.shape[m]}, rank)")
            mats.append(mat)
        dtype = np.result_type(self.leaves.dtype, *mats)
        return [m.astype(dtype, copy=False) for m in mats]

    def _check_output(self, columns, kernel):
        """Refuse an output of more than `MAX_OUTPUT` elements before computing it."""
        rows = self.shape[self.modes[0]]
        if rows * columns > MAX_OUTPUT:
            raise ParameterError(f"{kernel}: the output would be {rows} x {columns} elements, "
                                 f"more than {MAX_OUTPUT}")

    def mttkrp(self, factors):
        """SpMTTKRP (Eq. 3): ``Y(i,:) = sum M2(i2,:) o ... o sum A(i,...,iN) MN(iN,:)``."""
        mats = self._check(factors, "SpMTTKRP")
        if len({m.shape[1] for m in mats}) != 1:
            raise ParameterError("SpMTTKRP: the factor matrices differ in rank: "
                                 f"{[m.shape[1] for m in mats]}")
        self._check_output(mats[0].shape[1], "SpMTTKRP")
        t = self.leaves @ mats[-1]
        for ids, mat, up in zip(self.ids[::-1], mats[-2::-1], self.ups[::-1], strict=True):
            rows = np.take(mat, ids, axis=0)
            rows *= t
            t = up @ rows
        return t

    def ttmc(self, factors):
        """SpTTMc (Eq. 6): ``Y(i,...) = sum M2(i2,:) (x) ... (x) sum A(i,...,iN) MN(iN,:)``,
        shape ``[I, F2, ..., FN]``, the rank axes in the order of their modes."""
        mats = self._check(factors, "SpTTMc")
        ranks = [m.shape[1] for m in mats]
        self._check_output(int(np.prod(ranks)), "SpTTMc")
        t = self.leaves @ mats[-1]
        for ids, mat, up in zip(self.ids[::-1], mats[-2::-1], self.ups[::-1], strict=True):
            rows = np.take(mat, ids, axis=0)
            t = np.stack([up @ (rows[:, [a]] * t) for a in range(mat.shape[1])],
                         axis=1).reshape(up.shape[0], mat.shape[1] * t.shape[1])
        levels = self.modes[1:]  # rank axes back from level order to mode order
        axes = [0, *(1 + levels.index(m) for m in sorted(levels))]
        return np.ascontiguousarray(t.reshape(self.shape[self.modes[0]], *ranks).transpose(axes))


def _ones(pointers, columns):
    """A CSR matrix of ones, row r holding columns ``pointers[r]`` to ``pointers[r+1]-1``;
    int8, so a product keeps the other operand's dtype."""
    return sp.csr_array((np.ones(columns, dtype=np.int8), np.arange(columns), pointers),
                        shape=(len(pointers) - 1, columns))


def coordinates(tensor):
    """``(coords [n, ndim] int64, values, shape)`` of a Tensor or scipy sparse matrix."""
    if sp.issparse(tensor):
        if tensor.ndim != 2:
            raise ParameterError(f"a {tensor.ndim}-D sparse array: expected a matrix")
        coo = sp.coo_array(tensor)
        coords = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
        return coords, coo.data, tuple(int(n) for n in coo.shape)
    if not isinstance(tensor, Tensor):
        raise ParameterError(f"expected a Tensor or a scipy sparse matrix, not "
                             f"{type(tensor).__name__}")
    if tensor.ndim < 2:
        raise ParameterError(f"a {tensor.ndim}-mode tensor: expected 2 or more modes")
    return np.asarray(tensor.coords, dtype=np.int64), np.asarray(tensor.values), tensor.shape


def spmttkrp(tensor, factors, mode=0):
    """SpMTTKRP of a sparse tensor along ``mode`` (builds the `FiberTree` for one call)."""
    return FiberTree.build(tensor, mode).mttkrp(factors)


def spttmc(tensor, factors, mode=0):
    """SpTTMc of a sparse tensor along ``mode`` (builds the `FiberTree` for one call)."""
    return FiberTree.build(tensor, mode).ttmc(factors)


def spmm(matrix, b):
    """SpMM (Eq. 7): ``Y = A B``, A a sparse matrix (or 2-mode Tensor), B dense."""
    return FiberTree.build(matrix).mttkrp([None, np.asarray(b)])


def spmv(matrix, b):
    """SpMV (Eq. 8): ``y = A b``, A a sparse matrix (or 2-mode Tensor), b a dense vector."""
    return spmm(matrix, np.asarray(b)[:, None])[:, 0]


def _dense_factors(tensor, factors, mode, kernel):
    """The dense tensor with ``mode`` first, and the other modes' factors in order."""
    tensor = np.asarray(tensor)
    if isinstance(mode, bool) or mode not in range(tensor.ndim):
        raise ParameterError(f"mode={mode!r}: the tensor has modes 0..{tensor.ndim - 1}")
    if len(factors) != tensor.ndim:
        raise ParameterError(f"{kernel}: {len(factors)} factor matrices for a "
                             f"{tensor.ndim}-mode tensor")
    others = [m for m in range(tensor.ndim) if m != mode]
    mats = [np.asarray(factors[m]) for m in others]
    for m, mat in zip(others, mats, strict=True):
        if mat.ndim != 2 or mat.shape[0] != tensor.shape[m]:
            raise ParameterError(f"{kernel}: factor {m} is {mat.shape}, expected "
                                 f"({tensor.shape[m]}, rank)")
    return np.moveaxis(tensor, mode, 0), mats


def dmttkrp(tensor, factors, mode=0):
    """DMTTKRP of a dense tensor, factored as Eq. 3: the last mode first."""
    tensor, mats = _dense_factors(tensor, factors, mode, "DMTTKRP")
    t = np.tensordot(tensor, mats[-1], axes=(-1, 0))
    for mat in mats[-2::-1]:
        t = np.einsum("...jf,jf->...f", t, mat)
    return t


def dttmc(tensor, factors, mode=0):
    """DTTMc of a dense tensor, factored as Eq. 6: ``[I, F2, ..., FN]``."""
    tensor, mats = _dense_factors(tensor, factors, mode, "DTTMc")
    t = np.tensordot(tensor, mats[-1], axes=(-1, 0))
    for axis in range(len(mats) - 1, 0, -1):
        t = np.moveaxis(np.tensordot(mats[axis - 1], t, axes=(0, axis)), 0, axis)
    return t


def gemm(a, b):
    """GEMM (Eq. 7, dense A)."""
    return np.asarray(a) @ np.asarray(b)


def gemv(a, b):
    """GEMV (Eq. 8, dense A)."""
    return np.asarray(a) @ np.asarray(b)
