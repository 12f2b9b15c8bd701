"""A cocotb test that must fail: proves the runner reports failures."""

import cocotb


@cocotb.test()
async def fails(dut):
    raise AssertionError("deliberate failure")
