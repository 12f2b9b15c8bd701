# amaranth: UnusedElaboratable=no
"""The whole accelerator (``accel``) against cocotbext-axi's AxiRam and AxiLiteMaster on
Verilator: its AXI4 master and AXI4-Lite slave checked by an independent implementation
of the protocol (``tb/accel_cocotb.py`` says what each side checks).

One small build runs, back to back: SpMM whose bands overbook the Tailor (refetched), SpMM
whose bands the Tailor holds across passes, SpMV on Tensaurus's SpMV mapping; the first
with a register write while busy, refused."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.export import cached_verilog, verilog_text
from sparseforge.sim.runners import cocotb_verilog, seed_from_env
from sparseforge.sw import accel_plan
from sparseforge.sw.accel_plan import AccelConfig
from sparseforge.tb.accel import params_of

CONFIG = AccelConfig(pes=2, cols=2, vlen=2, tlen=1, spm_rows=4, out_rows=4, depth=8, fifo=2,
                     acc_width=16)
"""R = 4 columns a pass; a Tailor of 8 entries; Y's words of two 16-bit accumulators."""


def accel_verilog(data):
    """The Verilog of :data:`CONFIG`'s ``accel`` on an AXI data bus of ``data`` bits (made
    once, then cached): on 64 bits Y's 32-bit words take half the byte strobes and the
    tile list's 128-bit words two beats; on 32 bits B's and the tile list's words are
    bursts too."""
    params = {**params_of(CONFIG), "tile": 64, "tags": 4, "data": data}
    text, _ = cached_verilog("cocotb", {"block": "accel", "params": params},
                             lambda: verilog_text("accel", params)[0], "accel")
    return text


def runs(seed):
    """A (6 x 8, integer values) and B (8 x 7: two passes) from ``seed``, planned three
    ways, each image 32 KiB above the last: prescient bands that overbook the Tailor,
    uniform bands it holds across both passes, SpMV of B's first column."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((6, 8), density=0.6, rng=rng, format="csr")
    a.data = rng.integers(1, 5, a.nnz)
    b = rng.integers(-2, 3, (8, 7))
    plans = {"overbooked": accel_plan.plan(a, b, "prescient", CONFIG),
             "held": accel_plan.plan(a, b, "uniform", CONFIG),
             "spmv": accel_plan.plan(a, b[:, 0], "prescient", CONFIG, kernel="spmv")}
    assert plans["overbooked"].refetched_entries() > 0
    assert plans["held"].overbooked == 0 and plans["held"].passes == 2
    vector = {"spmv": b[:, 0]}
    return [{"label": label, "plan": plan, "matrix": a, "b": vector.get(label, b),
             "at": n << 15} for n, (label, plan) in enumerate(plans.items())]


def run_accel(tmp_path, seed, data=64, pause=0.3):
    cocotb_verilog("accel", accel_verilog(data), "sparseforge.tb.accel_cocotb", tmp_path,
                   {"seed": seed, "runs": runs(seed), "bytes": 1 << 17, "pause": pause,
                    "watchdog": 20_000, "strobes": data == 64},
                   testcase="accel_through_cocotbext_axi")


@pytest.mark.verilator
def test_accel_through_cocotbext_axi_ram_and_lite_master(tmp_path):
    run_accel(tmp_path, seed_from_env(1))


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed, data, pause", [(6, 64, 0.6), (8, 64, 0.1), (10, 32, 0.5),
                                               (12, 32, 0.8)])
def test_soak_accel_through_cocotbext_axi(tmp_path, seed, data, pause):
    run_accel(tmp_path, seed, data, pause)
