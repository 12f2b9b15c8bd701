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
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.iterdir()))
def test_corpus_file_is_refused_by_command(command, name, capsys, tmp_path):
    path = CORPUS / name
    argv = [arg.format(file=path, out=tmp_path / "out.npz") for arg in COMMANDS[command]]
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    refused(SimpleNamespace(returncode=info.value.code, stdout=out.out, stderr=out.err), str(path))
