"""A multiplexer as a binary tree of 2:1 multiplexers.

Indexing an Amaranth array with a signal becomes a shift in Yosys, which
``write_verilog`` emits as a wide ``>>`` that ``verilator -Wall`` flags as a
truncation; a tree of ``Mux`` cells is what the hardware is anyway, emits
plain ``?:`` and lints clean.
"""

from amaranth.hdl import Mux, Value


def mux(select, options):
    """``options[select]``: one 2:1 level per bit of ``select``, bit 0 first.

    ``options`` may be fewer than ``2 ** len(select)``; a select past the end
    gives the last one.
    """
    select = Value.cast(select)
    level = list(options)
    for bit in range(len(select)):
        if len(level) % 2:
            level.append(level[-1])
        level = [Mux(select[bit], level[i + 1], level[i]) for i in range(0, len(level), 2)]
    return level[0]
