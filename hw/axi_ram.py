# amaranth: UnusedElaboratable=no
"""An AXI4 slave memory in block RAM, for a design that must run with no memory but the
FPGA's own (a board's self-test).

One burst at a time on each side: AR is taken when no read burst is going, its beats
then come one a cycle from the block RAM's registered read port (R waits with the port
held); AW is taken when no write burst is going and its B has been taken, its W beats
are written one a cycle with their strobes as byte enables, and one B answers the
burst. IDs are echoed. Bursts are INCR, of beats of ``2**size`` bytes at most the bus's
(a narrow beat reads the whole bus word, the master takes its lanes); after the first
beat a burst's addresses are aligned to its beats, as AXI's INCR bursts are. A beat
outside the memory's ``depth`` words answers DECERR (a read's data is then any word, a
write's beat is dropped), so a stray address fails a run instead of landing elsewhere;
a burst not INCR answers SLVERR (its writes dropped), and so does a write burst with a W
beat whose WLAST disagrees with its length.

``peek`` is a second read port on the same memory (a synchronous read, a cycle's
latency), for a checker that reads results without the AXI protocol.

Its longest path is a beat's next address: the current one aligned to the beat's size
and added to it, a carry chain over the bus's whole byte address (so that a burst
running past the memory is seen, not wrapped), into the address registers.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory, ReadPort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from .axi import BURST_INCR, DECERR, OKAY, SLVERR, AxiSignature, attach, pins


@block("axi_ram")
class AxiRam(wiring.Component):
    """An AXI4 slave over ``depth`` words of ``data`` bits of block RAM.

    Parameters
    ----------
    init : the memory's first words (bus words, word 0 at byte 0), at most ``depth``;
        the rest zero.
    addr : bits of the bus's byte address.
    data : bits of the data bus, and of a word.
    read_id, write_id : bits of ARID/RID and AWID/BID.
    depth : words.

    Members
    -------
    s_axi : In(pins(AxiSignature(addr, data, read_id, write_id))), standard-named.
    peek : Out(ReadPort.Signature(addr_width=log2(depth), shape=data)), a read port.

    Throughput one beat a cycle on each side; a read burst's first beat comes two
    cycles after its AR, a write's B the cycle after its last beat.
    """

    PARAMS = (Param("addr", 32, 8, 64, "bits of a byte address"),
              Param("data", 64, 8, 1024, "bits of the data bus", pow2=True),
              Param("read_id", 4, 1, 32, "bits of a read's ID"),
              Param("write_id", 4, 1, 32, "bits of a write's ID"),
              Param("depth", 1024, 2, 1 << 20, "words of memory", pow2=True))
    REPORT = ({},)

    def __init__(self, init=(), **params):
        v = check_params(self.PARAMS, params)
        for name, value in v.items():
            setattr(self, name, value)
        self.shift = exact_log2(self.data // 8)
        if self.shift + ceil_log2(self.depth) > self.addr:
            raise ParameterError(f"depth={self.depth}: {self.depth} words of "
                                 f"{self.data // 8} bytes need more than addr={self.addr} "
                                 "bits of byte address")
        self.init = [int(word) for word in init]
        if len(self.init) > self.depth:
            raise ParameterError(f"init: {len(self.init)} words, more than depth="
                                 f"{self.depth}")
        self.channels = AxiSignature(self.addr, self.data, self.read_id, self.write_id)
        self.memory = Memory(shape=self.data, depth=self.depth, init=self.init)
        super().__init__({
            "s_axi": In(pins(self.channels)),
            "peek": Out(ReadPort.Signature(addr_width=ceil_log2(self.depth),
                                           shape=self.data)),
        })

    @classmethod
    def serving(cls, pins_, depth, init=()):
        """The memory for a master whose AXI pins have the signature ``pins_`` (a
        :func:`~sparseforge.hw.axi.pins` of an :class:`~sparseforge.hw.axi.AxiSignature`):
        its address, data and ID widths."""
        read, write = (pins_.channels.members[side].signature for side in ("read", "write"))
        return cls(init, addr=read.addr_width, data=read.data_width, read_id=read.id_width,
                   write_id=write.id_width, depth=depth)

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = mem = self.memory
        bus = self.channels.flip().create(path=("bus",))
        attach(m, self.s_axi, bus)
        reader, writer = mem.read_port(), mem.write_port(granularity=8)
        peek = mem.read_port()
        m.d.comb += [peek.addr.eq(self.peek.addr), peek.en.eq(self.peek.en),
                     self.peek.data.eq(peek.data)]
        self._read(m, bus.read, reader)
        self._write(m, bus.write, writer)
        return m

    def _word(self, addr):
        """The word a byte address falls in, and whether it is inside the memory."""
        top = self.shift + ceil_log2(self.depth)
        return addr[self.shift:top], addr[top:] == 0

    @staticmethod
    def _next(addr, size):
        """The next beat's address: the beat's aligned to its ``2**size`` bytes, plus them."""
        step = Const(1, len(addr)) << size
        return (addr & ~(step - 1)) + step

    def _burst(self, m, channel, id_width):
        """A burst's state, loaded when ``channel`` (AR, AW) is taken: going, address,
        beats left, size, ID, and whether it is INCR."""
        state = (Signal(), Signal(self.addr), Signal(9), Signal(3), Signal(id_width),
                 Signal())
        busy, addr, left, size, id_, incr = state
        a = channel.payload
        with m.If(channel.valid & channel.ready):
            m.d.sync += [busy.eq(1), addr.eq(a.addr), left.eq(a.len + 1), size.eq(a.size),
                         id_.eq(a.id), incr.eq(a.burst == BURST_INCR)]
        return state

    def _read(self, m, read, port):
        ar, r = read.ar, read.r
        busy, addr, left, size, id_, incr = self._burst(m, ar, self.read_id)
        word, inside = self._word(addr)
        issue = busy & (~r.valid | r.ready)
        m.d.comb += [ar.ready.eq(~busy), port.addr.eq(word), port.en.eq(issue),
                     r.payload.data.eq(port.data)]
        with m.If(issue):
            m.d.sync += [r.valid.eq(1), r.payload.id.eq(id_), r.payload.last.eq(left == 1),
                         r.payload.resp.eq(Mux(incr, Mux(inside, OKAY, DECERR), SLVERR)),
                         addr.eq(self._next(addr, size)), left.eq(left - 1),
                         busy.eq(left != 1)]
        with m.Elif(r.ready):
            m.d.sync += r.valid.eq(0)

    def _write(self, m, write, port):
        aw, w, b = write.aw, write.w, write.b
        busy, addr, left, size, id_, incr = self._burst(m, aw, self.write_id)
        word, inside = self._word(addr)
        error = Signal(2)
        beat = w.valid & w.ready
        m.d.comb += [aw.ready.eq(~busy & ~b.valid), w.ready.eq(busy),
                     port.addr.eq(word), port.data.eq(w.payload.data),
                     port.en.eq(w.payload.strb
                                & (beat & inside & incr).replicate(len(port.en)))]
        with m.If(aw.valid & aw.ready):
            m.d.sync += error.eq(OKAY)
        # The burst's response so far and this beat's: the first error stays.
        now = Mux(error != OKAY, error,
                  Mux(~incr | (w.payload.last != (left == 1)), SLVERR,
                      Mux(inside, OKAY, DECERR)))
        with m.If(beat):
            m.d.sync += [addr.eq(self._next(addr, size)), left.eq(left - 1), error.eq(now)]
            with m.If(left == 1):
                m.d.sync += [busy.eq(0), b.valid.eq(1), b.payload.id.eq(id_),
                             b.payload.resp.eq(now)]
        with m.If(b.valid & b.ready):
            m.d.sync += b.valid.eq(0)
