# amaranth: UnusedElaboratable=no
"""The public API: every registered block importable from ``sparseforge.hw`` by class name."""

import subprocess
import sys

import pytest
from amaranth.lib import wiring

import sparseforge.hw
from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import blocks

BLOCKS = blocks()


def test_class_names_are_unique():
    names = [b.cls.__name__ for b in BLOCKS.values()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_every_block_is_exported_by_its_class_name(name):
    cls = BLOCKS[name].cls
    namespace = {}
    exec(f"from sparseforge.hw import {cls.__name__}", namespace)
    assert namespace[cls.__name__] is cls
    assert cls.__name__ in dir(sparseforge.hw)
    assert cls.__name__ in sparseforge.hw.__all__


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_a_block_takes_the_command_lines_parameters(name):
    blk = BLOCKS[name]
    cls = getattr(sparseforge.hw, blk.cls.__name__)
    # -p name=value arrives as text; the checked values build the component.
    component = cls(**blk.resolve({p.name: str(p.default) for p in blk.params}))
    assert isinstance(component, wiring.Component)
    bad = blk.params[0]
    with pytest.raises(ParameterError, match=bad.name):
        cls(**{**blk.resolve(), bad.name: bad.hi + 1})


def test_star_import_gives_the_blocks():
    namespace = {}
    exec("from sparseforge.hw import *", namespace)
    assert {b.cls.__name__ for b in BLOCKS.values()} <= namespace.keys()


def test_unknown_names_and_submodules_still_behave():
    with pytest.raises(AttributeError):
        sparseforge.hw.NoSuchBlock  # noqa: B018
    from sparseforge.hw import compose, interfaces
    assert interfaces.BuffetSignature and compose.__name__ == "sparseforge.hw.compose"


def test_importing_the_interfaces_loads_no_block():
    code = ("import sys, sparseforge.hw.interfaces\n"
            "print(sorted(m for m in sys.modules if m.startswith('sparseforge.hw.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "['sparseforge.hw.interfaces']"
