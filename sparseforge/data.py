"""Where the real data sets live.

The shared collection of real sparse matrices and tensors sits beside the
repository (``../shared/data``); ``SPARSEFORGE_DATA`` overrides that. A small
real matrix ships inside the package so the demo runs on any machine.
"""

import os
from importlib import resources
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir():
    """The shared data folder, or ``None`` where it is absent."""
    env = os.environ.get("SPARSEFORGE_DATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return path if path.is_dir() else None


def bundled(name):
    """Path of a data file shipped inside the package (``sparseforge/datasets``)."""
    return Path(str(resources.files("sparseforge.datasets") / name))
