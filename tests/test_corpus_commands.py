"""The malformed-input corpus through every command that reads a file.

Each file of tests/corpus/formats/ given to each file-reading command must be
refused as the README promises: exit 2, one error line on stderr naming the
file (after any status lines), nothing on stdout. The commands run in-process
through ``cli.main``, the same error path the installed ``sparseforge``
takes, so the whole corpus costs seconds. A new command that reads a file
joins ``COMMANDS``.
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sparseforge.cli import main
from tests.clicheck import refused

CORPUS = Path(__file__).parent / "corpus" / "formats"

COMMANDS = {
    "swiftiles": ["swiftiles", "{file}", "--buffer", "64", "--json"],
    "suds": ["suds", "{file}", "--json"],
    "demo": ["demo", "--matrix", "{file}", "--json"],
    "sage": ["sage", "{file}", "--json"],
    "convert": ["convert", "{file}", "--to", "csc", "-o", "{out}", "--json"],
    "ciss": ["ciss", "{file}", "--pes", "4", "-o", "{out}", "--json"],
    "hyte": ["hyte", "{file}", "--buffer-kb", "64", "--json"],
    "run-tensaurus": ["run", "tensaurus", "--kernel", "spmm", "{file}", "--factors", "{b}",
                      "--out", "{tmp}/y.npy", "--json"],
    "run-tensaurus-factor": ["run", "tensaurus", "--kernel", "spmm", "{matrix}", "--factors",
                             "{file}", "--out", "{tmp}/y.npy", "--json"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.iterdir()))
def test_corpus_file_is_refused_by_command(command, name, capsys, tmp_path):
    path = CORPUS / name
    (tmp_path / "a.mtx").write_text("%%MatrixMarket matrix coordinate integer general\n"
                                    "2 2 2\n1 1 3\n2 2 4\n")
    np.save(tmp_path / "b.npy", np.ones((2, 2), int))
    names = {"file": path, "out": tmp_path / "out.npz", "tmp": tmp_path,
             "matrix": tmp_path / "a.mtx", "b": tmp_path / "b.npy"}
    argv = [arg.format(**names) for arg in COMMANDS[command]]
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    refused(SimpleNamespace(returncode=info.value.code, stdout=out.out, stderr=out.err), str(path))
