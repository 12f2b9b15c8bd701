"""Shared pytest fixtures and options."""

import os
import sys
from pathlib import Path

import pytest

from sparseforge.core.data import is_partial, manifest, shared_data_dir


def pytest_addoption(parser):
    parser.addoption("--soak", action="store_true",
                     help="also run the long randomized soak tests (marked 'soak')")
    parser.addoption("--waves", action="store_true",
                     help="write an FST waveform of every Verilator run into waves/ under "
                          "the rootdir (or $SPARSEFORGE_WAVES), named by test, block and seed")


def pytest_configure(config):
    if config.getoption("--waves") and os.environ.get("SPARSEFORGE_WAVES", "1") == "1":
        os.environ["SPARSEFORGE_WAVES"] = str(config.rootpath / "waves")
    # The default run builds many simulators and runs each briefly: unoptimized C++ builds
    # several times faster. The soak's long runs keep the optimized builds users get.
    if not config.getoption("--soak"):
        os.environ.setdefault("SPARSEFORGE_SIM_OPT", "-O0")


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
        pytest.skip("no real data: ../shared/data not found and nothing fetched "
                    "(run 'sparseforge data fetch', or set SPARSEFORGE_DATA)")
    return path


class _Reads:
    """The paths under a fetched (possibly partial) data folder that a test opens or lists.

    ``sparseforge data fetch`` without ``--mirror`` brings only the files stored
    upstream byte for byte, so a test may read a file that is not there. Such a
    test skips, naming the file, instead of failing; with the full shared folder
    (not a fetched one) a missing file stays a failure.
    """

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.paths = None
        self.listed = {}
        for entry in manifest():
            folder = str(Path(self.root, entry.path).parent)
            self.listed.setdefault(folder, []).append(str(Path(self.root, entry.path)))
        sys.addaudithook(self._hook)
        glob = Path.glob

        def listed_glob(path, pattern, *args, **kwargs):   # a missing folder is not scanned
            if self.paths is not None:
                self.paths.append(str(path))
            return glob(path, pattern, *args, **kwargs)

        Path.glob = listed_glob

    def _hook(self, event, args):
        if self.paths is None:
            return
        if event in ("open", "os.scandir", "os.listdir") and args and args[0] is not None:
            self.paths.append(args[0])
        elif event == "subprocess.Popen" and len(args) > 1:
            self.paths.extend(args[1] if isinstance(args[1], (list, tuple)) else [args[1]])

    def missing(self):
        """The first path the test reached under the folder that was not fetched, or None."""
        for raw in self.paths or ():
            if not isinstance(raw, (str, os.PathLike)):
                continue
            path = os.path.realpath(os.fspath(raw))
            if not path.startswith(self.root + os.sep):
                continue
            if not os.path.exists(path):
                return path
            for wanted in self.listed.get(path, ()):        # a folder listed by a glob
                if not os.path.exists(wanted):
                    return wanted
        return None


_reads = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    global _reads
    root = shared_data_dir() if "shared_data" in getattr(item, "fixturenames", ()) else None
    if root is None or not is_partial(root):
        return (yield)
    if _reads is None:
        _reads = _Reads(root)
    _reads.paths = []
    try:
        return (yield)
    except Exception:
        missing = _reads.missing()
        if missing is None:
            raise
        pytest.skip(f"{missing} not fetched: it is converted from its source, "
                    "so 'sparseforge data fetch' brings it only with --mirror")
    finally:
        _reads.paths = None


@pytest.fixture
def lint(tmp_path):
    """``lint(block, params)``: ``verilator --lint-only -Wall`` on a block's Verilog.

    Returns Verilator's warnings, '' when clean.
    """
    from sparseforge.core.export import verilog_text
    from sparseforge.core.tools import verilator_lint

    def run(name, params):
        text, _ = verilog_text(name, params)
        path = tmp_path / f"{name}.v"        # Verilator wants the file named after the module
        path.write_text(text)
        return verilator_lint(path)

    return run
