# amaranth: UnusedElaboratable=no
"""The Tensaurus scratchpad filled with random contents and read from every port under
random back-pressure, checked against the model; bank conflicts, fairness, throughput and
latency to the cycle on Amaranth's simulator, and a large random workload natively on
Verilator."""

import random

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.tensaurus_spm import SpmSignature, TensaurusSpm
from sparseforge.sim.models.tensaurus_spm import Scratchpad
from sparseforge.sim.runners import seed_from_env
from sparseforge.tb.streams import Columns
from sparseforge.tb.tensaurus_spm import simulate

FAST = {"fill": 1.0, "request": 1.0, "response": 1.0}


def random_fills(spm, rng):
    """Every chunk of both halves and operands, in random order, with random values."""
    lo, hi = -(1 << (spm.dw - 1)), 1 << (spm.dw - 1)
    where = [(h, o, r, c) for h in range(2) for o in range(2) for r in range(spm.rows)
             for c in range(spm.tlen)]
    rng.shuffle(where)
    return [{"half": h, "operand": o, "row": r, "chunk": c,
             "lanes": [rng.randrange(lo, hi) for _ in range(spm.vlen)]} for h, o, r, c in where]


def random_requests(spm, n, rng, rows=None):
    """``n`` requests of random chunks, of ``rows`` (default: every row)."""
    rows = list(range(spm.rows)) if rows is None else rows
    return Columns({"operand": [rng.randrange(2) for _ in range(n)],
                    "row": [rng.choice(rows) for _ in range(n)],
                    "chunk": [rng.randrange(spm.tlen) for _ in range(n)]})


def bank_rows(spm, bank):
    return [r for r in range(spm.rows) if r % spm.banks == bank]


def random_rates(rng, spm):
    names = ["fill"] + [f"ports__{p}__{s}" for p in range(spm.nports)
                        for s in ("request", "response")]
    return {name: rng.choice([0.3, 0.5, 0.7, 0.9]) for name in names}


# -- the model ----------------------------------------------------------------------------

def test_model_reads_what_was_filled_and_zeros_outside():
    model = Scratchpad(rows=3, tlen=2, vlen=2)
    model.fill(1, 0, 2, 1, [5, -6])
    model.fill(1, 0, 3, 0, [7, 7])                     # outside: dropped
    assert model.read(1, 0, 2, 1) == [5, -6]
    assert model.read(0, 0, 2, 1) == [0, 0]
    assert model.read(1, 0, 2, 2) == [0, 0]
    assert model.data[1, 0].sum() == -1


# -- the SPM against the model ----------------------------------------------------------

CONFIGS = [{"ports": 2, "banks": 2, "rows": 8, "tlen": 2, "vlen": 2},
           {"ports": 1, "banks": 1, "rows": 3, "tlen": 1, "vlen": 1},
           {"ports": 3, "banks": 4, "rows": 10, "tlen": 3, "vlen": 2, "dw": 8, "iw": 5},
           {"ports": 4, "banks": 2, "rows": 6, "tlen": 2, "vlen": 3, "dw": 5}]


@pytest.mark.parametrize("params", CONFIGS)
def test_random_reads_under_random_back_pressure_match_the_model(params):
    spm = TensaurusSpm(**params)
    seed = seed_from_env(len(str(params)))
    rng = random.Random(seed)
    requests = [random_requests(spm, 30, rng) for _ in range(spm.nports)]
    run = simulate(spm, random_fills(spm, rng), requests, seed, half=rng.randrange(2),
                   rates=random_rates(rng, spm))
    assert [len(r) for r in run.responses] == [30] * spm.nports


def test_read_half_selects_the_half_each_request_is_taken_with():
    spm = TensaurusSpm(ports=2, banks=2, rows=4, tlen=2, vlen=2)
    rng = random.Random(seed_from_env(11))
    fills = random_fills(spm, rng)
    model = Scratchpad(spm.rows, spm.tlen, spm.vlen)
    for f in fills:
        model.fill(**f)
    assert (model.data[0] != model.data[1]).any()
    requests = [random_requests(spm, 40, rng) for _ in range(2)]
    for half in (0, 1):
        run = simulate(spm, fills, requests, seed_from_env(12), half=half)
        assert run.responses == [[model.read(half, **r[n]) for n in range(len(r))]
                                 for r in requests]
    simulate(spm, fills, requests, seed_from_env(13), half="random",
             rates={"request": 0.8, "response": 0.6})


def test_a_fill_is_seen_by_a_read_taken_the_next_cycle():
    spm = TensaurusSpm(ports=2, banks=2, rows=4, tlen=2, vlen=2)
    rng = random.Random(seed_from_env(21))
    fills = random_fills(spm, rng)
    spot = {"half": 0, "operand": 1, "row": 3, "chunk": 1}
    fills.append({**spot, "lanes": [11, -12]})          # the last fill overwrites a chunk
    requests = [Columns({k: [spot[k]] * 3 for k in ("operand", "row", "chunk")})] * 2
    run = simulate(spm, fills, requests, seed_from_env(22), rates=FAST)
    assert all(r == [[11, -12]] * 3 for r in run.responses)
    assert [cycles[0] for cycles in run.requested] == [run.filled[-1] + 1] * 2


def test_outside_the_tile_fills_are_dropped_and_reads_are_zero():
    spm = TensaurusSpm(ports=1, banks=2, rows=5, tlen=3, vlen=2, iw=4)
    rng = random.Random(seed_from_env(31))
    fills = random_fills(spm, rng)
    # Rows 5.. and chunk 3 alias inside rows in the banks' address arithmetic.
    fills += [{"half": h, "operand": o, "row": r, "chunk": c, "lanes": [99, 99]}
              for h in range(2) for o in range(2) for r, c in ((5, 0), (7, 2), (15, 0),
                                                                (1, 3), (4, 3))]
    requests = [Columns({"operand": [0, 1, 0, 1, 0, 1], "row": [5, 7, 15, 1, 4, 2],
                         "chunk": [0, 2, 0, 3, 3, 2]})]
    run = simulate(spm, fills, requests, seed_from_env(32))
    assert run.responses[0][:5] == [[0, 0]] * 5
    assert run.responses[0][5] != [99, 99]


# -- bank conflicts, fairness, throughput --------------------------------------------------

def test_every_port_hammering_one_bank_still_progresses_under_back_pressure():
    spm = TensaurusSpm(ports=4, banks=4, rows=16, tlen=2, vlen=2)
    rng = random.Random(seed_from_env(41))
    requests = [random_requests(spm, 40, rng, bank_rows(spm, 2)) for _ in range(4)]
    simulate(spm, random_fills(spm, rng), requests, seed_from_env(42),
             rates=random_rates(rng, spm))


def test_round_robin_serves_ports_in_turn_one_read_a_cycle():
    """Three ports on one bank, nothing stalls: the bank answers port 0, 1, 2, 0, ..."""
    spm = TensaurusSpm(ports=3, banks=2, rows=4, tlen=2, vlen=1)
    rng = random.Random(seed_from_env(51))
    requests = [random_requests(spm, 12, rng, bank_rows(spm, 0)) for _ in range(3)]
    run = simulate(spm, random_fills(spm, rng), requests, seed_from_env(52), rates=FAST)
    start = run.filled[-1] + 1 + spm.latency           # the first request's answer
    assert run.answered == [[start + p + 3 * k for k in range(12)] for p in range(3)]


def test_no_port_waits_more_than_ports_grants():
    """Random requests, every response taken at once (so a grant is its response less 3):
    while a port waits, the bank grants the others at most ``ports - 1`` times."""
    spm = TensaurusSpm(ports=4, banks=2, rows=8, tlen=2, vlen=1)
    rng = random.Random(seed_from_env(61))
    requests = [random_requests(spm, 50, rng, bank_rows(spm, 1)) for _ in range(4)]
    rates = {"fill": 1.0, "response": 1.0,
             **{f"ports__{p}__request": r for p, r in enumerate((0.9, 0.2, 0.6, 0.4))}}
    run = simulate(spm, random_fills(spm, rng), requests, seed_from_env(62), rates=rates)
    grants = [[c - (spm.latency - 1) for c in cycles] for cycles in run.answered]
    everyone = sorted(c for cycles in grants for c in cycles)
    assert len(set(everyone)) == len(everyone)            # one grant a cycle
    for p in range(4):
        previous = -1
        for taken, granted in zip(run.requested[p], grants[p], strict=True):
            waiting = max(taken + 1, previous + 1)       # at the slot's head from here
            others = sum(waiting <= c < granted for c in everyone)
            assert others <= spm.nports - 1, (p, taken, granted)
            previous = granted


@pytest.mark.parametrize("ports, banks", [(4, 4), (2, 8), (1, 1)])
def test_each_port_reads_one_chunk_a_cycle_on_its_own_bank(ports, banks):
    spm = TensaurusSpm(ports=ports, banks=banks, rows=8, tlen=2, vlen=2)
    rng = random.Random(seed_from_env(71))
    n = 20
    requests = [random_requests(spm, n, rng, bank_rows(spm, p)) for p in range(ports)]
    run = simulate(spm, random_fills(spm, rng), requests, seed_from_env(72), rates=FAST)
    first = run.filled[-1] + 1
    assert spm.latency == 5
    assert run.filled == list(range(run.filled[0], first))
    assert run.requested == [list(range(first, first + n))] * ports
    assert run.answered == [list(range(first + spm.latency, first + spm.latency + n))] * ports


def test_response_back_pressure_holds_reads_and_loses_nothing():
    """Responses rarely taken: each port holds at most a full queue and its slot's two
    requests outstanding, and every response arrives."""
    spm = TensaurusSpm(ports=2, banks=1, rows=4, tlen=2, vlen=2)
    rng = random.Random(seed_from_env(81))
    requests = [random_requests(spm, 40, rng) for _ in range(2)]
    run = simulate(spm, random_fills(spm, rng), requests, seed_from_env(82),
                   rates={"fill": 1.0, "request": 1.0, "response": 0.15})
    for requested, answered in zip(run.requested, run.answered, strict=True):
        most = max(sum(r <= c for r in requested) - sum(a < c for a in answered)
                   for c in requested)
        assert most == spm.queue + 2


# -- the broadcast of the dense kernels --------------------------------------------------------

@pytest.mark.parametrize("ports, banks", [(2, 1), (4, 2), (3, 4)])
def test_broadcast_answers_every_port_from_port_0s_reads(ports, banks):
    """Every port making the same random reads, under random back-pressure: each gets the
    model's answers in order (the bench checks them as they come)."""
    spm = TensaurusSpm(ports=ports, banks=banks, rows=8, tlen=2, vlen=2)
    seed = seed_from_env(100 + ports)
    rng = random.Random(seed)
    same = random_requests(spm, 40, rng)
    run = simulate(spm, random_fills(spm, rng), [same] * ports, seed,
                   rates=random_rates(rng, spm), broadcast=True)
    assert [len(r) for r in run.responses] == [40] * ports


def test_broadcast_reads_a_chunk_a_cycle_for_the_whole_column():
    """Four ports reading the same rows of one bank: broadcast, one read a cycle answers
    them all at the scratchpad's latency; without it they share the bank, one read a
    cycle between the four."""
    spm = TensaurusSpm(ports=4, banks=2, rows=8, tlen=2, vlen=2)
    rng = random.Random(seed_from_env(111))
    fills = random_fills(spm, rng)
    n = 20
    same = random_requests(spm, n, rng, bank_rows(spm, 1))
    run = simulate(spm, fills, [same] * 4, seed_from_env(112), rates=FAST, broadcast=True)
    first = run.filled[-1] + 1
    assert run.answered == [list(range(first + spm.latency, first + spm.latency + n))] * 4
    shared = simulate(spm, fills, [same] * 4, seed_from_env(112), rates=FAST)
    assert shared.responses == run.responses
    assert max(a[-1] for a in shared.answered) >= first + spm.latency + 4 * n - 1


def test_a_scratchpad_of_one_port_has_no_broadcast():
    spm = TensaurusSpm(ports=1, banks=1, rows=2, tlen=1, vlen=1)
    assert "broadcast" not in spm.signature.members
    with pytest.raises(ParameterError, match="one port has no broadcast"):
        simulate(spm, [], [random_requests(spm, 1, random.Random(0))], 0, broadcast=True)


# -- natively on Verilator ------------------------------------------------------------------

@pytest.mark.verilator
def test_thousands_of_random_reads_natively_on_verilator(tmp_path):
    spm = TensaurusSpm(ports=4, banks=4, rows=64, tlen=2, vlen=4)
    seed = seed_from_env(91)
    rng = random.Random(seed)
    fills = random_fills(spm, rng)
    # Half the requests on one bank (conflicts), half anywhere.
    requests = [random_requests(spm, 3000, rng, bank_rows(spm, 0) if p % 2 else None)
                for p in range(spm.nports)]
    for half in (0, 1):
        run = simulate(spm, fills, requests, seed + half, half, random_rates(rng, spm),
                       engine="native", work_dir=tmp_path / str(half))
        model = Scratchpad(spm.rows, spm.tlen, spm.vlen)
        for f in fills:
            model.fill(**f)
        assert run.responses[3][-1] == model.read(half, **requests[3][2999])
        assert run.cycles > len(fills) + 3000


# -- the block's declaration ---------------------------------------------------------------

def test_declares_the_named_signature():
    spm = TensaurusSpm(ports=3, banks=4, rows=10, tlen=3, vlen=2, dw=8, iw=5)
    want = SpmSignature(3, 5, 3, 2, 8)
    assert isinstance(spm.signature, SpmSignature)
    assert [(path, member) for path, member, _ in spm.signature.flatten(spm)] == [
        (path, member) for path, member, _ in want.flatten(want.create())]


@pytest.mark.parametrize("params, message", [
    ({"ports": 0}, "ports=0"), ({"ports": 17}, "ports=17"),
    ({"banks": 3}, "banks=3: expected a power of two"), ({"banks": 32}, "banks=32"),
    ({"rows": 0}, "rows=0"), ({"rows": 65537}, "rows=65537"),
    ({"tlen": 0}, "tlen=0"), ({"tlen": 65}, "tlen=65"),
    ({"vlen": 0}, "vlen=0"), ({"vlen": 17}, "vlen=17"),
    ({"dw": 1}, "dw=1"), ({"dw": 33}, "dw=33"), ({"iw": 0}, "iw=0"), ({"iw": 33}, "iw=33"),
    ({"banks": 8, "rows": 4}, "banks=8: expected at most rows=4"),
    ({"rows": 40, "iw": 5}, "rows=40: expected at most 2\\*\\*iw = 32"),
    ({"depth": 4}, "unknown parameter 'depth'")])
def test_bad_parameters_are_refused(params, message):
    with pytest.raises(ParameterError, match=message):
        TensaurusSpm(**get("tensaurus_spm").resolve(params))


@pytest.mark.parametrize("params", [*TensaurusSpm.REPORT,
                                    {"ports": 1, "banks": 1, "rows": 1, "tlen": 1, "vlen": 1},
                                    {"ports": 3, "banks": 4, "rows": 10, "tlen": 3, "vlen": 2,
                                     "dw": 8, "iw": 5}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tensaurus_spm", params) == ""
