"""The README's promise for a refused command, checked one way everywhere."""


def refused(out, *words):
    """The run exited 2 with one line on stderr naming every word, nothing on stdout."""
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, out.stderr
    assert lines and lines[-1].startswith("error: ") and "Traceback" not in out.stderr
    assert all(line.startswith("error: ") or not line.startswith(" ") for line in lines)
    assert sum(line.startswith("error: ") for line in lines) == 1
    for word in words:
        assert word in lines[-1], (word, lines[-1])
    assert out.stdout == ""
