"""An out-of-context harness so a block with many ports fits a small package.

nextpnr needs every top-level port on a pin, and a wide block has hundreds.
The harness feeds all of the block's inputs from one serial shift register
(pin ``sin``) and folds all of its outputs into one registered XOR (pin
``sout``), so every input and output stays live, and every path through the
block runs register to register. The harness adds one flip-flop per input bit
and an XOR tree; reports say so.
"""

from amaranth.hdl import Cat, Elaboratable, Module, Signal, Value
from amaranth.lib import wiring


class Harness(Elaboratable):
    def __init__(self, block):
        self.block = block
        self.sin = Signal()
        self.sout = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = self.block
        inputs, outputs = [], []
        for _path, member, value in self.block.signature.flatten(self.block):
            (inputs if member.flow == wiring.In else outputs).append(Value.cast(value))
        width = sum(len(v) for v in inputs)
        chain = Signal(max(width, 1))
        m.d.sync += chain.eq(Cat(self.sin, chain[:-1]))
        position = 0
        for value in inputs:
            m.d.comb += value.eq(chain[position:position + len(value)])
            position += len(value)
        m.d.sync += self.sout.eq(Cat(*outputs).xor())
        return m
