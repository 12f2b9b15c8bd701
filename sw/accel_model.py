"""The accelerator's cycle model: an ``accel`` run's cycles and memory traffic predicted
from its plan (:mod:`sparseforge.sw.accel_plan`), so the model stands in for the RTL
(:class:`~sparseforge.hw.compose.accel.Accel`) on inputs too large to simulate.

**Traffic** is counted exactly, word by word, from the plan and the sequencer's jobs
(:func:`~sparseforge.sw.accel_plan.jobs`), each word at its
:func:`~sparseforge.sw.wire.word_bytes` (the master reads and writes a word as one
burst of exactly those bytes, so the accelerator's ``bytes_read`` and ``bytes_written``
counters count the same): every pass of a band re-reads its tile words; a band's
conversion on a pass (every tile on the first, the tiles holding bumped entries on a
later pass of a band that overbooks) reads its ``rows + 1`` row pointers, the pre-pass's
column ids (:func:`~sparseforge.sw.ciss_csr.prepass_reads`) and, in each lane, the
windows' column ids and values; every tile on every pass loads its ``kn`` rows of B's
panel (``tlen`` words each; in SpMV b's ``ceil(kn / per)`` rows of one word, the
sequencer's ``rows1``: :attr:`~sparseforge.sw.accel_plan.AccelPlan.b_words`); every band
on every pass writes its ``rows`` rows of Y (``tlen * cols`` words each, SpMV's too).

**Cycles** come from the units' own cost formulas, one step per input tile and pass
(host memory and time follow the tiles and nonzeros, never the matrix's area), as the
RTL overlaps them:

- the **sequencer** reads each tile word through an in-order port (a read round trip)
  and hands out the tile's jobs once the converter and Tensaurus take them;
- the **converter** (:func:`~sparseforge.sw.ciss_csr.tile_cycles`, its pre-pass one
  column id a round trip) runs ahead of the array, which reads its entries through the
  Tailor as they come; on passes that read the Tailor only, it is idle;
- **Tensaurus** loads a tile's rows of B (the MLU: one read a cycle at most, ``tags``
  in flight, a word of ``cols * vlen`` values its beats of the data bus on R at most
  ``rate`` a cycle: two on the 4 x 4 build's 64-bit bus; a word of more than one beat
  holds its tag on R the longer the nearer R's pace the tags run, :func:`_tagged_gap`)
  while the tile before computes; a tile computes once loaded and once the one before
  has finished, its time the busiest PE row's (a nonzero ``tlen`` cycles, a slice's
  drain ``tlen``, a header or an idle lane one; in SpMV a nonzero and a drain one each:
  :class:`~sparseforge.hw.tensaurus_pe.TensaurusPe`);
- the **MSU** writes each band's panel of Y (one word a write beat) once its closing
  tile has drained, while the next band computes; the run ends when the last write is
  answered.

``parts`` breaks the cycles into the converter's busy cycles, the compute, the MLU's
loads, the MSU's writes and, for a DRAM, its data bus's (each summed as if alone) and
``overlap``, what running them side by side saves (their sum less the cycles).

The memory is :class:`Memory`: a tagged read (the MLU's, ``tags`` in flight) answered
``latency`` cycles after its request, the master's register slices and the unit's
queues included, an in-order port's dependent read (the tile word's, the pre-pass's)
``ordered`` cycles after its request; ``rate`` beats a cycle on each channel; and, for a
DRAM, ``burst``: the cycles an access holds the DRAM's data bus. The DRAM answers a read
of the burst it fetched last without a new one, but the read ports' requests meet by
round robin, so while the converter reads, its words and the MLU's interleave and each
costs a burst of its own; the MLU's rows of B alone (a later pass, the Tailor holding
the tile) share bursts, a burst's worth of words one (interrupted at most once by each
other access). So the **bus** is a unit of its own: it carries each tile's accesses in
turn (its tile word, its conversion's pointers, pre-pass column ids and lanes' column
ids and values, the MLU's words as said) and each band's writes of Y once the band is
computed (one a burst: the next band's reads interleave them; the run's last writes
meet no reads, so they share bursts as the MLU's words alone do: a burst's worth of
words one); a tile's conversion and load end no earlier than the bus has carried them, a
band's writes no earlier than it has carried them. The default build on a matrix of a
few hundred rows is the bus's: its accesses, a burst each, are most of its cycles.

:data:`BENCH` is the bench's :class:`~sparseforge.tb.axi.AxiMemory` as
:func:`~sparseforge.tb.accel.pysim` builds it (every channel ready or valid with
probability 0.7, answers 0 to 6 cycles after a burst), :data:`IDEAL` the same memory
always ready (``rates`` 1): both fitted, with the constants below, to the RTL's cycles on
Amaranth's simulator over random and real matrices, PE rows 2 and 4, 1 to 3 passes, the
three tiling policies, Tailors that fit and that overbook (``tests/test_accel_model.py``
holds the cases); on :data:`BENCH` the MLU's reads share R with the tile's other reads
(``away``: all nine cases within 5%, rms 2.9%, where two of them missed by 6.0% and
6.5%). :func:`dram` is the native bench's DDR4-timed memory with ``extra``
cycles on every access and its channels ready at a ``rate`` (:data:`DRAM`: none, and
0.7), fitted on the default build (4 x 2 PEs, ``tags`` 8, a Tailor of 64 entries)
natively over eight real matrices of different shapes at latencies added from 0 to 100
cycles and rates from 0.35 to 1, and checked on six more, on the other policies and on
a 2-PE build at ``tags`` 4 (16 of 18 runs at the default memory within 5%, rms 3.7%).
SpMV (one pass, the converter's on every tile) runs on the same units and constants,
and three more, fitted natively on the default build (4 x 2 PEs, a Tailor of 32 KiB,
swiftiles bands) over 11 real matrices at the default memory and 494_bus at an added
latency, a full-rate channel and windows of 64 and 256 columns (13 of 15 runs within 5%,
rms 3.5%): a row's first column id in a window waits :data:`ROW_QUEUE` more (behind
the lanes' reads of the row before), a column id in the burst of the one before
:data:`SAME_BURST` less (answered with that burst), and a tile's conversion and its
bus's cycles overlap as their :data:`SOFT`-norm. The pre-pass's two terms hold for
SpMM's conversions on a DRAM as well (its reads are the same): with the bands the
policies size in CISS entries, GD97_b's two bands of long rows from +11.3% to +4.7%, the
default build's other cases within a point of before. SpMV leaves out email-Eu-core's
4.5% (short).
An image past 128 KiB (a row of each of the DRAM's 16 banks) meets **row misses**: a
tile's accesses in the order the read ports interleave them, each bank's open row
followed over the run (:func:`_row_misses`), each miss :data:`MISS` cycles more on the
tile's loads and, if the conversion's, on its conversion (fitted natively on
nr-bio-dmela, 7,393 rows, 51,138 nonzeros, B of 16 columns on the 4 x 2 build: -10.7%
to -1.0%; bcsstk13's SpMV -3.7% to -2.0%). An image within 128 KiB misses none, so the
fits above stand. nr-bio-dmela on the 4 x 4 build, its MLU words of two beats at a
channel rate of 0.7 near both the R channel's pace and the tags' round trips, is
predicted from the tags circulating through R (:func:`_tagged_gap`): -11.6% to -1.2%,
its 4 x 2 build (words of one beat) as before. The run's last writes sharing bursts take
the SpMV of a few bands from long to within 5% (GD97_b +11.2% to +1.4%, impcol_a +5.9%
to +4.7%, GD98_a +23% to -4.3%, cage5 +12% to +3.2%).
The model predicts a run's expected cycles; the memory's random delays move one seed's
by a percent or two. What it leaves out: the reads' queueing behind each other's bursts
beyond the bus's throughput (a slower channel, 0.35, predicted up to 12% short where
the MLU's reads are many), a pre-pass read answered with the burst it shares with the
one before (a small matrix whose rows are long, at an added latency, up to 13% long),
the MSU's buffer halves holding a band back when two writes queue, and an SpMM
conversion whose reads hold the DRAM's bus about as long as the conversion takes
(dwt_878, a Tailor of 32 KiB, B of 16 columns: -6.9% on the 4 x 2 build, -8.4% on
4 x 4; SpMV's norm on SpMM's conversions, tried, takes the default build's GD97_b to
+11%); SpMV of two bands whose conversion runs at the bus's pace is long
(nx_les_miserables, 77 rows: +11.5%).

**SpMTTKRP** (a tensor build, ``order`` 3) runs on the same units and terms, the tensor
read as COO (:func:`_image`): its traffic (:func:`traffic`, exact) has the
converter's cluster counter reading a band's i ids from its first element to the first
past it where CSR reads row pointers, each lane a j id, a k id and a value an element,
and every tile loading C's ``K`` rows besides its window's rows of B; its conversion's
head the i ids, one a round trip (:func:`_cluster_counts`), the DRAM answering the next
of a burst sooner (:data:`SAME_BURST`) where the tile's load does not come between, and
only those it does taking the bus (:func:`_shared_ids`); a PE row's work ``tlen`` more a
fiber (``OSR += TSR * B[j]``); its row misses followed through the tensor's arrays and
C's and B's panels (:func:`_row_misses`), each :data:`MISS` as SpMM's. No constant is
fitted to the tensor. Natively on the tensor build (4 x 2 PEs, scratchpads of 2,048 rows, a
Tailor of 1,024 entries, rank 12 in two passes): MovieLens' tag tensor (3,683 nonzeros)
+3.2% prescient, +2.1% uniform, -4.6% swiftiles; MovieLens-100k (100,000 nonzeros, an
image of 1.2 MB whose row misses the model follows: -30% without them) -7.3% prescient,
-10.9% uniform, +9.6% swiftiles (-8.1%, -10.9%, +8.3% before the ids shared their
bursts: its conversions' chains longer by the ids the load breaks), its first 200 users
+3.1% prescient, +1.4% swiftiles;
Last.fm's user-artist-tag tensor (108,469 nonzeros, rank 8 in one pass, scratchpads of
8,192 rows: the MLU's loads of C bound it) +1.0% prescient, -3.4% swiftiles. A later
pass that converts nothing loads its first tile's C and B beside the pass before's last
conversion: Tensaurus's load stage takes that tile once the tile before is handed to
compute, while its conversion still runs, so the two read the DRAM's banks interleaved
(:func:`_row_misses`; counted as alone before, the errors were +5.9/+1.9/-1.3%,
-9.8/-12.5/+7.0% and the first 200 users' -3.1/-4.1%). What it leaves out there, as
MovieLens-100k's first 500 users show it (prescient's 32 bands of one tile, none
overbooked, and swiftiles' 20, two overbooked, at ranks 8 and 12): a single pass's
conversion predicted long (+12.8% prescient, +21.4% swiftiles; the converter's cycles,
half of them its row misses at :data:`MISS`, longer than the RTL's); and the second
pass still short (its cycles, rank 12's less rank 8's: prescient 55,000 against the
RTL's 357,000, about a band's load of 3,794 words each band; swiftiles 458,000 against
554,000). Tried and not kept: the band's next conversion held back until the band
leaves the Tailor (the Tailor's feed takes the next band's first pass command only after
the shrink) brings prescient's second pass to 194,000 but moves SpMM's simulated cases
by up to 16% (``pes2-2passes-uniform-16rows``: 3,838 cycles to 4,466), so the RTL's
converter runs ahead of the feed there; a pass's loads held back until the tile before
is computed overshoots (480,000).
**The i ids on the bus** (:func:`_shared_ids`): the cluster counter reads a band's i ids
one after another, 32 to a DRAM burst, and the DRAM answers an id with the burst the id
before fetched unless another access came between. The tile's load comes between them
once a burst of it (its words of one burst are asked together, their tags answered with
the burst they share), all of its bursts (the load runs beside the whole pointer phase,
which each of them holds up, below); so of the ids only those opening a burst and those
the load breaks take the bus, and each broken one waits :data:`SAME_BURST` more. Counted
a burst each (and each breaking B's runs again), they had the tag tensor's bands bound
by a bus of 1.76x the DRAM's own count (``AxiRun``'s ``dram_reads`` and
``dram_writes``) and its prescient run at +6.8%, bench accel's one row past 5%; shared,
1.69x and +3.2%, its uniform +2.4% to +2.1%, swiftiles -0.6% to -4.6%, MovieLens-100k's first 200
users +3.0% to +3.1% and +1.5% to +1.4% (a matrix has no i ids: nothing else moves).
What the bus still stands in for, measured natively on single bands (the band's
elements alone, one pass at rank 8), is the load slowing the conversion's chain by about
2.3 cycles a word of B or C, whichever of the two is the longer: 18 a burst of the load,
about a row hit's CL and burst, as if each of its bursts cost one of the chain's reads
its shared answer. The tag tensor's users 0-41: 2.33 a word of B (its j ids made dense,
1,314 rows fewer), 2.43 of C (927 fewer), 2.13 with C padded to 2,048 rows; 2.37 at 20
cycles added; 2.46 and 2.50 at a channel rate of 0.5 (none and 20 added).
MovieLens-100k's users 0-3: 2.27 (2.47 at 20 and 0.5); its users 0-31: 2.52. An SpMM
band (60 rows, 288 nonzeros in 16 of 512 columns): 2.27. Swiftiles' first band of the
tag tensor (users 0-14), whose load (20,400 cycles alone) outlasts its conversion (about
15,300): 28,959 cycles, 15,300 + 2.24 a word of its 6,094. The model charges a broken
id :data:`SAME_BURST` and lets the bus (every other conversion read a burst, and a
break of B's runs) stand in for the rest, so its bands still err by their size. One
pass, before and after: users 0-41 +8.3% to +4.5%, 42 (overbooked) +7.8% to +3.5%,
43-57 +6.1% to +2.7%; swiftiles' 45-57 +5.7% to +3.2%, 0-14 -13.9% (its load the
longer: the model takes the longer of the two, where the RTL adds 2.3 a word of the
load to the conversion). Both passes (a fitting band's second pass converts nothing and
loads beside the first's conversion: the model adds that load, 3.34 cycles a word, after
the bus, where the RTL's conversion grows 2.3 a word): 0-41 +14.2% to +11.5%, 43-57
+11.7% to +9.2%, swiftiles' 45-57 +13.4% to +11.6%, 42 +4.8% to +0.6%, 0-14 -5.5%.
Whole runs land within 5% as the long second passes and the short load-bound bands
partly cancel. Tried and not kept, on the same cases: the load's bursts charged to the
conversion at 18 each whichever is the longer, a conversion's reads to a load that
outlasts it, and the bus counted as the DRAM books it (no longer binding): the bands
above within 6.5% but 0-14 on both passes (-7.7%), the tag tensor's prescient row
-4.0%, but its swiftiles row -8.7%, MovieLens-100k's first 200 users +15.6% (its chain long
without the bus's stand-in: users 0-31 alone, the RTL's conversion about 116,000 cycles
against the model's 126,000), bcspwr04's single passes -6.4%, 494_bus at 20 cycles added
and a channel of 0.5 +7.2%, nr-bio-dmela on 4 x 4 +7.7%: the chain's terms
(:data:`SAME_BURST`, :data:`MISS` on a conversion, :data:`ROW_QUEUE`) were fitted with
the bus standing in and would be fitted again without it. Tried before, with the bus
counting a tile's accesses as :func:`_row_misses` orders them but B's words of one burst
kept together (0.74x, GD97_b on 2 PEs, to 1.09x, impcol_a's SpMV, the DRAM's own count,
where the model's bus books 1.08x, rajat19 uniform, to 1.76x): the conversion slowed
``1 / rate + burst / share`` a word loaded beside it took the tag tensor's prescient row
to -4.3% but swiftiles' to -8.9%, ash219 to -6.5%, SpMV's dwt_878 to -6.3% and bcsstk13
to -7.3%; with the next band's conversion held until the
Tailor's feed takes its first pass command, a tile's charge at most a burst's words on
R and :data:`SOFT` at 3 every case within 5% but 494_bus at 20 added and 0.5 (+8.1%:
its time then its conversions' chains and their charge for the loads beside them, which
there allows at most about half the default memory's a word); a charge for only the
words whose load overlaps the conversion in time takes SpMM short (bcspwr04's single
passes -16%). Tried last: a tile handed to compute once loaded (not once the bus has
carried its conversion), so a fitting band's second pass loads beside the first's
conversion, which that load holds up 18 cycles a burst: the tag tensor's prescient row
-3.1%, but its swiftiles row -7.4%, MovieLens-100k's first 200 users +9.2% and +9.3%,
Erdos971's single passes -9.4%, 494_bus at the default memory -6.1%; the charge without
the hand-off keeps every matrix but takes those 200 users to +9.8% and +9.3% (their
chains long, as above).
Which state the sequencer waits in on the second pass is not measured: a slice's
waveform is written as FST, and no reader of it is at hand.
"""

from dataclasses import dataclass

import numpy as np

from . import accel_image, accel_plan, ciss, ciss_csr, wire
from .accel_image import ADDR_WIDTH
from .dram import DDR4_2400, Geometry


@dataclass(frozen=True)
class Memory:
    """A memory as the model sees it: a tagged read answered ``latency`` cycles after its
    port's request (1: on the next cycle), an in-order port's ``ordered`` cycles after;
    ``rate`` beats a cycle taken and answered on each AXI channel (a word no wider than
    the bus is a beat, so ``rate *`` the bus's bytes a cycle at most); ``burst`` cycles of
    a DRAM's data bus each access holds (0: no such bus); ``queue`` beats of R a tagged
    answer waits for behind others due with it (a DRAM's burst answers its words at
    once), each ``1 / rate`` cycles; ``away`` cycles a tagged read spends off R where a
    tile's reads meet on R alone, no DRAM bus between them: the MLU's tags then circulate
    through R with the tile's other reads' beats (:func:`_circulating`; 0: the tags'
    round trip as fitted, their queue on R in it)."""

    latency: float
    ordered: float
    rate: float
    burst: float = 0.0
    queue: float = 0.0
    away: float = 0.0


BENCH = Memory(latency=11.0, ordered=8.5, rate=0.7, away=7.8)
"""The bench's AxiMemory (``rates`` 0.7 on every channel, ``delay`` 0 to 6 cycles); a
tagged read 7.8 cycles off R (fitted over the Amaranth-simulator cases of
``tests/test_accel_model.py``, whose MLU reads share R with the conversion's: the two of
one-row bands and of tlen 4 from +6.0% and -6.5% to within 4%)."""

IDEAL = Memory(latency=9.5, ordered=7.0, rate=1.0)
"""The bench's AxiMemory always ready (``rates`` 1 on every channel)."""

COINS = 4.0
"""Cycles a round trip waits, at a channel readiness ``rate``, for ``COINS * (1 / rate -
1)`` beyond its wait at ``rate`` 1: the AR and R channels' coins at the memory, and as
many again for the slices and queues an access crosses, each a handshake the memory's
pace holds back (fitted)."""


def dram(extra=0, rate=0.7):
    """The native bench's DDR4-timed memory (:class:`~sparseforge.tb.axi_native.AxiDram`
    as :func:`~sparseforge.tb.accel.simulate` builds it: DDR4-2400 at a 1 GHz clock) with
    ``extra`` cycles added to every access (its ``latency`` setting) and every channel
    ready at ``rate``: a round trip a row hit's CL and burst (18 cycles) with the
    master's slices and the units' queues, a tagged answer half a beat behind the
    others of its burst, the bus 4 cycles a burst of 64 bytes and 5 (tCCD_L) for one in
    the bank group of the burst before (4.25: a quarter of them), as fitted."""
    coins = COINS * (1 / rate - 1)
    return Memory(latency=19.3 + extra + coins, ordered=16.8 + extra + coins, rate=rate,
                  burst=4.25, queue=0.5)


DRAM = dram()
"""The native bench's memory as ``run accel`` builds it by default (:func:`dram`: no
latency added, ``rates`` 0.7 on every channel)."""


@dataclass(frozen=True)
class Prediction:
    """A run's predicted ``cycles``, its exact ``bytes_read`` and ``bytes_written``
    (``reads`` and ``writes`` by region), the entries the Tailor ``refetched``, and
    ``parts``: the cycles by unit (:mod:`this module <sparseforge.sw.accel_model>`'s
    docstring)."""

    cycles: int
    bytes_read: int
    bytes_written: int
    refetched: int
    parts: dict
    reads: dict
    writes: dict


def _converted(plan_):
    """For each band, for each pass, the input tiles the converter converts."""
    c = plan_.config
    for band in plan_.bands:
        again = band.refetched_inputs(c) if band.bumped(c) else ()
        yield band, [band.inputs, *[again] * (plan_.passes - 1)]


def _windows(band, tiles):
    """The converter's :class:`~sparseforge.sw.ciss_csr.TileJobs` for ``tiles`` of
    ``band`` converted on one pass (the first of them reads the band's row pointers)."""
    n = len(tiles)
    first = np.zeros(n, dtype=np.int64)
    first[:1] = 1
    return ciss_csr.TileJobs(np.full(n, band.i0, dtype=np.int64),
                             np.full(n, band.rows, dtype=np.int64),
                             np.array([t.k0 for t in tiles], dtype=np.int64),
                             np.array([t.k1 for t in tiles], dtype=np.int64), first)


def _image(plan_, matrix):
    """A as the converter reads it: CSR (:func:`~sparseforge.sw.ciss_csr.csr_image`), or
    SpMTTKRP's tensor as COO (a :class:`~sparseforge.sw.ciss_csr.CooImage`, whose
    ``row_ptr`` and ``col`` are its slices' and j ids, as CSR's to the pre-pass)."""
    c = plan_.config
    if plan_.mttkrp:
        return accel_plan.tensor_image(matrix, c)
    return ciss_csr.csr_image(matrix, c.dw, c.iw, ADDR_WIDTH, tiled=True)


def traffic(plan_, matrix):
    """``(reads, writes)``: the bytes the run reads and writes, by region (exact). In
    SpMTTKRP the cluster counter's i ids (:func:`~sparseforge.sw.ciss_csr.
    coo_pointer_reads`) where CSR reads row pointers, each element's k id too, and C's
    ``K`` rows with every tile's rows of B."""
    c = plan_.config
    image = _image(plan_, matrix)
    c_words = plan_.shape[2] * c.tlen if plan_.mttkrp else 0       # C's K rows a tile
    words = dict.fromkeys(("tiles", "a_rowptr", "a_prepass", "a_lanes", "b", "c"), 0)
    jobs = []
    for band, passes in _converted(plan_):
        words["tiles"] += len(band.inputs) * plan_.passes
        words["b"] += sum(_b_words(plan_, t) - c_words for t in band.inputs) * plan_.passes
        words["c"] += len(band.inputs) * c_words * plan_.passes
        for tiles in passes:
            if not tiles:
                continue
            jobs.append(_windows(band, tiles))
            words["a_rowptr"] += band.rows + 1
            words["a_prepass"] += len(ciss_csr.prepass_reads(image, jobs[-1])[0])
            words["a_lanes"] += sum(_nnz(image, band, t) for t in tiles)
    index, mlu = wire.word_bytes(c.iw), wire.word_bytes(c.cols * c.vlen * c.dw)
    pointers = words["a_rowptr"] * wire.word_bytes(ADDR_WIDTH)
    if plan_.mttkrp:
        pointers = len(ciss_csr.coo_pointer_reads(image, ciss_csr.TileJobs(*(
            np.concatenate([getattr(j, f) for j in jobs])
            for f in ("i0", "rows", "k0", "k1", "first"))))) * index
    reads = {"tiles": words["tiles"] * wire.word_bytes(wire.width(wire.ACCEL_TILE)),
             "a_rowptr": pointers, "a_prepass": words["a_prepass"] * index,
             "a_colid": words["a_lanes"] * index,
             **({"a_kid": words["a_lanes"] * index} if plan_.mttkrp else {}),
             "a_values": words["a_lanes"] * wire.word_bytes(c.dw), "b": words["b"] * mlu,
             **({"c": words["c"] * mlu} if plan_.mttkrp else {})}
    writes = {"out": plan_.shape[0] * c.tlen * c.cols * plan_.passes
              * wire.word_bytes(c.vlen * c.acc_width)}
    return reads, writes


def _b_words(plan_, tile):
    """The MLU's reads of B for ``tile`` on one pass: its window's ``kn`` rows of
    ``tlen`` words; in SpMV b's ``ceil(kn / per)`` rows of one word (the sequencer's
    ``rows1``)."""
    kn = tile.k1 - tile.k0
    if plan_.mv:
        return -(-kn // wire.mv_layout(plan_.config.vlen)[0])
    if plan_.mttkrp:                                # and C's K rows
        return (kn + plan_.shape[2]) * plan_.config.tlen
    return kn * plan_.config.tlen


def _beats(width, data):
    """The beats of R a word of ``width`` bits takes on a ``data``-bit bus (the master
    reads it as one burst of :func:`~sparseforge.sw.wire.word_bytes`)."""
    return max(wire.word_bytes(width) * 8 // data, 1)


def _nnz(image, band, tile):
    """A window's nonzeros (``A[band rows, k0:k1]``)."""
    lo, hi = image.row_ptr[band.i0], image.row_ptr[band.i0 + band.rows]
    col = image.col[lo:hi]
    return int(np.count_nonzero((col >= tile.k0) & (col < tile.k1)))


class _Stream:
    """A window's CISS schedule (what :func:`~sparseforge.sw.ciss_csr.tile_cycles`
    reads of a :class:`~sparseforge.sw.ciss.Ciss`): its nonempty rows' ``slices``,
    ``count``, ``pe`` and ``start``, and its ``entries``."""

    class _Wire:
        def __init__(self, pes):
            self.pes = pes

    def __init__(self, slices, count, pes, fibers=None):
        self.slices, self.count, self.wire = slices, count, self._Wire(pes)
        self.fibers = np.zeros_like(count) if fibers is None else fibers
        self.pe, self.start, self.entries = ciss.schedule(count + 1, pes)

    def lane_cycles(self, tlen):
        """The busiest PE row's cycles: ``tlen`` a nonzero and a slice's drain, one a
        header that ends nothing or an idle entry; in SpMTTKRP ``tlen`` more a fiber
        (its ``OSR += TSR * B[j]``)."""
        pes = self.wire.pes
        nnz = np.bincount(self.pe, weights=self.count, minlength=pes)
        slices = np.bincount(self.pe, minlength=pes)
        fibers = np.bincount(self.pe, weights=self.fibers, minlength=pes)
        idle = self.entries - nnz - slices
        return int((tlen * (nnz + slices + fibers) + idle).max()) if len(self.slices) else 0


def _streams(image, band, pes):
    """Each input tile of ``band``: its :class:`_Stream`, its nonzeros by row counted
    from the band's rows' elements (so in time and memory of the band's nonzeros)."""
    lo, hi = image.row_ptr[band.i0], image.row_ptr[band.i0 + band.rows]
    row = np.repeat(np.arange(band.rows, dtype=np.int64),
                    np.diff(image.row_ptr[band.i0:band.i0 + band.rows + 1]))
    bounds = np.array([t.k1 for t in band.inputs], dtype=np.int64)
    tile = np.searchsorted(bounds, image.col[lo:hi], side="right")
    key, count = np.unique(tile * band.rows + row, return_counts=True)
    which, rows = np.divmod(key, band.rows)
    fibers = _fibers(image, lo, hi, tile * band.rows + row, key)
    out = []
    for n in range(len(band.inputs)):
        mine = which == n
        out.append(_Stream(rows[mine], count[mine], pes,
                           None if fibers is None else fibers[mine]))
    return out


def _fibers(image, lo, hi, slot, key):
    """A tensor's fibers (distinct j) in each slice of a tile, ``key`` its slices'
    ``slot`` s (sorted) among the band's elements ``[lo, hi)``; None for a matrix."""
    if getattr(image, "k", None) is None:
        return None
    col = image.col[lo:hi]
    new = np.ones(len(col), dtype=bool)
    new[1:] = (col[1:] != col[:-1]) | (slot[1:] != slot[:-1])
    return np.bincount(np.searchsorted(key, slot[new]), minlength=len(key))


START = 4
"""Cycles from ``start`` to the sequencer's first read of the tile list."""
ISSUE = 2
"""Cycles a tile word takes from its answer to its jobs (the word register, the jobs): the
sequencer registers the tile's decisions with its word, no cycle of their own."""
TILE = 25
"""Cycles a tile's compute adds to its busiest PE row's (the TLU's reads of the Tailor,
the PEs' pipeline emptied before the tile's item goes to the MSU)."""
DRAIN = 6
"""Cycles from the run's last tile computed to its band's first write."""
FINISH = 4
"""Cycles from the run's last write answered to ``done``."""


ROW_QUEUE = 11.0
"""Cycles a row's first column id in a window waits on a DRAM beyond its round trip, queued
behind the lanes' reads of the row before on the one read channel and the DRAM's bus
(fitted)."""
SAME_BURST = 4.0
"""Cycles fewer a column id in the DRAM burst of the pre-pass's read before waits:
the DRAM answers it with the burst it fetched last where no other access came between
(fitted)."""
SOFT = 4.0
"""SpMV: a tile's conversion and its accesses on the DRAM's bus overlap as the
``SOFT``-norm of the two, not their maximum: the conversion's reads queue on the bus
they keep busy (fitted)."""
LOADS = 6.0
"""A tile's loads of B and its accesses on the DRAM's bus overlap as their
``LOADS``-norm: the MLU's reads queue on the bus as the conversion's do, most where a
pass converts every tile while its rows of B load (fitted natively on the single passes
of Erdos971, -5.1% to -3.3%, and rajat19, +4.2% to +4.6%)."""


def _queued(unit, bus, norm):
    """Cycles a unit busy ``unit`` cycles on its own takes beyond the larger of that and
    the ``bus`` cycles its accesses hold the DRAM's bus: their ``norm``-norm less their
    maximum."""
    return float(np.linalg.norm((unit, bus), norm)) - max(unit, bus)


def _prepass_waits(order, per_row, wait, queue=0.0, shared=0.0, per_burst=1):
    """Each job's pre-pass waits by row (float arrays, as ``per_row`` counts its reads,
    ``order`` the elements read): ``wait`` a column id, ``queue`` more a row that reads,
    ``shared`` fewer for each column id in the same burst of ``per_burst`` as the one
    read before it."""
    same = np.zeros(len(order), dtype=bool)
    same[1:] = order[1:] // per_burst == order[:-1] // per_burst
    rows = np.concatenate([np.zeros(0, np.int64), *per_row])
    hits = np.bincount(np.repeat(np.arange(len(rows)), rows), weights=same,
                       minlength=len(rows))
    waits = rows * wait + queue * (rows > 0) - shared * hits
    return np.split(waits, np.cumsum([len(p) for p in per_row])[:-1])


def _conversions(image, band, tiles, streams, wait, burst=None):
    """``{id(tile): (cycles, first, reads)}`` of ``tiles`` of ``band`` converted on one
    pass (their :class:`_Stream`\\ s in ``streams``), from the cycle the converter takes
    each: its cycles to its count and to its first entry, each column id and the band's
    row pointers read ``wait`` cycles later than :func:`~sparseforge.sw.ciss_csr.
    tile_cycles` counts (a memory answering on the next cycle), and the words it reads
    (pointers, the pre-pass's column ids, the lanes' column ids and values). On a DRAM,
    ``burst`` column ids to a burst, a column id waits as :data:`ROW_QUEUE` and
    :data:`SAME_BURST` say."""
    jobs = _windows(band, tiles)
    heads, costs = ciss_csr.prepass_cycles(image, jobs)
    order, per_row = ciss_csr.prepass_reads(image, jobs)
    cycles = ciss_csr.tile_cycles(image, jobs, streams)
    ids = _cluster_counts(image, band) if getattr(image, "k", None) is not None else None
    if ids is not None:                             # a tensor's band pointers, read slower
        hit = SAME_BURST * (1 - 1 / burst) if burst else 0.0     # ids burst after burst
        late_ptr = ids * (2 + wait - hit) - (band.rows + 2)
        heads = heads + late_ptr * jobs.first
        cycles = cycles + late_ptr * jobs.first
    terms = (ROW_QUEUE, SAME_BURST, burst) if burst else ()
    waits = _prepass_waits(order, per_row, wait, *terms)
    out = {}
    for n, t in enumerate(tiles):
        head = heads[n] + wait * (1 + jobs.first[n])
        decided = head + np.cumsum(costs[n] + waits[n]) - 1
        late = waits[n].sum() + wait * (1 + jobs.first[n])
        first = decided[streams[n].slices[0]] + 5 if len(streams[n].slices) else 0
        reads = (band.rows + 1 if ids is None else ids) * jobs.first[n] \
            + per_row[n].sum() + (2 if ids is None else 3) * streams[n].count.sum()
        out[id(t)] = (float(cycles[n] + late), float(first), int(reads))
    return out


def _cluster_counts(image, band):
    """The i ids the converter's cluster counter reads for a tensor's band: its elements
    and the first past it (if any), one at a time, a round trip each."""
    lo, hi = image.row_ptr[band.i0], image.row_ptr[band.i0 + band.rows]
    return int(hi - lo + (hi < len(image.col)))


def _shared_ids(ids, loaded, per_burst):
    """``(alone, broken)`` of a tensor's band's ``ids`` i ids, which the cluster counter
    reads one after another, ``per_burst`` to a DRAM burst, beside its tile's load of
    ``loaded`` DRAM bursts. An id in the burst of the id before is answered with that
    burst (``alone``: no access of its own) unless another access came between: each of
    the load's bursts comes between two ids once (``broken``), all of them, the load
    running beside the whole pointer phase (the module's docstring: **The i ids on the
    bus**)."""
    opening = -(-ids // per_burst)
    broken = min(ids - opening, loaded)
    return ids - opening - broken, broken


MISS = 14.0
"""Cycles a DRAM row miss among a tile's accesses adds to its loads of B (they queue
behind it on the read channel and in the bank's order), and a miss of its conversion's
reads to the conversion too: the bank's precharge and activation (tRP + tRCD, 28 cycles
at 1 GHz) less what the reads in flight hide (fitted natively on nr-bio-dmela, checked on
bcsstk13's SpMV)."""


def _row_misses(plan_, image):
    """Each tile's DRAM row misses on each pass, in :func:`predict`'s order (a list of
    ``[conversion's, MLU's]``, the tile word's counted as the conversion's) among its
    accesses (its tile word; its conversion's row pointers, pre-pass column ids and
    lanes' column ids and values; the MLU's words of B), the conversion's and the
    MLU's interleaved evenly as the read ports' round robin takes them, one access a
    burst (the next of the same burst answered with it), each missing where its bank
    last opened another row. An image within one row of every bank (128 KiB) misses
    none. In SpMTTKRP the conversion reads its band's i ids in place of row pointers (on
    the pass's first conversion: from the band's first element to the first past it) and
    each element's k id too; the MLU C's ``K`` rows of the pass's panel before the
    window's rows of B. A later pass that converts nothing (a fitting band's) loads its
    first tile beside the pass before's last conversion (Tensaurus's load stage takes it
    once that tile computes): its reads join that conversion's, after that tile's own
    loads, its misses still its own."""
    c = plan_.config
    nnz = len(image.col)
    regions = accel_image.layout(plan_, nnz)

    def at(name, index):
        return regions[name].base + regions[name].word * index

    per = wire.mv_layout(c.vlen)[0] if plan_.mv else None
    arrays = ("a_colid", "a_kid", "a_values") if plan_.mttkrp else ("a_colid", "a_values")
    c_words = plan_.shape[2] * c.tlen if plan_.mttkrp else 0       # C's K rows a pass
    steps, first = [], 0                            # [tile word, conversion, MLU's]
    for band, passes in _converted(plan_):
        lo, hi = image.row_ptr[band.i0], image.row_ptr[band.i0 + band.rows]
        col = image.col[lo:hi]
        for p, tiles in enumerate(passes):
            converts = {id(t) for t in tiles}
            if tiles:
                reads, per_row = ciss_csr.prepass_reads(image, _windows(band, tiles))
                prepass = dict(zip([id(t) for t in tiles], np.split(reads, np.cumsum(
                    [r.sum() for r in per_row])[:-1]), strict=True))
            heads = (np.arange(lo, min(hi + 1, nnz)) if plan_.mttkrp
                     else np.arange(band.i0, band.i0 + band.rows + 1))
            for n, t in enumerate(band.inputs):
                conv = np.zeros(0, dtype=np.int64)
                if id(t) in converts:
                    e = lo + np.flatnonzero((col >= t.k0) & (col < t.k1))
                    lanes = np.stack([at(name, e) for name in arrays], 1).ravel()
                    conv = np.concatenate([at("a_rowptr", heads),
                                           at("a_colid", prepass[id(t)]), lanes])
                    heads = heads[:0]
                w0 = t.k0 // per if plan_.mv else (p * plan_.shape[1] + t.k0) * c.tlen
                mlu = at("b", np.arange(w0, w0 + _b_words(plan_, t) - c_words))
                if plan_.mttkrp:
                    mlu = np.concatenate([at("c", np.arange(p * c_words, (p + 1) * c_words)),
                                          mlu])
                steps.append([at("tiles", first + n), conv, [(len(steps), mlu)]])
                if p and not tiles and not n:       # loading beside the last conversion
                    steps[-1 - len(band.inputs)][2] += steps[-1][2]
                    steps[-1][2] = []
        first += len(band.inputs)
    order, owner = [], []
    for k, (word, conv, loads) in enumerate(steps):
        mlu = np.concatenate([a for _, a in loads]) if loads else np.zeros(0, np.int64)
        whose = np.concatenate([np.full(len(a), 2 * j + 1) for j, a in loads] or [[]])
        where = np.argsort(np.concatenate([
            (np.arange(len(conv)) + 0.5) / max(len(conv), 1),
            (np.arange(len(mlu)) + 0.5) / max(len(mlu), 1)]), kind="stable")
        order += [[word], np.concatenate([conv, mlu])[where]]
        side = np.concatenate([np.full(len(conv), 2 * k), whose]).astype(np.int64)
        owner.append(np.concatenate([[2 * k], side[where]]))
    steps = len(owner)
    burst = np.concatenate(order) // DDR4_2400.burst_bytes
    owner = np.concatenate(owner)
    new = np.ones(len(burst), dtype=bool)
    new[1:] = burst[1:] != burst[:-1]
    group, bank, row, _ = Geometry(8).locate(burst[new])
    key = group * DDR4_2400.banks + bank
    by = np.argsort(key, kind="stable")
    missed = np.zeros(len(by), dtype=bool)
    missed[1:] = (key[by][1:] == key[by][:-1]) & (row[by][1:] != row[by][:-1])
    counts = np.bincount(owner[new][by], weights=missed, minlength=2 * steps)
    return counts.astype(int).reshape(steps, 2).tolist()


def _circulating(away, service, tags):
    """Cycles between answers of ``tags`` reads that circulate between ``away`` cycles off
    the R channel (the request, the memory's latency) and ``service`` cycles on it (their
    beats), each answered read sent again at once: the mean value analysis of that closed
    network, a delay and one queue, each read waiting on R behind the others there."""
    waiting = 0.0                                   # reads on R, of n - 1 circulating
    for n in range(1, tags + 1):
        there = service * (1 + waiting)
        answered = n / (away + there)               # reads a cycle
        waiting = answered * there
    return 1 / answered


def _tagged_gap(memory, tags, beats):
    """Cycles a tagged unit's word takes on ``memory`` with ``tags`` in flight, each word
    ``beats`` beats of R: a word of one beat as fitted (the round trip over the tags, its
    queue on R, never faster than R); a wider one from the same reads circulating
    (:func:`_circulating`), their time off R what makes a one-beat word's fitted cycles,
    each on R for its beats, so the tags wait longer on R the nearer its pace they run."""
    one = max(1 / memory.rate, memory.latency / tags + memory.queue / memory.rate)
    if beats == 1:
        return one
    lo, hi = 0.0, one * tags                        # the time off R, by bisection
    for _ in range(60):
        away = (lo + hi) / 2
        lo, hi = (away, hi) if _circulating(away, 1 / memory.rate, tags) < one else (lo, away)
    return _circulating(lo, beats / memory.rate, tags)


def predict(plan_, matrix, memory=BENCH, tags=8, data=64):
    """The :class:`Prediction` of ``plan_`` (of ``matrix``, A as CSR) on an ``accel``
    whose tagged units keep ``tags`` reads in flight and whose AXI data bus is ``data``
    bits, against ``memory``."""
    c = plan_.config
    L, rate = memory.latency, memory.rate
    ordered = memory.ordered                        # an in-order port's round trip
    image = _image(plan_, matrix)
    reads, writes = traffic(plan_, matrix)
    beats = _beats(c.cols * c.vlen * c.dw, data)    # an MLU word's beats of R
    read_gap = _tagged_gap(memory, tags, beats)     # cycles a word of B
    share = max(DDR4_2400.burst_bytes // wire.word_bytes(c.cols * c.vlen * c.dw), 1)
    share_y = max(DDR4_2400.burst_bytes // wire.word_bytes(c.vlen * c.acc_width), 1)
    last_band = plan_.bands[-1]                     # its last pass's writes meet no reads
    op = 1 if plan_.mv else c.tlen                 # a nonzero's operations, a drain's
    ids_a_burst = DDR4_2400.burst_bytes // wire.word_bytes(c.iw) if memory.burst else 0
    misses = iter(_row_misses(plan_, image) if memory.burst else [])
    busy = dict.fromkeys(("converter", "compute", "mlu", "msu", "bus"), 0.0)
    seq = START                                     # the sequencer's next read
    conv_end = comp_start = comp_end = msu_end = feed_end = bus = 0.0
    for band, passes in _converted(plan_):
        streams = _streams(image, band, c.pes)
        for p, tiles in enumerate(passes):
            ids = {id(t) for t in tiles}
            chosen = [s for t, s in zip(band.inputs, streams, strict=True) if id(t) in ids]
            conv = (_conversions(image, band, tiles, chosen, ordered - 1,
                                 ids_a_burst) if tiles else {})
            command, held = True, False             # the pass's command still to go
            for t, stream in zip(band.inputs, streams, strict=True):
                word = seq + ordered + ISSUE
                take = max(word, comp_start)        # Tensaurus's load stage free
                given = commanded = word
                words = _b_words(plan_, t)          # the MLU's reads of B's rows
                others = 1                          # the tile word
                missed = next(misses, (0, 0))       # its conversion's, its loads' misses
                if id(t) in conv:                   # the converter, between tiles
                    given = max(word, conv_end)
                    cycles, first, converts = conv[id(t)]
                    cycles += MISS * missed[0]
                    if plan_.mttkrp and memory.burst and t is tiles[0]:     # its i ids
                        alone, broken = _shared_ids(_cluster_counts(image, band),
                                                    words / share, ids_a_burst)
                        converts -= alone           # answered with the burst before
                        cycles += SAME_BURST * broken           # not: a DRAM access
                        first += SAME_BURST * broken
                    others += converts
                    conv_end = given + 1 + cycles
                    busy["converter"] += cycles
                    if held:                        # the last entry before is written
                        comp_end = max(comp_end, given + 1 + first + TILE)  # with it
                if command and (id(t) in conv or not tiles):
                    commanded = max(word, feed_end)     # the feed done with the last pass
                    command = False
                seq = max(take, given, commanded) + 1
                gap = read_gap                      # R shared with the tile's other reads
                if memory.away and words:
                    gap = _circulating(memory.away, (beats + others / words) / rate, tags)
                load = L + words * gap + MISS * sum(missed)
                bursts = others + min(words, words / share + others)  # B's words share
                bus = max(bus, min(take, given)) + bursts * memory.burst
                busy["bus"] += bursts * memory.burst
                if id(t) in conv:                   # its reads and the MLU's share it
                    conv_end = max(conv_end, bus)
                    if plan_.mv:                    # and queue on the bus (SOFT)
                        conv_end += _queued(cycles, bursts * memory.burst, SOFT)
                loaded = take + 1 + load            # the MLU's answers in, and on a DRAM
                if memory.burst:                    # queued on the bus they share (LOADS)
                    loaded += _queued(load, bursts * memory.burst, LOADS)
                work = stream.lane_cycles(op)
                start = max(loaded, bus, comp_end) + 1
                end = start + work + TILE
                held = id(t) in conv
                if held and t.closes:               # the pass's end marker
                    end = max(end, conv_end + 1 + TILE)
                comp_start, comp_end = start, end
                busy["compute"] += work
                busy["mlu"] += load
                if t.closes:
                    write = band.rows * c.tlen * c.cols / rate
                    msu_end = max(end + DRAIN, msu_end) + write
                    if memory.burst:                # the band's writes on the bus
                        words_y = band.rows * c.tlen * c.cols
                        alone = band is last_band and p == len(passes) - 1
                        written = (words_y / share_y if alone else words_y) * memory.burst
                        bus = max(bus, end + DRAIN) + written
                        busy["bus"] += written
                        msu_end = max(msu_end, bus)
                    busy["msu"] += write
            feed_end = conv_end if tiles else comp_end
    cycles = max(comp_end + DRAIN, msu_end) + L + FINISH
    parts = {name: round(v) for name, v in busy.items() if v or name != "bus"}
    parts["overlap"] = sum(parts.values()) - round(cycles)
    return Prediction(round(cycles), sum(reads.values()), sum(writes.values()),
                      plan_.refetched_entries(), parts, reads, writes)
