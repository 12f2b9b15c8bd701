"""A Tailor's generated Verilog inside a hand-written Verilog top, simulated on Verilator.

Generates the Tailor (depth 8, FIFO region 2, tiles up to 16) with
:func:`sparseforge.core.export.verilog_text` (the same Verilog as
``sparseforge generate tailor -p depth=8 -p width=8 -p fifo=2 -p tile=16``),
lints it with ``top.v`` under ``verilator --lint-only -Wall``, builds
``tb.cpp`` around them and runs it: three 12-byte tiles, each overbooking the
buffer, must come back in order. The testbench prints PASS or FAIL.

Run: python examples/tailor_verilog_top/run.py [BUILD_DIR]
"""

import subprocess
import sys
import tempfile
from pathlib import Path

from sparseforge.core.export import verilog_text
from sparseforge.core.tools import verilator_on_path

HERE = Path(__file__).resolve().parent
PARAMS = {"depth": 8, "width": 8, "fifo": 2, "tile": 16}


def main(folder):
    folder = Path(folder)
    text, _ = verilog_text("tailor", PARAMS)
    (folder / "tailor.v").write_text(text)
    sources = [str(HERE / "top.v"), str(folder / "tailor.v")]
    verilator = verilator_on_path()

    lint = subprocess.run([verilator, "--lint-only", "-Wall", "--top-module", "top", *sources],
                          capture_output=True, text=True)
    if lint.returncode:
        sys.exit(f"lint failed:\n{lint.stdout}{lint.stderr}")
    print("lint: clean (verilator --lint-only -Wall)")

    print("building the testbench with Verilator...", file=sys.stderr, flush=True)
    build = subprocess.run([verilator, "--cc", "--exe", "--build", "-j", "2", "--top-module",
                            "top", "--Mdir", str(folder / "obj"), "-o", "tb", *sources,
                            str(HERE / "tb.cpp")], capture_output=True, text=True)
    if build.returncode:
        sys.exit(f"build failed:\n{(build.stdout + build.stderr)[-3000:]}")
    run = subprocess.run([str(folder / "obj" / "tb")], capture_output=True, text=True)
    print(run.stdout, end="")
    return run.returncode


if __name__ == "__main__":
    if len(sys.argv) > 1:
        Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
        sys.exit(main(sys.argv[1]))
    with tempfile.TemporaryDirectory(prefix="tailor-top-") as scratch:
        sys.exit(main(scratch))
