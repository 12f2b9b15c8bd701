"""The examples in ``examples/`` run as a user runs them, and check themselves."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script, *args):
    """``python examples/<script>``; returns its stdout, failing with its output if it fails."""
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_every_example_has_a_docstring():
    scripts = [*EXAMPLES.glob("*.py"), *EXAMPLES.glob("*/run.py")]
    assert len(scripts) >= 3
    for path in scripts:
        assert ast.get_docstring(ast.parse(path.read_text())), path


def test_a_buffet_in_a_users_design():
    out = run("buffet_in_my_design.py")
    lines = dict(line.split(":", 1) for line in out.splitlines())
    sent = ast.literal_eval(lines["in"].strip())
    got = ast.literal_eval(lines["out"].strip())
    assert got == [*reversed(sent[:5]), *reversed(sent[5:])]
    assert "PASS: 2 batches of 5" in out


@pytest.mark.verilator
def test_a_tailor_in_a_verilog_top(tmp_path):
    out = run("tailor_verilog_top/run.py", tmp_path)
    assert "lint: clean" in out
    assert "PASS: 3 tiles of 12 bytes" in out
    assert (tmp_path / "tailor.v").read_text().count("module tailor(") == 1


def test_host_tools_from_python():
    out = run("host_tools.py")
    for tool in ("swiftiles:", "conversion:", "ciss:", "sage:"):
        assert tool in out
    assert "back to CSR unchanged" in out and "decoded unchanged" in out
    assert out.rstrip().endswith("PASS")
