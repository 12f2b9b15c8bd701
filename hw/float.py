"""FP16 x FP16 -> FP32 products and FP32 additions, as Amaranth logic.

The arithmetic of the FP16 Eureka and 2:4 MACs (Eureka Section 5.4: FP16
MACs). Its exact semantics, which
:func:`sparseforge.sim.models.eureka.products` and
:func:`~sparseforge.sim.models.eureka.accumulate` state in numpy:

- a product of two FP16 values is exact in FP32 (11 x 11 significand bits,
  exponents well inside FP32's range), so it needs no rounding;
- an addition rounds to nearest, ties to even; ``x + (-x)`` is ``+0`` and
  ``-0 + -0`` is ``-0``, as in IEEE 754;
- FP16 subnormal inputs are flushed to a zero of their sign. Every product
  of normal FP16 values is a multiple of 2^-48, and so is every sum of them
  (rounding keeps a multiple), so no FP32 subnormal, overflow or infinity can
  arise from finite inputs: the adder has no logic for them (an exponent
  below 1 would flush to zero);
- infinities and NaNs (FP16 exponent 31) are outside the domain: the model
  refuses them, the logic treats exponent 31 as a finite one.
"""

from amaranth.hdl import Cat, Const, Mux, Signal, signed

FP16_EXP, FP16_FRAC = 5, 10
FP32_EXP, FP32_FRAC = 8, 23
_GUARD = 3  # bits below an aligned significand the shifter keeps; then one sticky bit


def fp16_mul(m, a, b, name="mul"):
    """The FP32 bits of ``a * b`` for FP16 bits ``a`` and ``b`` (exact)."""
    ea, eb = a[FP16_FRAC:15], b[FP16_FRAC:15]
    zero = Signal(name=f"{name}_zero")
    significand = Signal(2 * FP16_FRAC + 2, name=f"{name}_significand")
    m.d.comb += [
        zero.eq(~ea.any() | ~eb.any()),
        # Both significands in [1, 2): their product in [1, 4), 22 bits, exact.
        significand.eq(Cat(a[:FP16_FRAC], 1) * Cat(b[:FP16_FRAC], 1)),
    ]
    top = significand[-1]
    frac = Mux(top, Cat(Const(0, 2), significand[:-1]), Cat(Const(0, 3), significand[:-2]))
    bias = 2 ** (FP32_EXP - 1) - 1 - 2 * (2 ** (FP16_EXP - 1) - 1)
    exponents = Signal(FP32_EXP, name=f"{name}_exponents")
    exponent = Signal(FP32_EXP, name=f"{name}_exponent")
    m.d.comb += [exponents.eq(ea + eb), exponent.eq(exponents + bias + top)]
    out = Signal(32, name=name)
    m.d.comb += out.eq(Cat(Mux(zero, 0, frac), Mux(zero, 0, exponent), a[15] ^ b[15]))
    return out


def _leading_zeros(value):
    """Leading zeros of ``value`` (``len(value)`` when it is 0), as a priority chain."""
    count = Const(len(value), range(len(value) + 1))
    for i in range(len(value)):
        count = Mux(value[i], len(value) - 1 - i, count)
    return count


def _field(m, value, name):
    """``value`` as a named signal of its own width (exact widths in the Verilog)."""
    out = Signal(len(value), name=name)
    m.d.comb += out.eq(value)
    return out


def fp32_add(m, a, b, name="add"):
    """The FP32 bits of ``a + b`` rounded to nearest even (see the module's domain)."""
    width = FP32_FRAC + 1 + _GUARD + 1  # an aligned significand, guard bits, sticky
    a, b = _field(m, a, f"{name}_a"), _field(m, b, f"{name}_b")
    exp_a, exp_b = a[FP32_FRAC:31], b[FP32_FRAC:31]
    swap = Signal(name=f"{name}_swap")
    m.d.comb += swap.eq(Mux(exp_b.any(), b[:31], 0) > Mux(exp_a.any(), a[:31], 0))
    e_big = _field(m, Mux(swap, exp_b, exp_a), f"{name}_e_big")
    e_small = _field(m, Mux(swap, exp_a, exp_b), f"{name}_e_small")
    sign = _field(m, Mux(swap, b[31], a[31]), f"{name}_sign")
    wide_big = _field(m, Cat(Mux(swap, b[:FP32_FRAC], a[:FP32_FRAC]), e_big.any()),
                      f"{name}_significand_big")
    wide_small = _field(m, Cat(Mux(swap, a[:FP32_FRAC], b[:FP32_FRAC]), e_small.any()),
                        f"{name}_significand_small")
    # Align the smaller: shift right by the exponent difference (at most ``width``); the
    # bits shifted past the guard bits OR into the sticky bit.
    diff = _field(m, e_big - e_small, f"{name}_diff")
    shift = Signal(range(width + 1), name=f"{name}_shift")
    m.d.comb += shift.eq(Mux(diff > width, width, diff))
    sticky = Cat(*(wide_small[k] & (shift > k + _GUARD) for k in range(len(wide_small)))).any()
    aligned = _field(m, Cat(sticky, Cat(Const(0, _GUARD), wide_small) >> shift),
                     f"{name}_aligned")
    subtract = a[31] ^ b[31]
    total = Signal(width + 1, name=f"{name}_total")
    big = Cat(Const(0, _GUARD + 1), wide_big)
    m.d.comb += total.eq(Mux(subtract, big - aligned, big + aligned))
    # Normalize: a carry shifts right by one (keeping the sticky bit); a cancellation
    # shifts left by its leading zeros (exact: with a shift of two or more it is at most
    # one, and with less nothing was shifted out).
    carry = total[width]
    zeros = Signal(range(width + 1), name=f"{name}_zeros")
    m.d.comb += zeros.eq(Mux(carry, 0, _leading_zeros(total[:width])))
    left = Signal(width, name=f"{name}_left")
    m.d.comb += left.eq(total[:width] << zeros)
    norm = _field(m, Mux(carry, Cat(total[0] | total[1], total[2:]), left), f"{name}_norm")
    significand = norm[_GUARD + 1:]
    guard, rest = norm[_GUARD], norm[:_GUARD].any()
    rounded = Signal(FP32_FRAC + 2, name=f"{name}_rounded")
    m.d.comb += rounded.eq(significand + (guard & (rest | significand[0])))
    exponent = Signal(signed(FP32_EXP + 2), name=f"{name}_exponent")
    m.d.comb += exponent.eq(e_big + carry - zeros + rounded[-1])
    # A nonzero sum keeps its leading one at bit 23 or (rounded up) 24.
    zero = ~rounded[FP32_FRAC:].any() | (exponent <= 0)
    out = Signal(32, name=name)
    m.d.comb += out.eq(Mux(zero, Cat(Const(0, 31), a[31] & b[31]),
                           Cat(rounded[:FP32_FRAC], exponent[:FP32_EXP], sign)))
    return out
