"""``sparseforge bench ciss``: Tensaurus's host software on the real tensors, beside the claims.

On every FROSTT tensor of the shared data:

- the CISS encoder (:func:`sparseforge.sw.ciss.encode`, P = 8, dw = iw = 32):
  nonzeros per second, the best of ``REPEATS`` encodes, along every mode of
  each 3-D tensor (CISS holds 3-D tensors), each stream decoded and checked
  against the tensor;
- golden SpMTTKRP (:mod:`sparseforge.sw.tensor_kernels`, rank ``RANK``,
  float64): ms per call, the best of ``REPEATS`` calls (the median too: other
  jobs on the machine share its caches) along every mode of
  every tensor (3-D and 4-D), the fiber tree built once beforehand as SPLATT
  builds its CSF once, beside SPLATT's 0.6-6 ms per call on these tensors
  (quoted: SPLATT is not run here) and a plain ``np.add.at`` loop, timed once
  per tensor along mode 0, checked equal;
- Fig. 3e's bandwidth model (:mod:`sparseforge.sw.ciss_bandwidth`): the
  useful fraction of fetched words and the achieved bandwidth at 16 GB/s of
  CISS and of extended CSR for 1 to 16 PEs, along mode 0 of each 3-D tensor.
"""

import sys
import time

import click
import numpy as np
from tqdm import tqdm

from sparseforge.cli import echo_claims, emit, json_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.sw import ciss
from sparseforge.sw.ciss_bandwidth import PEAK, WORD_BITS, ciss_bandwidth, csr_bandwidth
from sparseforge.sw.formats import read_tensor
from sparseforge.sw.tensor_kernels import FiberTree

PES = 8
RANK = 16
REPEATS = 20
QUICK_REPEATS = 3
PE_SWEEP = (1, 2, 4, 8, 16)
QUICK_TENSORS = ("movielens-latest-small_user-movie-tag.tns",
                 "kg-wikipeople-arity3_rel-e1-e2-e3.tns")
TARGET_RATE = 1e7
SPLATT_MS = (0.6, 6.0)
WITHIN = 5

# The claims, quoted: the (host targets, SPLATT's time) and the paper's (Fig. 3e).
PAPER = {
    "encoder": (f">= {TARGET_RATE:.0e} nonzeros/s", "the issue's target; the paper times "
                "no encoder"),
    "spmttkrp": (f"SPLATT 0.6-6 ms per call; ours within {WITHIN}x of it",
                 "the issue, on these tensors"),
    "add_at": ("a plain np.add.at loop ~54x slower than SPLATT", "the issue"),
    "csr": ("1.9 GB/s at 8 PEs (saturated)", "Sec. 4, Fig. 3e"),
    "ciss": ("11.2 GB/s at 8 PEs, 70% of the 16 GB/s peak", "Sec. 4, Fig. 3e caption"),
    "ratio": ("5.9x (11.2 / 1.9)", "Sec. 4, Fig. 3e"),
}
QUOTE = ("\"the achieved bandwidth for extended CSR saturates at 1.9 GB/s for 8 PEs while "
         "CISS achieves a bandwidth of 11.2 GB/s, very close to the peak bandwidth\" (Sec. 4); "
         "\"CISS is able to achieve 70% of the peak bandwidth\" (Fig. 3 caption)")


def _best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def _encoder(name, tensor, repeats):
    rows = []
    for mode in range(tensor.ndim):
        stream = ciss.encode(tensor, PES, mode=mode)
        decoded = ciss.decode(stream)
        if not (np.array_equal(decoded.coords, tensor.coords)
                and np.array_equal(decoded.values, tensor.values)):
            raise SparseforgeError(f"{name}: the CISS round trip along mode {mode} differs")
        seconds = min(_best(lambda mode=mode: ciss.encode(tensor, PES, mode=mode), repeats))
        rows.append({"tensor": name, "mode": mode, "nnz": tensor.nnz, "seconds": seconds,
                     "rate": tensor.nnz / seconds, "entries": stream.entries,
                     "slices": len(stream.slices),
                     "utilization": stream.utilization})
    return rows


def _add_at(tensor, factors):
    """SpMTTKRP along mode 0 as a plain np.add.at over the nonzeros."""
    rows = tensor.values[:, None] * factors[1][tensor.coords[:, 1]]
    for mode in range(2, tensor.ndim):
        rows *= factors[mode][tensor.coords[:, mode]]
    y = np.zeros((tensor.shape[0], factors[1].shape[1]))
    np.add.at(y, tensor.coords[:, 0], rows)
    return y


def _spmttkrp(name, tensor, repeats, rng):
    factors = [rng.random((n, RANK)) for n in tensor.shape]
    rows = []
    for mode in range(tensor.ndim):
        start = time.perf_counter()
        tree = FiberTree.build(tensor, mode)
        build = time.perf_counter() - start
        times = _best(lambda tree=tree: tree.mttkrp(factors), repeats)
        rows.append({"tensor": name, "mode": mode, "nnz": tensor.nnz, "ms": min(times) * 1e3,
                     "median_ms": float(np.median(times)) * 1e3, "build_ms": build * 1e3})
    start = time.perf_counter()
    slow = _add_at(tensor, factors)
    rows[0]["add_at_ms"] = (time.perf_counter() - start) * 1e3
    if not np.allclose(slow, FiberTree.build(tensor).mttkrp(factors), rtol=1e-9, atol=0):
        raise SparseforgeError(f"{name}: SpMTTKRP differs from the np.add.at loop")
    return rows


def _bandwidth(name, tensor):
    rows = []
    for pes in PE_SWEEP:
        stream = ciss.encode(tensor, pes)
        c, x = ciss_bandwidth(stream), csr_bandwidth(stream)
        rows.append({"tensor": name, "pes": pes, "ciss_fraction": c.fraction,
                     "ciss_achieved": c.achieved, "csr_fraction": x.fraction,
                     "csr_achieved": x.achieved, "slices": len(stream.slices),
                     "largest_slice": int(stream.count.max()) / stream.nnz})
    return rows


def measure(quick):
    """Every figure of the bench, on the shared data's tensors."""
    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("bench ciss needs the shared data (set SPARSEFORGE_DATA)")
    paths = sorted((root / "tensors").glob("*.tns"))
    if quick:
        paths = [p for p in paths if p.name in QUICK_TENSORS]
    if not paths:
        raise SparseforgeError(f"no .tns tensor under {root / 'tensors'}")
    repeats = QUICK_REPEATS if quick else REPEATS
    rng = np.random.default_rng(0)
    encoder, kernel, bandwidth = [], [], []
    for path in tqdm(paths, desc="ciss", unit="tensor", file=sys.stderr):
        tensor = read_tensor(path)
        name = path.name.removesuffix(".tns")
        kernel += _spmttkrp(name, tensor, repeats, rng)
        if tensor.ndim == 3:
            encoder += _encoder(name, tensor, repeats)
            bandwidth += _bandwidth(name, tensor)
    if not encoder:
        raise SparseforgeError(f"no 3-D tensor under {root / 'tensors'} to encode")
    at8 = [r for r in bandwidth if r["pes"] == PES]
    add_at = [r["add_at_ms"] / r["ms"] for r in kernel if "add_at_ms" in r]
    summary = {
        "encoder_rate": sum(r["nnz"] for r in encoder) / sum(r["seconds"] for r in encoder),
        "encoder_min_rate": min(r["rate"] for r in encoder),
        "spmttkrp_ms": [min(r["ms"] for r in kernel), max(r["ms"] for r in kernel)],
        "add_at_over_ours": [min(add_at), max(add_at)],
        **{key: _span([r[key] for r in at8]) for key in ("csr_achieved", "ciss_achieved",
                                                         "ciss_fraction")},
        "ratio": _span([r["ciss_achieved"] / r["csr_achieved"] for r in at8]),
    }
    return {"pes": PES, "rank": RANK, "repeats": repeats, "peak": PEAK, "word_bits": WORD_BITS,
            "encoder": encoder, "spmttkrp": kernel, "bandwidth": bandwidth,
            "summary": summary, "paper": {k: v[0] for k, v in PAPER.items()},
            "notes": _notes(summary, encoder, at8)}


def _span(values):
    return [float(min(values)), float(max(values))]


def _notes(s, encoder, at8):
    slow = [r for r in encoder if r["rate"] < TARGET_RATE]
    skewed = [r for r in at8 if r["largest_slice"] > 1 / PES]
    notes = [f"SPLATT is not run here: {SPLATT_MS[0]}-{SPLATT_MS[1]} ms is the figure quoted "
             f"for these tensors; our slowest call, {s['spmttkrp_ms'][1]:.2f} ms, is "
             f"{s['spmttkrp_ms'][1] / SPLATT_MS[0]:.1f}x the fastest SPLATT figure and "
             f"{s['spmttkrp_ms'][1] / SPLATT_MS[1]:.2f}x the slowest.",
             "The bandwidth model counts whole memory words only: no DRAM timing (row "
             "activations, refresh), which is why its CISS figure is above the paper's 70%, "
             "and no PE rate, which is what makes Fig. 3e's curves climb with P before they "
             "flatten (here CSR drops from P = 1 to P = 2 and stays: one open word, no cache).",
             QUOTE]
    if skewed:
        notes.append("CISS low at 8 PEs on " + ", ".join(
            f"{r['tensor']} ({r['slices']} slices, the largest {r['largest_slice']:.0%} of the "
            "nonzeros)" for r in skewed) + ": one slice outlasts the others' work, and its "
            "PE streams on alone among idle lanes (the paper's tensors have 12K-480K slices).")
    if slow:
        notes.append("Encoder below 10^7 nonzeros/s on " + ", ".join(
            f"{r['tensor']} mode {r['mode']} ({r['nnz']} nonzeros in {r['slices']} slices, "
            f"{r['rate'] / 1e6:.1f} M/s)" for r in slow) + ": on so few nonzeros a stream's "
            "fixed cost (packing 3P fields) and the per-slice step of the schedule "
            "(~0.1 us a slice) dominate.")
    return notes


def _human(r):
    click.echo(f"CISS encoder, P = {r['pes']}, dw = iw = 32 (best of {r['repeats']}):")
    for e in r["encoder"]:
        click.echo(f"  {e['tensor'][:40]:40} mode {e['mode']}  {e['nnz']:>7} nnz  "
                   f"{e['seconds'] * 1e3:7.2f} ms  {e['rate'] / 1e6:6.1f} M nnz/s  "
                   f"slots used {e['utilization']:.1%}")
    click.echo(f"Golden SpMTTKRP, rank {r['rank']} (best and median of {r['repeats']} calls):")
    for k in r["spmttkrp"]:
        add_at = f"  np.add.at {k['add_at_ms']:.1f} ms" if "add_at_ms" in k else ""
        click.echo(f"  {k['tensor'][:40]:40} mode {k['mode']}  {k['nnz']:>7} nnz  "
                   f"{k['ms']:6.2f} ms/call (median {k['median_ms']:.2f})  "
                   f"tree {k['build_ms']:.1f} ms{add_at}")
    click.echo(f"Bandwidth model ({r['word_bits'] // 8}-byte words, {r['peak'] / 1e9:g} GB/s "
               "peak), mode 0: useful fraction / achieved GB/s")
    for b in r["bandwidth"]:
        click.echo(f"  {b['tensor'][:40]:40} P = {b['pes']:2}  CISS {b['ciss_fraction']:6.1%} "
                   f"{b['ciss_achieved'] / 1e9:6.2f}  CSR {b['csr_fraction']:6.1%} "
                   f"{b['csr_achieved'] / 1e9:5.2f}")
    s = r["summary"]
    click.echo()
    ours = {
        "encoder": f"{s['encoder_rate'] / 1e6:.1f} M nonzeros/s overall "
                   f"(slowest stream {s['encoder_min_rate'] / 1e6:.1f} M/s)",
        "spmttkrp": f"{s['spmttkrp_ms'][0]:.2f}-{s['spmttkrp_ms'][1]:.2f} ms per call",
        "add_at": f"np.add.at {s['add_at_over_ours'][0]:.0f}-{s['add_at_over_ours'][1]:.0f}x "
                  "slower than ours",
        "csr": "{:.2f}-{:.2f} GB/s at 8 PEs".format(*np.array(s["csr_achieved"]) / 1e9),
        "ciss": "{:.2f}-{:.2f} GB/s at 8 PEs, {:.0%}-{:.0%} of peak".format(
            *np.array(s["ciss_achieved"]) / 1e9, *s["ciss_fraction"]),
        "ratio": "{:.1f}-{:.1f}x".format(*s["ratio"]),
    }
    labels = {"encoder": "CISS encoder rate", "spmttkrp": "golden SpMTTKRP time",
              "add_at": "plain np.add.at loop", "csr": "extended CSR, useful bandwidth",
              "ciss": "CISS, useful bandwidth", "ratio": "CISS / extended CSR"}
    echo_claims([(labels[k], ours[k], *PAPER[k]) for k in labels], r["notes"], (30, 50),
                ("metric", "ours (measured in this run)", "claim"))


@click.command("ciss")
@click.option("--quick", is_flag=True, help="Two small tensors, few repeats (for tests).")
@json_option
def command(quick, as_json):
    """CISS encoder rate, golden SpMTTKRP time and Fig. 3e's bandwidth, beside the claims."""
    emit(measure(quick), as_json, _human)
