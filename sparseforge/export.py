"""Verilog export of registered blocks, for simulation and synthesis alike.

Amaranth elaborates the block to RTLIL; Yosys cleans it (flattens submodules
into one module, drops unused debug wires and reset-redundant ``initial``
values, narrows arithmetic to the bits used, turns parallel multiplexers (an
FSM's state switch) into plain ones, narrows again the wires that a
flattened submodule's cells left wider than their use, spells out operand
extension with ``widen.v``) and writes Verilog that ``verilator --lint-only
-Wall`` accepts without a waiver.
"""

import hashlib
import json
from importlib import resources

from amaranth.back import rtlil

from .registry import get
from .tools import run_yowasp

_CLEAN = """\
read_rtlil design.il
proc
flatten
opt_clean -purge
wreduce
opt_expr
opt_clean -purge
pmuxtree
wreduce
opt_clean -purge
wreduce
opt_clean -purge
techmap -map widen.v
opt_clean -purge
attrmap -remove init
write_verilog -noattr design.v
"""


def rtlil_text(name, params=None):
    """RTLIL for block ``name``; returns ``(text, resolved_params, component)``."""
    blk = get(name)
    resolved = blk.resolve(params)
    component = blk.cls(**resolved)
    return rtlil.convert(component, name=name, emit_src=False), resolved, component


def verilog_text(name, params=None):
    """Lint-clean Verilog for block ``name`` (top module ``name``).

    ``params`` are checked against the block's declaration, defaults filled
    in. Returns ``(text, resolved_params)``.
    """
    il, resolved, _ = rtlil_text(name, params)
    header = f"// sparseforge block {name} {json.dumps(resolved, sort_keys=True)}\n"
    return header + clean_verilog(il), resolved


def clean_verilog(il):
    """Verilog from RTLIL ``il``, cleaned as the module docstring says.

    Instances of modules that are not in ``il`` (simulation primitives kept
    in Verilog) pass through as instances.
    """
    widen = resources.files("sparseforge").joinpath("widen.v").read_text()
    out = run_yowasp("yosys", ["-q", "-s", "clean.ys"],
                     inputs={"design.il": il, "widen.v": widen, "clean.ys": _CLEAN},
                     outputs=["design.v"])
    return out["design.v"]


def design_key(name, params):
    """A short stable key for one (block, parameters) design."""
    blob = json.dumps({"block": name, "params": params}, sort_keys=True)
    return f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

