"""MINT's converter blocks as a conversion engine: ``convert --engine rtl``.

Each converter's bench module ``tb/convert_*.py`` declares
``CONVERSIONS = {(from_format, to_format): run}``, where ``run(source, block,
run_bits, seed)`` streams ``source`` through the converter natively on
Verilator, under random back-pressure on every stream, and returns
``(result, cycles)``: the result rebuilt from what the hardware emitted
(never from the golden converter), in the formats of
:mod:`sparseforge.sw.conversion`. Modules are found by name, so a new
converter touches no other file. A run names its block in ``run.block`` where
that is not ``from_to_to``, the tensor orders it takes in ``run.orders``
where it takes more than matrices, and sets ``run.any_order`` where it takes
COO records in any order (a ``.mtx`` as its file lists them); the other COO
blocks take them row-major.

Every pair: a pair no block does is a chain of blocks (RLC -> COO -> CSR),
the cheapest by the rate table SAGE prices conversions with, so the engine
converts as SAGE recommends; each block's cycles are reported on its own.

A converter is hardware with fixed buffers: each ``run`` builds its block from
fixed parameters (the module's ``RTL`` or its named constants), never sized by
the input, so one build serves every matrix; a matrix larger than the buffers
goes through in passes the host plans and joins (:mod:`sparseforge.sw.passes`),
and one beyond an index width is refused.
"""

import dataclasses
import functools
import importlib
import itertools
import pkgutil
from typing import NamedTuple

import scipy.sparse as sp

from ..core.errors import ParameterError
from ..sw import conversion, formats, passes, sage

MAX_STAGES = 4
"""Blocks a chain may pass through: every pair of formats is reached in fewer."""


class Stage(NamedTuple):
    """One block of an RTL conversion: the formats it took and gave, its registered
    ``block`` name, its ``cycles`` and, where it went through the block more than once
    (a counting sort of COO in any order), each pass's figures."""

    source: str
    target: str
    block: str
    cycles: int
    passes: tuple = ()


@functools.cache
def conversions():
    """``{(from, to): run}`` over every ``tb/convert_*.py`` module (found once)."""
    from .. import tb

    table = {}
    for info in pkgutil.iter_modules(tb.__path__):
        if info.name.startswith("convert_"):
            table.update(importlib.import_module(f"{tb.__name__}.{info.name}").CONVERSIONS)
    return table


def block_of(key, run):
    """The registered block that performs conversion ``key`` = (from, to): ``run.block``
    where the run names one, else ``from_to_to``."""
    return getattr(run, "block", "{}_to_{}".format(*key))


def orders(run):
    """The tensor orders a conversion's block takes: ``run.orders``, else matrices."""
    return getattr(run, "orders", (2,))


def route(source, to, block=None, run_bits=None):
    """The formats an RTL conversion of ``source`` to ``to`` passes through, from
    ``source``'s own: the cheapest chain by the rate table SAGE prices with
    (:func:`sparseforge.sw.sage.mint_rates`; a chain with a block the table lacks comes
    after every chain it prices), then the one of fewest blocks. ``[from]`` where
    nothing is converted: the same format, with the same BSR block or RLC run field.
    BSR is never passed through (its block size is the user's to give). COO not in
    row-major order (a ``.mtx`` as its file lists them) first goes through a block that
    takes its records in any order. Raises
    ParameterError naming the pair where no chain of blocks does it."""
    start, order = conversion.format_of(source), len(source.shape)
    scattered = start == "coo" and order == 2 and not formats.row_major(source.row, source.col)
    same = {"bsr": block in (None, getattr(source, "blocksize", None)),
            "rlc": run_bits in (None, getattr(source, "run_bits", None))}
    if start == to and same.get(to, True) and not scattered:
        return [start]
    table = conversions()
    edges = {}
    for key, run in sorted(table.items()):
        if order in orders(run):
            edges.setdefault(key[0], []).append(key[1])
            if key[0] == "coo" and getattr(run, "any_order", False):
                edges.setdefault(_SCATTERED, []).append(key[1])
    through = set(conversion.FORMATS) - {"bsr"}
    found = [[start, *c[1:]] for c in sage.chains(edges, _SCATTERED if scattered else start,
                                                   to, through)
             if len(c) <= MAX_STAGES + 1]
    if not found:
        have = ", ".join(f"{a.upper()} -> {b.upper()}" for a, b in sorted(table))
        raise ParameterError(f"--engine rtl: no converter block, nor chain of them, does "
                             f"{start.upper()} -> {to.upper()} for a {order}-D operand "
                             f"(the blocks do: {have})")
    rates = _rates()
    size = _size(source)

    def cost(chain):
        priced = [rates.get(pair) for pair in itertools.pairwise(chain)]
        if None in priced or size is None:
            return (1, 0.0, len(chain))
        return (0, sum(rate.cycles(*size) for rate in priced), len(chain))
    return min(found, key=cost)


_SCATTERED = "coo in any order"


def _rates():
    """The rate table's rates by (from, to), or none where there is no table."""
    try:
        return sage.mint_rates().rates
    except ParameterError:
        return {}


def _size(source):
    """(rows, cols, nonzeros) of a matrix for the rate table's terms; None for a tensor."""
    if len(source.shape) != 2:
        return None
    return (*(int(n) for n in source.shape), conversion.nonzeros(source))


def rtl_convert(source, to, block=None, run_bits=None, seed=1):
    """``(result, stages)``: ``source`` converted to ``to`` by converter blocks, the chain
    of :func:`route`, each block's :class:`Stage` in order (none where nothing is
    converted). A chain's blocks run one after the other, each taking the result the
    previous one emitted, as a converter that writes its output to memory for the next
    one to read; the user's ``block`` and ``run_bits`` go to the block making the
    final format. Takes a request `conversion.check_request` has checked."""
    chain = route(source, to, block, run_bits)
    table, stages, result = conversions(), [], source
    for step, key in enumerate(itertools.pairwise(chain)):
        final = step == len(chain) - 2
        run = table[key]
        result, cycles = run(result, block if final else None, run_bits if final else None,
                             seed)
        passes = tuple(dataclasses.asdict(p) for p in getattr(cycles, "passes", ()))
        stages.append(Stage(*key, block_of(key, run), int(cycles), passes))
    return result, tuple(stages)


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
