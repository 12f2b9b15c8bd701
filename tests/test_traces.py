"""Access traces of real kernels: replaying a trace must compute the kernel."""

import numpy as np
import scipy.sparse as sp

from sparseforge.data import bundled
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.traces import rcm_order, spmv_tiles


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
