"""The host model of a SpGEMM run with HYTE's buffer (sw/accel_spgemm_model.py): its
terms by hand on the hand matrices (A and B differ, so a swapped term shows), the
accessor's storage at its edges, and the model against the RTL on the bench's build and
matrices in the soak."""

import dataclasses
import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparseforge.cli import main
from sparseforge.hw.csr_reader import RANGES
from sparseforge.sw import accel_model, accel_spgemm, accel_spgemm_model, dram
from sparseforge.sw.accel_spgemm_model import HyteCommand, hyte_commands, stored_words

from .test_accel_spgemm import CONFIG, A, B


def command(k0, tk):
    """A's 4 rows, B's columns 0-7, k from ``k0``, ``tk`` of it."""
    return [{"begin": 0, "t": 4, "change": 0}, {"begin": 0, "t": 8, "change": 0},
            {"begin": k0, "t": tk, "change": 0}]


def hand_plan(buffer):
    """Three tiles of the hand matrices (8-bit ids and values, 4-byte row pointers, a
    word of C 8 bytes, a row length 2, a kept entry 16, a log word 8): k in 0-3, 4 and
    4 again (the third keeps B's tile); ``inflight`` 4."""
    c = dataclasses.replace(CONFIG, pes=1, buffer=buffer)
    return accel_spgemm.plan(A, B, c, {"bufsize": 0},
                             [command(0, 4), command(4, 4), command(4, 4)])


def test_stored_words_at_the_capacitys_edges():
    """Segments of 3, 0, 2 and 5 words take 4, 1, 3 and 6 (a word of metadata each):
    14 words hold them all; 13 keep 4 of the last's 5 (cut); 9, its metadata alone; 8
    not even that, the last bypassed whole."""
    lengths = [3, 0, 2, 5]
    for capacity, stored, words in ((14, [1, 1, 1, 1], [3, 0, 2, 5]),
                                    (13, [1, 1, 1, 1], [3, 0, 2, 4]),
                                    (9, [1, 1, 1, 1], [3, 0, 2, 0]),
                                    (8, [1, 1, 1, 0], [3, 0, 2, 0])):
        got = stored_words(lengths, capacity)
        assert got[0].tolist() == [bool(s) for s in stored] and got[1].tolist() == words
    # Once a word bypasses, every later segment does, even an empty one that would fit.
    stored, words = stored_words([4, 0, 0], 4)
    assert stored.tolist() == [True, False, False] and words.tolist() == [3, 0, 0]


def test_hyte_commands_by_hand():
    """With 16 words every segment is stored. The first command fetches B's rows 0-3 in
    columns 0-7 (segments of 1, 1, 1 and 0 words): the positions unit reads each row's
    end and begin (8 pointers) and its column ids to the row's end (3, 2, 3, 0: within
    ``inflight`` of the segment's), the fetcher 3 words (6 reads), A's rows are read
    whole (8 pointers, 5 elements: 10): 40 reads, 88 bytes (16 + 16 + 8 + 6 + 32 + 10);
    4 kept entries, the log, C's rows 0 ({0, 1}: 2 words) and 1 ({0}: 1) and their 2
    lengths: 10 writes, 100 bytes; 11 shared (A's 8 pointers, its first 4 rows', go
    out back to back in one burst: 7; B's rows' end and begin, in one burst: 4); 8
    pairs (3 + 5); A's 5 elements through the filter and rows 0 and 3 ending in the
    tile (7); B's rows read 4 times, 1 word held or none, 4 cycles each (16); 4 rows
    drained, 4 cycles and a group each (rows 0 and 1 one group, rows 2 and 3 none, at
    least one): 20.

    The second fetches row 4 (1 word; its 2 column ids scanned) and reads A from the
    cursors (row 1's element in column 4 alone, no pointers): 8 reads, 14 bytes; its
    kept entry, the log, row 1's word and length: 4 writes, 34 bytes. The third keeps
    B's tile and reads A whole again (its k tile does not follow the last): 18 reads,
    42 bytes, 7 shared; 3 writes, 18 bytes."""
    got = hyte_commands(hand_plan(16))
    assert got == [HyteCommand(True, False, 40, 10, 88, 100, 11, 8, 0, 7, 16, 20, 0, 0),
                   HyteCommand(True, True, 8, 4, 14, 34, 1, 2, 0, 2, 4, 20, 0, 0),
                   HyteCommand(False, False, 18, 3, 42, 18, 7, 5, 0, 6, 4, 20, 0, 0)]


def test_the_next_j_tile_by_hand():
    """After B's columns 0-7, columns 8-15 of the same rows: each row's segment begins
    where the last ended, read from its kept entry (16 bytes, not a pointer's 4), its
    column ids scanned from there (rows 0-3: 2, 1, 2 and 0, to the row's end); segments
    of 1, 1, 0 and 0 words; A's rows whole again. 4 + 4 + 5 + 4 + 8 + 10 = 35 reads,
    16 + 64 + 5 + 4 + 32 + 10 = 131 bytes; its entries, the log, rows 0 and 1 ({9}
    each) and their lengths: 9 writes, 64 + 8 + 16 + 4 = 92 bytes; 7 shared (A's
    pointers; B's row ends alone, no pair)."""
    def j_tile(j0):
        return [{"begin": 0, "t": 4, "change": 0}, {"begin": j0, "t": 8, "change": 0},
                {"begin": 0, "t": 4, "change": 0}]

    c = dataclasses.replace(CONFIG, pes=1, buffer=16)
    plan = accel_spgemm.plan(A, B, c, {"bufsize": 0}, [j_tile(0), j_tile(8)])
    second = hyte_commands(plan)[1]
    assert (second.reads, second.writes, second.bytes_read, second.bytes_written,
            second.shared, second.pairs) == (35, 9, 131, 92, 7, 7)


def test_bypassed_rows_by_hand():
    """With 4 words the first tile stores rows 0 and 1 (2 words each) and bypasses rows
    2 and 3: A's row 0 reads B's row 2 (a miss: its kept entry, then its 1 word from
    memory, 2 reads) and row 3 reads B's row 3 (a miss of no rest: its kept entry
    alone): 44 reads, 122 bytes (88 + two 16-byte entries + a 2-byte element); 9 pairs;
    the row server 4 + (1 + 3 + 1 + 1) + 4 + (1 + 3 + 1) = 19 cycles."""
    first = hyte_commands(hand_plan(4))[0]
    assert (first.reads, first.bytes_read, first.pairs, first.b_serve, first.misses) == (
        44, 122, 9, 19, 2)


def test_pointers_shared_by_hand():
    """A job of 6 rows whose pointers lie in bursts 0, 0 | 0, 0 | 0, 1 | 1, 1 | 1, 1 |
    1, 2: its first 4 rows' 8 reads back to back share 6 (all but the read of burst 1
    after one of burst 0); after them, row 4's pair shares (one burst), row 5's not.
    The build reads 4 rows ahead, as the model takes it."""
    bursts = np.array([[0, 0], [0, 0], [0, 1], [1, 1], [1, 1], [1, 2]])
    assert accel_spgemm_model.pointers_shared(bursts) == 7
    assert accel_spgemm_model.pointers_shared(bursts[:4]) == 6
    assert accel_spgemm_model.RANGES == RANGES


def test_row_misses_by_hand():
    """Bursts 0 and 4 lie in bank 0 of bank group 0 at row 0, 2048 at its row 1; 512 in
    bank 1 at row 0, 2560 at its row 1. Taken in order of their times (commands 0, 0,
    0, 0, 1, 1): 2048 closes bank 0's row 0 (a miss), 512 opens bank 1's, 0 reopens row
    0 (a miss), 4 finds it open, 2560 closes bank 1's (a miss, in command 1)."""
    times = np.array([0.1, 0.2, 0.3, 0.4, 1.5, 1.6])
    bursts = np.array([0, 2048, 512, 0, 4, 2560])
    assert accel_spgemm_model.row_misses_at(times, bursts, dram.DDR4_2400).tolist() == [
        0, 0, 1]
    # Taken otherwise: bank 0's row 0 three times, then 2048; bank 1's 512, then 2560.
    order = np.array([0.1, 0.9, 0.5, 0.2, 0.3, 0.95])
    assert accel_spgemm_model.row_misses_at(order, bursts, dram.DDR4_2400).tolist() == [
        0, 0]


def test_hyte_cycles_by_hand():
    """The hand plan against the DRAM always ready (a round trip 16.8 cycles, a burst
    4, tCCD_L 5). The first command: 39 bursts (40 + 10 - 11), 7.75 of them conflicting
    ((39 - 8) / 4): 163.75 on the bus, above the engine's 36 and the filter's 7; 3 round
    trips (the fetch) and 22: 236.15. The second: 11 bursts, 2.25 conflicts, 46.25; 3
    round trips: 118.65. The third: 14 bursts, 2.25 conflicts, 58.25; 2 round trips (A's
    pointers, then elements): 113.85. 469 in all, before the first refresh; no row
    misses (the image within the DRAM's open rows)."""
    model = accel_spgemm_model.predict(hand_plan(16), accel_model.dram(rate=1.0))
    assert (model.reads, model.writes, model.bytes_read, model.bytes_written) == (
        66, 17, 144, 152)
    assert (model.dram_bursts, model.conflicts, model.cycles) == (64, 12.25, 469)


BENCH_RUNS = {"bcspwr01": None, "GD97_b": None, "lp_afiro": "transposed", "bcspwr03": None}
TOLERANCE = 0.07
"""The model's tolerance against the RTL on ``bench accel --spgemm``'s runs (its
constants were fitted on those and two builds more)."""


@pytest.mark.soak
@pytest.mark.parametrize("name", list(BENCH_RUNS))
@pytest.mark.parametrize("tiling", ["tailors", "drt", "harp", "hyte-static", "hyte"])
def test_the_model_within_its_tolerance_of_the_rtl(tmp_path, capsys, shared_data, name,
                                                   tiling):
    """``run accel --kernel spgemm`` on the bench's build (one PE, column tiles of 64, 32
    words of buffer) and matrices (A·A, A·Aᵀ where A is not square): the model's bytes
    written exact, read within the positions unit's reads ahead (1%), cycles within
    :data:`TOLERANCE`."""
    path = shared_data / "matrices" / "suitesparse" / f"{name}.mtx"
    paths = [str(path)]
    if BENCH_RUNS[name]:
        a = sp.csr_matrix(scipy.io.mmread(path))
        scipy.io.mmwrite(tmp_path / "b.mtx", a.T.tocoo())
        paths.append(str(tmp_path / "b.mtx"))
    main(["run", "accel", "--kernel", "spgemm", *paths, "--out", str(tmp_path / "c.npz"),
          "--pattern", "--tiling", tiling, "--pes", "1", "--tile-cols", "64",
          "--buffer-words", "32", "--seed", "0", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"]
    assert r["model_bytes_written"] == r["dram_bytes_written"]
    assert np.isclose(r["model_bytes_read"], r["dram_bytes_read"], rtol=0.01)
    assert abs(r["model_error"]) <= TOLERANCE
