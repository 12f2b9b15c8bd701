"""Each layer imports only what it may: data flows ``sw`` -> ``sim``/``tb`` -> ``hw``.

The imports of every module are read from its source (relative ones resolved),
so a new module that breaks the layering fails here, not in review.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"hw": "sparseforge.hw", "sw": "sparseforge.sw", "sim": "sparseforge.sim",
           "tb": "sparseforge.tb", "synth": "sparseforge.synth", "sparseforge": "sparseforge"}

# The roof: the command line and what only it uses. Nothing below imports it.
ROOF = ("sparseforge.cli", "sparseforge.commands", "sparseforge.bench", "sparseforge.run",
        "sparseforge.sweep", "sparseforge.board", "tests")
# What each layer must not import (prefixes of absolute module names).
FORBIDDEN = {
    # The ground floor (errors, parameters, registry, tools, export) stands on nothing of
    # ours; every layer above may use it.
    "sparseforge.core": ("sparseforge.hw", "sparseforge.sw", "sparseforge.sim",
                         "sparseforge.tb", "sparseforge.synth", *ROOF),
    "sparseforge.hw": ("sparseforge.sim", "sparseforge.tb", "sparseforge.synth", "scipy",
                       *ROOF),
    "sparseforge.sw": ("amaranth", "sparseforge.hw", "sparseforge.sim", "sparseforge.tb",
                       "sparseforge.synth", *ROOF),
    "sparseforge.sim.models": ("amaranth", "sparseforge.hw", "sparseforge.tb", *ROOF),
    "sparseforge.sim": ("sparseforge.tb", "sparseforge.synth", *ROOF),
    "sparseforge.tb": ("sparseforge.synth", *ROOF),
    "sparseforge.synth": ("sparseforge.sim", "sparseforge.tb", *ROOF),
}
# The wire formats and codes every layer derives from stay numpy-only, so hardware and
# models that take their encodings from them never pull in scipy.
FORBIDDEN["sparseforge.sw.wire"] = (*FORBIDDEN["sparseforge.sw"], "scipy")


def modules():
    """``(dotted name, path)`` of every module of the distribution."""
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def imports(name, path):
    """Absolute names of everything the module at ``path`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def layer(name):
    """The most specific layer in :data:`FORBIDDEN` that ``name`` belongs to."""
    owners = [p for p in FORBIDDEN if name == p or name.startswith(p + ".")]
    return max(owners, key=len, default=None)


CASES = [(name, path) for name, path in modules() if layer(name)]


@pytest.mark.parametrize("name, path", CASES, ids=[name for name, _ in CASES])
def test_module_imports_respect_its_layer(name, path):
    forbidden = FORBIDDEN[layer(name)]
    bad = sorted({i for i in imports(name, path)
                  if any(i == f or i.startswith(f + ".") for f in forbidden)})
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def scipy_after(code):
    """The scipy modules loaded once ``code`` has run in a fresh interpreter."""
    code += "\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def test_elaborating_every_block_pulls_in_no_scipy():
    assert scipy_after("from sparseforge.core.registry import blocks\n"
                       "for b in blocks().values():\n"
                       "    b.build().elaborate(None)") == "[]"


def test_importing_every_behavioural_model_pulls_in_no_scipy():
    # The models are the specifications hardware is checked against: numpy only.
    assert scipy_after("import importlib, pkgutil\n"
                       "import sparseforge.sim.models as models\n"
                       "for info in pkgutil.iter_modules(models.__path__):\n"
                       "    importlib.import_module(f'{models.__name__}.{info.name}')") == "[]"


INTERFACES = ROOT / "hw" / "interfaces.py"
# The Buffet and Tailor ports, which any design that embeds a buffer speaks (examples/),
# though in hw/ only the buffer itself declares them whole.
WHOLE_PORTS = {"BuffetSignature", "TailorSignature", "TailorParentSignature"}


def interface_users():
    """``{name: hw modules that use it}`` for each public name ``hw/interfaces.py`` defines;
    a name that another name there is built from counts that name's users too."""
    tree = ast.parse(INTERFACES.read_text())
    defined = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            defined[node.name] = node
        elif isinstance(node, ast.Assign):
            defined.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
    users = {name: set() for name in defined}
    prefix = "sparseforge.hw.interfaces."
    for name, path in modules():
        if name.startswith("sparseforge.hw.") and path != INTERFACES:
            for target in imports(name, path):
                if target.startswith(prefix) and target[len(prefix):] in users:
                    users[target[len(prefix):]].add(name)
    parts = {name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & users.keys()
             - {name} for name, node in defined.items()}
    changed = True
    while changed:
        changed = False
        for name, used in parts.items():
            for part in used:
                if not users[name] <= users[part]:
                    users[part] |= users[name]
                    changed = True
    return {name: found for name, found in users.items() if not name.startswith("_")}


def test_interfaces_hold_only_what_two_blocks_speak():
    users = interface_users()
    alone = sorted(name for name, found in users.items()
                   if len(found) < 2 and name not in WHOLE_PORTS)
    assert not alone, (f"used by one hw module, so it belongs beside that block: "
                       f"{ {name: sorted(users[name]) for name in alone} }")
