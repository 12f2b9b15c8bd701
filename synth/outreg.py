"""Folding registers into the ECP5 block RAMs' own output registers.

Yosys maps every ECP5 block RAM with its output register off (``REGMODE = "NOREG"``),
so a design that registers a RAM's data, as a pipelined read should, still pays the
RAM's slow clock-to-out (5.8 ns in nextpnr's timing model, against 1 ns for the
output register) and a route into a slice's flip-flop. Vendor tools absorb such a
register into the RAM; :func:`absorb` does the same on Yosys's JSON netlist before
place and route: where every used data output of a RAM port drives exactly one
flip-flop (and nothing else) on the port's clock, with one clock enable and no reset
but the port's own, the flip-flops go and the port's ``REGMODE`` becomes
``"OUTREG"``, its output clock enable the flip-flops' enable. The logic is the same,
cycle for cycle, outside reset: the netlist is the one timed, not a new design.
"""

import json
import re
from collections import defaultdict

# Per RAM cell type, each read port: (data-out prefix, clock, output clock enable,
# reset, register-mode parameter, clock-polarity parameter).
PORTS = {
    "DP16KD": (("DOA", "CLKA", "OCEA", "RSTA", "REGMODE_A", "CLKAMUX"),
               ("DOB", "CLKB", "OCEB", "RSTB", "REGMODE_B", "CLKBMUX")),
    "PDPW16KD": (("DO", "CLKR", "OCER", "RST", "REGMODE", "CLKRMUX"),),
}


def absorb(netlist, top, inside=""):
    """``(netlist, folded)``: the JSON ``netlist`` with registers folded into the RAMs of
    module ``top``, and how many flip-flops went; only flip-flops whose names start with
    ``inside`` fold (the block's own, not a harness's around it)."""
    design = json.loads(netlist)
    cells = design["modules"][top]["cells"]
    users = defaultdict(list)
    for name, cell in cells.items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "input":
                for bit in bits:
                    users[bit].append((name, port))
    folded = 0
    for cell in list(cells.values()):
        for port in PORTS.get(cell["type"], ()):
            folded += _fold(cells, users, inside, cell, *port)
    return json.dumps(design), folded


def _fold(cells, users, inside, ram, prefix, clock, enable, reset, regmode, clockmux):
    """Fold the flip-flops behind one RAM port, if every used output has one."""
    conn, params = ram["connections"], ram["parameters"]
    if params.get(regmode) != "NOREG" or params.get(clockmux) not in (None, clock):
        return 0
    outputs = [p for p in conn if re.fullmatch(prefix + r"\d+", p)]
    plan, enables = [], set()
    for out in outputs:
        (bit,) = conn[out]
        sinks = users.get(bit, [])
        if not sinks:
            continue
        if len(sinks) != 1 or sinks[0][1] != "DI" or not sinks[0][0].startswith(inside):
            return 0
        ff = cells[sinks[0][0]]
        ffc, ffp = ff["connections"], ff["parameters"]
        if (ff["type"] != "TRELLIS_FF" or ffc["CLK"] != conn[clock]
                or ffp.get("CLKMUX", "CLK") != "CLK"
                or ffc.get("LSR", ["0"]) not in (["0"], conn.get(reset))
                or (ffc.get("LSR", ["0"]) != ["0"] and ffp.get("REGSET") != "RESET")):
            return 0
        enables.add("1" if ffp.get("CEMUX") == "1" else json.dumps(ffc.get("CE", ["1"])))
        plan.append((out, sinks[0][0]))
    if not plan or len(enables) != 1:
        return 0
    (ce,) = enables
    for out, name in plan:
        conn[out] = cells.pop(name)["connections"]["Q"]
    conn[enable] = ["1"] if ce == "1" else json.loads(ce)
    params[regmode] = "OUTREG"
    return len(plan)
