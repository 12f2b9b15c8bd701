"""Fig. 3e's bandwidth model: P PEs streaming a tensor as CISS or as extended CSR.

Memory moves whole words of ``word_bits`` (default 512: a 64-byte burst of a
64-bit DDR4 channel). What the PEs use of each fetched word is the *useful
fraction*: the nonzeros' bits (value and indices, the same records in both
formats) over all the bits fetched. With the PEs always asking (the
memory-bound regime where Fig. 3e's curves flatten), memory delivers words at
its ``peak`` (default 16 GB/s, Fig. 3e's single DDR4 channel), so the
*achieved* bandwidth of useful data is ``peak x fraction``.

- CISS (Fig. 3d): the TLU reads the entries in order from one contiguous
  array, so every fetched word is used whole: ``ceil(entries x entry bits /
  word)`` words, headers and idle lanes being what is not useful.
- Extended CSR (Fig. 3b, 3c): the nonzeros' records one after another in
  slice order, then the slice pointers (``max(iw, bits of nnz)`` bits each),
  from a word boundary. Each PE takes the same slices as under CISS and reads,
  one access a cycle, its slice's pointer pair and then its nonzeros; in each
  cycle the PEs' accesses reach memory in PE order. An access fetches the
  words its bits lie in, except a word the access before it fetched: one
  open word is the only reuse, as the PEs have no cache, so P > 1 PEs reading
  far-apart slices fetch a word for nearly every record.

Left out: DRAM timing (row activations, refresh, bus turnaround), which
lowers both formats below this model's figures (the paper's DDR4 gives CISS
70% of peak), and the PE's own rate, which makes Fig. 3e's curves climb with
P before they flatten.
"""

from dataclasses import dataclass

import numpy as np

from .csr_reads import access_slots

PEAK = 16e9
"""Peak memory bandwidth, bytes/s: Fig. 3e's single-channel DDR4."""

WORD_BITS = 512
"""Bits a memory access moves: a 64-byte DDR4 burst."""


@dataclass(frozen=True)
class Bandwidth:
    """What streaming one format costs: fetched words, useful bits, and the
    achieved bandwidth (bytes/s) of useful data at ``peak``."""

    words: int
    useful_bits: int
    word_bits: int
    peak: float

    @property
    def fraction(self):
        """Fraction of the fetched bits that are the nonzeros' data."""
        return self.useful_bits / (self.words * self.word_bits) if self.words else 0.0

    @property
    def achieved(self):
        """Useful bytes per second when memory runs at its peak."""
        return self.peak * self.fraction


def ciss_bandwidth(ciss, peak=PEAK, word_bits=WORD_BITS):
    """Streaming the CISS entries of ``ciss`` (a `~.ciss.Ciss`)."""
    total = ciss.entries * ciss.wire.entry_width
    return Bandwidth(-(-total // word_bits), ciss.nnz * ciss.wire.lane_width, word_bits, peak)


def csr_bandwidth(ciss, peak=PEAK, word_bits=WORD_BITS):
    """P PEs streaming the same tensor, slices and schedule as extended CSR (Fig. 3c)."""
    wire, nnz = ciss.wire, ciss.nnz
    record = wire.lane_width
    pointer = max(wire.iw, nnz.bit_length())
    # every access: its slot (cycle x pes + PE, access_slots), first bit and bits
    slot = access_slots(ciss)
    base = -(-nnz * record // word_bits) * word_bits
    address = np.concatenate([base + ciss.slices * pointer, np.arange(nnz) * record])
    size = np.concatenate([np.full(len(ciss.slices), 2 * pointer), np.full(nnz, record)])
    order = np.argsort(slot)
    low, high = (address[order] // word_bits,
                 (address[order] + size[order] - 1) // word_bits)
    span = high - low + 1
    fetched = np.repeat(low, span) + (np.arange(span.sum()) - np.repeat(np.cumsum(span) - span,
                                                                        span))
    words = int(np.count_nonzero(fetched[1:] != fetched[:-1])) + 1 if len(fetched) else 0
    return Bandwidth(words, nnz * record, word_bits, peak)
