"""Access traces of real kernels: replaying a trace must compute the kernel."""

import random

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.data import bundled
from sparseforge.sim.models.buffet import Buffet
from sparseforge.sw.buffet_program import BuffetProgram
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.traces import rcm_order, spmv_tiles, spmv_window
from sparseforge.tb.buffet import random_program


def test_tiled_spmv_trace_computes_the_product():
    a = rcm_order(read_matrix(bundled("bcspwr01.mtx")))
    x = np.random.default_rng(0).integers(0, 1000, a.shape[1])
    trace = spmv_tiles(a, x, 6)
    got, served = [], iter(trace.nonzero)
    for tile in trace.tiles:
        assert len(tile["reads"]) == tile["passes"]
        for reads in tile["reads"]:
            assert reads == sorted(set(reads)) and reads[-1] == tile["length"] - 1
            for i in reads:
                position = next(served)
                if position >= 0:
                    got.append((position, tile["values"][i]))
    x_at = np.zeros(a.nnz)
    for position, value in got:
        x_at[position] = value
    assert len(got) == a.nnz
    y = sp.csr_array((a.data * x_at, a.indices, a.indptr), shape=a.shape).sum(axis=1)
    assert np.allclose(y, a @ x)


def window_by_rows(a, x):
    """The window trace row by row, as its definition says (the reference)."""
    ops, head, filled = [], 0, 0
    rows = [i for i in range(a.shape[0]) if a.indptr[i + 1] > a.indptr[i]]
    for n, i in enumerate(rows):
        start = min(a.indices[a.indptr[r]] for r in rows[n:])
        cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
        if min(start, filled) > head:
            ops.append(("shrink", int(min(start, filled) - head)))
        head = start
        filled = max(filled, start)                    # x below the window is never filled
        while filled <= max(cols):
            ops.append(("fill", int(x[filled])))
            filled += 1
        ops.extend(("read", int(j - head)) for j in cols)
    return ops + ([("shrink", int(filled - head))] if filled > head else [])


@pytest.mark.parametrize("seed", range(4))
def test_window_trace_is_the_row_by_row_definition(seed):
    a = sp.random_array((40, 40), density=0.1, rng=seed, format="csr")
    a = rcm_order(a + sp.eye_array(40, format="csr") * (seed % 2))
    if seed == 3:                      # columns no row needs, below and between the windows
        rows, cols = np.repeat(np.arange(10), 3), np.tile([0, 2, 5], 10)
        a = sp.csr_array((np.ones(30), (rows, cols + 10 + 15 * (rows >= 5))), shape=(40, 40))
    x = np.random.default_rng(seed).integers(0, 1000, 40)
    trace = spmv_window(a, x)
    assert trace.program.ops() == window_by_rows(trace.matrix, x)
    values, legal = trace.program.responses(trace.window)
    assert legal == len(trace.program) and np.array_equal(values, x[trace.reads])


def test_window_trace_on_a_real_matrix_reads_x_and_ends_empty(shared_data):
    a = rcm_order(read_matrix(shared_data / "matrices/suitesparse/dwt_992.mtx"))
    x = np.arange(a.shape[0]) * 3
    trace = spmv_window(a, x)
    counts = trace.program.counts()
    assert counts["read"] == a.nnz and counts["fill"] == a.shape[0]   # every column is used
    shrunk = trace.program.arg[trace.program.kind == 3].sum()
    assert shrunk == counts["fill"]                              # empty at the end
    values, legal = trace.program.responses(trace.window)
    assert legal == len(trace.program) and np.array_equal(values, x[trace.reads])
    assert spmv_window(a, x).program.responses(trace.window - 1)[1] < legal   # too small


@pytest.mark.parametrize("seed", range(6))
def test_program_responses_are_the_models_in_program_order(seed):
    rng = random.Random(seed)
    ops = random_program(rng, 8, 8, 400)
    model, want = Buffet(8), []
    for kind, arg in ops:
        if kind == "read":
            want.append(model.read(arg))
        elif kind == "update":
            model.update(*arg)
        else:
            getattr(model, kind)(arg)
    program = BuffetProgram.from_ops(ops)
    assert program.ops() == [(k, tuple(a) if k == "update" else a) for k, a in ops]
    values, legal = program.responses(8)
    assert legal == len(ops) and values.tolist() == want


def test_program_responses_stop_at_the_first_refused_operation():
    program = BuffetProgram.from_ops([("fill", 5), ("read", 0), ("read", 1), ("fill", 6)])
    values, legal = program.responses(4)
    assert legal == 2 and values.tolist() == [5]
    assert BuffetProgram.from_ops([("fill", 1), ("fill", 2)]).responses(1)[1] == 1
