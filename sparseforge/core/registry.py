"""The registry of hardware blocks.

A generator class joins the registry with the :func:`block` decorator; every
module in :mod:`sparseforge.hw` and :mod:`sparseforge.hw.compose` is imported
on first lookup, so adding a block means adding a module there and nothing
else. The command line, the Verilog export, the Verilator runner and the
synthesis flow all look blocks up here.
"""

import functools
import importlib
import pkgutil
from dataclasses import dataclass

from .errors import ParameterError
from .params import check_params, signature, takes_params

_BLOCKS = {}


@dataclass(frozen=True)
class Block:
    name: str
    cls: type
    doc: str

    @property
    def params(self):
        return self.cls.PARAMS

    def resolve(self, values=None):
        """All parameters of this block, ``values`` checked and defaults filled in."""
        return check_params(self.params, values or {})

    def build(self, values=None):
        """An elaboratable instance with the given (checked) parameters."""
        return self.cls(**self.resolve(values))


def block(name):
    """Class decorator: register a ``wiring.Component`` with a ``PARAMS`` tuple.

    A block whose ``__init__`` takes its parameters as ``**params`` (and checks
    them with :func:`~sparseforge.core.params.check_params`) gets a class signature
    listing them, keyword-only with their defaults, and an instance built from them
    alone keeps them, checked and filled in, as ``block_params`` (so a composite's parts
    can be synthesized as it builds them); ``None`` where it was given more.
    """

    def register(cls):
        if name in _BLOCKS:
            raise RuntimeError(f"block {name!r} registered twice")
        if takes_params(cls.__init__):
            cls.__signature__ = signature(cls.__init__, cls.PARAMS)
            init = cls.__init__

            names = {p.name for p in cls.PARAMS}

            @functools.wraps(init)
            def __init__(self, *args, **params):
                init(self, *args, **params)
                if not args and set(params) <= names:
                    self.block_params = check_params(cls.PARAMS, params)

            cls.__init__ = __init__
        cls.block_name, cls.block_params = name, None
        doc = (cls.__doc__ or "").strip().splitlines()
        _BLOCKS[name] = Block(name, cls, doc[0] if doc else "")
        return cls

    return register


def _discover():
    # By name: the blocks sit above this floor and import it, never the other way.
    for name in ("sparseforge.hw", "sparseforge.hw.compose"):
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{name}.{info.name}")


def blocks():
    """Every registered block, by name."""
    _discover()
    return dict(sorted(_BLOCKS.items()))


def get(name):
    """The block called ``name``, or :class:`ParameterError` listing the known ones."""
    known = blocks()
    if name not in known:
        raise ParameterError(f"unknown block {name!r} (known: {', '.join(known)})")
    return known[name]
