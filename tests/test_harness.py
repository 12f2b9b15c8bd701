"""The verification harness itself: a failing testbench must fail the run."""

import pytest

from sparseforge.core.errors import ToolError
from sparseforge.sim.runners import verilator


@pytest.mark.verilator
def test_a_failing_cocotb_test_fails_the_run(tmp_path):
    with pytest.raises(ToolError, match="1 of 1 cocotb tests failed"):
        verilator("buffet", "tests.cocotb_always_fails", params={"depth": 4, "width": 8},
                  work_dir=tmp_path)
