"""``sparseforge bench scale``: the host tools at 10^6, 10^7 and 10^8 nonzeros.

Generated square matrices (written as Matrix Market with fast-matrix-market):
*uniform* (coordinates uniform over an N x N matrix, N = nnz / 5) and
*power-law* (row lengths drawn from a Zipf law, with a few dense rows of
N / 10 entries). For each, in a fresh process each, so peak memory is the
command's own: reading the file with our reader and with
``scipy.io.mmread``, and every host command that reads a matrix
(``swiftiles``, ``suds``). Printed: wall time, nonzeros per second, peak
resident memory above the interpreter's own (the same command on a 3-entry
matrix) as a multiple of the COO arrays the reader returns (``nnz x 16``
bytes: int32 row and column, float64 value), the read time against
``mmread``, and the exponent of time against nonzeros fitted over the sizes.

Targets (the issue's): reading within 1.5x of ``mmread``; peak memory at most
2.5x the COO arrays for every command; time linear in the nonzeros.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import numpy as np

from sparseforge.cli import echo_claims, emit, json_option, seed_option
from sparseforge.core.tools import status

SIZES = (10**6, 10**7, 10**8)
QUICK_SIZES = (10**5, 10**6)
KINDS = ("uniform", "power-law")
BUFFER = 1024
TARGETS = {"read": ("within 1.5x of scipy.io.mmread", "issue: host tools at 10^8"),
           "memory": ("peak memory at most 2.5x the COO arrays, every command",
                      "issue: host tools at 10^8"),
           "linear": ("time linear in the nonzeros (exponent about 1)",
                      "issue: host tools at 10^8")}

# Each step runs as ``python -c`` in its own process and prints its result as JSON.
READ = ("import sys, json, time; t = time.perf_counter(); {call}; "
        "print(json.dumps({{'seconds': time.perf_counter() - t}}))")
STEPS = {
    "read": READ.format(call="from sparseforge.sw.formats import read_matrix; "
                             "read_matrix(sys.argv[1])"),
    "mmread": READ.format(call="import scipy.io; scipy.io.mmread(sys.argv[1])"),
    "swiftiles": ("import sys; from sparseforge.cli import main; "
                  f"main(['swiftiles', sys.argv[1], '--buffer', '{BUFFER}', '--json'])"),
    "suds": "import sys; from sparseforge.cli import main; main(['suds', sys.argv[1], '--json'])",
}


def generate(kind, nnz, n, rng):
    """Row and column indices (int64) of a generated matrix of about ``nnz`` entries."""
    if kind == "uniform":
        return rng.integers(0, n, nnz), rng.integers(0, n, nnz)
    lengths = np.minimum(rng.zipf(2.0, n), n // 10)             # power-law rows
    dense = rng.choice(n, 5, replace=False)
    lengths[dense] = n // 10                                   # a few dense rows
    lengths = np.floor(lengths * (nnz / lengths.sum())).astype(np.int64)
    rows = np.repeat(np.arange(n), lengths)
    return rows, rng.integers(0, n, rows.size)


def write(path, kind, nnz, seed):
    """Write the matrix; return its shape and entry count."""
    import fast_matrix_market as fmm
    import scipy.sparse as sp

    n = max(10, nnz // 5)
    rows, cols = generate(kind, nnz, n, np.random.default_rng(seed))
    matrix = sp.coo_array((np.ones(rows.size), (rows, cols)), shape=(n, n))
    fmm.mmwrite(str(path), matrix)
    return n, int(rows.size)


def run(step, path):
    """``(seconds, peak RSS in bytes)`` of one step on ``path`` in a fresh process."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%M %e", sys.executable, "-c", STEPS[step],
                           str(path)], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{step} on {path} failed: {proc.stderr.strip()[-300:]}")
    peak_kb, wall = proc.stderr.strip().splitlines()[-1].split()
    seconds = json.loads(proc.stdout)["seconds"] if step in ("read", "mmread") else float(wall)
    return seconds, int(peak_kb) * 1024


def measure(sizes, seed):
    out = {"sizes": list(sizes), "rows": []}
    with tempfile.TemporaryDirectory(prefix="sf-bench-scale-") as tmp:
        tiny = Path(tmp, "tiny.mtx")
        write(tiny, "uniform", 3, seed)
        baseline = {step: run(step, tiny)[1] for step in STEPS}
        for kind in KINDS:
            for nnz in sizes:
                path = Path(tmp, f"{kind}-{nnz}.mtx")
                status(f"bench scale: writing a {kind} matrix of {nnz:.0e} nonzeros ...")
                n, entries = write(path, kind, nnz, seed)
                row = {"kind": kind, "nnz": entries, "n": n,
                       "file_mb": path.stat().st_size / 2**20}
                coo = entries * 16
                for step in STEPS:
                    status(f"bench scale: {kind} {nnz:.0e}: {step} ...")
                    seconds, peak = run(step, path)
                    row[step] = {"seconds": seconds, "nnz_per_second": entries / seconds,
                                 "peak_mb": peak / 2**20,
                                 "memory_vs_coo": max(peak - baseline[step], 0) / coo}
                row["read_vs_mmread"] = row["read"]["seconds"] / row["mmread"]["seconds"]
                path.unlink()
                out["rows"].append(row)
    out["exponents"] = {f"{kind} {step}": _exponent(
        [(r["nnz"], r[step]["seconds"]) for r in out["rows"] if r["kind"] == kind])
        for kind in KINDS for step in STEPS}
    return out


def _exponent(points):
    """The slope of log(time) against log(nnz), over the sizes."""
    if len(points) < 2:
        return None
    x, y = np.log([p[0] for p in points]), np.log([max(p[1], 1e-6) for p in points])
    return float(np.polyfit(x, y, 1)[0])


def _human(result):
    steps = list(STEPS)
    click.echo(f"{'matrix':22} | " + " | ".join(f"{s:>22}" for s in steps) + " | read/mmread")
    click.echo(f"{'':22} | " + " | ".join(f"{'s':>6} {'Mnnz/s':>6} {'xCOO':>6}" for _ in steps))
    for r in result["rows"]:
        cells = " | ".join(f"{r[s]['seconds']:>6.2f} {r[s]['nnz_per_second'] / 1e6:>6.1f} "
                           f"{r[s]['memory_vs_coo']:>6.2f}" for s in steps)
        label = f"{r['kind']} {r['nnz']:.1e}"
        click.echo(f"{label:22} | {cells} | {r['read_vs_mmread']:.2f}")
    click.echo()
    largest = max(result["sizes"])
    top = [r for r in result["rows"] if r["nnz"] >= 0.5 * largest]
    ours = {
        "read": ", ".join(f"{r['kind']}: {r['read_vs_mmread']:.2f}x" for r in top),
        "memory": ", ".join(f"{r['kind']} {s}: {r[s]['memory_vs_coo']:.2f}x" for r in top
                            for s in ("read", "swiftiles", "suds")),
        "linear": ", ".join(f"{k}: {v:.2f}" for k, v in result["exponents"].items()
                            if v is not None and not k.endswith("mmread")),
    }
    notes = [f"at {largest:.0e} nonzeros; memory is the peak above the interpreter's own with "
             "its imports (the same command on a 3-entry matrix)",
             "time of read and mmread is the call itself; of the commands, the whole process"]
    echo_claims([(k, ours[k], *TARGETS[k]) for k in TARGETS], notes, (7, 70),
                ("target", "ours (this run)", "issue"))


@click.command("scale")
@click.option("--quick", is_flag=True, help="10^5 and 10^6 nonzeros (for tests).")
@seed_option(0, "Seed of the generated matrices.")
@json_option
def command(quick, seed, as_json):
    """Reading and every host command at 10^6..10^8 nonzeros: time, memory, against scipy."""
    result = measure(QUICK_SIZES if quick else SIZES, seed)
    emit(result, as_json, _human)
