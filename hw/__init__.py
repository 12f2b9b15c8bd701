"""The hardware blocks, each a ``wiring.Component`` importable by its class name.

``from sparseforge.hw import Buffet, Tailor`` gives the generators that
``sparseforge blocks`` lists, constructed with the same parameters as
``sparseforge generate BLOCK -p name=value`` (checked the same way) and
composed with ``wiring.connect`` like any Amaranth component. The names come
from :func:`sparseforge.core.registry.blocks`, looked up on first use, so a newly
registered block is exported here with nothing more, and importing a single
module such as :mod:`sparseforge.hw.interfaces` does not load every block.
"""

import pkgutil

from ..core.registry import blocks

# Submodule names must fail in __getattr__ so the import system goes on to import them.
_SUBMODULES = frozenset(info.name for info in pkgutil.iter_modules(__path__))


def _exports():
    """Every registered block's class, by class name."""
    return {b.cls.__name__: b.cls for b in blocks().values()}


def __getattr__(name):
    if (name.startswith("_") and name != "__all__") or name in _SUBMODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    exports = _exports()
    if name == "__all__":
        return sorted(exports)
    if name not in exports:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return exports[name]


def __dir__():
    return sorted({*globals(), *_exports()})

