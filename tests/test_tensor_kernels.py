"""Golden kernels of the SF^3 pattern against numpy's einsum: exact on integer inputs."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sparseforge.core.errors import ParameterError
from sparseforge.sw import tensor_kernels as tk
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor

LETTERS = "ijkl"
TENSOR = "tensors/movielens-latest-small_user-movie-tag.tns"
TENSOR_4D = "tensors/kg-wikipeople-arity3_rel-e1-e2-e3.tns"
MATRIX = "matrices/suitesparse/west0067.mtx"


def sparse(dense):
    """The Tensor of a dense array's nonzeros (coordinates in order)."""
    coords = np.argwhere(dense)
    return Tensor(coords.astype(np.int64), dense[tuple(coords.T)], dense.shape)


def mttkrp_einsum(dense, factors, mode):
    """Eq. 1/3 written out: every non-output mode's factor, summed over its index."""
    n = dense.ndim
    others = [m for m in range(n) if m != mode]
    spec = ",".join([LETTERS[:n], *(f"{LETTERS[m]}f" for m in others)])
    return np.einsum(f"{spec}->{LETTERS[mode]}f", dense, *(factors[m] for m in others))


def ttmc_einsum(dense, factors, mode):
    """Eq. 4/6 written out: one rank index per non-output mode."""
    n = dense.ndim
    others = [m for m in range(n) if m != mode]
    ranks = "abc"[:len(others)]
    spec = ",".join([LETTERS[:n], *(f"{LETTERS[m]}{r}" for m, r in zip(others, ranks,
                                                                          strict=True))])
    return np.einsum(f"{spec}->{LETTERS[mode]}{ranks}", dense, *(factors[m] for m in others))


@st.composite
def problems(draw, orders=(3, 4)):
    """A sparse integer tensor (as a dense array), a mode, and integer factors per mode."""
    order = draw(st.sampled_from(orders))
    shape = draw(st.tuples(*[st.integers(1, 6)] * order))
    values = draw(hnp.arrays(np.int64, shape, elements=st.integers(-9, 9)))
    mask = draw(hnp.arrays(bool, shape, elements=st.booleans()))
    ranks = draw(st.tuples(*[st.integers(1, 4)] * order))
    factors = [draw(hnp.arrays(np.int64, (n, r), elements=st.integers(-9, 9)))
               for n, r in zip(shape, ranks, strict=True)]
    return values * mask, draw(st.integers(0, order - 1)), factors


@settings(max_examples=150, deadline=None)
@given(problems())
def test_mttkrp_sparse_and_dense(problem):
    dense, mode, factors = problem
    rank = factors[0].shape[1]
    factors = [np.resize(f, (f.shape[0], rank)) for f in factors]  # one rank for MTTKRP
    expected = mttkrp_einsum(dense, factors, mode)
    got = tk.spmttkrp(sparse(dense), factors, mode)
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert np.array_equal(tk.dmttkrp(dense, factors, mode), expected)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_ttmc_sparse_and_dense(problem):
    dense, mode, factors = problem
    expected = ttmc_einsum(dense, factors, mode)
    got = tk.spttmc(sparse(dense), factors, mode)
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert np.array_equal(tk.dttmc(dense, factors, mode), expected)


@settings(max_examples=100, deadline=None)
@given(problems(orders=(2,)))
def test_matrix_kernels(problem):
    dense, _, factors = problem
    b = factors[1]
    expected = np.einsum("ij,jf->if", dense, b)
    for a in (sparse(dense), sp.csr_array(dense), sp.coo_array(dense)):
        assert np.array_equal(tk.spmm(a, b), expected)
        assert np.array_equal(tk.spmv(a, b[:, 0]), expected[:, 0])
    assert np.array_equal(tk.gemm(dense, b), expected)
    assert np.array_equal(tk.gemv(dense, b[:, 0]), expected[:, 0])
    # a matrix is a 2-mode tensor: MTTKRP along its rows is SpMM
    assert np.array_equal(tk.spmttkrp(sparse(dense), [None, b]), expected)


def test_real_tensors_against_a_scatter(shared_data):
    rng = np.random.default_rng(1)
    for name in (TENSOR, TENSOR_4D):
        tensor = read_tensor(shared_data / name)
        factors = [rng.integers(-4, 5, size=(n, 5)) for n in tensor.shape]
        values = tensor.values.astype(np.int64)
        integral = Tensor(tensor.coords, values, tensor.shape)
        for mode in range(tensor.ndim):
            rows = values[:, None]
            for m in range(tensor.ndim):
                if m != mode:
                    rows = rows * factors[m][tensor.coords[:, m]]
            expected = np.zeros((tensor.shape[mode], 5), dtype=np.int64)
            np.add.at(expected, tensor.coords[:, mode], rows)
            tree = tk.FiberTree.build(integral, mode)
            assert tree.modes[0] == mode
            assert np.array_equal(tree.mttkrp(factors), expected)
            float_factors = [f.astype(np.float64) for f in factors]
            assert np.allclose(tk.spmttkrp(tensor, float_factors, mode), expected,
                               rtol=1e-12, atol=0)


def test_real_tensor_ttmc_against_a_scatter(shared_data):
    tensor = read_tensor(shared_data / TENSOR)
    values = tensor.values.astype(np.int64)
    rng = np.random.default_rng(3)
    factors = [rng.integers(-4, 5, size=(n, r)) for n, r in zip(tensor.shape, (2, 3, 4),
                                                                 strict=True)]
    for mode in range(3):
        j, k = (m for m in range(3) if m != mode)
        outer = (factors[j][tensor.coords[:, j]][:, :, None]
                 * factors[k][tensor.coords[:, k]][:, None, :])
        expected = np.zeros((tensor.shape[mode], *outer.shape[1:]), dtype=np.int64)
        np.add.at(expected, tensor.coords[:, mode], values[:, None, None] * outer)
        got = tk.spttmc(Tensor(tensor.coords, values, tensor.shape), factors, mode)
        assert np.array_equal(got, expected)


def test_real_matrix_spmm(shared_data):
    matrix = read_matrix(shared_data / MATRIX)
    b = np.random.default_rng(2).random((matrix.shape[1], 3))
    assert np.allclose(tk.spmm(matrix, b), matrix.toarray() @ b, rtol=1e-12, atol=1e-12)


def test_empty_tensor_gives_zeros():
    empty = Tensor(np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64), (3, 4, 5))
    factors = [np.ones((n, 2), dtype=np.int64) for n in (3, 4, 5)]
    assert np.array_equal(tk.spmttkrp(empty, factors, 1), np.zeros((4, 2)))
    assert np.array_equal(tk.spttmc(empty, factors), np.zeros((3, 2, 2)))


def test_unsorted_and_repeated_coordinates():
    tensor = Tensor(np.array([[1, 0, 1], [0, 1, 0], [1, 0, 1]]), np.array([2, 3, 4]),
                    (2, 2, 2))
    dense = np.zeros((2, 2, 2), dtype=np.int64)
    np.add.at(dense, tuple(tensor.coords.T), tensor.values)
    factors = [np.arange(1, 5).reshape(2, 2)] * 3
    for mode in range(3):
        assert np.array_equal(tk.spmttkrp(tensor, factors, mode),
                              mttkrp_einsum(dense, factors, mode))


def test_bad_requests():
    tensor = Tensor(np.array([[0, 0, 0]]), np.array([1]), (2, 3, 4))
    factors = [np.ones((n, 2)) for n in (2, 3, 4)]
    with pytest.raises(ParameterError, match="mode=3"):
        tk.spmttkrp(tensor, factors, 3)
    with pytest.raises(ParameterError, match="2 factor matrices for a 3-mode tensor"):
        tk.spmttkrp(tensor, factors[:2])
    with pytest.raises(ParameterError, match=r"factor 2 is \(5, 2\), expected \(4, rank\)"):
        tk.spttmc(tensor, [factors[0], factors[1], np.ones((5, 2))])
    with pytest.raises(ParameterError, match="differ in rank"):
        tk.spmttkrp(tensor, [None, np.ones((3, 2)), np.ones((4, 3))])
    with pytest.raises(ParameterError, match="more than"):
        tk.spttmc(tensor, [None, np.ones((3, 2**14)), np.ones((4, 2**14))])
    with pytest.raises(ParameterError, match="factor 1 is"):
        tk.dmttkrp(np.ones((2, 3, 4)), [None, np.ones((4, 2)), np.ones((4, 2))])
    with pytest.raises(ParameterError, match="expected 2 or more modes"):
        tk.spmm(Tensor(np.zeros((1, 1), dtype=np.int64), np.ones(1), (3,)), np.ones((3, 1)))
    with pytest.raises(ParameterError, match="expected a Tensor or a scipy sparse matrix"):
        tk.spmm(np.ones((2, 2)), np.ones((2, 1)))
