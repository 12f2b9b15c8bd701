"""The divide and modulo unit told its quotients' and divisors' widths: exact at the edges
of both, its stages following the quotient's bits."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.divider import DivMod
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.tb.mint import divmod_bench


@pytest.mark.parametrize(("width", "quotient_width", "divisor_width", "levels"),
                         [(12, 4, 5, 1), (12, 7, 3, 2), (9, 9, 4, 1), (8, 3, 8, 3)])
def test_narrow_divmod_is_exact_within_its_widths(width, quotient_width, divisor_width,
                                                  levels):
    """Random dividends below ``divisor * 2**Q`` and divisors below ``2**D``, and at the
    edges: the largest divisor, the largest dividend for each divisor (its quotient
    ``2**Q - 1``), the smallest, and divisor 1."""
    unit = DivMod(lanes=4, width=width, quotient_width=quotient_width,
                  divisor_width=divisor_width, levels=levels)
    rng = np.random.default_rng(seed_from_env(quotient_width))
    most = (1 << divisor_width) - 1
    divisors = np.concatenate([[most, most, 1, 1], rng.integers(1, most + 1, 40)])
    limits = np.minimum(divisors << quotient_width, 1 << width)   # dividends below these
    dividends = (rng.random((len(divisors), 4)) * limits[:, None]).astype(np.int64)
    dividends[:, 0] = limits - 1
    dividends[:2, 1:] = [[0, 1, most - 1], [most, min(most + 1, limits[0] - 1), limits[0] - 2]]
    bench = divmod_bench(unit, dividends, divisors, seed_from_env(5), rates={"dividends": 0.6,
                                                                             "results": 0.5})
    out = pysim(bench).outputs
    assert [[(r["quotient"], r["remainder"]) for r in v] for v in out] == \
        [[(int(x) // int(d), int(x) % int(d)) for x in xs]
         for xs, d in zip(dividends, divisors, strict=True)]
    assert unit.latency == -(-quotient_width // levels)


def test_widths_past_the_dividends_are_refused():
    for name in ("quotient_width", "divisor_width"):
        with pytest.raises(ParameterError, match=f"{name}=9 exceeds width=8"):
            DivMod(width=8, **{name: 9})
        assert DivMod(width=8, **{name: 8}).latency == 8
