"""Behavioural model of a Tensaurus PE (Tensaurus Section 5.2.4, Fig. 5b): from its CISS
lane, the scratchpad reads it makes and the OSR entries it drains.

A PE keeps ``tlen`` chunks of ``vlen`` lanes in its TSR (``sum_k scalar * C[k]`` of the
current fiber) and ``olen`` in its OSR (the current slice's output): ``olen = tlen``,
or in TTMc ``r1 * tlen``, chunk ``u * tlen + t`` holding ``Y[i, u, :]``'s chunk ``t``.
Walking its lane, entry by entry:

- a nonzero ``(scalar, j, k)`` reads row ``k`` of C (MTTKRP, TTMc) or row ``j`` of B (MM)
  chunk by chunk and adds ``scalar`` times it to the TSR (MTTKRP, TTMc) or the OSR (MM);
- in MTTKRP and TTMc a fiber ends where ``j`` changes or the slice ends: the PE reads row
  ``j`` of B and adds ``TSR * B[j]`` to the OSR (MTTKRP, chunk by chunk) or, in TTMc, the
  outer product: B's row in chunks of ``vlen`` values, each value ``B[j][u]`` replicated
  over the lanes (Section 5.2.4) and times the whole TSR added to OSR chunks ``u * tlen
  .. u * tlen + tlen - 1``; then clears the TSR;
- a slice ends at the lane's next header, an idle lane or the end marker: the OSR drains,
  chunk by chunk, tagged with the slice index, and clears.

In MV (SpMV, GEMV) a nonzero ``(scalar, j)`` reads b's element ``j``, lane ``j % per`` of
operand 1's row ``j // per`` (:func:`~sparseforge.sw.wire.mv_layout`), and adds
``scalar`` times it, on every lane, to the OSR's first chunk, the only one that drains.

Integers wrap to ``acc_width`` bits (two's complement), as the hardware's accumulators.
"""

from dataclasses import dataclass, field

from ...sw.wire import TensaurusKernel, mv_layout


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


def pe(lane, kernel, tlen, vlen, read, acc_width, idle, r1=1):
    """The :class:`PeTrace` of a PE doing ``kernel`` (a
    :class:`~sparseforge.sw.wire.TensaurusKernel`) walking ``lane``: ``(scalar, ij, k,
    marker, last)`` items (``marker`` for a header or idle lane, ``ij == idle`` for an
    idle one; a value may be 0 in the TLU's dense mode), reading its scratchpad through
    ``read(operand, row, chunk)`` (``vlen`` ints); ``r1`` is B's rank in TTMc."""
    trace = PeTrace()
    olen = {TensaurusKernel.TTMC: r1 * tlen, TensaurusKernel.MV: 1}.get(kernel, tlen)
    tsr = [[0] * vlen for _ in range(tlen)]
    osr = [[0] * vlen for _ in range(olen)]
    cur_i = cur_j = 0
    has_fiber = in_slice = False

    def fetch(operand, row, chunk):
        trace.requests.append((operand, row, chunk))
        return read(operand, row, chunk)

    def add(n, factors, values):
        osr[n] = [wrap(o + f * x, acc_width) for o, f, x in zip(osr[n], factors, values,
                                                                  strict=True)]

    tensor = kernel in (TensaurusKernel.MTTKRP, TensaurusKernel.TTMC)
    for scalar, ij, k, marker, _last in lane:
        if has_fiber and (marker or ij != cur_j):           # the fiber's end
            if kernel == TensaurusKernel.MTTKRP:
                for t in range(tlen):
                    add(t, tsr[t], fetch(1, cur_j, t))
            else:
                for g in range(-(-r1 // vlen)):
                    b = fetch(1, cur_j, g)
                    for u in range(g * vlen, min(r1, (g + 1) * vlen)):
                        for t in range(tlen):
                            add(u * tlen + t, tsr[t], [b[u - g * vlen]] * vlen)
            tsr = [[0] * vlen for _ in range(tlen)]
        if in_slice and marker:
            for n in range(olen):
                trace.drains.append((cur_i, n, tuple(osr[n])))
                osr[n] = [0] * vlen
        if not marker and kernel == TensaurusKernel.MV:
            per = mv_layout(vlen)[0]
            x = fetch(1, ij // per, 0)[ij % per]
            osr[0] = [wrap(o + scalar * x, acc_width) for o in osr[0]]
        elif not marker:
            held = tsr if tensor else osr
            for t in range(tlen):
                x = fetch(0, k if tensor else ij, t)
                held[t] = [wrap(h + scalar * v, acc_width) for h, v in zip(held[t], x,
                                                                           strict=True)]
            cur_j, has_fiber = ij, tensor
        else:
            has_fiber, in_slice = False, ij != idle
            cur_i = ij if in_slice else cur_i
    return trace
