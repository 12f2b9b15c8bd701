"""The API reference builds from the docstrings with warnings as errors, and covers every block."""

import subprocess
import sys
from pathlib import Path

import pytest

from sparseforge.core.registry import blocks

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", str(ROOT / "docs"), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_every_block_has_its_entry(html):
    page = (html / "hw.html").read_text()
    for blk in blocks().values():
        assert f'id="sparseforge.hw.{blk.cls.__name__}"' in page, blk.name


def test_a_blocks_ports_and_parameters_are_rendered(html):
    page = (html / "hw.html").read_text()
    start = page.index('id="sparseforge.hw.Buffet"')
    buffet = page[start:page.index('id="sparseforge.hw.ClusterCounter"', start)]
    assert "Members" in buffet and "read_data" in buffet and "depth" in buffet


def test_the_host_tools_and_interfaces_have_pages(html):
    assert 'id="sparseforge.sw.swiftiles.swiftiles"' in (html / "sw.html").read_text()
    assert 'id="sparseforge.hw.interfaces.BuffetSignature"' in (
        html / "interfaces.html").read_text()
