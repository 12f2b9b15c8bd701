"""Every user-facing failure of the command line: one line naming what was wrong, exit 2."""

import subprocess
import sys

import pytest

from tests.clicheck import refused

MTX = "%%MatrixMarket matrix coordinate real general\n"


def sf(*args):
    return subprocess.run([sys.executable, "-m", "sparseforge", *map(str, args)],
                          capture_output=True, text=True)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.mtx"
    path.write_text(MTX + "3 3 3\n1 1 1\n2 2 2\n3 3 3\n")
    return path


@pytest.mark.parametrize("args, words", [
    (["swiftiles", "{small}", "--buffer", "1.5"], ["--buffer", "1.5"]),
    (["swiftiles", "{small}", "--buffer", "0"], ["--buffer", "0"]),
    (["swiftiles", "{small}", "--buffer", "10" * 15], ["--buffer"]),
    (["swiftiles", "{small}", "--buffer", "4", "--seed", "-1"], ["--seed", "-1"]),
    (["swiftiles", "{small}", "--buffer", "4", "--confidence", "1"], ["--confidence"]),
    (["swiftiles", "{tmp}", "--buffer", "4"], ["directory"]),
    (["swiftiles", "{tmp}/missing.mtx", "--buffer", "4"], ["missing.mtx"]),
    (["suds", "{small}", "-P", "3"], ["--compaction", "3"]),
    (["suds", "{small}", "--systolic-rows", "1000000000"], ["--systolic-rows"]),
    (["demo", "--matrix", "{tmp}/missing.mtx"], ["missing.mtx"]),
    (["demo", "--matrix", "{nonsquare}"], ["square"]),
    (["demo", "--matrix", "{empty}"], ["square"]),
    (["demo", "--seed", "-1"], ["--seed"]),
    (["synth", "buffet", "--target", "nosuch"], ["--target", "nosuch"]),
    (["synth", "buffet", "--md", "{tmp}/r.md"], ["--report"]),
    (["synth"], ["--report"]),
    (["generate", "buffet", "-p", "depth=8", "-p", "depth=16", "-o", "{tmp}/g"], ["twice"]),
    (["generate", "buffet", "-p", "depth=3", "-o", "{tmp}/g"], ["depth"]),
    (["generate", "buffet", "-p", "nosuch=3", "-o", "{tmp}/g"], ["nosuch"]),
    (["generate", "buffet", "-o", "/proc/sparseforge"], ["/proc/sparseforge"]),
    (["generate", "nosuch", "-o", "{tmp}/g"], ["nosuch"]),
    (["bench", "nosuch"], ["nosuch"]),
    (["bench", "tailors", "--passes", "0"], ["--passes"]),
    (["bench", "tailors", "--passes", "-1"], ["--passes"]),
    (["bench", "tailors", "--depth", "16", "--fifo", "16"], ["fifo"]),
    (["nosuch"], ["nosuch"]),
    (["blocks", "--nosuch"], ["--nosuch"]),
])
def test_a_bad_input_is_refused_in_one_line(tmp_path, small, args, words):
    (tmp_path / "nonsquare.mtx").write_text(MTX + "3 4 1\n1 1 1\n")
    (tmp_path / "empty.mtx").write_text(MTX + "0 0 0\n")
    names = {"small": small, "tmp": tmp_path, "nonsquare": tmp_path / "nonsquare.mtx",
             "empty": tmp_path / "empty.mtx"}
    refused(sf(*(a.format(**names) for a in args)), *words)


def test_json_output_is_one_object_and_progress_stays_on_stderr(small):
    import json

    out = sf("swiftiles", small, "--buffer", "2", "--json")
    assert out.returncode == 0, out.stderr
    assert isinstance(json.loads(out.stdout), dict)
