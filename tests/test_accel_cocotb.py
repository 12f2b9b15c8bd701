# amaranth: UnusedElaboratable=no
"""The whole accelerator (``accel``) against cocotbext-axi's AxiRam and AxiLiteMaster on
Verilator: its AXI4 master and AXI4-Lite slave checked by an independent implementation
of the protocol (``tb/accel_cocotb.py`` says what each side checks).

One small build runs, back to back: SpMM whose bands overbook the Tailor (refetched), SpMM
whose bands the Tailor holds across passes, SpMV on Tensaurus's SpMV mapping; the first
with a register write while busy, refused. The bus watch beside the RAM is checked on its own
too: each rule it checks, broken once."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.export import cached_verilog, verilog_text
from sparseforge.sim.runners import cocotb_verilog, seed_from_env
from sparseforge.sw import accel_plan
from sparseforge.sw.accel_plan import AccelConfig
from sparseforge.tb.accel import params_of
from sparseforge.tb.accel_cocotb import PAYLOADS, BusWatch

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
    uniform bands it holds across both passes, SpMV of B's first column. The policies
    size bands to fit the Tailor, so the overbooked ones are prescient's for a Tailor of
    16 entries, run on the build's 8."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((6, 8), density=0.6, rng=rng, format="csr")
    a.data = rng.integers(1, 5, a.nnz)
    b = rng.integers(-2, 3, (8, 7))
    twice = accel_plan.plan(a, b, "prescient", dataclasses.replace(CONFIG, depth=16))
    plans = {"overbooked": dataclasses.replace(twice, config=CONFIG),
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


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed, data, pause", [(1, 64, 0.3), (6, 64, 0.6), (8, 64, 0.1),
                                               (10, 32, 0.5), (12, 32, 0.8)])
def test_accel_through_cocotbext_axi_ram_and_lite_master(tmp_path, seed, data, pause):
    """In the soak: its build of the accelerator takes over a minute on a fresh cache."""
    run_accel(tmp_path, seed_from_env(seed), data, pause)


class _Pins:
    """The master's pins as :class:`BusWatch` reads them, set by name, all 0 at first."""

    def __init__(self):
        for channel, fields in PAYLOADS.items():
            for field in (*fields, "valid", "ready"):
                setattr(self, f"m_axi__{channel}{field}", SimpleNamespace(value=0))

    def set(self, **values):
        for name, value in values.items():
            getattr(self, f"m_axi__{name}").value = value


def _watch(cycles):
    """A :class:`BusWatch` fed ``cycles`` (each ``{pin: value}`` changed that cycle)."""
    pins = _Pins()
    watch = BusWatch(pins)
    for changes in cycles:
        pins.set(**changes)
        watch.sample()
    return watch


def test_bus_watch_counts_a_clean_burst_and_flags_each_broken_rule():
    """A two-beat read held one cycle by ARREADY, answered in two beats, and a write:
    counted, no error. Then one break each: ARVALID dropped before ARREADY, ARADDR changed
    while waiting, RLAST on the first of two beats, an RID with nothing in flight, a BID
    likewise."""
    ar = {"arvalid": 1, "arid": 5, "araddr": 0x40, "arlen": 1, "arsize": 3}
    clean = _watch([ar, {"arready": 1}, {"arvalid": 0, "rvalid": 1, "rready": 1, "rid": 5},
                    {"rlast": 1}, {"rvalid": 0, "awvalid": 1, "awready": 1, "awlen": 0,
                                   "awsize": 2}, {"awvalid": 0, "wvalid": 1, "wready": 1,
                                                  "wstrb": 0xF0, "wlast": 1},
                    {"wvalid": 0, "bvalid": 1, "bready": 1}, {"bvalid": 0}])
    assert clean.errors == [] and clean.idle()
    assert (clean.bytes_read, clean.bytes_written, clean.bursts) == (16, 4, [(0x40, 16)])
    assert (clean.read_ids, clean.strobes, clean.in_flight) == ({5}, {0xF0}, 1)
    breaks = {"valid dropped": [ar, {"arvalid": 0}],
              "payload changed": [ar, {"araddr": 0x48}],
              "RLAST": [{**ar, "arready": 1}, {"arvalid": 0, "rvalid": 1, "rready": 1,
                                                "rid": 5, "rlast": 1}],
              "RID 3 has no read": [{"rvalid": 1, "rready": 1, "rid": 3}],
              "BID 0 has no write": [{"bvalid": 1, "bready": 1}]}
    for rule, cycles in breaks.items():
        errors = _watch(cycles).errors
        assert len(errors) == 1 and rule in errors[0][2], (rule, errors)
