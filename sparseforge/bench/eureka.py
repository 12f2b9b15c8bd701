"""``sparseforge bench eureka``: cycles and area of Eureka on real pruned layers, beside the paper.

On every DLMC ResNet-50 layer (magnitude pruning, each sparsity level) and
every SqueezeNet Deep Compression layer of the shared data, summed per
group: cycles and speedup over dense of 2:4, compaction alone (P = 1, the
paper's Eureka-unopt, and P = 4), greedy and optimal SUDS, the one-sided
ideal, and on systolic arrays of 4x4 sub-arrays (2 systolic rows: 8x8; 4:
16x16) with and without systolic scheduling, bubbles counted. All from
the host model (:func:`sparseforge.sw.eureka_cycles.suds_report`).

Measured in the same run, from the RTL: on Verilator the ``eureka_array``
runs a real layer slice with optimal SUDS and in dense mode, and the 8x8
``eureka_systolic`` runs it with systolic scheduling, W X checked against
numpy; their cycles (and bubbles) are printed beside the model's. Area: Yosys
cells of the Eureka MAC against the 2:4 (Ampere) MAC at FP16 and int8,
with the multiplier in a DSP block, in LUTs and as generic gates, and both
MACs' Fmax, beside Table 2's +6% and the +11% delay; the 4x4 sub-array.
"""

import itertools
import sys
import tempfile
from pathlib import Path

import click
from tqdm import tqdm

from sparseforge.cli import echo_claims, emit, json_option, seed_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.sw.eureka_cycles import suds_report
from sparseforge.sw.eureka_plan import plan, systolic_plan
from sparseforge.sw.layers import dlmc_layers, int8_layer, real_slice, squeezenet_layers

SPARSITIES = ("0.7", "0.8", "0.9", "0.95", "0.98")
QUICK_SPARSITIES = ("0.8",)
QUICK_LAYERS = 6
RTL_SLICE = {"sparsity": "0.8", "layer": 12, "rows": (0, 32), "cols": (0, 512)}
FREE = {"filter": 1.0, "inputs": 1.0, "outputs": 1.0, "slots": 1.0}

# What the paper claims (Eureka, MICRO 2023). Quoted, not measured.
PAPER = {
    "two_four": ("2.0x over dense", "Fig. 11, Ampere/STC"),
    "eureka_p4": ("2.4x over 2:4 (mean over its DNNs, BERT included)", "Sec. 5.1, Fig. 11"),
    "eureka_p2": ("2.0x over 2:4", "Sec. 5.1, Fig. 11"),
    "order": ("unopt < compaction < greedy < optimal < Eureka; no-SUDS > compaction; "
              "Eureka - no-SUDS > Eureka - optimal", "Sec. 5.2, Fig. 12"),
    "ideal": ("a modest gap between Eureka and the one-sided ideal", "Sec. 5.1"),
    "systolic_16": ("16x16 systolic: modest loss against 8x8 systolic", "Sec. 5.5, Fig. 14"),
    "area": ("+6% per MAC (1321 vs 1246 um^2, FP16, 15 nm)", "Sec. 5.4, Table 2"),
    "delay": ("+11% (1.66 ns -> 1.84 ns)", "Sec. 5.4"),
}


def _groups(root, quick):
    """``(name, [paths])`` of the layer groups to run."""
    sparsities = QUICK_SPARSITIES if quick else SPARSITIES
    groups = [(f"ResNet-50 DLMC magnitude {s}", dlmc_layers(root, sparsity=s))
              for s in sparsities]
    groups.append(("SqueezeNet Deep Compression", squeezenet_layers(root)))
    if quick:
        groups = [(name, paths[:QUICK_LAYERS]) for name, paths in groups]
    return [(name, paths) for name, paths in groups if paths]


def _add(total, part):
    """Add the numbers of ``part`` into ``total`` (nested dicts)."""
    for key, value in part.items():
        if isinstance(value, dict):
            _add(total.setdefault(key, {}), value)
        elif isinstance(value, int):
            total[key] = total.get(key, 0) + value


def _group(name, paths, seed):
    """Summed cycle figures of one layer group."""
    totals = {"layers": len(paths), "nnz": 0, "size": 0}
    for path in tqdm(paths, desc=name[:30], unit="layer", file=sys.stderr, leave=False):
        weights = int8_layer(path, seed)
        totals["nnz"] += weights.nnz
        totals["size"] += weights.shape[0] * weights.shape[1]
        for key, (compaction, rows) in {"p4": (4, 2), "p2": (2, 2), "p1": (1, 2),
                                        "p4_16x16": (4, 4)}.items():
            report = suds_report(weights, compaction, rows, 8)
            _add(totals.setdefault(key, {}), {"cycles": report["cycles"],
                                              "systolic": report["systolic"]})
    return {"name": name, **totals, "density": totals["nnz"] / totals["size"],
            "speedups": _speedups(totals)}


def _speedups(t):
    """Speedups over dense of every figure of a group (systolic ones over systolic dense)."""
    def over(block):
        dense = block["dense"]
        return {k: dense / v["cycles"] if isinstance(v, dict) else dense / v
                for k, v in block.items() if k not in ("dense", "rows") and
                (v["cycles"] if isinstance(v, dict) else v)}

    s = {key: over(t[key]["cycles"]) for key in ("p4", "p2", "p1")}
    for key in ("p4", "p2", "p1", "p4_16x16"):
        systolic = t[key]["systolic"]
        s[f"{key}_systolic"] = {k: systolic["dense"]["cycles"] / v["cycles"]
                                for k, v in systolic.items()
                                if isinstance(v, dict) and v["cycles"]}
    return s


def _rtl(root, seed):
    """On Verilator, a real layer slice: the sub-array with optimal SUDS and in dense mode,
    and the 8x8 systolic array with systolic scheduling, all free-running."""
    from sparseforge.sim.runners import verilator

    layer = dlmc_layers(root, sparsity=RTL_SLICE["sparsity"])[RTL_SLICE["layer"]]
    shape = RTL_SLICE["rows"], RTL_SLICE["cols"]
    out = {"layer": layer.name, "rows": list(shape[0]), "cols": list(shape[1]), "compaction": 4}
    array = real_slice(layer, *shape, 4, seed)
    runs = {"suds": ("eureka_array", {"compaction": 4}, plan(*array, 4)),
            "dense": ("eureka_array", {"compaction": 4}, plan(*array, 4, dense=True)),
            "systolic_8x8": ("eureka_systolic", {"rows": 2, "cols": 2, "compaction": 4},
                             systolic_plan(*real_slice(layer, *shape, 8, seed), 4, 2))}
    with tempfile.TemporaryDirectory(prefix="sf-bench-eureka-") as scratch:
        for mode, (name, params, run) in runs.items():
            rtl = verilator(name, "sparseforge.tb.eureka", params=params, seed=seed,
                            args={"plan": run, "rates": FREE},
                            work_dir=Path(scratch, mode)).result
            figures = {"cycles": rtl.cycles, "busy": rtl.busy, "span": rtl.span,
                       "model_cycles": run.cycles}
            if name == "eureka_array":
                figures["blocks"] = len(run.ids)
            else:
                figures |= {"model_bubbles": run.bubbles, "work": [r.cycles for r in run.rows]}
            out[mode] = figures
    return out


MACS = {"ampere_mac": {}, "eureka_mac": {"compaction": 4}}
VIEWS = {"dsp": ("ecp5", False), "lut": ("ecp5", True), "generic": ("generic", False)}
"""The MAC area views: ECP5 logic cells with the multiplier in a DSP block and with it in
LUTs (``synth_ecp5 -nodsp``), and Yosys's generic gate cells (no device mapping)."""


def _area():
    """Per dtype (``int8``, the paper's ``fp16``): the 2:4 and the Eureka MAC (P = 4) in the
    three :data:`VIEWS` with their ratio, and both MACs' Fmax (the DSP view, median of the
    flow's seeds); the 4x4 sub-array (int8) in generic cells and ECP5 logic cells."""
    from sparseforge.synth.flow import logic, synthesize

    jobs = [(dtype, view, name) for dtype in ("int8", "fp16") for view in VIEWS for name in MACS]
    out = {}
    for dtype, view, name in tqdm(jobs, desc="MAC area", unit="run", file=sys.stderr):
        target, nodsp = VIEWS[view]
        r = synthesize(name, {**MACS[name], "dtype": dtype}, target, with_fmax=view == "dsp",
                       nodsp=nodsp)
        cells = out.setdefault(dtype, {}).setdefault(view, {})
        cells[name] = logic(r) if target == "ecp5" else r["cells_total"]
        if view == "dsp":
            out[dtype].setdefault("fmax_mhz", {})[name] = r["fmax_mhz"]
            out[dtype].setdefault("latency", {})[name] = r["latency"]
    for dtype in out.values():
        for view in VIEWS:
            dtype[view]["ratio"] = dtype[view]["eureka_mac"] / dtype[view]["ampere_mac"]
    array = {}
    for view in ("dsp", "generic"):
        target, _ = VIEWS[view]
        r = synthesize("eureka_array", {"compaction": 4}, target, with_fmax=False)
        array[view] = logic(r) if target == "ecp5" else r["cells_total"]
        array[f"{view}_per_mac"] = array[view] / 16
    out["array"] = array
    return out


def _claims(groups, rtl, area):
    """Our figure for each claim, from this run's measurements."""
    ours = {}
    g = {x["name"]: x["speedups"] for x in groups}

    def each(fn):
        return "; ".join(f"{name.replace('ResNet-50 DLMC magnitude', 'RN50')}: {fn(s)}"
                         for name, s in g.items())

    ours["two_four"] = each(lambda s: f"{s['p4']['two_four']:.2f}x")
    ours["eureka_p4"] = each(lambda s: f"{s['p4_systolic']['eureka'] / 2:.2f}x")
    ours["eureka_p2"] = each(lambda s: f"{s['p2_systolic']['eureka'] / 2:.2f}x")
    order = []
    for s in g.values():
        sy = s["p4_systolic"]
        chain = [s["p1_systolic"]["compaction"], sy["compaction"], sy["greedy"],
                 sy["optimal"], sy["eureka"]]
        order.append(all(a <= b for a, b in itertools.pairwise(chain))
                     and sy["no_suds"] > sy["compaction"]
                     and sy["eureka"] - sy["no_suds"] > sy["eureka"] - sy["optimal"])
    ours["order"] = f"holds in {sum(order)} of {len(order)} groups"
    ours["ideal"] = each(lambda s: f"{s['p4']['optimal'] / s['p4']['ideal']:.0%} of ideal")
    ours["systolic_16"] = each(
        lambda s: f"{s['p4_16x16_systolic']['eureka'] / s['p4_systolic']['eureka']:.0%}")
    if area:
        ours["area"] = "; ".join(
            f"{dtype}: " + ", ".join(f"{area[dtype][view]['ratio'] - 1:+.0%} {view}"
                                     for view in VIEWS) for dtype in ("fp16", "int8"))
        ours["delay"] = "; ".join(
            f"{dtype}: {1e3 / f['ampere_mac']:.2f} ns -> {1e3 / f['eureka_mac']:.2f} ns "
            f"({f['ampere_mac'] / f['eureka_mac'] - 1:+.0%})"
            for dtype, f in ((d, area[d]["fmax_mhz"]) for d in ("fp16", "int8")))
    return ours


def _notes(groups, area):
    notes = ["Speedups over 2:4 divide by 2:4's 2x; the systolic figures (8x8 = 2 systolic "
             "rows of 4x4 sub-arrays) are over the dense systolic array; the isolation "
             "chain (Fig. 12) is checked on the 8x8 systolic array, unopt being P = 1.",
             "2:4 is the cycle count of a 2:4-pruned layer of the same shape (always half "
             "of dense); these unstructured layers would need re-pruning to run on it.",
             "The paper's means include BERT, MobileNet, Inception and others; ours are "
             "ResNet-50 (DLMC patterns, seeded values) and SqueezeNet only."]
    if area:
        notes.append("Area views: dsp = ECP5 logic cells (LUT4 positions, carry cells "
                     "included) with the multiplier in a MULT18X18D (not counted); lut = the "
                     "same with synth_ecp5 -nodsp; generic = Yosys's generic gate cells. "
                     "Delay: 1/Fmax on the ECP5 in the synthesis harness, both MACs at "
                     f"pipeline {area['int8']['latency']['eureka_mac'] - 1} (latency "
                     f"{area['int8']['latency']['eureka_mac']} cycles), median of seeds.")
        notes.append("The int8 Eureka MAC's overhead is far above +6%: an 8x8 multiplier is "
                     "small beside a 16:1 x 8-bit operand mux and a second (pre-)adder, "
                     "whereas the paper's 1230 um^2 FP16 MAC dwarfs its 32 um^2 mux.")
        notes.append("fp16: the three-input addition is a pre-adder of the two products and "
                     "the accumulator's adder, each a full FP32 adder rounding to nearest "
                     "even (bit-exact to numpy's float32 in that order); the paper's FP "
                     "carry-save adder aligns three mantissas and normalizes and rounds once "
                     "(43 um^2), far smaller than a second FP32 adder, with other rounding.")
    squeeze = [x for x in groups if x["name"].startswith("SqueezeNet")]
    if squeeze and squeeze[0]["density"] > 0.5:
        notes.append(f"SqueezeNet Deep Compression is {squeeze[0]['density']:.0%} dense "
                     "(many of its 1x1 layers are nearly dense), so Eureka gains little "
                     "over 2:4 there.")
    return notes


def _human(result):
    click.echo(f"{'group':34} {'dens.':>5} | {'2:4':>5} {'unopt':>5} {'comp':>5} "
               f"{'greedy':>6} {'optim':>5} {'ideal':>5} | {'8x8 comp':>8} {'no-SUDS':>7} "
               f"{'optim':>5} {'Eureka':>6} {'bubbles':>8} | {'16x16':>6}  (speedup over dense)")
    for g in result["groups"]:
        s, p4 = g["speedups"], g["speedups"]["p4"]
        sy, t = s["p4_systolic"], g["p4"]["systolic"]
        click.echo(f"{g['name'][:34]:34} {g['density']:5.2f} | {p4['two_four']:5.2f} "
                   f"{s['p1']['compaction']:5.2f} {p4['compaction']:5.2f} {p4['greedy']:6.2f} "
                   f"{p4['optimal']:5.2f} {p4['ideal']:5.2f} | {sy['compaction']:8.2f} "
                   f"{sy['no_suds']:7.2f} {sy['optimal']:5.2f} {sy['eureka']:6.2f} "
                   f"{t['eureka']['bubbles']:8d} | {s['p4_16x16_systolic']['eureka']:6.2f}")
    rtl = result.get("rtl")
    if rtl:
        suds, dense = rtl["suds"], rtl["dense"]
        click.echo(f"\nRTL (eureka_array P=4 on Verilator, {rtl['layer']} rows "
                   f"{rtl['rows'][0]}-{rtl['rows'][1]} cols {rtl['cols'][0]}-{rtl['cols'][1]}, "
                   f"W X equal to numpy): optimal SUDS {suds['span']} cycles (model "
                   f"{suds['model_cycles']}), dense mode {dense['span']} cycles (model "
                   f"{dense['model_cycles']}): {dense['span'] / suds['span']:.2f}x measured")
        sy = rtl["systolic_8x8"]
        click.echo(f"RTL (eureka_systolic 8x8, same slice x 8 columns, scheduled): "
                   f"{sy['span']} cycles (schedule {sy['model_cycles']}), bubbles "
                   f"{2 * sy['span'] - sum(sy['busy'])} (schedule {sy['model_bubbles']})")
    area = result.get("area")
    if area:
        click.echo("\nMAC area (P = 4; Yosys; Fmax: nextpnr on the ECP5, in the harness)")
        for dtype in ("fp16", "int8"):
            a = area[dtype]
            views = "  ".join(f"{view} {a[view]['ampere_mac']:5} vs {a[view]['eureka_mac']:5} "
                              f"({a[view]['ratio']:.2f}x)" for view in VIEWS)
            fmax = a["fmax_mhz"]
            click.echo(f"  {dtype}  2:4 vs Eureka: {views}  Fmax "
                       f"{fmax['ampere_mac']:.0f} vs {fmax['eureka_mac']:.0f} MHz")
        arr = area["array"]
        click.echo(f"  4x4 sub-array (int8): {arr['dsp']} ECP5 logic cells "
                   f"({arr['dsp_per_mac']:.0f} per MAC), {arr['generic']} generic cells "
                   f"({arr['generic_per_mac']:.0f} per MAC), with its sequencer and slot register")
    click.echo()
    echo_claims([(key, text, *PAPER[key]) for key, text in result["ours"].items()],
                result["notes"], (12, 70), ("claim", "ours (measured in this run)", "paper"))


@click.command("eureka")
@click.option("--quick", is_flag=True, help="One sparsity level, a few layers (for tests).")
@click.option("--no-rtl", is_flag=True, help="Skip the Verilator run.")
@click.option("--no-area", is_flag=True, help="Skip synthesis.")
@seed_option(0, "Seed of the int8 values given to DLMC patterns and of the activations.")
@json_option
def command(quick, no_rtl, no_area, seed, as_json):
    """Eureka on real pruned layers: cycles, RTL cycles and MAC area, beside the paper."""
    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("shared data folder not found: put it at ../shared/data beside "
                               "the repository or set SPARSEFORGE_DATA")
    groups = [_group(name, paths, seed) for name, paths in _groups(root, quick)]
    if not groups:
        raise SparseforgeError(f"no pruned layers found under {root / 'dnn_weights'}")
    rtl = None if no_rtl else _rtl(root, seed)
    area = None if no_area else _area()
    result = {"seed": seed, "groups": groups, "rtl": rtl, "area": area,
              "paper": {k: v[0] for k, v in PAPER.items()},
              "ours": _claims(groups, rtl, area), "notes": _notes(groups, area)}
    emit(result, as_json, _human)
