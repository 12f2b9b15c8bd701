"""``bench accel``'s section (e): the accelerator's Eureka build on real pruned layers.

Each layer (:data:`LAYERS`, or :data:`QUICK_LAYERS`' slices) runs natively on Verilator
against the DDR4-timed AXI memory, Y checked equal to W X, beside the host model
(:mod:`sparseforge.sw.accel_eureka_model`). Beside the RTL's cycles: the array's own
(optimal SUDS, every pass) and dense and 2:4 execution's, by Eureka's definitions as
``bench eureka`` computes them (:func:`~sparseforge.sw.eureka_cycles.suds_report`: every
block 4P cycles dense, 2P under 2:4, Eureka §4 and Fig. 12), a pass a panel. The
speed-ups are given twice: by the paper's definition (compute cycles of the array alone)
and ours (the accelerator's RTL cycles, start to done, memory included), beside Eureka's
claims.
"""

from sparseforge.bench.eureka import PAPER as EUREKA_PAPER
from sparseforge.sw import accel_eureka, accel_eureka_model, accel_model
from sparseforge.sw.eureka_cycles import suds_report
from sparseforge.sw.layers import SQUEEZENET, dlmc_layers, real_slice

BUILD = accel_eureka.EurekaConfig(compaction=4, cols=2)
"""``run accel --kernel pruned-gemm --compaction 4 --pes 2``: 8 of X's columns a panel."""
COLUMNS = 16
"""X's columns: two panels, two passes over W's blocks."""
WHOLE = (0, None)
LAYERS = (("dlmc", WHOLE, WHOLE), ("fire2_conv3x3_2.mtx", WHOLE, WHOLE))
"""The first DLMC ResNet-50 layer (magnitude pruning, 0.8) and SqueezeNet's fire2 3x3
expand layer (Deep Compression), each whole: ``(layer, rows, columns)``."""
QUICK_LAYERS = (("dlmc", (0, 32), (0, 128)), ("fire2_conv3x3_2.mtx", (0, 32), (0, 72)))
"""Slices of the same layers for ``--quick``."""

DEFINITIONS = {
    "array (SUDS)": "cycles the array computes: each sent block's critical path under the "
                    "optimal SUDS schedule, every pass (Eureka Sec. 3.1)",
    "dense, 2:4": "every block of the grid 4P cycles (dense tensor core) or 2P (2:4 "
                  "structured sparsity), every pass (Eureka Sec. 4, Fig. 12), as bench "
                  "eureka counts them",
    "speed-up (paper's)": "dense or 2:4 cycles over the array's SUDS cycles: compute alone",
    "speed-up (ours)": "dense or 2:4 cycles over the accelerator's RTL cycles, memory "
                       "included (the dense and 2:4 baselines are compute alone)",
    "paper's claims": "2:4 over dense by definition; Eureka over 2:4 on the paper's "
                      "systolic array with systolic scheduling, its DNNs' mean; ours is "
                      "one sub-array row, one layer",
}


def _path(root, name):
    return dlmc_layers(root)[0] if name == "dlmc" else root / SQUEEZENET / name


def layer_figures(plan_, cycles):
    """A layer's figures from its plan and its RTL ``cycles``: the model's, the array's,
    dense and 2:4 execution's, and the speed-ups by both definitions."""
    model = accel_eureka_model.predict(plan_, accel_model.DRAM)
    report = suds_report(plan_.w, plan_.config.compaction, 2, plan_.config.dw)["cycles"]
    dense, two_four = (plan_.panels * report[key] for key in ("dense", "two_four"))
    array = accel_eureka.array_cycles(plan_)
    bound = max(model.parts, key=model.parts.get)
    return {"cycles": cycles, "model_cycles": model.cycles,
            "error": model.cycles / cycles - 1, "model_parts": model.parts, "bound": bound,
            "model_bytes_read": model.bytes_read,
            "array": array, "dense": dense, "two_four": two_four,
            "paper": {"over_dense": dense / array, "over_two_four": two_four / array},
            "ours": {"over_dense": dense / cycles, "over_two_four": two_four / cycles}}


def measure(root, quick, seed, step):
    """Section (e)'s rows, one a layer; ``step(label)`` after each native run."""
    from click import ClickException

    from sparseforge.run.accel import DATA, RATES, TAGS
    from sparseforge.tb.accel import AccelHarness, params_of, simulate

    harness = AccelHarness(**params_of(BUILD), tags=TAGS, data=DATA)
    rows = []
    for name, span, cols in QUICK_LAYERS if quick else LAYERS:
        path = _path(root, name)
        w, x = real_slice(path, span, cols, COLUMNS, seed)
        span, cols = ((s[0], s[0] + n) for s, n in zip((span, cols), w.shape, strict=True))
        plan_ = accel_eureka.plan(w, x, BUILD)
        label = f"{path.name} rows {span[0]}-{span[1]}"
        run = simulate(harness, plan_, w, x, seed, rates=dict.fromkeys(RATES, 0.7),
                       progress=f"bench accel: {label}")
        if run.fault(plan_.golden):
            raise ClickException(f"hardware fault: {label} differs from W X (replay with "
                                 f"--seed {seed})")
        step(label)
        rows.append({"layer": path.name, "rows": list(span), "cols": list(cols),
                     "shape": list(plan_.shape), "nnz": int(plan_.w.nnz),
                     "blocks_sent": len(plan_.records), "blocks": plan_.grid[0] * plan_.grid[1],
                     "passes": plan_.panels, "bytes_read": run.bytes_read,
                     **layer_figures(plan_, run.cycles)})
    return {"build": {"compaction": BUILD.compaction, "sub_arrays": BUILD.cols,
                      "columns": COLUMNS}, "definitions": DEFINITIONS, "layers": rows,
            "paper": {k: EUREKA_PAPER[k] for k in ("two_four", "eureka_p4")}}


def _line(label, cycles, note=""):
    return f"  {label:28} {cycles:>10,}  {note}"


def human(section, echo):
    """Print section (e) with ``echo``."""
    b = section["build"]
    echo(f"(e) the Eureka build: P = {b['compaction']}, {b['sub_arrays']} 4x4 sub-arrays "
         f"side by side, X of {b['columns']} columns (int8, seeded)")
    for name, text in section["definitions"].items():
        echo(f"  {name}: {text}")
    two_four, p4 = section["paper"]["two_four"], section["paper"]["eureka_p4"]
    for r in section["layers"]:
        m, k, n = r["shape"]
        echo(f"{r['layer']} rows {r['rows'][0]}-{r['rows'][1]} cols {r['cols'][0]}-"
             f"{r['cols'][1]}: W {m} x {k} ({r['nnz']:,} nonzeros), X {k} x {n}, "
             f"{r['blocks_sent']} of {r['blocks']} blocks sent, {r['passes']} passes")
        bound = {"r": "memory-bound: the AXI read data channel",
                 "dram": "memory-bound: the DRAM's data bus",
                 "array": "bound by the array"}[r["bound"]]
        parts = r["model_parts"]
        echo(_line("accelerator (RTL)", r["cycles"],
                   f"model {r['model_cycles']:,} ({r['error']:+.1%}); {bound} (model: R "
                   f"{parts['r']:,.0f}, DRAM bus {parts['dram']:,.0f}, array "
                   f"{parts['array']:,})"))
        echo(_line("array, optimal SUDS", r["array"], "the array's compute alone"))
        echo(_line("dense (Eureka's def.)", r["dense"], "compute alone"))
        echo(_line("2:4 (Eureka's def.)", r["two_four"], "compute alone"))
        pa, ou = r["paper"], r["ours"]
        echo(f"  2:4 over dense {r['dense'] / r['two_four']:.2f}x (paper: {two_four[0]})")
        echo(f"  over dense:  paper's def. {pa['over_dense']:.2f}x, ours {ou['over_dense']:.2f}x"
             f"{' (memory-bound)' if r['bound'] != 'array' else ''}")
        echo(f"  over 2:4:    paper's def. {pa['over_two_four']:.2f}x, ours "
             f"{ou['over_two_four']:.2f}x{' (memory-bound)' if r['bound'] != 'array' else ''}"
             f"; paper: {p4[0]} [{p4[1]}]")
