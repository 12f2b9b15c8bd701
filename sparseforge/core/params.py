"""Declared, range-checked generator parameters.

A block declares its parameters once, as a tuple of :class:`Param`. The same
declaration checks the values in the generator's ``__init__`` (which takes
them as ``**params``), gives the class its signature, lists them in
``sparseforge blocks`` and parses ``-p name=value`` on the command line, so the
defaults and allowed ranges cannot drift apart.
"""

import inspect
from dataclasses import dataclass

from .errors import ParameterError


@dataclass(frozen=True)
class Param:
    """One integer parameter of a generator.

    ``lo``/``hi`` bound it (inclusive); ``pow2`` additionally requires a power
    of two (for storage that wraps pointers for free); ``at_least`` names
    parameters whose sum it must reach (an accumulator that holds a product).
    """

    name: str
    default: int
    lo: int
    hi: int
    doc: str
    pow2: bool = False
    at_least: tuple = ()

    def allowed(self):
        kind = "a power of two" if self.pow2 else "an integer"
        return f"{kind} in [{self.lo}, {self.hi}]"

    def check(self, value):
        """Return ``value`` as an int, or raise :class:`ParameterError`."""
        if isinstance(value, str):
            try:
                value = int(value, 0)
            except ValueError:
                raise ParameterError(
                    f"parameter {self.name}={value!r}: expected {self.allowed()}"
                ) from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParameterError(f"parameter {self.name}={value!r}: expected {self.allowed()}")
        if not self.lo <= value <= self.hi or (self.pow2 and value & (value - 1)):
            raise ParameterError(f"parameter {self.name}={value}: expected {self.allowed()}")
        return value

    def as_dict(self):
        return {"name": self.name, "default": self.default, "min": self.lo, "max": self.hi,
                "pow2": self.pow2, "at_least": " + ".join(self.at_least), "doc": self.doc}


@dataclass(frozen=True)
class Choice(Param):
    """A parameter naming one of ``choices``; its index among them is accepted too.

    The checked value is the name. ``lo``/``hi`` span the indices.
    """

    choices: tuple = ()

    def allowed(self):
        return "one of " + ", ".join(self.choices)

    def check(self, value):
        if isinstance(value, str) and value in self.choices:
            return value
        return self.choices[super().check(value)]


def choice(name, default, choices, doc):
    """A :class:`Choice` among ``choices`` (names)."""
    choices = tuple(choices)
    named = ", ".join(f"{c} ({i})" for i, c in enumerate(choices))
    return Choice(name, default, 0, len(choices) - 1, f"{doc}, by name or index: {named}",
                  choices=choices)


def check_params(params, values):
    """Check ``values`` (a mapping) against ``params``; fill in defaults.

    Unknown names, out-of-range values and a parameter below its
    ``at_least`` sum raise :class:`ParameterError`. Returns a new dict with
    every declared parameter.
    """
    by_name = {p.name: p for p in params}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        known = ", ".join(by_name) or "none"
        raise ParameterError(f"unknown parameter {unknown[0]!r} (this block takes: {known})")
    checked = {p.name: p.check(values.get(p.name, p.default)) for p in params}
    for p in params:
        least = sum(checked[name] for name in p.at_least)
        if p.at_least and checked[p.name] < least:
            raise ParameterError(f"parameter {p.name}={checked[p.name]}: expected at least "
                                 f"{' + '.join(p.at_least)} = {least}")
    return checked


def signature(init, params):
    """``init``'s signature without ``self``, its ``**params`` replaced by ``params``.

    Each declared parameter becomes keyword-only with its default, so
    ``help()``, editors and the reference show what a block takes and its
    defaults, though they are written only in its ``PARAMS``.
    """
    *explicit, _ = list(inspect.signature(init).parameters.values())[1:]
    declared = [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default)
                for p in params]
    return inspect.Signature([*explicit, *declared])


def takes_params(init):
    """Whether ``init`` takes its declared parameters as ``**params``."""
    last = list(inspect.signature(init).parameters.values())[-1]
    return last.kind is inspect.Parameter.VAR_KEYWORD
