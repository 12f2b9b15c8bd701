"""A block's parameters are written once, in its ``PARAMS``.

Its ``__init__`` takes them as ``**params``; the class signature (``help()``,
editors, the reference), the defaults and the range checks all come from the
declaration.
"""

import ast
import inspect
import textwrap

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.core.params import takes_params
from sparseforge.core.registry import blocks

BLOCKS = blocks()
DECLARED_ONCE = sorted(BLOCKS)


def explicit(cls):
    """The arguments ``cls.__init__`` names itself, beside ``**params``."""
    return [p for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
            if p.kind is not p.VAR_KEYWORD]


def test_no_block_names_its_parameters_in_init():
    assert {name for name, blk in BLOCKS.items() if not takes_params(blk.cls.__init__)} == set()


@pytest.mark.parametrize("name", DECLARED_ONCE)
def test_the_signature_lists_the_declared_parameters_and_defaults(name):
    cls = BLOCKS[name].cls
    got = inspect.signature(cls).parameters.values()
    declared = [(p.name, p.default, inspect.Parameter.KEYWORD_ONLY) for p in cls.PARAMS]
    own = [(p.name, p.default, p.kind) for p in explicit(cls)]
    assert [(p.name, p.default, p.kind) for p in got] == own + declared


@pytest.mark.parametrize("name", DECLARED_ONCE)
def test_an_unknown_or_out_of_range_parameter_is_refused_by_name(name):
    cls = BLOCKS[name].cls
    with pytest.raises(ParameterError, match="'no_such_parameter'"):
        cls(no_such_parameter=1)
    for p in cls.PARAMS:
        for value in (p.lo - 1, p.hi + 1):
            with pytest.raises(ParameterError, match=f"parameter {p.name}={value}"):
                cls(**{p.name: value})


@pytest.mark.parametrize("name", DECLARED_ONCE)
def test_init_repeats_no_parameter_or_default(name):
    """No argument, default or hand-built dict of the declared names in ``__init__``."""
    cls = BLOCKS[name].cls
    init = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__))).body[0]
    declared = {p.name for p in cls.PARAMS}
    args = init.args
    assert args.kwarg is not None
    assert not {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} & declared
    for node in ast.walk(init):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            assert not keys & declared, ast.unparse(node)
