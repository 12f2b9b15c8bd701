"""An out-of-context harness so a block with many ports fits a small package, without
setting the clock itself.

nextpnr needs every top-level port on a pin, and a wide block has hundreds. The harness
feeds all of the block's inputs from one serial shift register (pin ``sin``) and takes
all of its outputs into a register, then folds that register into one bit (pin ``sout``)
through a tree of XORs of ``FOLD`` bits, registered at every level. So every path
through the block starts at a register (the chain) and ends at one (the output
register), and no path of the harness's own is longer than one LUT: the reported
critical path lies inside the block. The harness's flip-flops and LUTs are counted
(:attr:`Harness.ffs`, :attr:`Harness.luts`) so that reports can take them out.
"""

from amaranth.hdl import Cat, Elaboratable, Module, Signal, Value
from amaranth.lib import wiring

FOLD = 4
"""Bits one LUT4 folds, per level of the tree."""


def _levels(width):
    """The widths of the fold's levels after the output register, down to 1."""
    levels = []
    while width > 1:
        width = -(-width // FOLD)
        levels.append(width)
    return levels


class Harness(Elaboratable):
    """``block`` between a serial input chain and a registered, pipelined output fold."""

    def __init__(self, block):
        self.block = block
        self.sin = Signal()
        self.sout = Signal()
        ports = list(block.signature.flatten(block))
        self.in_width = sum(len(Value.cast(v)) for _, m, v in ports if m.flow == wiring.In)
        self.out_width = sum(len(Value.cast(v)) for _, m, v in ports if m.flow == wiring.Out)
        levels = _levels(self.out_width)
        self.ffs = max(self.in_width, 1) + max(self.out_width, 1) + sum(levels) + 1
        """Flip-flops of the harness: the chain, the output register, the fold's, sout."""
        self.luts = sum(levels)
        """LUT4s of the harness: one a fold group (at most; a lone bit needs none)."""

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = self.block
        inputs, outputs = [], []
        for _path, member, value in self.block.signature.flatten(self.block):
            (inputs if member.flow == wiring.In else outputs).append(Value.cast(value))
        chain = Signal(max(self.in_width, 1))
        m.d.sync += chain.eq(Cat(self.sin, chain[:-1]))
        position = 0
        for value in inputs:
            m.d.comb += value.eq(chain[position:position + len(value)])
            position += len(value)
        level = Signal(max(self.out_width, 1), name="outputs")
        m.d.sync += level.eq(Cat(*outputs))
        for n, width in enumerate(_levels(self.out_width)):
            folded = Signal(width, name=f"fold{n}")
            m.d.sync += [folded[g].eq(level[g * FOLD:(g + 1) * FOLD].xor())
                         for g in range(width)]
            level = folded
        m.d.sync += self.sout.eq(level[0])
        return m
