"""``sparseforge bench mint``: MINT's converters and SAGE on real data, beside the paper.

Measured in one run:

- *Golden converters against scipy*: on the largest real matrices of the
  shared data, the time of our vectorized converters
  (:mod:`sparseforge.sw.conversion`) and of scipy's own for the same
  conversion (CSR to CSC, COO to CSR, CSR to BSR, Dense to COO), median of
  interleaved repeats, and their ratio. The issue's target: CSR to CSC
  within 2x of scipy.
- *RTL cycles*: every conversion a converter block does
  (:func:`sparseforge.tb.convert.conversions`) run natively on Verilator
  with random back-pressure on real matrices (tensors for CSF), its result
  checked equal to the golden converter's; cycles per nonzero.
- *Rates*: per conversion, the cycles fitted by least squares over the real
  matrices as coefficients of :func:`sparseforge.sw.sage.rate_terms` (those
  :func:`fit_terms` names), with the fit's relative errors, the block's lanes,
  its Fmax and the buffers its passes go through; a full run
  writes them to :data:`sparseforge.sw.sage.RATES_PATH`, the table SAGE
  prices conversions from (``--quick`` has one matrix, too few to fit, and
  leaves the table as it is).
- *The headline*: nonzeros per second of each RTL conversion at its block's
  measured ECP5 Fmax beside our golden converter's and scipy's on this
  machine, and the ratio beside the paper's ~4x.
- *Area*: ECP5 logic of each separate converter (MINT_b) and of the merged
  converter (MINT_m, the block ``mint_merged``), and its ratio to the
  separate converters it replaces beside the paper's 43%.
- *SAGE*: Table III replayed (:mod:`sparseforge.sw.sage_table3`): rows and
  choices that agree.
"""

import json
import platform
import statistics
import time

import click
import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from sparseforge.cli import echo_claims, emit, json_option, seed_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError, ToolError
from sparseforge.core.tools import status
from sparseforge.sw import conversion
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor
from sparseforge.sw.sage import RATES_PATH, MintRates, rate_terms
from sparseforge.sw.sage_table3 import reproduce
from sparseforge.sweep import one_line

LARGEST = 4          # real matrices timed against scipy
QUICK_LARGEST = 1
REPEATS = 15
RTL_MATRICES = ("suitesparse/494_bus", "pypi/pyamg_bar", "graphs/email-Eu-core", "graphs/3elt")
QUICK_RTL_MATRICES = ("suitesparse/494_bus",)
RTL_TENSOR = "movielens-100k_user-item-day"
TENSOR_BOX = (64, 128, 32)  # the corner of the tensor densified for Dense to CSF
DENSE_AREA = 1 << 20  # elements up to which a matrix is densified (or made) by Dense conversions

PAPER = {
    "csc": ("CSR->CSC within 2x of scipy (the issue's target)", "issue: MINT and SAGE"),
    "rtl": ("one nonzero per cycle in steady state (Dense: one element per lane)",
            "MINT Sec. V"),
    "headline": ("~4x over converting in software (a 1 GHz ASIC against MKL on a 3.3 GHz "
                 "10-core i9 and cuSPARSE)", "MINT abstract, Sec. VII-B Fig. 10"),
    "area": ("MINT_m = 43% of MINT_b's area (-57%), all Fig. 8 conversions", "MINT Sec. VII"),
    "merged": ("MINT_m in every mode: one nonzero (a dense side: eight elements) a cycle",
               "MINT Sec. V"),
    "sage": ("Table III: the recommended MCF/ACF of each workload", "SAGE Sec. VI, Table III"),
}

# (label, our conversion, scipy's) of a CSR matrix ``m``.
SOFTWARE = (
    ("CSR->CSC", lambda m: conversion.convert(m, "csc"), lambda m: m.tocsc()),
    ("COO->CSR", lambda m: conversion.convert(m.tocoo(), "csr"), None),
    ("CSR->BSR", lambda m: conversion.convert(m, "bsr", block=_block(m.shape)),
     lambda m: m.tobsr(blocksize=_block(m.shape))),
)


# scipy's own conversion of a source in our format, where scipy has one
SCIPY = {
    ("dense", "coo"): lambda source, block: sp.coo_array(source),
    ("dense", "csr"): lambda source, block: sp.csr_array(source),
    ("csr", "csc"): lambda source, block: source.tocsc(),
    ("csr", "bsr"): lambda source, block: source.tobsr(blocksize=block),
}

_LINEAR = ("dense", "zvc", "rlc")
"""Formats whose converters scan every element (RLC: every run, which grow with them)."""


def _block(shape):
    """The largest of 4x4, 2x2, 1x1 that divides ``shape``."""
    return next((b, b) for b in (4, 2, 1) if shape[0] % b == 0 and shape[1] % b == 0)


def _largest(root, count):
    """The ``count`` real matrices of the shared data with the most nonzeros."""
    import csv

    with open(root / "MANIFEST_matrices.csv") as f:
        rows = sorted((r for r in csv.DictReader(f) if r["nnz_full"] and
                       r["file"].endswith(".mtx")), key=lambda r: -int(r["nnz_full"]))
    return [root / r["file"] for r in rows[:count]]


def _median_pair(ours, theirs, m):
    """Median seconds of ``ours(m)`` and ``theirs(m)``, run alternately."""
    a, b = [], []
    for _ in range(REPEATS):
        start = time.perf_counter()
        ours(m)
        a.append(time.perf_counter() - start)
        start = time.perf_counter()
        theirs(m)
        b.append(time.perf_counter() - start)
    return statistics.median(a), statistics.median(b)


def software(root, count):
    """Our golden converters' time against scipy's on the largest real matrices."""
    rows = []
    for path in tqdm(_largest(root, count), desc="bench mint: golden vs scipy", leave=False):
        m = sp.csr_array(read_matrix(path))
        m.sum_duplicates()
        for label, ours, theirs in SOFTWARE:
            theirs = theirs or (lambda m: m.tocoo().tocsr())
            mine, scipy_s = _median_pair(ours, theirs, m)
            rows.append({"matrix": path.stem, "nnz": int(m.nnz), "conversion": label,
                         "ours_ms": mine * 1e3, "scipy_ms": scipy_s * 1e3,
                         "ratio": mine / scipy_s})
    return rows


def _source(root, name, source_format, small=False):
    """A real matrix (or, for CSF, tensor: the corner :data:`TENSOR_BOX` of it) in the
    converter's input format, or None; with ``small``, its values replaced by integers
    from 1 to 100 in file order (for a converter of 16-bit values)."""
    if name == RTL_TENSOR:
        t = read_tensor(root / "tensors" / f"{name}.tns")
        box = np.minimum(t.shape, TENSOR_BOX)
        inside = np.all(t.coords < box, axis=1)
        values = _small(inside.sum()) if small else t.values[inside]
        return conversion.convert(Tensor(t.coords[inside], values, tuple(box)),
                                  source_format)
    m = read_matrix(root / "matrices" / f"{name}.mtx")
    if source_format == "dense" and np.prod(m.shape) > DENSE_AREA:
        return None
    if small:
        m = sp.coo_array((_small(m.nnz), (m.row, m.col)), shape=m.shape)
    return conversion.convert(m, source_format,
                              block=_block(m.shape) if source_format == "bsr" else None)


def _small(n):
    return (np.arange(int(n)) % 100 + 1).astype(np.int16)


def rtl(root, names, seed):
    """Cycles per nonzero of every converter block on real data, checked against golden."""
    from sparseforge.tb.convert import block_of, conversions

    rows = []
    for (source_format, to), run in sorted(conversions().items()):
        sources = (RTL_TENSOR,) if "csf" in (source_format, to) else names
        for name in tqdm(sources, desc=f"bench mint: {source_format}->{to} on Verilator",
                         leave=False):
            source = _source(root, name, source_format)
            if source is None or (to == "dense" and np.prod(source.shape) > DENSE_AREA):
                continue
            block = _block(source.shape) if to == "bsr" else None
            try:
                result, cycles = run(source, block, None, seed)
            except SparseforgeError as exc:
                rows.append({"conversion": f"{source_format}->{to}", "matrix": name,
                             "skipped": str(exc)})
                continue
            want = conversion.convert(source, to, block=block)
            nnz = conversion.nonzeros(want)
            row = {"conversion": f"{source_format}->{to}", "matrix": name, "nnz": nnz,
                   "block": block_of((source_format, to), run),
                   "shape": [int(n) for n in source.shape],
                   "cycles": cycles, "cycles_per_nnz": cycles / max(nnz, 1),
                   "matches_golden": conversion.same(result, want),
                   **_software_seconds(source, source_format, to, block)}
            if "dense" in (source_format, to):  # its work is every element, not the nonzeros
                row["elements_per_cycle"] = int(np.prod(source.shape)) / cycles
            if source_format == "bsr":          # it reads each block once for each of its rows
                row["slices"] = int(source.indices.size * source.blocksize[0])
            rows.append(row)
    return rows


def _median(run):
    """Median seconds of ``run()`` over :data:`REPEATS` runs."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _software_seconds(source, source_format, to, block):
    """Seconds of our golden converter and (where it has one) scipy's for this conversion."""
    theirs = SCIPY.get((source_format, to))
    return {"golden_s": _median(lambda: conversion.convert(source, to, block=block)),
            "scipy_s": _median(lambda: theirs(source, block)) if theirs else None}


PASSES = {("csr", "csc"): "row_passes", ("csc", "csr"): "col_passes"}
"""The pairs whose block presents a pointer of every row (CSC->CSR: column) to each pass
of its counting sort: CSR->CSC's, the second on the transposed view."""


def fit_terms(source, target):
    """The terms a conversion's cycles are fitted over (:func:`sparseforge.sw.sage.rate_terms`):
    the nonzeros, and the elements where a side scans them all (Dense, ZVC, RLC); from BSR
    the block row-slices it reads, fill included; else the pointers, and CSR->CSC's (and
    CSC->CSR's) pointers over its passes (:data:`PASSES`). Two terms where the pair has no
    passes, which leaves the bench's four matrices two degrees of freedom to measure the
    fit by, one where it has."""
    if {source, target} & set(_LINEAR):
        return ("nnz", "elements")
    if source == "bsr":
        return ("nnz", "slices")
    passes = PASSES.get((source, target))
    return ("nnz", "pointers", *([passes] if passes else []))


def buffers():
    """The buffers CSR->CSC converts in passes through: those of the build ``convert --engine
    rtl`` runs (:data:`sparseforge.tb.convert_csc.RTL`), the one this bench measures."""
    from sparseforge.sw.sage import BUFFERS
    from sparseforge.tb.convert_csc import RTL

    return {b: RTL[b] for b in BUFFERS}


def fit(rows, passes_through=None):
    """Per conversion of matrices, the least-squares fit (non-negative, on relative errors)
    of its cycles over :func:`fit_terms`: ``{"dense->coo": {"block", "coefficients",
    "fit"}}``, and ``"buffers"`` where it has passes, ``passes_through`` (by default
    :func:`buffers`); a conversion with fewer good matrices than terms is not fitted."""
    from scipy.optimize import nnls

    passes_through = passes_through or buffers()
    by_pair = {}
    for r in rows:
        if r.get("matches_golden") and len(r["shape"]) == 2:
            by_pair.setdefault(r["conversion"], []).append(r)
    fitted = {}
    for pair, runs in sorted(by_pair.items()):
        terms = fit_terms(*pair.split("->"))
        if len(runs) < len(terms):
            continue
        through = passes_through if set(terms) & set(PASSES.values()) else None
        x = np.array([[rate_terms(*r["shape"], r["nnz"], r.get("slices"), through)[t]
                       for t in terms] for r in runs], float)
        cycles = np.array([r["cycles"] for r in runs], float)
        coefficients, _ = nnls(x / cycles[:, None], np.ones(len(runs)))
        error = (x @ coefficients - cycles) / cycles
        fitted[pair] = {"block": runs[0]["block"],
                        "coefficients": dict(zip(terms, coefficients.tolist(), strict=True)),
                        **({"buffers": through} if through else {}),
                        "fit": {"matrices": [r["matrix"] for r in runs],
                                "max_relative_error": float(np.abs(error).max()),
                                "rms_relative_error": float(np.sqrt(np.mean(error**2)))}}
    return fitted


def rates_table(rows, area_result, passes_through=None):
    """The rate table SAGE reads: the fits of :func:`fit` (its passes through
    ``passes_through``) with each block's lanes and Fmax from its synthesis in its report
    configuration."""
    separate = area_result["separate"]
    conversions = {}
    for pair, entry in fit(rows, passes_through).items():
        synthesized = separate.get(entry["block"], {})
        conversions[pair] = {**entry, "lanes": synthesized.get("params", {}).get("lanes"),
                             "fmax_mhz": synthesized.get("fmax_mhz")}
    return {"what": "cycles of each converter block: sum of coefficients times "
                    "sparseforge.sw.sage.rate_terms(rows, cols, nnz, slices, buffers), fitted "
                    "on Verilator runs under random back-pressure; lanes and ECP5 Fmax of "
                    "the block's report configuration; buffers of the build its passes go "
                    "through",
            "written_by": "sparseforge bench mint", "conversions": conversions}


def _cpu():
    """This machine's processor and its clock, as the kernel names them."""
    try:
        with open("/proc/cpuinfo") as f:
            info = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        info = {}
    info = {key.strip(): value.strip() for key, value in info.items()}
    name = info.get("model name", platform.machine())
    return f"{name} at {float(info['cpu MHz']) / 1e3:.2f} GHz" if "cpu MHz" in info else name


def headline(rows, fmax):
    """MINT's headline measured: per RTL run, nonzeros per second at its block's Fmax
    (``fmax``: block -> (MHz, where it came from, lanes)) beside the golden converter's and
    scipy's on this machine, and the ratios."""
    out = []
    for r in rows:
        if "cycles" not in r:
            continue
        mhz, origin, lanes = fmax.get(r["block"], (None, None, None))
        row = {"conversion": r["conversion"], "matrix": r["matrix"], "nnz": r["nnz"],
               "fmax_mhz": mhz, "fmax_from": origin, "lanes": lanes,
               "golden_nnz_per_s": r["nnz"] / r["golden_s"],
               "scipy_nnz_per_s": r["nnz"] / r["scipy_s"] if r["scipy_s"] else None}
        if mhz:
            row["rtl_nnz_per_s"] = r["nnz"] / (r["cycles"] / (mhz * 1e6))
            row["vs_golden"] = row["rtl_nnz_per_s"] / row["golden_nnz_per_s"]
            row["vs_scipy"] = (row["rtl_nnz_per_s"] / row["scipy_nnz_per_s"]
                               if row["scipy_nnz_per_s"] else None)
        out.append(row)
    return out


def _fmax(area_result):
    """Each converter block's Fmax: from this run's place and route (or its cached result,
    which ``--quick`` takes where there is one: it places nothing), else from the rate
    table the last full run wrote."""
    fmax = {}
    try:
        for rate in MintRates.load().rates.values():
            if rate.fmax_mhz:
                fmax[rate.block] = (rate.fmax_mhz, f"the rate table, {RATES_PATH.name}",
                                    rate.lanes)
    except SparseforgeError:
        pass
    for block, r in area_result["separate"].items():
        if r.get("fmax_mhz"):
            fmax[block] = (r["fmax_mhz"], "the synthesis cache" if r["from_cache"] else "this run",
                           r["params"].get("lanes"))
    return fmax


def _logic(r):
    return {"lut": r["lut"], "carry": r["carry"], "ff": r["ff"], "bram": r["bram"],
            "fmax_mhz": r.get("fmax_mhz"), "params": r["params"],
            "from_cache": r.get("cached", False), "pnr_error": r.get("pnr_error"),
            "fmax_seeds": r.get("fmax_seeds"), "device": r.get("device", {}).get("name"),
            "critical_path": r.get("critical_path")}


MERGED_SEEDS = (1,)
"""MINT_m's nextpnr seeds: one, as a seed of it takes tens of minutes of processor time
in the WebAssembly nextpnr (the separate converters are placed with the flow's three)."""
MERGED_DEVICE = "85k"
"""Where MINT_m is placed: the 85k, not the smallest part its logic fits (the 45k), where
router2 does not converge (its overused wires still growing past 14,000 at its 70th
iteration); on the 85k it routes."""


def _synthesized(name, params, with_fmax):
    """The block's synthesis on the smallest ECP5 that holds it (MINT_m: on
    :data:`MERGED_DEVICE` with :data:`MERGED_SEEDS`), kept where ``synth`` keeps it
    (:func:`~sparseforge.commands.synth.kept`: a block placed by ``synth BLOCK`` with the
    same ``--device`` and seeds or the report serves here, and the other way round);
    without ``with_fmax`` a kept result with Fmax serves too. A place and route that fails
    leaves the block its logic alone, with ``pnr_error`` saying why (one block's failure
    does not end the bench)."""
    from sparseforge.commands.synth import kept
    from sparseforge.synth.flow import SEEDS

    merged = name == "mint_merged"
    seeds, device = (MERGED_SEEDS, MERGED_DEVICE) if merged else (SEEDS, "auto")
    try:
        return kept(name, params, "ecp5", device, seeds, with_fmax=with_fmax)
    except ToolError as exc:
        if not with_fmax:
            raise
        status(f"bench mint: {name}: place and route failed, its logic alone: {one_line(exc)}")
        return {**kept(name, params, "ecp5", device, seeds, with_fmax=False),
                "pnr_error": one_line(exc)}


def area(quick, only=None):
    """ECP5 logic of each converter block (every block a conversion of ``convert --engine
    rtl`` runs on, composites of them included, and the converters to compute formats in
    ``hw/convert_*.py``: MINT_b; ``only`` those named, at least the ones MINT_m merges) and
    of the merged one (MINT_m), beside the separate converters it replaces; results kept in
    the cache (:func:`_synthesized`)."""
    from sparseforge.core.registry import blocks
    from sparseforge.synth.flow import merged_rows
    from sparseforge.tb.convert import block_of, conversions

    known = blocks()
    converters = {block_of(key, run) for key, run in conversions().items()}
    names = [name for name, b in known.items()
             if (name in converters or b.cls.__module__.startswith("sparseforge.hw.convert_"))
             and (only is None or name in only)] + ["mint_merged"]
    results = [_synthesized(name, known[name].cls.REPORT[0], with_fmax=not quick)
               for name in tqdm(names, desc="bench mint: synthesis", leave=False)]
    merged = merged_rows(results, lambda b, p: _synthesized(b, p, with_fmax=False))[0]
    return {"separate": {r["block"]: _logic(r) for r in results[:-1]},
            "merged": _logic(results[-1]), "merged_vs_separate": merged["ratio"],
            "merges": merged["separate"], "merges_logic": merged["separate_logic"],
            "merged_logic": merged["logic"],
            "merged_vs_paper_style": merged["paper_style_ratio"],
            "paper_style_logic": merged["paper_style_logic"],
            "divider_logic": merged["divider_logic"], "divides": merged["divides"]}


def merged(root, seed):
    """MINT_m's throughput in each mode on 494_bus (a corner of the MovieLens tensor for
    Dense to CSF and CSF to COO) under random back-pressure, natively, each result checked
    against the golden converter (CSR to CISS: the host encoder): the work a cycle (a
    Dense side's elements, else the nonzeros) beside the paper's target (a nonzero, or
    ``lanes`` dense elements, a cycle)."""
    from sparseforge.hw.mint_merged import MintMerged
    from sparseforge.sw.wire import MintMode
    from sparseforge.tb import mint_merged as tb_merged

    params = MintMerged.REPORT[0]
    component = MintMerged(**params)
    rows = []
    for mode in tqdm(MintMode, desc="bench mint: MINT_m's modes on Verilator", leave=False):
        source_format, to = mode.name.lower().split("_to_")
        name = RTL_TENSOR if "csf" in (source_format, to) else RTL_MATRICES[0]
        source = _source(root, name, source_format, small=True)
        row = {"mode": f"{source_format}->{to}", "matrix": name}
        try:
            result, cycles = tb_merged.simulate(component, mode, source, seed)
        except SparseforgeError as exc:
            rows.append({**row, "skipped": str(exc)})
            continue
        if to == "ciss":
            want = tb_merged.golden_ciss(component, source)
            same, nonzeros = result == want, source.nnz
        else:
            want = conversion.convert(source, to, block=component.block if to == "bsr" else None)
            same, nonzeros = conversion.same(result, want), conversion.nonzeros(want)
        dense = "dense" in (source_format, to)
        work = int(np.prod(source.shape)) if dense else nonzeros
        rows.append({**row, "cycles": cycles, "work": work,
                     "unit": "elements" if dense else "nonzeros",
                     "per_cycle": work / cycles,
                     "target_per_cycle": params["lanes"] if dense else 1,
                     "matches_golden": same})
    return rows


def measure(quick, seed):
    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("bench mint needs the shared data (set SPARSEFORGE_DATA)")
    rtl_rows = rtl(root, QUICK_RTL_MATRICES if quick else RTL_MATRICES, seed)
    area_result = area(quick)
    rates = {"path": str(RATES_PATH), "written": False}
    if quick:
        rates["why_not"] = "--quick runs one matrix, too few to fit"
    else:
        table = rates_table(rtl_rows, area_result)
        missing = sorted({r["conversion"] for r in rtl_rows if len(r.get("shape", ())) == 2}
                         - set(table["conversions"]))
        if missing:
            rates["why_not"] = f"not fitted: {', '.join(missing)}"
        else:
            RATES_PATH.write_text(json.dumps(table, indent=1) + "\n")
            rates["written"] = True
        rates["conversions"] = table["conversions"]
    table3 = reproduce()
    return {"software": software(root, QUICK_LARGEST if quick else LARGEST),
            "rtl": rtl_rows, "rates": rates,
            "headline": headline(rtl_rows, _fmax(area_result)), "cpu": _cpu(),
            "area": area_result, "merged": merged(root, seed),
            "sage": {"agree": table3.agree, "rows": len(table3.rows),
                     "fields_agree": table3.fields_agree, "fields": 4 * len(table3.rows),
                     "not_offered": table3.not_offered}}


def _human(result):
    click.echo(f"{'golden vs scipy':24} {'nnz':>9} {'ours ms':>9} {'scipy ms':>9} {'ratio':>6}")
    for r in result["software"]:
        click.echo(f"{r['conversion'] + ' ' + r['matrix']:24.24} {r['nnz']:>9} "
                   f"{r['ours_ms']:>9.2f} {r['scipy_ms']:>9.2f} {r['ratio']:>6.2f}")
    click.echo(f"\n{'RTL on Verilator':32} {'nnz':>9} {'cycles':>10} {'c/nnz':>6} {'el/c':>5}  "
               "golden")
    for r in result["rtl"]:
        label = f"{r['conversion']} {r['matrix']}"
        if "skipped" in r:
            click.echo(f"{label:32.32} skipped: {r['skipped']}")
            continue
        per = f"{r['elements_per_cycle']:>5.2f}" if "elements_per_cycle" in r else f"{'':5}"
        click.echo(f"{label:32.32} {r['nnz']:>9} {r['cycles']:>10} {r['cycles_per_nnz']:>6.2f} "
                   f"{per}  {'equal' if r['matches_golden'] else 'DIFFERS'}")
    _human_rates(result["rates"])
    _human_headline(result["headline"], result["cpu"])
    _human_merged(result["merged"])
    click.echo()
    csc = [r["ratio"] for r in result["software"] if r["conversion"] == "CSR->CSC"]
    steady = [r["cycles_per_nnz"] for r in result["rtl"]
              if "cycles" in r and "elements_per_cycle" not in r]
    lanes = [r["elements_per_cycle"] for r in result["rtl"] if "elements_per_cycle" in r]
    a = result["area"]
    area_text = (f"MINT_m {a['merged_logic']} logic cells = {a['merged_vs_paper_style']:.0%} "
                 f"of the {a['paper_style_logic']} of its {len(a['merges'])} separate "
                 f"converters built the paper's way ({', '.join(a['divides'])} each with an "
                 f"eight-lane divider of {a['divider_logic']}); "
                 f"{a['merged_vs_separate']:.0%} of the {a['merges_logic']} of ours as built "
                 f"(counters where the paper divides); the other "
                 f"{len(a['separate']) - len(a['merges'])} converters are not merged. "
                 f"MINT_m's clock: {_clock(a['merged'])}")
    ran = [r for r in result["merged"] if "cycles" in r]
    merged_text = ("; ".join(f"{r['mode']} {r['per_cycle']:.2f} {r['unit']}/cycle"
                             for r in ran) or "not run")
    s = result["sage"]
    versus = [r.get("vs_scipy") or r.get("vs_golden") for r in result["headline"]]
    versus = [v for v in versus if v]
    ours = {
        "headline": (f"RTL at ECP5 Fmax / software on this machine: {min(versus):.2g}x.."
                     f"{max(versus):.2g}x (scipy where it converts, else golden)"
                     if versus else "no RTL run with a known Fmax"),
        "csc": f"{min(csc):.2f}x..{max(csc):.2f}x of scipy" if csc else "not run",
        "rtl": (f"sparse to sparse {min(steady):.2f}..{max(steady):.2f} cycles per nonzero; "
                f"dense sides {min(lanes):.2f}..{max(lanes):.2f} elements per cycle (8 lanes)"
                if steady and lanes else "no converter block yet"),
        "area": area_text,
        "merged": merged_text,
        "sage": (f"{s['agree']} of {s['rows']} rows, {s['fields_agree']} of {s['fields']} "
                 f"choices; {len(s['not_offered'])} rows' choices need a conversion no block "
                 "performs"),
    }
    notes = ["ratios are medians of interleaved repeats in this run; RTL results are rebuilt "
             "from what the hardware emitted and compared with the golden converter",
             "RTL cycles are under random back-pressure (the engine's own), so below the "
             "converters' stall-free rate",
             "area: LUT4 plus two LUT4 per carry cell, the logic as the device sees it",
             "headline: the RTL's cycles under back-pressure at the Fmax of the block in its "
             "report configuration (the run's block is sized for the matrix), one block on "
             "an ECP5 at ~100-200 MHz against one core of this machine at GHz; the paper's "
             "MINT is a 1 GHz ASIC that overlaps conversion with the memory stream, so an "
             "FPGA may lose where it wins",
             "SAGE prices conversions from the rate table and offers only those a block or "
             "a chain of blocks performs; Table III rows whose paper choice needs another "
             "(e.g. RLC->Dense) cannot agree",
             "MINT_m here merges Fig. 8's four conversions (CSR to CSC, RLC to COO, CSR to "
             "BSR, Dense to CSF), Dense to COO/CSR/ZVC/RLC, ZVC/COO/CSR to Dense, COO to "
             "CSC, BSR and CSF to COO and CSR to CISS around one zero detection, one "
             "position prefix sum, one eight-lane divide/mod and one compactor (CSF to COO "
             "and CSR to CISS share none of them and add their own units): its ratio to the "
             "separate converters built the paper's way (each with its own divider) is the "
             "one to set beside 43%; ours as built count where the paper divides, so they "
             "are smaller",
             "MINT_m's throughput: under the same random back-pressure as the separate "
             "blocks, each mode's result checked against the golden converter",
             *(f"{block}: {_clock(r)}" for block, r in a["separate"].items()
               if r["pnr_error"])]
    echo_claims([(k, ours[k], *PAPER[k]) for k in PAPER], notes, (8, 60),
                ("what", "ours (this run)", "paper"))


def _human_merged(rows):
    click.echo(f"\n{'MINT_m mode':14} {'matrix':22} {'cycles':>8} {'work':>8} {'a cycle':>8} "
               f"{'target':>6} exact")
    for r in rows:
        if "skipped" in r:
            click.echo(f"{r['mode']:14} {r['matrix']:22.22} skipped: {r['skipped']}")
            continue
        click.echo(f"{r['mode']:14} {r['matrix']:22.22} {r['cycles']:>8} {r['work']:>8} "
                   f"{r['per_cycle']:>8.2f} {r['target_per_cycle']:>6} "
                   f"{'yes' if r['matches_golden'] else 'NO'}  ({r['unit']})")


def _clock(r):
    """A block's Fmax in words: the median of its seeds on its device and its critical
    path, or why it has none."""
    from sparseforge.commands.synth import path_text

    if not r["fmax_mhz"]:
        return f"Fmax unknown ({r['pnr_error'] or 'not placed'})"
    seeds = r["fmax_seeds"]
    which = (f"seed {next(iter(seeds))}" if len(seeds) == 1 else
             "median of seeds " + ", ".join(f"{f:.1f}" for f in seeds.values()))
    return (f"{r['fmax_mhz']:.1f} MHz on the {r['device']} ({which}), "
            f"critical path {path_text(r['critical_path'])}")


def _human_rates(rates):
    click.echo(f"\n{'rate table (cycles =)':16} {'fit':54} {'matrices':>8} {'max err':>8} "
               f"{'rms err':>8} {'lanes':>5} {'MHz':>6}")
    for pair, entry in rates.get("conversions", {}).items():
        terms = " + ".join(f"{c:.4g} {t}" for t, c in entry["coefficients"].items())
        fit_ = entry["fit"]
        mhz = f"{entry['fmax_mhz']:.0f}" if entry["fmax_mhz"] else "-"
        click.echo(f"{pair:16} {terms:54.54} {len(fit_['matrices']):>8} "
                   f"{fit_['max_relative_error']:>8.1%} {fit_['rms_relative_error']:>8.1%} "
                   f"{entry['lanes'] or '-':>5} {mhz:>6}")
    if rates["written"]:
        click.echo(f"wrote {rates['path']} (SAGE prices conversions from it)")
    else:
        click.echo(f"rate table not rewritten ({rates['why_not']}); SAGE reads {rates['path']}")


def _human_headline(rows, cpu):
    click.echo(f"\n{'headline: nonzeros/s':32} {'MHz':>5} {'RTL':>9} {'golden':>9} {'scipy':>9} "
               f"{'/golden':>8} {'/scipy':>7}")

    def rate(x):
        return f"{x:>9.3g}" if x else f"{'-':>9}"

    def times(x):
        return f"{x:>7.2f}x" if x else f"{'-':>8}"

    for r in rows:
        mhz = f"{r['fmax_mhz']:>5.0f}" if r["fmax_mhz"] else f"{'-':>5}"
        click.echo(f"{r['conversion'] + ' ' + r['matrix']:32.32} {mhz} "
                   f"{rate(r.get('rtl_nnz_per_s'))} {rate(r['golden_nnz_per_s'])} "
                   f"{rate(r['scipy_nnz_per_s'])} {times(r.get('vs_golden'))}"
                   f"{times(r.get('vs_scipy'))}")
    if not rows:
        click.echo("(no RTL runs)")
    origins = ", ".join(sorted({r["fmax_from"] for r in rows if r["fmax_from"]}))
    lanes = ", ".join(sorted({f"{r['conversion']} {r['lanes']}" for r in rows if r["lanes"]}))
    click.echo(f"RTL: one converter block at its measured ECP5-25k Fmax (from "
               f"{origins or 'nowhere: none known'}), lanes of the report configuration: "
               f"{lanes or 'unknown'}; software: one thread of {cpu}, numpy/scipy")


@click.command("mint")
@click.option("--quick", is_flag=True,
              help="One matrix each, no place and route (for tests): Fmax from the synthesis "
                   "cache or the rate table, which is not rewritten.")
@seed_option(1, "Seed of the random back-pressure.")
@json_option
def command(quick, seed, as_json):
    """MINT's converters (golden vs scipy, RTL cycles, area) and SAGE's Table III."""
    emit(measure(quick, seed), as_json, _human)
