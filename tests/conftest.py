"""Shared pytest fixtures and options."""

import os

import pytest

from sparseforge.data import shared_data_dir


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true",
                     help="also run the long randomized soak tests (marked 'soak')")
    parser.addoption("--waves", action="store_true",
                     help="write an FST waveform of every Verilator run into waves/ under "
                          "the rootdir (or $SPARSEFORGE_WAVES), named by test, block and seed")


def pytest_configure(config):
    if config.getoption("--waves") and os.environ.get("SPARSEFORGE_WAVES", "1") == "1":
        os.environ["SPARSEFORGE_WAVES"] = str(config.rootpath / "waves")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--soak"):
        return
    skip = pytest.mark.skip(reason="soak test: run with --soak")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data():
    """The shared real-data folder; tests that need it skip where it is absent."""
    path = shared_data_dir()
    if path is None:
        pytest.skip("shared data folder ../shared/data not found (set SPARSEFORGE_DATA)")
    return path


@pytest.fixture
def lint(tmp_path):
    """``lint(block, params)``: ``verilator --lint-only -Wall`` on a block's Verilog.

    Returns Verilator's warnings, '' when clean.
    """
    from sparseforge.export import verilog_text
    from sparseforge.tools import verilator_lint

    def run(name, params):
        text, _ = verilog_text(name, params)
        path = tmp_path / f"{name}.v"        # Verilator wants the file named after the module
        path.write_text(text)
        return verilator_lint(path)

    return run
