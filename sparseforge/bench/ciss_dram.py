"""``sparseforge bench ciss-dram``: Tensaurus Fig. 3e measured on a DRAM model, not
computed: P = 1, 2, 4, 8 PEs streaming a real tensor from one DDR4 channel.

- CISS: the RTL TLU (:class:`~sparseforge.hw.tensaurus_tlu.TensaurusTlu`, ``TAGS``
  reads in flight) reads the CISS stream from the DRAM memory of
  :mod:`sparseforge.tb.dram`, nothing stalling it, natively on Verilator;
- extended CSR: the P PEs' reads of the same slices
  (:func:`~sparseforge.sw.csr_reads.csr_reads`), one a cycle in PE order, through the
  same memory (a :class:`~sparseforge.tb.dram.Reader`, ``TAGS`` reads in flight).

Achieved bandwidth: the nonzeros' bytes (a CISS lane each: value and indices, ``DW`` =
32, ``IW`` = 16, 8 bytes) over the run's cycles at the accelerator clock. The memory is
DDR4-2400 (:data:`~sparseforge.sw.dram.DDR4_2400`) with each burst held on the bus for
whole cycles: at 1 GHz (the default) four, a 16 GB/s peak, Fig. 3e's; at the paper's
2 GHz seven, 18.3 GB/s. :func:`measure` and :func:`report` are what another bench calls.
"""

import click

from sparseforge.cli import echo_claims, emit, json_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.hw.interfaces import TaggedMemoryPortSignature
from sparseforge.hw.tensaurus_tlu import TensaurusTlu
from sparseforge.sw import ciss
from sparseforge.sw.csr_reads import csr_reads
from sparseforge.sw.dram import CLOCK, timing
from sparseforge.sw.formats import read_tensor
from sparseforge.tb import native, tensaurus_tlu
from sparseforge.tb.dram import Reader, ReaderBench

PES = (1, 2, 4, 8)
DW, IW = 32, 16
TAGS = 32
TENSOR = "movielens-100k_user-item-day.tns"
QUICK_TENSOR = "movielens-latest-small_user-movie-tag.tns"
FULL = {"start": 1.0, "lanes": 1.0, "reads": 1.0, "answers": 1.0}
PAPER = {"csr": (1.9e9, "saturates at 1.9 GB/s at 8 PEs", "Sec. 4, Fig. 3e"),
         "ciss": (11.2e9, "11.2 GB/s at 8 PEs, 70% of the 16 GB/s peak",
                  "Sec. 4, Fig. 3e caption")}


def measure(tensor, pes=PES, clock=CLOCK, seed=1, work_dir=None):
    """Fig. 3e on ``tensor`` for each PE count of ``pes`` at an accelerator ``clock``
    (Hz): ``{part, clock, peak, rows}``, a row ``{pes, nnz, entries, ciss_cycles,
    csr_reads, csr_cycles, ciss, csr}`` each (bandwidths in bytes/s)."""
    clocked = timing(clock=clock)
    rows = []
    for p in pes:
        stream = ciss.encode(tensor, p, dw=DW, iw=IW)
        useful = stream.nnz * stream.wire.lane_width // 8
        tlu = TensaurusTlu(pes=p, dw=DW, iw=IW, tags=TAGS)
        run, bench = tensaurus_tlu.simulate(tlu, [stream], seed, FULL, work_dir=work_dir,
                                            memory="dram", timing=clocked)
        if run.lanes != bench.want:
            raise SparseforgeError(f"P = {p}: the TLU's lanes differ from the CISS stream")
        reads = csr_reads(stream)
        port = TaggedMemoryPortSignature(24, stream.wire.lane_width, 16)
        csr = native.run(ReaderBench(Reader(port), reads, seed, FULL, TAGS, clocked),
                         work_dir=work_dir)
        rows.append({"pes": p, "nnz": stream.nnz, "entries": stream.entries,
                     "ciss_cycles": run.cycles, "csr_reads": len(reads),
                     "csr_cycles": csr.cycles, "ciss": useful * clock / run.cycles,
                     "csr": useful * clock / csr.cycles})
    return {"part": clocked.part.name, "clock": clock, "peak": clocked.peak, "rows": rows}


def report(result):
    """Print :func:`measure`'s figures beside the paper's."""
    click.echo(f"Fig. 3e on {result['part']}, accelerator at {result['clock'] / 1e9:g} GHz "
               f"(peak {result['peak'] / 1e9:.1f} GB/s): achieved GB/s of the nonzeros")
    click.echo("   P   CISS (RTL TLU)   extended CSR   CISS / CSR")
    for r in result["rows"]:
        click.echo(f"  {r['pes']:2}   {r['ciss'] / 1e9:14.2f}   {r['csr'] / 1e9:12.2f}   "
                   f"{r['ciss'] / r['csr']:9.1f}x")
    last = result["rows"][-1]
    click.echo()
    echo_claims([(f"{name}, P = {last['pes']}", f"{last[key] / 1e9:.2f} GB/s, "
                  f"{last[key] / result['peak']:.0%} of peak", *PAPER[key][1:])
                 for key, name in (("ciss", "CISS"), ("csr", "extended CSR"))],
                ["peak: 64 B a burst, each burst held on the bus for whole cycles",
                 "CISS streams bursts back to back from open rows, rotating over the bank "
                 "groups, so only refresh, the idle lanes and the headers keep it from the "
                 "peak; the model leaves out command-bus conflicts and a controller's "
                 "queues, which the paper's 70% includes",
                 "per-PE CSR at P > 1: the PEs read far apart, so each 8-byte record costs "
                 "a 64-byte burst, and the bus's peak / 8 bounds it"], (20, 28),
                ("metric", "ours (measured)", "paper"))


@click.command("ciss-dram")
@click.option("--quick", is_flag=True, help="The small MovieLens tensor, P = 1 and 2.")
@click.option("--clock", type=click.FloatRange(1e8, 1e10), default=CLOCK, show_default=True,
              help="Accelerator clock, Hz (2e9: the paper's).")
@json_option
def command(quick, clock, as_json):
    """CISS through the RTL TLU against per-PE CSR, read from a DDR4 model (Figure 3e)."""
    root = shared_data_dir()
    name = QUICK_TENSOR if quick else TENSOR
    if root is None or not (root / "tensors" / name).exists():
        raise SparseforgeError(f"tensors/{name} not found in the shared data "
                               "(run 'sparseforge data fetch', or set SPARSEFORGE_DATA)")
    tensor = read_tensor(root / "tensors" / name)
    result = {"tensor": name, **measure(tensor, PES[:2] if quick else PES, clock)}
    emit(result, as_json, report)
