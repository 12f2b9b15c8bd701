# amaranth: UnusedElaboratable=no
"""SpGEMM on the accelerator's Gustavson build: C = A·B from A's and B's CSRs in an AXI4
memory that answers out of order, C read back from the engine's words and row lengths,
exact; the counters against hand-worked traffic; two runs back to back on one build; the
host's refusals at their edges. Real matrices natively on Verilator in the soak."""

import dataclasses
import json
import random

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.accel import MOST_GUSTAVSON_PES, Accel
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import accel_model, accel_spgemm, accel_spgemm_model, dram
from sparseforge.sw.hyte_schedule import hyte_fetches
from sparseforge.sw.wire import HYTE_ORDERS
from sparseforge.tb.accel import params_of, pysim_runs

CONFIG = accel_spgemm.SpgemmConfig(pes=2, tile_cols=8, lanes=2, inflight=4, dw=8, iw=8,
                                   acc_width=20)

# A is 4 x 5, B 5 x 20 in three column tiles of 8 (0-7, 8-15, 16-19). A's row 2 is
# empty; B's row 3 is empty and A's row 3 reads it alone; C(1, 0) = 3 - 3 cancels.
A = np.array([[1, 0, 2, 0, 0],
              [3, 0, 0, 0, 1],
              [0, 0, 0, 0, 0],
              [0, 0, 0, 5, 0]])
B = np.zeros((5, 20), dtype=np.int64)
B[0, [0, 9, 17]] = [1, -1, 2]
B[1, [3, 8]] = [4, 1]
B[2, [1, 16, 19]] = [3, 1, -2]
B[4, [0, 9]] = [-3, 1]


def exact(a, b):
    c = sp.csr_matrix(a) @ sp.csr_matrix(b)
    c.eliminate_zeros()
    return c


def test_back_to_back_runs_exact_with_column_tiles_and_counted_traffic():
    """Two runs on one build, never reset: the hand matrices, then B's values negated and
    doubled (the same layout, so the second run's C overwrites the first's in place).
    Traffic by hand, for each run (T = 3 tiles, bytes a word: row pointers 4, ids and
    values and row lengths 1 (8 bits), a tile word 1, a word of C 8 (2 x (8 + 20) + 2 +
    1 = 59 bits)):

    - read: the tile list 3; per tile A's 4 rows' pointers 2 x 4 x 4 = 32 and its 5
      nonzeros' ids and values 10, and per A nonzero B's row's pointers 2 x 4 = 40 and
      its elements (rows 0, 2, 0, 4, 3: 3 + 3 + 3 + 2 + 0 = 11) 22: 3 + 3 x 104 = 315;
    - written: C's rows per tile (row lengths 2 0 0 0 | 1 1 0 0 | 3 1 0 0, one word a
      row plus one more where a row holds two or more: 5 + 4 + 5 = 14 words) 14 x 8 =
      112, and 12 row lengths 12: 124.

    The host model's traffic is the same, its accesses counted: reads 3 + 3 x (8 + 10 +
    10 + 22) = 153, writes 14 + 12 = 26.
    """
    second = -2 * B
    plans = [accel_spgemm.plan(A, b, CONFIG) for b in (B, second)]
    assert [p.offsets for p in plans] == [(0, 8, 16)] * 2
    dut = Accel(**params_of(CONFIG), tags=4, data=64)
    runs = pysim_runs(dut, [(p, A, b) for p, b in zip(plans, (B, second), strict=True)],
                      seed_from_env(3), limit=4000)
    for run, b in zip(runs, (B, second), strict=True):
        assert (run.y != exact(A, b)).nnz == 0 and run.y.shape == (4, 20)
        assert run.y[1, 0] == 0 and run.y[2].nnz == 0 and run.y[3].nnz == 0
        assert run.status == {"done": 1, "error": 0, "busy": 0, "refused": 0}
        assert (run.bytes_read, run.bytes_written) == (315, 124)
        assert 0 < run.cycles < 2000
    for plan in plans:
        model = accel_spgemm_model.predict(plan, accel_model.BENCH)
        assert (model.reads, model.writes, model.bytes_read, model.bytes_written) == (
            153, 26, 315, 124)
    assert runs[1].y[0, 19] == 8 and runs[0].y[0, 19] == -4


def test_model_cycles_by_hand():
    """The model's cycles on the hand matrices (A 4 x 5, B 5 x 20: they differ), on the
    DDR4 part's bus: 153 + 26 = 179 accesses, a DRAM burst each, of 4 cycles (tCCD_S);
    an element's column id and value in different bank groups (8-bit words, the values a
    burst into their page), so of A's 5 nonzeros and B's 11 elements read 3 tiles over,
    48 pairs, none conflicts, and a quarter of the other 131 bursts follow one of their
    group: 32.75 bursts 1 cycle more (tCCD_L 5): 716 + 32.75 = 748.75, against the PEs'
    3 tiles x (11 products + 4 rows) = 45 over 2 PEs (22.5); plus four round trips of
    16.8 (the memory always ready): 815.95, short of the first refresh (7,800). A memory
    with no DRAM bus and round trips of 10 leaves the PEs' (one PE: 45): 85."""
    plan = accel_spgemm.plan(A, B, CONFIG)
    assert accel_spgemm_model.paired_conflicts(plan) == (16, 0)
    model = accel_spgemm_model.predict(plan, accel_model.dram(rate=1.0))
    assert (model.dram_bursts, model.conflicts, model.cycles) == (179, 32.75, 816)
    one = accel_spgemm.plan(A, B, dataclasses.replace(CONFIG, pes=1))
    free = accel_model.Memory(latency=10, ordered=10, rate=1.0)
    assert accel_spgemm_model.predict(one, free).cycles == 85


def test_model_refresh_windows_at_their_edges():
    """A run reaching cycle 7,800 (tREFI) meets the first refresh, 350 cycles (tRFC); one
    that the first window pushes to 15,600 meets the second."""
    t = dram.timing()
    assert [accel_spgemm_model.refreshed(n, t) for n in (7799, 7800, 15249, 15250)] == [
        7799, 8150, 15599, 15950]


def test_model_pairs_conflict_only_within_one_bank_group():
    """16-bit ids beside 8-bit values: element e's id at byte 2e of its page, in the
    first 64-byte burst's bank group for e < 32 and in the second's from 32 on; its value
    a burst into its page, at byte 64 + e, in the second's. A is one row of 40 ones, B
    40 rows of a one each (read once): 80 pairs, the 16 of e >= 32 in one group."""
    c = dataclasses.replace(CONFIG, iw=16, dw=8)
    a = sp.csr_matrix(np.ones((1, 40), dtype=np.int64))
    plan = accel_spgemm.plan(a, a.T.tocsr(), c)
    assert accel_spgemm_model.paired_conflicts(plan) == (80, 16)


def test_the_host_refuses_operands_at_their_edges():
    """Ids up to 2**iw accepted, one more refused; values in dw-bit two's complement
    accepted at both ends, one past refused; C's sums past acc_width refused; shapes that
    do not multiply and values that are not integers refused."""
    c = CONFIG
    edge = sp.csr_matrix(([1], ([0], [255])), shape=(1, 256))
    accel_spgemm.plan(edge, sp.csr_matrix(([1], ([255], [0])), shape=(256, 1)), c)
    with pytest.raises(ParameterError, match="index_width=8"):
        accel_spgemm.plan(sp.csr_matrix((1, 257)), sp.csr_matrix((257, 1)), c)
    for value, ok in ((127, True), (-128, True), (128, False), (-129, False)):
        a = sp.csr_matrix(([value], ([0], [0])), shape=(1, 1))
        if ok:
            accel_spgemm.plan(a, sp.csr_matrix(([1], ([0], [0])), shape=(1, 1)), c)
        else:
            with pytest.raises(ParameterError, match=f"A: value {value} is past 8-bit"):
                accel_spgemm.plan(a, sp.csr_matrix(([1], ([0], [0])), shape=(1, 1)), c)
    big = sp.csr_matrix(np.full((1, 40), 127))
    with pytest.raises(ParameterError, match="C = A·B: value 645160 is past"):  # 40 x 127^2
        accel_spgemm.plan(big, big.T, c)
    accel_spgemm.plan(big[:, :32], big[:, :32].T, c)               # 32 x 127^2 < 2^19
    with pytest.raises(ParameterError, match="A's columns must be B's rows"):
        accel_spgemm.plan(A, B[:4], c)
    with pytest.raises(ParameterError, match="not integers"):
        accel_spgemm.plan(A * 0.5, B, c)
    # with HYTE's buffer a dimension's whole extent is a tile command's t, below 2**iw
    hyte = dataclasses.replace(c, pes=1, buffer=4)
    accel_spgemm.operands(edge[:, :255], edge[:, :255].T.tocsr(), hyte)
    with pytest.raises(ParameterError, match=r"1 x 256 x 1 .*below 2\^iw = 256"):
        accel_spgemm.operands(edge, edge.T.tocsr(), hyte)


def test_pes_up_to_what_the_master_serves():
    """Four PEs take the master's sixteen in-order read ports (the tile list, A's three
    arrays, three a PE); a fifth is refused before elaboration."""
    assert MOST_GUSTAVSON_PES == 4
    Accel(engine="gustavson", pes=4)
    with pytest.raises(ParameterError, match="pes=5: a Gustavson build takes at most 4"):
        Accel(engine="gustavson", pes=5)


@pytest.fixture
def matrices(tmp_path):
    """A (4 x 5), B (5 x 20), a tensor, a real-valued A, an A of values past 16 bits and
    a pair of ids past 16 bits, as files."""
    from scipy.io import mmwrite

    paths = {}
    for name, m in (("a", A), ("b", B), ("half", A * 0.5)):
        paths[name] = tmp_path / f"{name}.mtx"
        mmwrite(paths[name], sp.coo_matrix(m))
    wide = sp.coo_matrix(([1], ([0], [70_000])), shape=(1, 70_001))
    for name, m in (("big", A * 40_000), ("wide", wide), ("tall", wide.T)):
        paths[name] = tmp_path / f"{name}.mtx"
        mmwrite(paths[name], m if sp.issparse(m) else sp.coo_matrix(m))
    paths["t"] = tmp_path / "t.tns"
    paths["t"].write_text("1 1 1 2\n")
    return paths


@pytest.mark.parametrize("args, word", [
    (["{b}", "{a}"], "A is 5 x 20 and B 4 x 5"),
    (["{t}"], "a tensor; spgemm takes matrices"),
    (["{half}", "{b}"], "not integers"),
    (["{a}", "{b}", "--pes", "5"], "--pes 5: spgemm takes 1 to 4"),
    (["{a}", "{b}", "--tile-cols", "12"], "--tile-cols 12"),
    (["{a}", "{b}", "--out", "{dir}/c.npy"], "spgemm writes C as .npz"),
    (["{a}", "{b}", "{a}"], "at most B, not 3"),
    (["{big}", "{b}"], "A: value 200000 is past 16-bit"),
    (["{wide}", "{tall}"], "index_width=16"),
    (["{a}", "{b}", "--tiling", "dtr"],
     "--tiling dtr: spgemm takes one of none, tailors, drt, harp, hyte-static, hyte"),
    (["{a}", "{b}", "--tiling", "hyte", "--pes", "2"], "--pes 2: --tiling hyte keeps B"),
    (["{a}", "{b}", "--tiling", "harp", "--pes", "2"], "--pes 2: --tiling harp keeps B"),
    (["{a}", "{b}", "--tiling", "hyte", "--buffer-words", "2"], "--buffer-words 2"),
    (["{a}", "{b}", "--tiling", "hyte", "--buffer-words", "48"], "--buffer-words 48"),
    (["{a}", "{b}", "--tiling", "hyte", "--buffer-words", "65536"], "--buffer-words 65536"),
])
def test_bad_input_is_one_line(matrices, tmp_path, capsys, args, word):
    paths = {k: str(v) for k, v in matrices.items()} | {"dir": str(tmp_path)}
    args = [a.format(**paths) for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "c.npz")]
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "accel", "--kernel", "spgemm", *args])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and out == "" and err.count("\n") == 1, err
    assert word in err


@pytest.mark.soak
@pytest.mark.parametrize("name, seed", [("bcspwr01", 1), ("GD97_b", 2), ("ash219", 3),
                                        ("bcspwr03", 4), ("bcspwr05", 5), ("494_bus", 6)])
def test_real_matrices_natively_exact(tmp_path, capsys, shared_data, name, seed):
    """C = A·A (ash219: A·Aᵀ, A being 219 x 85) on real matrices natively under the DRAM
    model's random delays: exact, C saved; the host model's traffic exact, its DRAM
    bursts those the memory took or answered with the burst before, and its cycles
    within 5%."""
    path = shared_data / "matrices" / "suitesparse" / f"{name}.mtx"
    args = [str(path)]
    if name == "ash219":
        from scipy.io import mmread, mmwrite

        mmwrite(tmp_path / "at.mtx", sp.coo_matrix(mmread(path)).T)
        args.append(str(tmp_path / "at.mtx"))
    main(["run", "accel", "--kernel", "spgemm", *args, "--out", str(tmp_path / "c.npz"),
          "--pattern", "--seed", str(seed), "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["cycles"] > 0 and r["dram_bytes_written"] > 0
    assert (r["model_bytes_read"], r["model_bytes_written"]) == (
        r["dram_bytes_read"], r["dram_bytes_written"])
    assert sum(r["dram_bursts"].values()) == r["model_dram_bursts"]
    assert abs(r["model_error"]) <= 0.05
    assert sp.load_npz(tmp_path / "c.npz").nnz == r["c_nnz"]


@pytest.mark.soak
@pytest.mark.parametrize("params", [
    {"engine": "gustavson"}, {**params_of(CONFIG), "tags": 4, "data": 64},
    {"engine": "gustavson", "pes": 1, "buffer": 64}])
def test_the_gustavson_build_lints_clean_with_wall(lint, params):
    assert lint("accel", params) == ""


def test_a_hyte_build_takes_one_pe_and_a_power_of_two_buffer():
    """HYTE's accessor serves one PE's reads of B; its words are a power of two, at
    least 4, at most 2^15: 4 and 2^15 taken; 2 (a power of two), 3, 6 and 2^16 refused, as
    is a second PE."""
    Accel(engine="gustavson", pes=1, buffer=4)
    Accel(engine="gustavson", pes=1, buffer=1 << 15)
    for params, word in (({"pes": 2, "buffer": 4}, "pes=2: HYTE's accessor"),
                         ({"pes": 1, "buffer": 2}, "buffer=2"),
                         ({"pes": 1, "buffer": 1 << 16}, "buffer=65536"),
                         ({"pes": 1, "buffer": 3}, "buffer=3"),
                         ({"pes": 1, "buffer": 6}, "buffer=6")):
        with pytest.raises(ParameterError, match=word):
            Accel(engine="gustavson", **params)


def test_the_schemes_jobs():
    """The controller's job per scheme on a 1-PE build of a 64-word buffer and column
    tiles of 8: B's tile never wider than the engine's 8 columns (log 3); the static
    schemes' bufsize 0 (no candidate scores, so none is taken), ``hyte``'s the buffer;
    HYTE's two schemes one static schedule; DRT and HARP i innermost (order jki), HARP's
    tile one row of A by all of k (5, in 8) and the engine's 8 columns of j."""
    c = dataclasses.replace(CONFIG, pes=1, buffer=64)
    a, b = accel_spgemm.operands(A, B, c)
    jobs = {s: accel_spgemm.hyte_job(a, b, c, s)[0] for s in accel_spgemm.SCHEMES[1:]}
    assert all(j["log_tj"] <= 3 and (j["i"], j["k"], j["j"]) == (4, 5, 20)
               for j in jobs.values())
    assert [j["bufsize"] for j in jobs.values()] == [0, 0, 0, 0, 64]
    assert jobs["hyte-static"] | {"bufsize": 64} == jobs["hyte"]
    assert jobs["drt"]["order"] == jobs["harp"]["order"] == HYTE_ORDERS.index("jki")
    assert [jobs["harp"][f"log_t{d}"] for d in "ikj"] == [0, 3, 3]


@pytest.mark.soak
def test_hyte_tiles_overflowing_and_tuned_exact_in_rtl():
    """C = A·B (A 12 x 10, B 10 x 20: they differ) with B's tiles in a 16-word HYTE
    buffer, from 8 x 8 tiles in order ijk with bufsize 8: the controller halves k twice
    mid-run from the accessor's counts (the commands logged equal the model's, which the
    host checks as it reads C), tiles overflow into the bypass, and C, merged over k's
    tiles, is exact under random stalls of every AXI channel."""
    from sparseforge.sim.models.hyte_controller import Config, matrix_trace

    rng = np.random.default_rng(1)

    def operand(m, n):
        x = sp.random(m, n, density=0.3, random_state=rng, format="csr")
        x.data = rng.integers(1, 5, x.nnz) * rng.choice([-1, 1], x.nnz)
        return x.astype(np.int64)

    a, b = operand(12, 10), operand(10, 20)
    c = dataclasses.replace(CONFIG, pes=1, buffer=16)
    job = {"i": 12, "j": 20, "k": 10, "log_ti": 3, "log_tj": 3, "log_tk": 3, "order": 0,
           "bufsize": 8}
    trace = matrix_trace(b, Config(**job), most_tj=c.tile_cols)
    assert set(trace.shapes) == {(8, 8), (4, 8), (2, 8)} and trace.after < 1
    plan = accel_spgemm.plan(a, b, c, job, trace.commands)
    dut = Accel(**params_of(c), tags=4, data=64)
    run, = pysim_runs(dut, [(plan, a, b)], seed_from_env(5), limit=20000)
    assert (run.y != exact(a, b)).nnz == 0 and run.y.nnz == exact(a, b).nnz
    assert run.status == {"done": 1, "error": 0, "busy": 0, "refused": 0}
    known = accel_spgemm_model.known_traffic(plan)
    assert run.bytes_written == known["c_written"] + known["meta_written"]
    assert run.bytes_read > known["a_read"]


def test_b_tiles_kept_across_a_tiles_exact_in_rtl():
    """C = A·B (A 8 x 6, B 6 x 12: they differ) in a 16-word buffer, order jki (i
    innermost) over four tiles of A's 2 rows, tuned (bufsize 8): each tile of B fetched
    once and kept for the next three commands (only A's tile moved: no evict, no fetch,
    no count), the first 18 elements overflowing into the bypass, so the kept tile's
    rows are read past the buffer from the kept entries; the tuning changes the shape
    mid-run. Two runs back to back (B negated the second time: the first run's last
    tile evicted), C exact each; every byte written accounted (no kept entry written
    for a kept tile)."""
    rng = np.random.default_rng(4)
    a, b = operand(rng, 8, 6, 0.35), operand(rng, 6, 12, 0.35)
    plans = [hyte_plan(a, x, (1, 3, 3), "jki", 8) for x in (b, -b)]
    assert hyte_fetches(plans[0].commands) == [True, False, False, False] * 3
    assert len({cmd[2]["t"] for cmd in plans[0].commands}) == 2 and b[:, :8].nnz == 18
    dut = Accel(**params_of(plans[0].config), tags=4, data=64)
    runs = pysim_runs(dut, [(p, a, x) for p, x in zip(plans, (b, -b), strict=True)],
                      seed_from_env(5), limit=20000)
    known = accel_spgemm_model.known_traffic(plans[0])
    for run, x in zip(runs, (b, -b), strict=True):
        assert (run.y != exact(a, x)).nnz == 0 and run.y.nnz == exact(a, x).nnz
        assert run.status == {"done": 1, "error": 0, "busy": 0, "refused": 0}
        assert run.bytes_written == known["c_written"] + known["meta_written"]


@pytest.mark.parametrize("cursors", [4, 3])
def test_a_read_from_its_cursors_exact_in_rtl(monkeypatch, cursors):
    """C = A·B (A 8 x 12, B 12 x 8) in a 16-word buffer, order ijk (k innermost) over
    tiles of A's 4 rows and k tiles of 4, tuned (bufsize 10: Tk halved in the first
    sweep, so the cursors meet k tiles of two sizes), under random stalls: on a build
    with cursors for 4 rows (the tile's, the most it can keep) the k tiles after the
    first of each sweep read A's rows from the engine's cursors; with 3, every tile reads
    them whole. C exact; every byte written accounted; and A's bytes read, counted at the
    memory by address, the plan's (a row read from its cursor from its first element in
    the k tile on, its pointers not read), fewer than its rows read whole each time where
    the cursors serve."""
    a = operand(np.random.default_rng(6), 8, 12, 0.5)
    b = operand(np.random.default_rng(7), 12, 8, 0.35)
    plan = hyte_plan(a, b, (2, 3, 2), "ijk", 10, cursors)
    used = cursors == 4
    assert accel_spgemm.a_cursors(plan.commands, plan.shape, cursors) == [
        False, *[used] * 3, False, *[used] * 5]
    assert {cmd[2]["t"] for cmd in plan.commands} == {2, 4}
    run, a_read = spied_run(monkeypatch, plan, a, b, 8)
    known = accel_spgemm_model.known_traffic(plan)
    assert (run.y != exact(a, b)).nnz == 0 and run.y.nnz == exact(a, b).nnz
    assert run.status == {"done": 1, "error": 0, "busy": 0, "refused": 0}
    assert run.bytes_written == known["c_written"] + known["meta_written"]
    # Read whole by each command: its rows of A, two 4-byte pointers each and a byte an
    # id and a value.
    tiles = [accel_spgemm.extents(cmd, plan.shape)["i"] for cmd in plan.commands]
    whole = sum(8 * (hi - lo) + 2 * a[lo:hi].nnz for lo, hi in tiles)
    assert a_read == known["a_read"] and (a_read < whole if used else a_read == whole)


@pytest.mark.soak
@pytest.mark.parametrize("rows", [256, 257])
def test_a_cursors_at_their_edge_natively(rows):
    """A tile of as many of A's rows as the engine keeps cursors for (256) reads its
    next k tiles from them; one more row (257) reads every k tile whole: A (rows x 24)
    by B (24 x 8) in k tiles of 8, A's rows one tile, on the bench's build natively; C
    exact either way (cursors taken for 257 rows would lose the last row's)."""
    from sparseforge.bench.accel_spgemm import BUILD, run_scheme
    from sparseforge.run.accel import spgemm_plan

    a = operand(np.random.default_rng(9), rows, 24, 0.1)
    b = operand(np.random.default_rng(10), 24, 8, 0.3)
    job = {"i": rows, "j": 8, "k": 24, "log_ti": 9, "log_tj": 3, "log_tk": 3, "order": 0,
           "bufsize": 0}
    plan, _, _ = spgemm_plan(a, b, BUILD, "hyte-static", 1, job)
    assert accel_spgemm.a_cursors(plan.commands, plan.shape, 256) == [False,
                                                                      *[rows == 256] * 2]
    run = run_scheme(a, b, "hyte-static", 1, f"{rows} rows", job)    # C exact, or it raises
    assert run["traffic"]["unaccounted"] == 0


@pytest.mark.soak
def test_kept_entries_read_back_after_their_writes_natively(shared_data):
    """bcspwr03 in Tailors' tiles on the bench's build (a 32-word buffer: most rows
    bypass it, each read back from its kept entry just written): the master orders the
    row server's reads of the kept entries after the positions unit's writes of them.
    Unordered, this run reads an entry before its write lands (the run's error)."""
    from sparseforge.bench.accel_spgemm import _operands, run_scheme

    a, b = _operands(shared_data / "matrices" / "suitesparse" / "bcspwr03.mtx", 1)
    run = run_scheme(a, b, "tailors", 1, "bcspwr03 tailors")    # C exact, or it raises
    assert run["traffic"]["unaccounted"] == 0 and run["tiles"] > 1


def spied_run(monkeypatch, plan, a, b, seed):
    """``(run, a_read)``: ``plan`` on Amaranth's simulator, and the bytes of A's arrays
    its reads took, counted at the memory by address."""
    from sparseforge.tb import axi

    reads = []
    address = axi.AxiMemory._address

    def spy(self, burst, channel):
        if channel == "AR":
            reads.append((burst["addr"], (burst["len"] + 1) << burst["size"]))
        return address(self, burst, channel)

    monkeypatch.setattr(axi.AxiMemory, "_address", spy)
    run = pysim_runs(Accel(**params_of(plan.config), tags=4, data=64), [(plan, a, b)],
                     seed_from_env(seed), limit=100_000)[0]
    regions = accel_spgemm.layout(plan)
    spans = [(regions[n].base, regions[n].base + regions[n].size)
             for n in ("a_rowptr", "a_colid", "a_values")]
    return run, sum(n for addr, n in reads if any(lo <= addr < hi for lo, hi in spans))


def operand(rng, m, n, density):
    """An m x n integer CSR of ``density``, values +-1..4."""
    x = sp.random(m, n, density=density, random_state=rng, format="csr")
    x.data = rng.integers(1, 5, x.nnz) * rng.choice([-1, 1], x.nnz)
    return x.astype(np.int64)


def hyte_plan(a, b, logs, order, bufsize, cursors=accel_spgemm.SpgemmConfig.cursors):
    """The plan of C = ``a`` · ``b`` on a 1-PE build with a 16-word buffer and A's
    ``cursors``, the job's ``(log_ti, log_tj, log_tk)``, ``order`` and ``bufsize`` and
    the commands the controller's model sends for it."""
    from sparseforge.sim.models.hyte_controller import Config, matrix_trace

    c = dataclasses.replace(CONFIG, pes=1, buffer=16, cursors=cursors)
    (m, k), n = a.shape, b.shape[1]
    job = {"i": m, "j": n, "k": k, **dict(zip(("log_ti", "log_tj", "log_tk"), logs, strict=True)),
           "order": HYTE_ORDERS.index(order), "bufsize": bufsize}
    return accel_spgemm.plan(a, b, c, job, matrix_trace(b, Config(**job),
                                                        most_tj=c.tile_cols).commands)


@pytest.mark.soak
@pytest.mark.parametrize("name", ["bcspwr01", "GD97_b", "bcspwr03"])
@pytest.mark.parametrize("tiling", ["tailors", "drt", "harp", "hyte-static", "hyte"])
def test_real_matrices_natively_exact_in_hytes_buffer(tmp_path, capsys, shared_data, name,
                                                      tiling):
    """C = A·A on real matrices natively, B's tiles in HYTE's buffer (1 KiB: 256 words)
    under each scheme, under the DRAM model's random delays: exact (the controller's
    commands equal to its model's, checked as C is read); the host model's writes
    exact."""
    path = shared_data / "matrices" / "suitesparse" / f"{name}.mtx"
    main(["run", "accel", "--kernel", "spgemm", str(path), "--out", str(tmp_path / "c.npz"),
          "--pattern", "--tiling", tiling, "--buffer-kb", "1", "--tile-cols", "16",
          "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["buffer_words"] == 256 and r["tiles"] > 1
    assert r["multiplies"] > 0
    # The host model prices every scheme; what it writes is exact.
    assert r["model_cycles"] > 0 and r["model_bytes_written"] == r["dram_bytes_written"]
    # What the plan gives of the traffic is exact: every byte written, A's reads.
    t = r["traffic_by_tensor"]
    assert t["unaccounted"] == 0 and t["b_read"] > 0 and t["c_written"] > 0


def test_the_k_filter_keeps_a_tiles_elements_and_every_rows_end():
    """A's rows through :class:`KRange` of ``[2, 5)``, stalled at random on both sides:
    each row's elements in the range with the last kept marked ``last``, a row whose
    elements all fall outside (or that was empty) one ``empty`` element, a row whose
    last element is dropped ended on the kept one before it."""
    from amaranth.sim import Simulator

    from sparseforge.hw.compose.spgemm import KRange

    rows = [[1, 2, 4], [3, 5, 6], [0, 7], [], [2], [4, 9]]
    want = [[(2, 0), (4, 1)], [(3, 1)], "empty", "empty", [(2, 1)], [(4, 1)]]
    dut = KRange(8, 8)
    rng = random.Random(seed_from_env(7))
    got = []

    async def source(ctx):
        ctx.set(dut.lo, 2)
        ctx.set(dut.hi, 5)
        for row in rows:
            items = [{"col": c, "value": c + 10, "last": n == len(row) - 1, "empty": 0}
                     for n, c in enumerate(row)] or [{"col": 0, "value": 0, "last": 1,
                                                       "empty": 1}]
            for item in items:
                while rng.random() < 0.3:
                    await ctx.tick()
                ctx.set(dut.i.payload, item)
                ctx.set(dut.i.valid, 1)
                await ctx.tick().until(dut.i.ready)
                ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        row = []
        while len(got) < len(rows):
            ready = rng.random() < 0.7
            ctx.set(dut.o.ready, ready)
            valid, x = ctx.get(dut.o.valid), ctx.get(dut.o.payload)
            await ctx.tick()
            if ready and valid:
                if x.empty:
                    got.append("empty")
                    continue
                assert x.value == x.col + 10
                row.append((int(x.col), int(x.last)))
                if x.last:
                    got.append(row)
                    row = []

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source, background=True)
    sim.add_testbench(sink)
    sim.run()
    assert got == want


def test_bench_speedups_by_hytes_definition():
    """A baseline's cycles over the scheme's, on one matrix: HYTE (120 cycles) over DRT
    (240) 2x, over HARP (540) 4.5x, over Tailors (300) 2.5x, over no buffer (100) 0.83x,
    over its static schedule (150) 1.25x; the static schedule over Tailors 2x."""
    from sparseforge.bench.accel_spgemm import figures

    runs = {s: {"cycles": c} for s, c in (("none", 100), ("tailors", 300), ("drt", 240),
                                          ("harp", 540), ("hyte-static", 150), ("hyte", 120))}
    assert figures(runs) == {"over_drt": 2.0, "over_harp": 4.5, "over_tailors": 2.5,
                             "over_none": 100 / 120, "dynamic": 1.25, "static": 2.0}


def test_bench_jobs_by_hand():
    """A 5 x 40 and B 40 x 100 on the bench's build (column tiles of 64): k untiled is
    one tile of all of k (40, in 64: log 6) by the engine's 64 columns (log 6), A's 5
    rows (log 3), k innermost, untuned; Static-Opt tries Tk and Tj of 8 to 64 (4 each,
    Tj cut at the engine's 64) in two orders, 32 schemes, the last of them k untiled in
    order ikj."""
    from sparseforge.bench.accel_spgemm import static_jobs, untiled_k_job

    a, b = sp.csr_matrix((5, 40), dtype=np.int64), sp.csr_matrix((40, 100), dtype=np.int64)
    assert untiled_k_job(a, b) == {"i": 5, "j": 100, "k": 40, "log_ti": 3, "log_tj": 6,
                                   "log_tk": 6, "order": 0, "bufsize": 0}
    jobs = static_jobs(a, b)
    assert len(jobs) == 32 and jobs[-1] == untiled_k_job(a, b) | {"order": 1}
    assert {(j["log_tk"], j["log_tj"]) for j in jobs} == {(k, j) for k in range(3, 7)
                                                          for j in range(3, 7)}


@pytest.mark.soak
def test_bench_accel_spgemm_quick(capsys):
    """``bench accel --spgemm --quick``: every scheme on the quick matrix, C exact (a
    fault exits), each speed-up the cycles' ratio."""
    main(["bench", "accel", "--spgemm", "--quick", "--json"])
    r = json.loads(capsys.readouterr().out)
    row, = r["matrices"]
    runs = row["runs"]
    assert list(runs) == list(accel_spgemm.SCHEMES) and all(x["cycles"] > 0
                                                            for x in runs.values())
    assert row["speedups"]["over_tailors"] == runs["tailors"]["cycles"] / runs["hyte"]["cycles"]
    assert runs["none"]["tiles"] == 1 and runs["hyte"]["tiles"] > 1
    assert row["untiled_k"]["traffic"]["a_read"] == runs["none"]["traffic"]["a_read"]


def test_a_cursors_by_hand():
    """A job reads A's rows from the cursors where its rows are the last job's, which
    kept them all (at most 256), and its k tile begins where the last one's ended (cut
    at K = 20): so the second, the fourth (after the third, the second's k tile again as
    j moved) and the seventh (a tile of one row, I = 257); not the first, a k tile
    again, a sweep starting over at 0, a new tile of A's rows, nor a tile of 257 rows
    or the one after it."""
    def command(bi, ti, bk, tk, bj=0):
        return [{"begin": bi, "t": ti, "change": 0}, {"begin": bj, "t": 8, "change": 0},
                {"begin": bk, "t": tk, "change": 0}]

    walk = [command(0, 256, 0, 8), command(0, 256, 8, 8), command(0, 256, 8, 8, 8),
            command(0, 256, 16, 8), command(0, 256, 0, 8), command(256, 256, 8, 8),
            command(256, 256, 16, 4), command(0, 512, 0, 8), command(0, 512, 8, 8)]
    assert accel_spgemm.a_cursors(walk, (257, 20, 16), 256) == [
        False, True, False, True, False, False, True, False, False]
    assert accel_spgemm.a_cursors(walk[:2], (256, 20, 16), 256) == [False, True]
    # A build keeping 255 rows: no tile of 256 rows reads from them.
    assert accel_spgemm.a_cursors(walk, (257, 20, 16), 255) == [
        False, False, False, False, False, False, True, False, False]


def test_known_traffic_by_hand():
    """What a run's plan alone says of its traffic, on the hand matrices (8-bit ids and
    values, 4-byte row pointers, a word of C 8 bytes, a row length 1):

    - without a buffer (3 column tiles): A 3 x (32 + 10) = 126 read, the tile list 3;
      C 14 words and 12 lengths, 124 (the counters' 124 written; 315 read less these
      leaves B's 186, as the back-to-back test works out);
    - with HYTE's buffer, three tiles of A's 4 rows and B's columns 0-7, k in 0-3, 4 and
      4 again (the third keeps B's tile): A's rows (12, 12, 8, 10 bytes) read whole the
      first and third time, the second from the cursors the first left (its k tile
      begins where the first ended): their elements from column 4 on, row 1's alone
      (2 bytes), no pointers: 86;
      C's partial rows 2, 1, 0, 0 nonzeros (the two not empty 3 words) then 0, 1, 0, 0
      (1 word) twice, 40 bytes, and a length with its row (2 bytes) for each of the 4
      written: 48; the tile log's three 8-byte words (54 bits) and a kept entry of 16
      bytes (65 bits) for each of the 4 + 1 segments fetched (none for the kept tile):
      104."""
    plan = accel_spgemm.plan(A, B, CONFIG)
    assert accel_spgemm_model.known_traffic(plan) == {
        "a_read": 126, "c_written": 124, "meta_read": 3, "meta_written": 0}

    def command(k0, tk):
        return [{"begin": 0, "t": 4, "change": 0}, {"begin": 0, "t": 8, "change": 0},
                {"begin": k0, "t": tk, "change": 0}]

    c = dataclasses.replace(CONFIG, pes=1, buffer=16)
    hyte = accel_spgemm.plan(A, B, c, {"bufsize": 0},
                             [command(0, 4), command(4, 4), command(4, 4)])
    assert accel_spgemm_model.known_traffic(hyte) == {
        "a_read": 86, "c_written": 48, "meta_read": 0, "meta_written": 104}


@pytest.mark.soak
def test_tuning_changes_the_shape_natively_on_a_real_matrix(tmp_path, capsys, shared_data):
    """GD97_b (47 x 47) in a 32-word buffer from HYTE's static 4 x 47 tiles: the
    controller halves Tk mid-run from the accessor's counts, natively, its commands
    (logged, checked as C is read) the model's; C exact."""
    path = shared_data / "matrices" / "suitesparse" / "GD97_b.mtx"
    main(["run", "accel", "--kernel", "spgemm", str(path), "--out", str(tmp_path / "c.npz"),
          "--pattern", "--tiling", "hyte", "--buffer-words", "32", "--tile-cols", "64",
          "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["shapes"] == [[2, 47], [4, 47]]
    assert r["schedule"]["job"]["log_tk"] == 2 and r["traffic_by_tensor"]["unaccounted"] == 0


@pytest.mark.soak
@pytest.mark.parametrize("words, seed", [(4, 11), (16, 12), (16, 13)])
@pytest.mark.parametrize("name", ["bcspwr01", "GD97_b"])
def test_hyte_buffers_and_seeds_natively(tmp_path, capsys, shared_data, name, words, seed):
    """Buffers of 4 and 16 words (a tile's rows overflow them: the bypass and the row
    server's reads of the rest from memory) under other memory seeds, tuned: C exact,
    every written byte accounted."""
    path = shared_data / "matrices" / "suitesparse" / f"{name}.mtx"
    main(["run", "accel", "--kernel", "spgemm", str(path), "--out", str(tmp_path / "c.npz"),
          "--pattern", "--tiling", "hyte", "--buffer-words", str(words), "--tile-cols", "16",
          "--seed", str(seed), "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["traffic_by_tensor"]["unaccounted"] == 0
