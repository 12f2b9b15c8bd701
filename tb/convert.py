"""MINT's converter blocks as a conversion engine: ``convert --engine rtl``.

Each converter's bench module ``tb/convert_*.py`` declares
``CONVERSIONS = {(from_format, to_format): run}``, where ``run(source, block,
run_bits, seed)`` streams ``source`` through the converter natively on
Verilator, under random back-pressure on every stream, and returns
``(result, cycles)``: the result rebuilt from what the hardware emitted
(never from the golden converter), in the formats of
:mod:`sparseforge.sw.conversion`. Modules are found by name, so a new
converter touches no other file.

A converter is hardware with fixed buffers: each ``run`` builds its block from
fixed parameters (the module's ``RTL`` or its named constants), never sized by
the input, so one build serves every matrix; a matrix larger than the buffers
goes through in passes the host plans and joins (:mod:`sparseforge.sw.passes`),
and one beyond an index width is refused.
"""

import importlib
import pkgutil

import scipy.sparse as sp

from ..core.errors import ParameterError
from ..sw import conversion, passes


def conversions():
    """``{(from, to): run}`` over every ``tb/convert_*.py`` module."""
    from .. import tb

    table = {}
    for info in pkgutil.iter_modules(tb.__path__):
        if info.name.startswith("convert_"):
            table.update(importlib.import_module(f"{tb.__name__}.{info.name}").CONVERSIONS)
    return table


def rtl_convert(source, to, block=None, run_bits=None, seed=1):
    """``(result, cycles)``: ``source`` converted to ``to`` by a converter block.

    Takes a request `conversion.check_request` has checked. Raises
    ParameterError naming the conversion where no converter block does it.
    """
    key = (conversion.format_of(source), to)
    run = conversions().get(key)
    if run is None:
        have = ", ".join(f"{a.upper()} -> {b.upper()}" for a, b in sorted(conversions()))
        raise ParameterError(f"--engine rtl: no converter block does {key[0].upper()} -> "
                             f"{to.upper()} (the blocks do: {have or 'none yet'})")
    return run(source, block, run_bits, seed)


def column_parts(matrix, bounds):
    """The CSR matrix of each pass of ``bounds`` (:mod:`sparseforge.sw.passes`): the
    canonical CSR ``matrix``'s entries in the pass's columns, renumbered from its first,
    over every row (canonical too)."""
    parts = []
    for (ptr, indices, order), lo, hi in zip(passes.column_slices(matrix.indptr,
                                                                  matrix.indices, bounds),
                                             bounds[:-1], bounds[1:], strict=True):
        part = sp.csr_array((matrix.data[order], indices, ptr), shape=(matrix.shape[0], hi - lo))
        part.has_canonical_format = True
        parts.append(part)
    return parts
