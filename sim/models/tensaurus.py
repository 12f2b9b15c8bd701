"""Behavioural model of a Tensaurus PE (Tensaurus Section 5.2.4, Fig. 5b): from its CISS
lane, the scratchpad reads it makes and the OSR entries it drains.

A PE keeps ``tlen`` chunks of ``vlen`` lanes in each of its shift registers: the TSR
(``sum_k scalar * C[k]`` of the current fiber) and the OSR (the current slice's output
row). Walking its lane, entry by entry:

- a nonzero ``(scalar, j, k)`` reads row ``k`` of C (MTTKRP) or row ``j`` of B (MM) chunk
  by chunk and adds ``scalar`` times it to the TSR (MTTKRP) or the OSR (MM);
- in MTTKRP a fiber ends where ``j`` changes or the slice ends: the PE reads row ``j`` of
  B and adds ``TSR * B[j]`` to the OSR, clearing the TSR;
- a slice ends at the lane's next header, an idle lane or the end marker: the OSR drains,
  chunk by chunk, tagged with the slice index, and clears.

Integers wrap to ``acc_width`` bits (two's complement), as the hardware's accumulators.
"""

from dataclasses import dataclass, field

MTTKRP, MM = 0, 1
"""The kernels, as :class:`~sparseforge.hw.interfaces.TensaurusKernel` numbers them."""


def wrap(value, bits):
    """``value`` as a ``bits``-bit two's complement integer."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


@dataclass
class PeTrace:
    """What a PE did: ``requests`` ``(operand, row, chunk)`` in order, and ``drains``
    ``(row, chunk, lanes)`` in order."""

    requests: list = field(default_factory=list)
    drains: list = field(default_factory=list)


def pe(lane, kernel, tlen, vlen, read, acc_width, idle):
    """The :class:`PeTrace` of a PE walking ``lane``: ``(scalar, ij, k, last)`` items
    (``scalar`` 0 for a header or idle lane, ``ij == idle`` for an idle one), reading its
    scratchpad through ``read(operand, row, chunk)`` (``vlen`` ints)."""
    trace = PeTrace()
    tsr = [[0] * vlen for _ in range(tlen)]
    osr = [[0] * vlen for _ in range(tlen)]
    cur_i = cur_j = 0
    has_fiber = in_slice = False

    def fetch(operand, row, chunk):
        trace.requests.append((operand, row, chunk))
        return read(operand, row, chunk)

    for scalar, ij, k, _last in lane:
        marker = scalar == 0
        if kernel == MTTKRP and has_fiber and (marker or ij != cur_j):
            for t in range(tlen):
                b = fetch(1, cur_j, t)
                osr[t] = [wrap(o + s * x, acc_width) for o, s, x in zip(osr[t], tsr[t], b,
                                                                          strict=True)]
                tsr[t] = [0] * vlen
        if in_slice and marker:
            for t in range(tlen):
                trace.drains.append((cur_i, t, tuple(osr[t])))
                osr[t] = [0] * vlen
        if not marker:
            held = tsr if kernel == MTTKRP else osr
            for t in range(tlen):
                x = fetch(0, k if kernel == MTTKRP else ij, t)
                held[t] = [wrap(h + scalar * v, acc_width) for h, v in zip(held[t], x,
                                                                           strict=True)]
            cur_j, has_fiber = ij, kernel == MTTKRP
        else:
            has_fiber, in_slice = False, ij != idle
            cur_i = ij if in_slice else cur_i
    return trace
