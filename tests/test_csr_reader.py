# amaranth: UnusedElaboratable=no
"""The CSR row reader: its model on a hand matrix, then the RTL on Amaranth's simulator
with the row pointers and the elements in DRAM-timed memories and back-pressure on the
rows it serves (empty rows first, last and back to back, a row requested twice, rows
out of order), its parameters at their edges."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.hw.csr_reader import CsrRowReader
from sparseforge.sim.models import csr_reader as model
from sparseforge.sim.runners import seed_from_env
from sparseforge.tb import csr_reader as tb

# rows 0 and 3 empty, row 4 the last and empty too; negative values
M = sp.csr_matrix(np.array([[0, 0, 0, 0, 0],
                            [3, 0, -1, 0, 7],
                            [0, 4, 0, 0, 0],
                            [0, 0, 0, 0, 0],
                            [0, 0, 0, 0, 0],
                            [-2, 0, 0, 5, 0]]))


def test_model_answers_rows_in_request_order_an_empty_row_one_item():
    got = model.answers(M.indptr, M.indices, M.data, [3, 1, 0, 5, 1])
    assert got["col"].tolist() == [0, 0, 2, 4, 0, 0, 3, 0, 2, 4]
    assert got["value"].tolist() == [0, 3, -1, 7, 0, -2, 5, 3, -1, 7]
    assert got["last"].tolist() == [1, 0, 0, 1, 1, 0, 1, 0, 0, 1]
    assert got["empty"].tolist() == [1, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    assert model.reads(M.indptr, [3, 1, 0, 5, 1]) == (10, 8)


@pytest.mark.parametrize("rate", [0.3, 1.0])
def test_rtl_answers_as_the_model(rate):
    rows = [0, 1, 3, 4, 2, 5, 5, 1, 0, 4, 4, 2]
    comp = tb.CsrReaderHarness(index_width=4, value_width=4, addr_width=6, inflight=2)
    result = tb.simulate(comp, M, rows, seed_from_env(5), rate)
    want = model.answers(M.indptr, M.indices, M.data & 15, rows)
    assert result.answers == [{k: int(v[n]) for k, v in want.items()}
                              for n in range(len(want["last"]))]
    if rate == 1.0:      # a row's elements a cycle apart once its pointers are in
        assert result.cycles < 40 * len(rows)


def test_parameters_at_their_edges():
    CsrRowReader(index_width=4, addr_width=5, inflight=2)
    CsrRowReader(index_width=32, addr_width=48, inflight=256)
    with pytest.raises(ParameterError, match="addr_width=4"):
        CsrRowReader(index_width=4, addr_width=4)
    with pytest.raises(ParameterError, match="inflight=1"):
        CsrRowReader(inflight=1)
    with pytest.raises(ParameterError, match="inflight=257"):
        CsrRowReader(inflight=257)


def test_verilog_lints_clean_with_wall(lint):
    assert lint("csr_reader", {}) == ""
