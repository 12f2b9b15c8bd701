"""``sparseforge bench accel``: what each idea buys in the accelerator, in RTL cycles.

On real matrices (pattern, values 1..4, B of :data:`PASSES` panels of R columns), each
run of the ``accel`` RTL natively on Verilator against the DDR4-timed AXI memory, its Y
checked equal to the golden product, every RTL figure beside the host model's
(:func:`~sparseforge.sw.accel_model.predict`). One build (:data:`BUILD`, a Tailor of
``depth`` CISS entries that the bands overbook) serves every run but one, whose build
differs only in its Tailor (:data:`HOLD_ALL_KB`):

- **(a) the Tailor across passes**, on the Swiftiles bands: the Tailor as built (it
  holds each band's buffet region across the passes and converts its bumped part again
  each later pass); *no buffer*: the same bands and panels as one single-pass run a
  panel, so every pass converts and reads A again (a buffer of zero entries across
  passes, on the same build); *a Tailor that holds it all*: the same plan on a build
  whose Tailor holds the longest band (nothing refetched). Beside Tailors §3.2/Fig. 3
  (buffets refill an overbooked tile every traversal, Tailors only its bumped part) and
  Fig. 9(a) (streaming overhead against an infinitely large buffer).
- **(b) the tiling policies** at the one overbooked Tailor: uniform, prescient and
  Swiftiles bands (Tailors §4), beside Fig. 7's speed-ups of ExTensor-OB over -N and -P.
- **(c) conversion in line** (A read as CSR, MINT's tile converter feeding the Tailor)
  beside a prepared CISS image read directly: the model's figures (:func:`prepared_ciss`),
  beside MINT's claim that conversion costs little of the whole.
- **(e) the Eureka build** on real pruned layers (:mod:`sparseforge.bench.accel_eureka`):
  its RTL cycles beside the array's SUDS cycles, dense and 2:4 execution's by Eureka's
  definitions, and the speed-ups by the paper's definition and ours.
- **(d) SpMTTKRP** on a real tensor (:data:`TENSOR`, stored as COO and converted in line)
  under each tiling policy on the tensor build (:data:`TENSOR_BUILD`), labelled as (b)'s
  rows: Tailors' own kernel beside its SpMM.

Nothing is cached in the repository; the builds are cached where every native run's are.
"""

import dataclasses
import sys

import click
import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from sparseforge.bench import accel_eureka
from sparseforge.cli import echo_claims, emit, json_option, seed_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.run.accel import RATES, TAGS, config_of, nonzeros
from sparseforge.sw import accel_model, accel_plan, wire
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor

MATRICES = ("suitesparse/Erdos971.mtx", "suitesparse/rajat19.mtx")
"""Power-law and circuit rows (row-length variation 1.2 and 2.4): tiles that vary."""
QUICK = ("suitesparse/bcspwr04.mtx",)
"""274 rows of a power network: five input tiles a band, so a refetch is a part of it."""
BUILD = {"pes": (4, 2), "vlen": 2, "tlen": 2, "buffer_kb": 1, "spm_rows": 64, "out_rows": 64}
"""``run accel``'s build as :func:`~sparseforge.run.accel.config_of` takes it (``--pes 4x2
--buffer-kb 1``): R = 8 columns a pass, a Tailor of 64 CISS entries (FIFO region 4)."""
HOLD_ALL_KB = 16
"""The other build's Tailor (1024 entries): longer than every band the benched plans make."""
PASSES = 3
TENSOR = "movielens-latest-small_user-movie-tag.tns"
"""MovieLens' tag tensor (58 users x 1,572 movies x 1,475 tags, 3,683 nonzeros): a user's
slice alone overbooks the tensor build's Tailor, and a native run takes seconds, so the
quick mode runs it too."""
TENSOR_BUILD = {**BUILD, "buffer_kb": 32, "spm_rows": 2048, "order": 3}
"""``run accel --kernel spmttkrp --spm-rows 2048``'s build: the default Tailor (1,024
entries), scratchpads that hold C's 1,475 rows."""
RANK = 12
"""B's and C's columns: two passes of R = 8."""
DATA = 64
"""The AXI data bus's bits, as ``run accel`` builds it."""

DEFINITIONS = {
    "cycles": "the accelerator's cycle counter, start to done (RTL), or the host model's "
              "prediction (model); error = model / RTL - 1",
    "bytes read": "bytes the accelerator read from memory (A as CSR, B, the tile list; "
                  "SpMTTKRP: the tensor as COO, B and C)",
    "DRAM bursts": "bursts the DRAM's data bus carried (its own count: reads and writes not "
                   "answered with the burst before), beside the bursts the model's bus books "
                   "(model_bursts)",
    "refetched": "CISS entries converted again on later passes for an overbooked Tailor "
                 "(Tailors Sec. 3: the bumped part); the converter makes the input tiles "
                 "holding them again whole ('reconverted', the plan's)",
    "no buffer": "the same bands, each of the passes a run of its own: A converted and read "
                 "on every pass (cycles and bytes summed over the runs)",
    "reuse speed-up": "cycles(no buffer) / cycles(Tailor), the speed-up definition of "
                      "Tailors Fig. 7 (a baseline's cycles over the design's)",
    "streaming overhead": "(traffic(Tailor) - traffic(holds it all)) / traffic(holds it "
                          "all), bytes read and written, the same bands (Tailors Fig. 9(a))",
    "OB over N, OB over P": "cycles(uniform) / cycles(swiftiles), cycles(prescient) / "
                            "cycles(swiftiles) (Tailors Fig. 7: ExTensor-N, -P, -OB)",
    "overbooked": "bands longer than the Tailor / bands (Swiftiles aims at k = 10% of tiles)",
    "conversion share": "1 - cycles(prepared CISS) / cycles(in line), both the model's (its "
                        "own error cancels): what in-line conversion costs of the run (MINT "
                        "puts conversion's energy at 0.023% of the system's)",
}

PAPER = {
    "reuse": ("a buffet refills an overbooked tile every traversal, a Tailor only its "
              "bumped part (no figure given)", "Tailors Sec. 3.2, Fig. 3"),
    "streaming_overhead": ("26% mean, at about 10% of tiles overbooked", "Tailors Fig. 9(a)"),
    "ob_over_n": ("OB faster than N on every workload (value lost in the text)",
                  "Tailors Fig. 7"),
    "ob_over_p": ("OB faster than P, most on high-variability tensors; can lose on uniform "
                  "ones (value lost in the text)", "Tailors Fig. 7, Sec. 6.2"),
    "overbooked": ("about k = 10% of tiles", "Swiftiles Sec. 4, Fig. 12"),
    "conversion": ("conversion energy 0.023% of the system's; conversion O(MK + KN) against "
                   "compute O(MNK)", "MINT Sec. VII, Fig. 13"),
}


def speedup(baseline_cycles, cycles):
    """The speed-up of a design over a baseline as Tailors Fig. 7 plots it: the
    baseline's cycles over the design's."""
    return baseline_cycles / cycles


def streaming_overhead(traffic, held_traffic):
    """Tailors Fig. 9(a): the traffic of streaming bumped data, relative to the traffic of
    the same tiling on a buffer that never overbooks."""
    return (traffic - held_traffic) / held_traffic


def model_error(model, rtl):
    """The model's relative error against the RTL's figure."""
    return model / rtl - 1


def conversion_share(inline_cycles, prepared_cycles):
    """What converting in line costs of a run: the cycles it adds over reading a prepared
    image, as a fraction of the in-line run's."""
    return 1 - prepared_cycles / inline_cycles


def geomean(values):
    return float(np.exp(np.mean(np.log(values))))


A_READS = ("a_rowptr", "a_prepass", "a_colid", "a_values")
"""The model's read regions of A as stored (CSR): what a prepared CISS image replaces."""


def prepared_ciss(plan, prediction, entry_bytes, beats, memory=accel_model.DRAM):
    """``(cycles, bytes_read)`` of ``plan`` were A a prepared, tiled CISS image read
    directly, from the model's ``prediction`` of the in-line run.

    Bytes, counted as the model counts the in-line run's: A's CSR reads replaced by the
    CISS entries the Tailor takes, each band's stream on the first pass and its bumped
    part on every later one, ``entry_bytes`` each. Cycles: the in-line prediction with the
    converter's busy cycles replaced by reading those entries (``beats`` bus beats each,
    at the memory's ``rate``), and never fewer than the busiest other unit's (the B
    loads, the compute, the write-back). The model prices conversion only in line, so
    this is a first-order estimate: it takes the converter's cycles as on the run's
    critical path, so it is the most a prepared image could save.
    """
    entries = sum(band.entries for band in plan.bands) + plan.refetched_entries()
    csr = sum(prediction.reads[region] for region in A_READS)
    bytes_read = prediction.bytes_read - csr + entries * entry_bytes
    reading = entries * beats / memory.rate
    parts = prediction.parts
    cycles = max(prediction.cycles - parts["converter"] + reading,
                 parts["mlu"], parts["compute"], parts["msu"])
    return round(cycles), bytes_read


def _operands(path, seed):
    """A's pattern (stored zeros dropped) with values 1..4 as CSR, and B: K x PASSES * R
    integers in -2..2, from ``seed``."""
    a = sp.csr_array(read_matrix(path))
    a.eliminate_zeros()
    rng = np.random.default_rng(seed)
    a.data = rng.integers(1, 5, a.nnz)
    width = config_of(**BUILD).width
    return a, rng.integers(-2, 3, (a.shape[1], PASSES * width))


def _rtl(plan, a, b, seed, label):
    """One native run of ``plan``: its figures, the model's beside them; a result other
    than the golden product is a hardware fault."""
    from sparseforge.tb.accel import AccelHarness, params_of, simulate

    harness = AccelHarness(**params_of(plan.config), tile=1 << 16, tags=TAGS, data=DATA)
    run = simulate(harness, plan, a, b, seed, rates=dict.fromkeys(RATES, 0.7),
                   progress=f"bench accel: {label}")
    if run.fault(plan.golden):
        raise click.ClickException(f"hardware fault: {label} differs from the golden product "
                                   f"(replay with --seed {seed})")
    model = accel_model.predict(plan, a, accel_model.DRAM, tags=TAGS)
    return {"source": "RTL", "cycles": run.cycles, "bytes_read": run.bytes_read,
            "bytes_written": run.bytes_written, "refetched": run.refetched,
            "dram_bursts": run.dram["dram_reads"] + run.dram["dram_writes"],
            "model_cycles": model.cycles, "model_bytes_read": model.bytes_read,
            "model_bursts": round(model.parts["bus"] / accel_model.DRAM.burst),
            "error": model_error(model.cycles, run.cycles), "model_parts": model.parts,
            "prediction": model}


def _summed(rows):
    """Single-pass runs as one: their cycles, traffic and model summed."""
    out = {key: sum(r[key] for r in rows) for key in ("cycles", "bytes_read",
                                                      "bytes_written", "refetched",
                                                      "dram_bursts", "model_cycles",
                                                      "model_bytes_read", "model_bursts")}
    parts = {key: sum(r["model_parts"][key] for r in rows) for key in rows[0]["model_parts"]}
    return {"source": "RTL", **out, "error": model_error(out["model_cycles"], out["cycles"]),
            "model_parts": parts, "runs": len(rows)}


def _bands(plan):
    """The plan's bands, as the Tailor of its build sees them."""
    c = plan.config
    whole = sum(1 for band in plan.bands
                if band.bumped(c) and band.refetched_inputs(c) == band.inputs)
    return {"bands": len(plan.bands), "band_rows": plan.band_rows,
            "overbooked": plan.overbooked, "reconverted": plan.reconverted_entries(),
            "reconverted_whole": whole, "depth": c.depth}


def measure_matrix(path, seed, step):
    """Every figure of one matrix; ``step(label)`` after each native run."""
    def rtl(plan, b, label):
        row = _rtl(plan, a, b, seed, f"{path.name} {label}")
        step(f"{path.name} {label}")
        return row

    config = config_of(**BUILD)
    a, b = _operands(path, seed)
    plans = {p: accel_plan.plan(a, b, p, config, seed=seed) for p in accel_plan.POLICIES}
    policies = {}
    for policy, plan in plans.items():
        policies[policy] = {**rtl(plan, b, policy), **_bands(plan)}
    swift = plans["swiftiles"]
    width = config.width
    single = []
    for p in range(PASSES):
        panel = b[:, p * width:(p + 1) * width]
        plan = accel_plan.plan(a, panel, "swiftiles", config, seed=seed)
        assert plan.bands == swift.bands, "a single pass planned other bands"
        single.append(rtl(plan, panel, f"no buffer, pass {p + 1}"))
    held_config = config_of(**{**BUILD, "buffer_kb": HOLD_ALL_KB})
    held_plan = dataclasses.replace(swift, config=held_config)
    held = {**rtl(held_plan, b, "holds it all"), **_bands(held_plan)}
    tailor = policies["swiftiles"]
    entry = wire.CissWire(config.pes, config.dw, config.iw, order=2).entry_width
    cycles, bytes_read = prepared_ciss(swift, tailor["prediction"], config.entry_bytes,
                                       -(-entry // DATA))
    prepared = {"source": "model", "cycles": cycles, "bytes_read": bytes_read,
                "bytes_written": tailor["bytes_written"], "refetched": tailor["refetched"]}
    for row in (*policies.values(), held):
        del row["prediction"]
    none = _summed([{k: v for k, v in r.items() if k != "prediction"} for r in single])

    def traffic(r):
        return r["bytes_read"] + r["bytes_written"]

    return {
        "matrix": path.name, "shape": list(a.shape), "nnz": int(a.nnz),
        "columns": int(b.shape[1]), "passes": PASSES,
        "tailor": {"tailor": tailor, "no_buffer": none, "holds_all": held,
                   "reuse_speedup": speedup(none["cycles"], tailor["cycles"]),
                   "streaming_overhead": streaming_overhead(traffic(tailor), traffic(held)),
                   "holds_all_speedup": speedup(tailor["cycles"], held["cycles"])},
        "tiling": {"policies": policies,
                   "ob_over_n": speedup(policies["uniform"]["cycles"], tailor["cycles"]),
                   "ob_over_p": speedup(policies["prescient"]["cycles"], tailor["cycles"]),
                   "overbooked": tailor["overbooked"] / tailor["bands"]},
        "conversion": {"in_line": tailor, "prepared_ciss": prepared,
                       "share": conversion_share(tailor["model_cycles"], prepared["cycles"]),
                       "bytes_ratio": tailor["bytes_read"] / prepared["bytes_read"]},
    }


def _tensor_operands(path, seed):
    """The tensor's pattern with values 1..4, and B and C of :data:`RANK` columns of
    integers in -3..3, from ``seed``."""
    t = nonzeros(read_tensor(path))[0]
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 5, len(t.values))
    factors = tuple(rng.integers(-3, 4, (n, RANK)) for n in t.shape[1:])
    return Tensor(t.coords, values, t.shape), factors


def measure_tensor(path, seed, step):
    """SpMTTKRP of the tensor at ``path`` under each policy; ``step(label)`` after each
    native run."""
    config = config_of(**TENSOR_BUILD)
    t, factors = _tensor_operands(path, seed)
    policies = {}
    for policy in accel_plan.POLICIES:
        plan = accel_plan.plan(t, factors, policy, config, seed=seed, kernel="spmttkrp")
        row = _rtl(plan, t, factors, seed, f"{path.name} {policy}")
        step(f"{path.name} {policy}")
        del row["prediction"]
        policies[policy] = {**row, **_bands(plan)}
    return {"tensor": path.name, "shape": list(t.shape), "nnz": len(t.values),
            "rank": RANK, "passes": plan.passes, "depth": config.depth,
            "policies": policies}


def measure(names, seed, quick=False):
    """Every matrix of ``names`` (under the shared data's ``matrices/``), the tensor and
    the Eureka build's layers (their slices where ``quick``)."""
    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("shared data folder not found: put it at ../shared/data beside "
                               "the repository or set SPARSEFORGE_DATA")
    paths = [root / "matrices" / name for name in names]
    layers = accel_eureka.QUICK_LAYERS if quick else accel_eureka.LAYERS
    runs = (len(paths) * (len(accel_plan.POLICIES) + PASSES + 1) + len(accel_plan.POLICIES)
            + len(layers))
    with tqdm(total=runs, desc="bench accel", unit="run", file=sys.stderr) as bar:
        def step(label):
            bar.set_postfix_str(label)
            bar.update()
        rows = [measure_matrix(path, seed, step) for path in paths]
        tensor = measure_tensor(root / "tensors" / TENSOR, seed, step)
        eureka = accel_eureka.measure(root, quick, seed, step)
    config = config_of(**BUILD)
    return {"build": {**BUILD, "pes": "x".join(map(str, BUILD["pes"])), "depth": config.depth,
                      "fifo": config.fifo, "width": config.width, "data": DATA, "tags": TAGS},
            "hold_all_depth": config_of(**{**BUILD, "buffer_kb": HOLD_ALL_KB}).depth,
            "passes": PASSES, "seed": seed, "definitions": DEFINITIONS, "matrices": rows,
            "tensor": tensor, "eureka": eureka, "summary": _summary(rows, tensor),
            "paper": {k: v[0] for k, v in PAPER.items()}, "notes": _notes(rows, tensor)}


def _summary(rows, tensor):
    return {"reuse_speedup": geomean([r["tailor"]["reuse_speedup"] for r in rows]),
            "streaming_overhead": float(np.mean([r["tailor"]["streaming_overhead"]
                                                 for r in rows])),
            "ob_over_n": geomean([r["tiling"]["ob_over_n"] for r in rows]),
            "ob_over_p": geomean([r["tiling"]["ob_over_p"] for r in rows]),
            "overbooked": float(np.mean([r["tiling"]["overbooked"] for r in rows])),
            "conversion_share": float(np.mean([r["conversion"]["share"] for r in rows])),
            "max_model_error": max(abs(row["error"]) for _, _, row in _rtl_rows(rows, tensor))}


def _named_rtl_rows(r):
    """Every RTL row of a matrix once, by name (the Tailor's is swiftiles')."""
    return [("no buffer", r["tailor"]["no_buffer"]), ("holds it all", r["tailor"]["holds_all"]),
            *r["tiling"]["policies"].items()]


def _rtl_rows(rows, tensor):
    """``(input, name, row)`` of every RTL row: each matrix's, then the tensor's."""
    return [*((r["matrix"], name, row) for r in rows for name, row in _named_rtl_rows(r)),
            *((tensor["tensor"], f"spmttkrp {name}", row)
              for name, row in tensor["policies"].items())]


def _notes(rows, tensor):
    notes = ["The tiling policies size a band in the CISS entries the Tailor holds (each "
             "row's header in each window and the idle lanes besides the nonzeros), as the "
             "encoder lays them out; prescient sets a row longer than the Tailor apart, a "
             "band of its own."]
    short = [r["matrix"] for r in rows if r["tiling"]["policies"]["prescient"]["band_rows"] == 1]
    if short:
        notes.append(f"Prescient bands of one row on {', '.join(short)}: no taller band "
                     "fits the Tailor everywhere, so B's rows load again for every row "
                     "(Tailors Sec. 2.2.1).")
    for r in rows:
        if r["tiling"]["ob_over_n"] < 1:
            p = r["tiling"]["policies"]
            u, o = p["uniform"]["model_parts"], p["swiftiles"]["model_parts"]
            notes.append(f"Swiftiles slower than uniform on {r['matrix']}: the model has the "
                         f"converter busy {o['converter']:,} cycles on its bands against "
                         f"{u['converter']:,} on uniform's ({p['swiftiles']['reconverted']:,} "
                         f"entries converted again, {p['uniform']['reconverted']:,}), B's "
                         f"loads {o['mlu']:,} against {u['mlu']:,}.")
    whole = [r["matrix"] for r in rows if r["tailor"]["tailor"]["reconverted_whole"]]
    if whole:
        notes.append(f"Overbooked bands converted again whole on every later pass on "
                     f"{', '.join(whole)}: the converter refetches whole input tiles (a "
                     "window of spm_rows columns, its pre-pass over the band's rows "
                     "included), and where the first holds bumped entries that is the band, "
                     "so the Tailor saves no conversion there.")
    missed = sorted({f"{what} {name} ({row['error']:+.0%})"
                     for what, name, row in _rtl_rows(rows, tensor) if abs(row["error"]) > 0.05})
    if missed:
        notes.append("The model misses the RTL by more than its 5% target on: "
                     + ", ".join(missed) + ".")
    notes.append("The streaming overhead's baseline is the same plan on the build whose "
                 f"Tailor holds {HOLD_ALL_KB} KiB, the paper's infinitely large buffer.")
    notes.append("Prepared CISS is the model's first-order figure (prepared_ciss): the host "
                 "model prices conversion only in line.")
    return notes


def _row(label, r):
    model = (f"{r['model_cycles']:>10,} {r['error']:+6.1%}" if "model_cycles" in r
             else f"{'':>10} {'':>6}")
    bands = (f"{r['bands']:>4} of {r['band_rows']:>3} rows, {r['overbooked']:>3} overbook, "
             f"{r['reconverted']:>5,} reconverted" if "bands" in r else "")
    bursts = (f"{r['dram_bursts']:>8,} {r['model_bursts']:>8,}" if "dram_bursts" in r
              else f"{'':>8} {'':>8}")
    return (f"  {label:26} {r['source']:5} {r['cycles']:>10,} {model} "
            f"{r['bytes_read']:>10,} {bursts} {r['refetched']:>7,}  {bands}")


def _human(result):
    build = result["build"]
    click.echo(f"accel {build['pes']} PEs x {build['vlen']} lanes x tlen {build['tlen']} "
               f"(R = {build['width']}), Tailor of {build['depth']} CISS entries (FIFO "
               f"{build['fifo']}), {result['passes']} passes; 'holds it all': a Tailor of "
               f"{result['hold_all_depth']}; native Verilator, DDR4-2400 AXI memory, Y "
               "exact in every RTL run")
    click.echo("definitions:")
    for name, text in result["definitions"].items():
        click.echo(f"  {name}: {text}")
    head = (f"  {'':26} {'':5} {'cycles':>10} {'model':>10} {'error':>6} {'bytes read':>10} "
            f"{'bursts':>8} {'model':>8} {'refetch':>7}  bands")
    for r in result["matrices"]:
        t, p, c = r["tailor"], r["tiling"], r["conversion"]
        click.echo()
        click.echo(f"{r['matrix']}: {r['shape'][0]} x {r['shape'][1]}, {r['nnz']:,} "
                   f"nonzeros, B of {r['columns']} columns")
        click.echo(head)
        click.echo("(a) the Tailor across passes (swiftiles bands)")
        click.echo(_row("Tailor", t["tailor"]))
        click.echo(_row(f"no buffer ({t['no_buffer']['runs']} runs)", t["no_buffer"]))
        click.echo(_row("holds it all", t["holds_all"]))
        click.echo(f"  reuse speed-up {t['reuse_speedup']:.2f}x, streaming overhead "
                   f"{t['streaming_overhead']:.1%}, holding it all "
                   f"{t['holds_all_speedup']:.2f}x faster than the Tailor")
        click.echo("(b) tiling policies")
        for name, row in p["policies"].items():
            click.echo(_row(name, row))
        click.echo(f"  OB over N {p['ob_over_n']:.2f}x, OB over P {p['ob_over_p']:.2f}x, "
                   f"{p['overbooked']:.0%} of swiftiles bands overbooked")
        click.echo("(c) where A is converted")
        click.echo(_row("in line (CSR, converter)", c["in_line"]))
        click.echo(_row("prepared CISS", c["prepared_ciss"]))
        busy = c["in_line"]["model_parts"]["converter"]
        click.echo(f"  conversion share {c['share']:.1%}, bytes read in line / prepared "
                   f"{c['bytes_ratio']:.2f}; the model has the converter busy {busy:,} of "
                   f"the in-line run's {c['in_line']['model_cycles']:,} cycles")
    t = result["tensor"]
    click.echo()
    click.echo(f"{t['tensor']}: {' x '.join(map(str, t['shape']))}, {t['nnz']:,} nonzeros, "
               f"B and C of {t['rank']} columns ({t['passes']} passes), a Tailor of "
               f"{t['depth']} CISS entries")
    click.echo(head)
    click.echo("(d) SpMTTKRP, tiling policies")
    for name, row in t["policies"].items():
        click.echo(_row(name, row))
    click.echo()
    accel_eureka.human(result["eureka"], click.echo)
    s = result["summary"]
    ours = {"reuse": f"{s['reuse_speedup']:.2f}x reuse speed-up (geomean)",
            "streaming_overhead": f"{s['streaming_overhead']:.1%} (mean)",
            "ob_over_n": f"{s['ob_over_n']:.2f}x (geomean)",
            "ob_over_p": f"{s['ob_over_p']:.2f}x (geomean)",
            "overbooked": f"{s['overbooked']:.0%} of bands (mean)",
            "conversion": f"{s['conversion_share']:.1%} of cycles (mean; model)"}
    labels = {"reuse": "Tailor vs no buffer", "streaming_overhead": "streaming overhead",
              "ob_over_n": "speed-up OB over N", "ob_over_p": "speed-up OB over P",
              "overbooked": "swiftiles bands overbooked",
              "conversion": "conversion in line"}
    click.echo()
    click.echo(f"the model's largest cycle error against the RTL: {s['max_model_error']:.1%}")
    echo_claims([(labels[k], ours[k], *PAPER[k]) for k in labels], result["notes"],
                (26, 34), ("metric", "ours (measured in this run)", "paper (claim)"))


@click.command("accel")
@click.option("--quick", is_flag=True, help="One small matrix, slices of the pruned layers "
              "(for tests).")
@click.option("--spgemm", is_flag=True, help="Only SpGEMM on the Gustavson build: HYTE's "
              "tiling schemes (sparseforge.bench.accel_spgemm).")
@seed_option(1, "Seed of the values, B, the memory's readiness and the swiftiles sampling.")
@json_option
def command(quick, spgemm, seed, as_json):
    """What the Tailor, the tiling policies and in-line conversion buy in the accelerator's
    RTL on real matrices, beside the papers; or, with --spgemm, HYTE's tiling."""
    if spgemm:
        from sparseforge.bench import accel_spgemm

        names = accel_spgemm.QUICK if quick else accel_spgemm.MATRICES
        emit(accel_spgemm.measure(names, seed, not quick), as_json,
             lambda r: accel_spgemm.human(r, click.echo))
        return
    emit(measure(QUICK if quick else MATRICES, seed, quick), as_json, _human)

