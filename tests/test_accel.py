# amaranth: UnusedElaboratable=no
"""The accelerator (``accel``) end to end on Amaranth's simulator: registers written over
AXI4-Lite, A's CSR, B and the tile list in an AXI4 memory that answers out of order,
Y read back from memory equal to the golden product, the counters the host reads."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.core.params import check_params
from sparseforge.hw.compose.accel import MOST_PES, Accel
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import accel_model, accel_plan
from sparseforge.sw.accel_plan import AccelConfig
from sparseforge.tb.accel import AccelRun, params_of, pysim

CONFIG = AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=4, depth=8, fifo=2)


def _matrix(seed):
    rng = np.random.default_rng(seed)
    a = sp.random_array((6, 8), density=0.6, rng=rng, format="csr")
    a.data = rng.integers(1, 5, a.nnz)
    return a, rng.integers(-2, 3, (8, 5))


@pytest.mark.parametrize("policy, planned", [
    ("prescient", 14), pytest.param("uniform", 16, marks=pytest.mark.soak)])
def test_spmm_exact_with_passes_and_an_overbooked_tailor(policy, planned):
    """Three passes over B's 5 columns (R = 2); prescient's bands for a Tailor of 14
    entries (13 entries each) overbook the Tailor of 8 and its bumped part is refetched on
    each later pass, as the plan counts; uniform's bands for a Tailor of 16 (two rows
    each, as dense) fit it."""
    a, b = _matrix(1)
    plan = accel_plan.plan(a, b, policy, dataclasses.replace(CONFIG, depth=planned))
    plan = dataclasses.replace(plan, config=CONFIG)
    assert plan.passes == 3 and (plan.overbooked > 0) == (policy == "prescient")
    dut = Accel(**params_of(CONFIG), tile=64, tags=4, data=64)
    run = pysim(dut, plan, a, b, seed_from_env(1), limit=4000)
    # Y's words: 3 panels of 6 rows of tlen * cols = 2 words of 4 bytes.
    check_run(run, plan, a, a @ b, 3 * 6 * 2 * 4)


def check_run(run, plan, a, want, written):
    """``run`` of ``plan`` on ``a``: Y equal to ``want``, done without error, its
    refetches as planned, ``written`` bytes of Y; the host model's traffic exact and its
    cycles within 5% (its BENCH memory is this bench's AxiMemory)."""
    np.testing.assert_array_equal(run.y, want)
    assert run.status == {"done": 1, "error": 0, "busy": 0, "refused": 0}
    assert run.refetched == plan.refetched_entries()
    assert run.bytes_written == written
    model = accel_model.predict(plan, a, accel_model.BENCH, tags=4)
    assert (model.bytes_read, model.bytes_written, model.refetched) == (
        run.bytes_read, run.bytes_written, run.refetched)
    assert abs(model.cycles / run.cycles - 1) <= 0.05


def test_spmv_on_tensaurus_spmv_kernel_is_exact_and_beats_spmm_of_one_column():
    """SpMV on Tensaurus's mapping (b broadcast, 2 of its values a scratchpad row, the
    first PE column computing) through an array of 2 columns, its Tailor overbooked: y
    exact, status clean; the same build and matrix as SpMM of one column (R = 8 columns
    a nonzero, 7 of them zero) takes more cycles and reads more of B."""
    config = AccelConfig(pes=2, cols=2, vlen=2, tlen=2, spm_rows=4, out_rows=4, depth=8,
                         fifo=2)
    a, b = _matrix(2)
    v = b[:, 0]
    mv = accel_plan.plan(a, v, "prescient", config, kernel="spmv")
    mm = accel_plan.plan(a, v, "prescient", config)
    assert mv.overbooked and mv.passes == mm.passes == 1
    def windows(plan):
        return {t.k1 - t.k0 for band in plan.bands for t in band.inputs}
    assert windows(mv) == {8} and windows(mm) == {4}        # 4 rows of b, of 2 values each
    dut = Accel(**params_of(config), tile=64, tags=4, data=64)
    runs = {plan.kernel: pysim(dut, plan, a, v, seed_from_env(2), limit=4000)
            for plan in (mv, mm)}
    for run in runs.values():
        np.testing.assert_array_equal(run.y[:, 0], a @ v)
        assert run.status == {"done": 1, "error": 0, "busy": 0, "refused": 0}
    assert runs["spmv"].cycles < runs["spmm"].cycles
    assert runs["spmv"].bytes_read < runs["spmm"].bytes_read


@pytest.mark.soak
def test_run_accel_on_a_real_matrix_natively(tmp_path, capsys, shared_data):
    """``sparseforge run accel`` on 494_bus's pattern with a Tailor of 64 entries: bands
    that overbook it, Y exact, the refetched entries the plan's, natively on Verilator."""
    import json

    from sparseforge.cli import main

    b = (np.arange(494 * 12).reshape(494, 12) % 5 - 2).astype(np.int64)
    np.save(tmp_path / "b.npy", b)
    main(["run", "accel", "--kernel", "spmm",
          str(shared_data / "matrices/suitesparse/494_bus.mtx"), "--factors",
          str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), "--buffer-kb", "1",
          "--tiling", "swiftiles", "--pattern", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["overbooked_bands"] > 0
    assert r["refetched_entries"] == r["planned_refetched_entries"] > 0
    assert r["dram_bytes_written"] == 2 * 494 * 4 * 8      # 2 panels of 494 rows, 4 words
    # Each 8-byte word of Y within one DRAM burst: on the data bus or shared with the one
    # before; the model's bursts, each access one, at least the RTL's on the bus.
    dram = r["dram_bursts"]
    assert dram["dram_writes"] + dram["shared_writes"] == 2 * 494 * 4
    assert 0 < dram["dram_reads"] + dram["dram_writes"] <= r["model_dram_bursts"]


@pytest.mark.soak
def test_run_accel_spmv_on_a_real_matrix_natively(tmp_path, capsys, shared_data):
    """``run accel --kernel spmv`` on 494_bus's pattern, natively: y exact, one pass, and
    fewer cycles and bytes read than SpMM of the same vector as one column on the same
    build (B's R-wide rows against b's values two a word)."""
    import json

    from sparseforge.cli import main

    matrix = str(shared_data / "matrices/suitesparse/494_bus.mtx")
    v = (np.arange(494) % 7 - 3).astype(np.int64)
    np.save(tmp_path / "v.npy", v)
    np.save(tmp_path / "b.npy", v.reshape(-1, 1))
    runs = {}
    for kernel, factors in (("spmv", "v.npy"), ("spmm", "b.npy")):
        main(["run", "accel", "--kernel", kernel, matrix, "--factors",
              str(tmp_path / factors), "--out", str(tmp_path / f"{kernel}.npy"),
              "--pattern", "--json"])
        runs[kernel] = json.loads(capsys.readouterr().out)
        assert runs[kernel]["equal_to_golden"] and runs[kernel]["passes"] == 1
    np.testing.assert_array_equal(np.load(tmp_path / "spmv.npy"),
                                  np.load(tmp_path / "spmm.npy")[:, 0])
    assert runs["spmv"]["cycles"] < runs["spmm"]["cycles"]
    assert runs["spmv"]["dram_bytes_read"] < runs["spmm"]["dram_bytes_read"]


@pytest.mark.parametrize("params", [
    pytest.param(Accel.REPORT[0], marks=pytest.mark.soak),
    {**params_of(CONFIG), "tile": 64, "tags": 4, "data": 64}])
def test_verilog_lints_clean_with_wall(lint, params):
    """The reported accelerator and the small one simulated above: no Verilator warning
    (its units' payloads flattened into one module, the burst counters' shifts, the
    MSU's direct mode tied off)."""
    assert lint("accel", params) == ""


def test_pe_rows_up_to_what_the_master_serves():
    """Six PE rows take the AXI master's sixteen in-order read ports; a seventh would
    need seventeen and is refused as a parameter, before elaboration."""
    assert MOST_PES == 6
    assert check_params(Accel.PARAMS, {"pes": 6})["pes"] == 6
    with pytest.raises(ParameterError, match=r"pes=7: expected an integer in \[1, 6\]"):
        check_params(Accel.PARAMS, {"pes": 7})


def test_a_run_names_its_first_difference_from_the_golden_output():
    """One check serves every kernel: a dense Y and SpGEMM's CSR C, each equal (None), one
    element off (named with its index, the run's value and the golden's), or the status's
    error set whatever Y holds."""
    def run(y, error=0):
        return AccelRun(y, 1, 0, 0, 0, {"error": error})

    golden = np.array([[1, 2], [3, 4]])
    assert run(golden.copy()).fault(golden) is None
    off = golden.copy()
    off[1, 0] = 7
    assert run(off).fault(golden) == "Y(1, 0) is 7, the golden 3"
    assert run(golden.copy(), error=1).fault(golden) == "status.error set"
    c = sp.csr_matrix(golden)
    assert run(c.copy()).fault(c, "C") is None
    assert run(sp.csr_matrix(off)).fault(c, "C") == "C(1, 0) is 7, the golden 3"
