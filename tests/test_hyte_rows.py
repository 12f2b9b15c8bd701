# amaranth: UnusedElaboratable=no
"""B's rows served from a HYTE accessor to the Gustavson engine: C exact with B's tile
held whole and overflowing (the bypassed rows and the rest of a cut one read from
memory), under random stalls; parameters and lint."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.hw.hyte_rows import HyteRows
from sparseforge.sim.runners import seed_from_env
from sparseforge.tb import native
from sparseforge.tb.hyte_rows import AccessorGustavsonBench, GustavsonOnAccessor, bypassed


def operands(seed):
    """A (10 x 12) and B (12 x 14, an empty row among them), values in -9..9 but 0."""
    rng = np.random.default_rng(seed)

    def values(size):
        return rng.integers(1, 10, size) * rng.choice([-1, 1], size)

    a = sp.random_array((10, 12), density=0.3, rng=rng, format="csr", data_sampler=values)
    b = sp.random_array((12, 14), density=0.35, rng=rng, format="lil", data_sampler=values)
    b[3, :] = 0
    return sp.csr_array(a), sp.csr_array(b)


@pytest.mark.parametrize("capacity, inflight", [
    pytest.param(256, 4, marks=pytest.mark.soak),
    (40, 1), (40, 4)])   # 40: HIT, MISS and END; one read at a time and four ahead
def test_c_exact_from_the_accessor_whole_and_overflowing(capacity, inflight):
    a, b = operands(3)
    b.eliminate_zeros()
    comp = GustavsonOnAccessor(256, inflight, cols=16, lanes=4, index_width=8,
                               value_width=8, acc_width=16, inflight=4)
    bench = AccessorGustavsonBench(comp, a, b, capacity, seed_from_env(4))
    result = native.simulate(bench, "pysim", None)
    want = (a.astype(np.int64) @ b.astype(np.int64)).tocsr()
    assert (result.c != want).nnz == 0 and result.c.nnz == want.nnz
    # 40 words hold part of B's entries and their rows' metadata: the rest bypassed
    # (a row cut among them) and read from memory each time a row is asked for, and
    # no more, however many reads go ahead; the rows held are read from the buffer.
    missed = np.array(bypassed(b, capacity))
    assert bench.misses == int(missed[a.indices].sum())
    assert (bench.misses > 0) == (capacity == 40) and b.nnz + b.shape[0] > 40
    assert bench.misses < int(np.diff(b.indptr)[a.indices].sum())


@pytest.mark.parametrize("params, message", [({"index_width": 3}, "index_width=3"),
                                             ({"count_width": 8}, "count_width=8"),
                                             ({"inflight": 0}, "inflight=0"),
                                             ({"inflight": 257}, "inflight=257")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        HyteRows(**params)


@pytest.mark.parametrize("params", [{}, {"index_width": 32, "value_width": 32,
                                         "count_width": 32, "pos_width": 32,
                                         "addr_width": 48, "inflight": 256}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("hyte_rows", params) == ""
