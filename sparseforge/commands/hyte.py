"""``sparseforge hyte A [B] --buffer-kb N``: HYTE's static tiling schedule for ``C = A B``.

Samples A's rows and B's columns to estimate effMAC and nnzCTk
(:mod:`sparseforge.sw.hyte_estimate`), searches the pruned space of tile shapes, inter-tile
orders and buffer allocations under the cost model (:mod:`sparseforge.sw.hyte_schedule`)
for the intra-tile dataflow given, and reports the scheme with its modeled cycles. B
defaults to A (self-multiplication, the paper's main workload). Deterministic under
``--seed``.
"""

import time

import click

from sparseforge.cli import emit, json_option, read_input, seed_option
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.hyte_estimate import check_pair, estimate
from sparseforge.sw.hyte_schedule import DATAFLOWS, Hardware, Stats, search

MAX_BUFFER_KB = 1 << 20
"""The largest global buffer scheduled: 1 GB, past any on-chip buffer."""


def schedule(a, b, hardware, dataflow, seed):
    """``(estimate, best scheme, schemes searched, seconds)`` of HYTE's scheduler."""
    check_pair(a, b)
    start = time.perf_counter()
    found = estimate(a, b, seed=seed)
    stats = Stats(a.shape[0], a.shape[1], b.shape[1], a.nnz, b.nnz, found.eff_mac,
                  found.nnz_ctk)
    best, count = search(stats, hardware, dataflow)
    return found, best, count, time.perf_counter() - start


def _human(r):
    click.echo(f"C = A B: A {r['a']} ({r['shape_a'][0]} x {r['shape_a'][1]}), B {r['b']} "
               f"({r['shape_b'][0]} x {r['shape_b'][1]}), {r['dataflow']} dataflow, buffer "
               f"{r['buffer_kb']} KB")
    click.echo(f"  estimated effMAC {r['eff_mac_est']:,.0f}, nnz(C) {r['nnz_c_est']:,.0f} "
               f"(rows sampled {r['sampled_rows']}, columns {r['sampled_cols']})")
    t = r["tile_shape"]
    click.echo(f"  tile T_i x T_k x T_j = {t[0]} x {t[1]} x {t[2]}, inter-tile order "
               f"{r['inter_tile_order']}")
    alloc = ", ".join(f"{k} {v / 1024:,.0f} KB" for k, v in r["buffer_allocation"].items())
    click.echo(f"  buffer allocation {alloc}")
    click.echo(f"  modeled cycles {r['modeled_cycles']:,.0f} (PE {r['pe_cycles']:,.0f}, DRAM "
               f"{r['dram_cycles']:,.0f}, SRAM {r['sram_cycles']:,.0f}); {r['schemes']} "
               f"schemes searched in {r['schedule_seconds'] * 1e3:.1f} ms")


@click.command()
@click.argument("a_path", metavar="A", type=click.Path(dir_okay=False))
@click.argument("b_path", metavar="[B]", required=False, type=click.Path(dir_okay=False))
@click.option("--buffer-kb", type=click.IntRange(1, MAX_BUFFER_KB), required=True,
              help="The global buffer, in KB (1 KB to 1 GB).")
@click.option("--dataflow", type=click.Choice(DATAFLOWS), default="gust", show_default=True,
              help="The intra-tile dataflow: Gustavson, inner or outer product.")
@seed_option(0, "Seed of the row and column sampling and the hashes.")
@json_option
def command(a_path, b_path, buffer_kb, dataflow, seed, as_json):
    """HYTE's static schedule (tile shape, inter-tile order, buffer allocation) for A B."""
    a = read_input(a_path, read_matrix)
    b = a if b_path is None else read_input(b_path, read_matrix)
    hardware = Hardware(buffer_bytes=buffer_kb * 1024)
    found, best, count, seconds = schedule(a, b, hardware, dataflow, seed)
    emit({"a": a_path, "b": b_path or a_path, "shape_a": list(a.shape),
          "shape_b": list(b.shape), "dataflow": dataflow, "buffer_kb": buffer_kb,
          "eff_mac_est": found.eff_mac, "nnz_c_est": found.nnz_c,
          "nnz_ctk_est": {str(k): v for k, v in found.nnz_ctk.items()},
          "sampled_rows": found.rows, "sampled_cols": found.cols,
          "tile_shape": list(best.tile), "inter_tile_order": best.order,
          "buffer_allocation": best.allocation, "modeled_cycles": best.cycles,
          "pe_cycles": best.parts["pe"], "dram_cycles": best.parts["dram"],
          "sram_cycles": best.parts["sram"], "schemes": count, "seed": seed,
          "schedule_seconds": seconds}, as_json, _human)
