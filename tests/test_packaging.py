"""The wheel carries every file the package reads besides its Python: each C++, Verilog,
header and JSON file in a package folder matches that package's ``package-data``."""

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ("*.cpp", "*.h", "*.v", "*.json")


def test_every_data_file_is_in_the_wheel():
    tools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders, data = tools["package-dir"], tools["package-data"]
    missing = [str(path.relative_to(ROOT))
               for package, folder in folders.items()
               for pattern in DATA for path in (ROOT / folder).glob(pattern)
               if not any(fnmatch.fnmatch(path.name, p) for p in data.get(package, ()))]
    assert folders and not missing
