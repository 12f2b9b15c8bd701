"""``sparseforge bench tailors``: parent-to-buffer transfers, Tailor versus Buffet.

For R passes of a child over one tile of occupancy L on a buffer of capacity
D, both generators run on Verilator with a parent at full speed, every read
checked against the model and the tile. The figure is the count of fill and
overwriting-fill handshakes the RTL accepted, beside the analytic
expectation:

- Buffet: ``L`` while the tile fits; beyond, it must slide over the whole
  tile every pass, ``R * L``.
- Tailor: ``L`` while the tile fits; beyond, only the bumped part
  ``L - B`` (``B = D - F``) is re-streamed each later pass,
  ``L + (R - 1) * (L - B)``.

It also measures the read rate on the buffet region while the Tailor is split
(the paper: reads there are as fast as a buffet's, one per cycle).
"""

import sys
import tempfile
from pathlib import Path

import click
from tqdm import tqdm

from sparseforge.cli import emit, json_option
from sparseforge.hw.tailor import Tailor
from sparseforge.sim.runners import verilator
from sparseforge.sw.traffic import tile_transfers

RATIOS = (0.5, 1, 1.5, 2, 4)
FULL_SPEED = {k: 1.0 for k in ("fill", "owfill", "read", "update", "shrink", "read_data")}
PAPER = ("Tailors re-fill only the overbooked (bumped) elements of a tile each pass; a buffet "
         "must drop everything and re-fill the full tile each time it traverses it (§3.2, Fig. 3)")


def buffet_program(length, depth, passes):
    """The Buffet's best schedule: keep a fitting tile, else slide over it every pass."""
    if length <= depth:
        reads = [("read", i) for i in range(length)] * passes
        return [("fill", i) for i in range(length)] + reads + [("shrink", length)]
    one_pass = [("fill", i) for i in range(length)]
    one_pass += [op for _ in range(length) for op in (("read", 0), ("shrink", 1))]
    return one_pass * passes


def _run(block, module, params, args, seed, tmp):
    return verilator(block, module, params=params, args=args, seed=seed,
                     work_dir=Path(tmp, block)).result


def buffet_region_rate(run, base):
    """Reads per cycle over each pass's run of buffet-region reads while split."""
    reads, cycles = 0, 0
    indices, stamps = run.read_indices, run.read_cycles
    starts = [n for n, i in enumerate(indices) if i == 0][1:]     # later passes: split
    for n in starts:
        end = n
        while end + 1 < len(indices) and indices[end + 1] == indices[end] + 1 < base:
            end += 1
        reads += end - n + 1
        cycles += stamps[end] - stamps[n] + 1
    return reads / cycles if cycles else None


def measure(depth, fifo, passes, width=32, seed=1):
    rows = []
    tile = 1 << (4 * depth - 1).bit_length()
    with tempfile.TemporaryDirectory(prefix="sf-tailors-") as tmp:
        for ratio in tqdm(RATIOS, desc="bench tailors", unit="tile", file=sys.stderr):
            length = round(ratio * depth)
            tiles = [{"length": length, "passes": passes,
                      "reads": [list(range(length))] * passes}]
            tailor = _run("tailor", "sparseforge.tb.tailor",
                          {"depth": depth, "fifo": fifo, "tile": tile, "width": width},
                          {"tiles": tiles, "rates": FULL_SPEED}, seed, tmp)
            buffet = _run("buffet", "sparseforge.tb.buffet", {"depth": depth, "width": width},
                          {"program": buffet_program(length, depth, passes),
                           "rates": FULL_SPEED}, seed, tmp)
            want_buffet, want_tailor = map(int, tile_transfers(length, depth, fifo, passes))
            rows.append({
                "ratio": ratio, "length": length,
                "buffet": {"transfers": buffet.fills, "expected": want_buffet,
                           "cycles": buffet.cycles},
                "tailor": {"transfers": tailor.transfers, "fills": tailor.fills,
                           "owfills": tailor.owfills, "expected": want_tailor,
                           "cycles": tailor.cycles,
                           "buffet_region_reads_per_cycle":
                               buffet_region_rate(tailor, depth - fifo)
                               if length > depth else None},
                "saved": 1 - tailor.transfers / want_buffet,
            })
    return rows


def _human(r):
    click.echo(f"Tailor (D={r['depth']}, F={r['fifo']}, B={r['depth'] - r['fifo']}) vs Buffet, "
               f"{r['passes']} passes over one tile; parent-to-buffer transfers counted from "
               f"RTL handshakes on Verilator")
    click.echo(f"{'L/D':>5} {'L':>6} | {'Buffet':>8} {'(expect)':>9} | {'Tailor':>8} "
               f"{'(expect)':>9} | {'saved':>6} | {'cycles B/T':>12} | {'B-region rd/cyc':>15}")
    for row in r["rows"]:
        b, t = row["buffet"], row["tailor"]
        rate = t["buffet_region_reads_per_cycle"]
        click.echo(f"{row['ratio']:>5} {row['length']:>6} | {b['transfers']:>8} "
                   f"{b['expected']:>9} | {t['transfers']:>8} {t['expected']:>9} | "
                   f"{row['saved']:>6.1%} | {b['cycles']:>5}/{t['cycles']:<6} | "
                   f"{'-' if rate is None else f'{rate:.2f}':>15}")
    click.echo(f"paper: {PAPER}")
    match = all(row[k]["transfers"] == row[k]["expected"]
                for row in r["rows"] for k in ("buffet", "tailor"))
    click.echo(f"measured transfers equal the analytic expectation: {match}")


@click.command("tailors")
@click.option("--depth", type=click.IntRange(4, 1 << 12), default=64, show_default=True,
              help="Capacity D (a power of two).")
@click.option("--fifo", type=click.IntRange(1, 1 << 11), default=16, show_default=True,
              help="FIFO region F (a power of two, at most D/2).")
@click.option("--passes", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Passes R per tile.")
@click.option("--quick", is_flag=True, help="D=16, F=4 (for tests).")
@json_option
def command(depth, fifo, passes, quick, as_json):
    """Tailor vs Buffet transfers for tiles of 0.5x to 4x the capacity, from RTL."""
    if quick:
        depth, fifo = 16, 4
    Tailor(depth=depth, width=32, fifo=fifo,
           tile=1 << (4 * depth - 1).bit_length())    # refuses bad D and F
    rows = measure(depth, fifo, passes)
    emit({"depth": depth, "fifo": fifo, "passes": passes, "rows": rows, "paper": PAPER},
         as_json, _human)
