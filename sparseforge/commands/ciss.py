"""``sparseforge ciss TENSOR --pes P``: a matrix or 3-D tensor as Tensaurus's CISS stream.

Encodes with :func:`sparseforge.sw.ciss.encode` (Section 4, Fig. 3d), reports
the entries, how their lane slots are used (nonzeros, slice headers, idle
lanes), the PEs' loads, the encoder's rate, and Fig. 3e's bandwidth model
(:mod:`sparseforge.sw.ciss_bandwidth`) for CISS against extended CSR;
``-o`` writes the stream in the ``.npz`` layout of :mod:`sparseforge.sw.ciss`.
"""

import time

import click

from sparseforge.cli import OutputFile, emit, json_option, read_input
from sparseforge.core.errors import ParameterError
from sparseforge.core.tools import status
from sparseforge.sw import ciss as ciss_format
from sparseforge.sw.ciss_bandwidth import PEAK, WORD_BITS, ciss_bandwidth, csr_bandwidth
from sparseforge.sw.formats import read_matrix, read_tensor
from sparseforge.sw.wire import CISS_MAX_PES

_BIG = 10**7  # nonzeros from which encoding is announced on stderr


def _read(path):
    """A FROSTT tensor, or any matrix file ``read_matrix`` takes."""
    if str(path).lower().endswith((".tns", ".tns.gz")):
        return read_tensor(path)
    return read_matrix(path)


def _human(r):
    s = r["slots"]
    click.echo(f"{r['input']}: {' x '.join(map(str, r['shape']))}, {r['nnz']} nonzeros, "
               f"{r['slices']} slices along mode {r['mode']}")
    lane = ", ".join(f"{name} {bits}" for name, bits in r["lane"].items())
    rounded = f", {r['rounded']} rounded" if r["rounded"] else ""
    click.echo(f"CISS for {r['pes']} PEs: entries of {r['entry_bits']} bits ({r['pes']} lanes "
               f"of {lane}), values as {r['kind']}{rounded}")
    total = s["nonzero"] + s["header"] + s["idle"]
    click.echo(f"  {r['entries']} entries, {total} lane slots: {s['nonzero']} nonzeros "
               f"({r['utilization']:.1%}), {s['header']} slice headers "
               f"({s['header'] / max(total, 1):.1%}), {s['idle']} idle "
               f"({s['idle'] / max(total, 1):.1%})")
    loads = r["pe_nnz"]
    click.echo(f"  nonzeros per PE: {min(loads)} to {max(loads)}")
    click.echo(f"  encoded in {r['encode_seconds'] * 1e3:.2f} ms "
               f"({r['nnz_per_second'] / 1e6:.1f} M nonzeros/s)")
    b = r["bandwidth"]
    c, x = b["ciss"], b["csr"]
    click.echo(f"  bandwidth model ({b['word_bits'] // 8}-byte words, {b['peak'] / 1e9:g} GB/s "
               f"peak): CISS {c['fraction']:.1%} of fetched bits useful, "
               f"{c['achieved'] / 1e9:.2f} GB/s; extended CSR {x['fraction']:.1%}, "
               f"{x['achieved'] / 1e9:.2f} GB/s")
    if r["output"]:
        click.echo(f"  wrote {r['output']}")


def _figures(band):
    return {"words": band.words, "fraction": band.fraction, "achieved": band.achieved}


@click.command("ciss")
@click.argument("tensor", type=click.Path(dir_okay=False))
@click.option("--pes", type=click.IntRange(1, CISS_MAX_PES), required=True,
              help="PEs P: lanes per CISS entry.")
@click.option("--dw", type=click.IntRange(2, 64), default=32, show_default=True,
              help="Bits of a value (integers: two's complement; reals: IEEE, 16/32/64).")
@click.option("--iw", type=click.IntRange(1, 64), default=32, show_default=True,
              help="Bits of an index (slice index, j, k).")
@click.option("--mode", type=click.IntRange(0, 2), default=0, show_default=True,
              help="The slice mode i (the output mode of SpMTTKRP).")
@click.option("-o", "--output", type=OutputFile(".npz"),
              help="Write the stream to this .npz file.")
@json_option
def command(tensor, pes, dw, iw, mode, output, as_json):
    """Encode the matrix or 3-D tensor TENSOR as CISS for P PEs (Tensaurus, Fig. 3d).

    TENSOR is a FROSTT .tns tensor or a matrix (.mtx, .mtx.gz, .smtx, .npy, .npz).
    """
    source = read_input(tensor, _read)
    if source.nnz >= _BIG:
        status(f"encoding {source.nnz} nonzeros...")
    start = time.perf_counter()
    try:
        stream = ciss_format.encode(source, pes, dw=dw, iw=iw, mode=mode)
    except ParameterError as exc:
        raise ParameterError(f"{tensor}: {exc}") from None
    seconds = time.perf_counter() - start
    if output:
        ciss_format.save(output, stream)
    result = {
        "input": tensor, "shape": list(stream.shape), "nnz": stream.nnz, "mode": mode,
        "slices": len(stream.slices), "pes": pes, "dw": dw, "iw": iw,
        "lane": {f.name: f.width for f in stream.wire.lane},
        "entry_bits": stream.wire.entry_width, "kind": stream.kind, "rounded": stream.rounded,
        "entries": stream.entries,
        "slots": {"nonzero": stream.nnz, "header": len(stream.slices), "idle": stream.idle},
        "utilization": stream.utilization, "pe_nnz": stream.pe_loads(),
        "encode_seconds": seconds, "nnz_per_second": stream.nnz / seconds,
        "bandwidth": {"word_bits": WORD_BITS, "peak": PEAK,
                      "ciss": _figures(ciss_bandwidth(stream)),
                      "csr": _figures(csr_bandwidth(stream))},
        "output": output,
    }
    emit(result, as_json, _human)
