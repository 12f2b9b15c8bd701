"""Every conversion the software engine does, in hardware: each ordered pair of formats
reached by a block or a chain of them, and the result what ``--engine sw`` gives."""

import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseforge.cli import main
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor
from sparseforge.tb.convert import route, rtl_convert

MATRIX = ("dense", "coo", *cv.MATRIX_FORMATS)
TENSOR = ("dense", "coo", "csf")
PAIRS = [(a, b) for a, b in itertools.product(MATRIX, repeat=2) if a != b]
FIELDS = {"bsr": {"block": (2, 3)}, "rlc": {"run_bits": 3}}
FIELDS_494 = {"bsr": {"block": (2, 2)}, "rlc": {"run_bits": 5}}


def source(matrix, fmt):
    return cv.convert(matrix, fmt, **FIELDS.get(fmt, {}))


@pytest.mark.parametrize("pair", PAIRS, ids="->".join)
def test_every_pair_of_matrix_formats_has_a_chain(pair):
    a, b = pair
    matrix = sp.csr_array(np.arange(24).reshape(4, 6) % 5)
    chain = route(source(matrix, a), b, **FIELDS.get(b, {}))
    assert chain[0] == a and chain[-1] == b and len(chain) >= 2


@pytest.mark.parametrize("pair", [(a, b) for a, b in itertools.product(TENSOR, repeat=2)
                                  if a != b], ids="->".join)
def test_every_pair_of_tensor_formats_has_a_chain(pair):
    a, b = pair
    tensor = cv.convert(np.arange(60).reshape(3, 4, 5) % 7, a)
    assert route(tensor, b)[-1] == b


def matrices():
    """Small matrices of int16 values whose shapes the BSR block (2 x 3) divides."""
    def matrix(t):
        rng = np.random.default_rng(t[2])
        return sp.random_array((2 * t[0], 3 * t[1]), density=0.4, rng=rng, format="csr",
                               dtype=np.int16, data_sampler=lambda size: rng.integers(1, 99, size))
    return st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(0, 2**32 - 1)).map(matrix)


@pytest.mark.soak
@pytest.mark.parametrize("pair", PAIRS, ids="->".join)
@settings(max_examples=3, deadline=None)
@given(matrix=matrices())
def test_soak_every_pair_on_hypothesis_matrices(pair, matrix):
    a, b = pair
    got, stages = rtl_convert(source(matrix, a), b, **FIELDS.get(b, {}))
    assert cv.same(got, source(matrix, b))
    assert [s.source for s in stages] + [stages[-1].target] == route(source(matrix, a), b,
                                                                     **FIELDS.get(b, {}))


@pytest.mark.soak
@pytest.mark.parametrize("pair", PAIRS, ids="->".join)
def test_soak_every_pair_on_a_real_matrix(shared_data, pair):
    a, b = pair
    matrix = read_matrix(shared_data / "matrices/suitesparse/494_bus.mtx").tocsr()
    have = cv.convert(matrix, a, **FIELDS_494.get(a, {}))
    got, _ = rtl_convert(have, b, **FIELDS_494.get(b, {}))
    assert cv.same(got, cv.convert(matrix, b, **FIELDS_494.get(b, {})))


@pytest.mark.soak
@pytest.mark.parametrize("pair", [(a, b) for a, b in itertools.product(TENSOR, repeat=2)
                                  if a != b], ids="->".join)
def test_soak_every_pair_on_a_real_tensor(shared_data, pair):
    a, b = pair
    tensor = read_tensor(shared_data / "tensors/movielens-100k_user-item-day.tns")
    box = (64, 128, 32)
    inside = (tensor.coords < box).all(axis=1)
    corner = cv.convert(Tensor(tensor.coords[inside], tensor.values[inside], box), "dense")
    got, _ = rtl_convert(cv.convert(corner, a), b)
    assert cv.same(got, cv.convert(corner, b))


@pytest.mark.verilator
@pytest.mark.parametrize(("first", "to", "extra"), [
    ("csr", "bsr", ["--block", "2,2"]), ("rlc", "dense", []),
    *(pytest.param(*p, marks=pytest.mark.soak) for p in [
        ("bsr", "coo", []), ("rlc", "coo", []), ("dense", "rlc", []), ("csr", "coo", []),
        ("coo", "dense", []), ("csr", "dense", [])])],
    ids=lambda x: x if isinstance(x, str) else "")
def test_the_command_writes_what_the_software_engine_writes(shared_data, tmp_path, capsys,
                                                            first, to, extra):
    """A real matrix, stored in ``first``, through one block: the files of both engines
    hold the same arrays, of the same types."""
    matrix = read_matrix(shared_data / "matrices/suitesparse/494_bus.mtx")
    source = tmp_path / f"a{cv.suffix(first, 2)}"
    cv.save(source, cv.convert(matrix, first, **FIELDS_494.get(first, {})))
    out = {}
    for engine in ("sw", "rtl"):
        main(["convert", str(source), "--to", to, *extra, "--engine", engine, "-o",
              str(tmp_path / f"{engine}{cv.suffix(to, 2)}"), "--json"])
        out[engine] = json.loads(capsys.readouterr().out)
    assert [s["block"] for s in out["rtl"]["stages"]] != [] and out["rtl"]["cycles"] > 0
    sw, rtl = (tmp_path / f"{engine}{cv.suffix(to, 2)}" for engine in ("sw", "rtl"))
    if to == "dense":
        sw, rtl = {"dense": np.load(sw)}, {"dense": np.load(rtl)}
    else:
        sw, rtl = np.load(sw), np.load(rtl)
    assert sorted(sw) == sorted(rtl)
    for name in sw:
        assert sw[name].dtype == rtl[name].dtype and np.array_equal(sw[name], rtl[name]), name
