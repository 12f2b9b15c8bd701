"""DRAM timing for the native memories: a named DDR4 part, its address mapping, and the
reference model of when each read completes.

The part (:data:`DDR4_2400`): Micron MT40A1G8 (8 Gb, x8), speed grade -083E, i.e. the
JEDEC DDR4-2400R bin (CL-nRCD-nRP 16-16-16), from the Micron 8Gb DDR4 SDRAM data sheet
(speed-bin table for DDR4-2400 and the AC timing table, 1 KB page) and JESD79-4:
tCK 0.833 ns (2400 MT/s); CL 16 nCK; tRCD = tRP = 13.32 ns; tRAS 32 ns; tRC 45.32 ns;
tCCD_S 4 nCK; tCCD_L max(5 nCK, 5 ns); tRRD_S max(4 nCK, 3.3 ns); tRRD_L max(4 nCK,
4.9 ns); tFAW max(20 nCK, 21 ns); tRTP max(4 nCK, 7.5 ns); tREFI 7.8 us; tRFC1 350 ns
(8 Gb); burst length 8; 4 bank groups of 4 banks; 64K rows of 1K columns. Eight of them
make a 64-bit channel: an 8 KB row, a 64-byte burst, 2400 MT/s x 8 B = 19.2 GB/s peak.

Address mapping (row : bank : column : bank group), bursts (64 B) from the low bits up:
bank group (2 bits), column (7), bank (2), row (16): :meth:`Geometry.locate`.
Consecutive bursts rotate over the bank groups, so a stream's column reads need only
tCCD_S apart (one burst on the bus) and reach the peak, where one bank group would hold
them to tCCD_L; the column comes next, so a stream stays in open rows (row hits) for
128 bursts of each group (32 KB); the bank above it spreads far-apart streams over banks.

Accelerator words (:class:`Geometry`): a word of ``bits`` is stored at a stride of its
bytes rounded up to a power of two below a burst (several words share a burst and never
straddle two), else to whole bursts.

Timing in accelerator cycles (:func:`timing`): every minimum is rounded up to whole
cycles of the accelerator's ``clock`` (tREFI, a maximum, down). A burst holds the bus
for ceil(4 tCK) cycles, so the model's peak is 64 B per that: 16 GB/s at 1 GHz (Fig.
3e's 16 GB/s channel), 18.3 GB/s at 2 GHz (the paper's clock).

The controller (:class:`Dram`, and the RTL memory of :mod:`sparseforge.tb.dram`, which
follows it cycle for cycle) takes a read a cycle and schedules its burst on arrival:

- the bank: its next command no earlier than its last read (reads of a bank in order);
  a row hit reads at once; a closed bank activates, an open one with another row
  precharges (once tRAS after its activation and tRTP after its last read) then
  activates tRP later; activations go in arrival order, tRRD_S apart (tRRD_L in one bank
  group), at most four in tFAW; the read follows tRCD after;
- refresh: every tREFI for tRFC (the first at tREFI), all banks closed; a command that
  would fall in a refresh window waits for its end, and a row opened before a refresh
  is closed after it. Commands already issued complete (a simplification);
- the data bus: the burst takes the first free ``burst`` cycles at or after CL past its
  read and tCCD_L past the group's last burst, so a later read to an open row overtakes
  an earlier one that must activate: answers come out of order across banks;
- one open burst: a read whose burst is the one the read before it fetched is answered
  with it, without a DRAM access (what a word narrower than a burst needs to stream).

A read completes when its bursts have crossed the bus (:meth:`Dram.completions`); a word
of several bursts books them a cycle each, the last on the cycle the read is taken.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ParameterError


@dataclass(frozen=True)
class DramPart:
    """A DRAM part's data-sheet timing (ns, or clocks ``nCK`` where the sheet says so, each
    ``max(nCK, ns)``) and organization, with the channel it makes."""

    name: str
    rate: int                   # MT/s, two a clock
    cl: int                     # nCK
    trcd: float
    trp: float
    tras: float
    tccd_s: int                 # nCK
    tccd_l: tuple               # (nCK, ns): the larger of the two
    trrd_s: tuple
    trrd_l: tuple
    tfaw: tuple
    trtp: tuple
    trefi: float
    trfc: float
    burst_length: int = 8
    bank_groups: int = 4
    banks: int = 4              # per bank group
    rows: int = 1 << 16
    columns: int = 1 << 10
    bus_bits: int = 64

    @property
    def tck(self):
        """The clock period, ns."""
        return 2000 / self.rate

    @property
    def trc(self):
        """ACT to ACT of one bank, ns."""
        return self.tras + self.trp

    @property
    def burst_bytes(self):
        return self.burst_length * self.bus_bits // 8

    @property
    def peak(self):
        """The channel's peak, bytes/s."""
        return self.rate * 1e6 * self.bus_bits / 8


DDR4_2400 = DramPart("DDR4-2400R (Micron MT40A1G8-083E)", rate=2400, cl=16, trcd=13.32,
                     trp=13.32, tras=32.0, tccd_s=4, tccd_l=(5, 5.0), trrd_s=(4, 3.3),
                     trrd_l=(4, 4.9), tfaw=(20, 21.0), trtp=(4, 7.5), trefi=7800.0,
                     trfc=350.0)
"""The part every DRAM memory models unless told otherwise."""

CLOCK = 1e9
"""Default accelerator clock, Hz: the one at which the model's peak is Fig. 3e's 16 GB/s."""

PAPER_CLOCK = 2e9
"""Tensaurus's clock (Section 6)."""


@dataclass(frozen=True)
class Timing:
    """A part's timing in cycles of an accelerator clocked at ``clock`` Hz."""

    part: DramPart
    clock: float
    cl: int
    trcd: int
    trp: int
    tras: int
    trtp: int
    tccd_l: int
    trrd_s: int
    trrd_l: int
    tfaw: int
    trefi: int
    trfc: int
    burst: int                  # cycles a burst holds the data bus

    @property
    def peak(self):
        """Bytes/s the model delivers at most: a burst each ``burst`` cycles."""
        return self.part.burst_bytes * self.clock / self.burst

    @property
    def worst(self):
        """Cycles a read can take alone at most: it meets a refresh, its bank's row opened
        just before it (tRAS, then tRP), and it waits tFAW to activate."""
        return (self.trfc + self.tras + self.trp + self.tfaw + self.trcd + self.cl
                + self.burst)


def timing(part=DDR4_2400, clock=CLOCK):
    """``part``'s :class:`Timing` at an accelerator ``clock`` (Hz, positive)."""
    if not isinstance(clock, int | float) or not 1e6 <= clock <= 1e11:
        raise ParameterError(f"clock={clock!r}: expected an accelerator clock in Hz, "
                             "between 1e6 and 1e11")
    ghz = clock / 1e9

    def cycles(ns):
        return math.ceil(ns * ghz - 1e-9)

    def larger(pair):
        return cycles(max(pair[0] * part.tck, pair[1]))

    return Timing(part, clock, cl=cycles(part.cl * part.tck), trcd=cycles(part.trcd),
                  trp=cycles(part.trp), tras=cycles(part.tras), trtp=larger(part.trtp),
                  tccd_l=larger(part.tccd_l), trrd_s=larger(part.trrd_s),
                  trrd_l=larger(part.trrd_l), tfaw=larger(part.tfaw),
                  trefi=math.floor(part.trefi * ghz), trfc=cycles(part.trfc),
                  burst=cycles(part.burst_length / 2 * part.tck))


@dataclass(frozen=True)
class Geometry:
    """Where words of ``bits`` lie in ``part``: stride, bursts, and each burst's place."""

    bits: int
    part: DramPart = DDR4_2400

    def __post_init__(self):
        if not isinstance(self.bits, int) or self.bits < 1:
            raise ParameterError(f"word bits={self.bits!r}: expected a positive integer")

    @property
    def stride(self):
        """Bytes from one word to the next."""
        size, burst = -(-self.bits // 8), self.part.burst_bytes
        return 1 << (size - 1).bit_length() if size < burst else -(-size // burst) * burst

    @property
    def bursts(self):
        """Bursts a word spans (1 for a word that shares one)."""
        return -(-self.stride // self.part.burst_bytes)

    def first_burst(self, addr):
        """The burst word ``addr`` (an int or array) starts in."""
        return np.asarray(addr) * self.stride // self.part.burst_bytes

    def locate(self, burst):
        """``(bank group, bank, row, column)`` of ``burst`` (an int or array)."""
        p = self.part
        burst = np.asarray(burst)
        group = burst % p.bank_groups
        column = burst // p.bank_groups % (p.columns // p.burst_length)
        rest = burst // p.bank_groups // (p.columns // p.burst_length)
        return group, rest % p.banks, rest // p.banks % p.rows, column


@dataclass
class _Bank:
    open: bool = False
    row: int = 0
    epoch: int = 0
    read: int = 0               # its last read command
    precharge: int = 0          # earliest precharge: tRAS past its ACT, tRTP past its read


@dataclass
class Dram:
    """The reference controller: :meth:`completions` of reads arriving at given cycles."""

    timing: Timing
    geometry: Geometry
    banks: list = field(init=False)

    def __post_init__(self):
        p = self.timing.part
        self.banks = [_Bank() for _ in range(p.bank_groups * p.banks)]
        self.group_act = [0] * p.bank_groups       # tRRD_L past each group's last ACT
        self.group_burst = [0] * p.bank_groups     # tCCD_L past each group's last burst
        self.act = 0                               # tRRD_S past the last ACT
        self.faw = [0] * 4                         # tFAW past each of the last four ACTs
        self.bus = set()                           # cycles the data bus is booked
        self.last = (-1, 0)                        # the last burst fetched, its completion

    def after_refresh(self, t):
        """``t``, or the end of the refresh window it falls in."""
        r = self.timing
        return t - t % r.trefi + r.trfc if t >= r.trefi and t % r.trefi < r.trfc else t

    def burst(self, burst, t):
        """Book ``burst`` for a read arriving at cycle ``t``; its completion cycle."""
        r, p = self.timing, self.timing.part
        group, bank, row, _ = (int(v) for v in self.geometry.locate(burst))
        b = self.banks[bank * p.bank_groups + group]
        s = self.after_refresh(max(t, b.read))
        epoch = s // r.trefi
        opened = b.open and b.epoch == epoch
        if opened and b.row == row:
            read = s
        else:
            act = max(s, self.act, self.group_act[group], self.faw[0])
            if opened:
                act = max(act, max(s, b.precharge) + r.trp)
            act = self.after_refresh(act)
            read = act + r.trcd
            b.open, b.row, b.epoch, b.precharge = True, row, act // r.trefi, act + r.tras
            self.act, self.group_act[group] = act + r.trrd_s, act + r.trrd_l
            self.faw = [*self.faw[1:], act + r.tfaw]
        slot = max(read + r.cl, self.group_burst[group])
        while any(c in self.bus for c in range(slot, slot + r.burst)):
            slot += 1
        self.bus.update(range(slot, slot + r.burst))
        b.read = slot - r.cl
        b.precharge = max(b.precharge, b.read + r.trtp)
        self.group_burst[group] = slot + r.tccd_l
        return slot + r.burst

    def fetch(self, burst, t):
        """Completion cycle of ``burst`` wanted at cycle ``t``: the open burst's, or its
        booking's."""
        if burst != self.last[0]:
            self.last = (burst, self.burst(burst, t))
        return self.last[1]

    def read(self, addr, t):
        """Completion cycle of a read of word ``addr`` taken at cycle ``t``: its bursts
        are wanted a cycle each, the last at ``t``."""
        first, bursts = int(self.geometry.first_burst(addr)), self.geometry.bursts
        return max(self.fetch(first + k, t - bursts + 1 + k) for k in range(bursts))

    def completions(self, addrs, issue):
        """Each read's completion cycle: word ``addrs[n]`` arriving at ``issue[n]``
        (cycles not decreasing)."""
        return np.array([self.read(a, int(t)) for a, t in zip(addrs, issue, strict=True)],
                        dtype=np.int64)
