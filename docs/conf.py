"""Sphinx configuration: the API reference, from the docstrings (autodoc + numpydoc)."""

import inspect
import re
import warnings

from numpydoc.docscrape import NumpyDocString

project = "sparseforge"
author = "the sparseforge authors"
extensions = ["sphinx.ext.autodoc", "numpydoc"]
exclude_patterns = ["_build"]

# Classes are documented through their docstrings' own sections; numpydoc's
# generated member tables and its style checks would only repeat or police them.
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}

html_theme = "alabaster"

# numpydoc drops sections it does not know, such as a block's "Members" (its
# ports). They are taken out before numpydoc reads the docstring and put back
# after it, under a rubric, their "name : type" entries as a definition list.
_KNOWN = set(NumpyDocString.sections)
_LIFTED = {}
_ENTRY = re.compile(r"^(\S[^:]*?) : (.*)$")
warnings.filterwarnings("ignore", message="Unknown section", category=UserWarning)


def _header(lines, i):
    """Whether ``lines[i]`` is a section title, underlined as numpydoc requires."""
    title = lines[i].strip()
    rule = lines[i + 1].strip() if i + 1 < len(lines) else ""
    return bool(title) and set(rule) == {"-"} and len(rule) >= len(title)


def _entries(lines):
    """``name : type`` lines with indented descriptions, as a definition list."""
    out, entry = [], False
    for line in lines:
        match = _ENTRY.match(line)
        if match:
            out += ["", f"``{match[1]}``", f"    {match[2]}", ""]
            entry = True
        elif line[:1] not in ("", " ") and entry:
            if out[-1]:
                out.append("")
            out.append(line)
            entry = False
        else:
            out.append(line)
    return out


def _lift(app, what, name, obj, options, lines):
    kept, lifted = [], []
    out, i = kept, 0
    while i < len(lines):
        if _header(lines, i):
            title = lines[i].strip()
            out = kept if " ".join(w.capitalize() for w in title.split()) in _KNOWN else lifted
            if out is lifted:
                lifted += ["", f".. rubric:: {title}", ""]
                i += 2
                continue
        out.append(lines[i])
        i += 1
    if lifted:
        _LIFTED[name] = _entries(lifted)
        lines[:] = kept


def _restore(app, what, name, obj, options, lines):
    lines.extend(_LIFTED.pop(name, ()))


def _signature(app, what, name, obj, options, signature, return_annotation):
    """A component's constructor parameters, not those of Amaranth's metaclass ``__call__``."""
    if what == "class" and signature and "src_loc_at" in signature:
        init = inspect.signature(obj.__init__)
        params = list(init.parameters.values())[1:]
        return str(init.replace(parameters=params)), return_annotation
    return None


def setup(app):
    app.connect("autodoc-process-signature", _signature)
    app.connect("autodoc-process-docstring", _lift, priority=100)     # numpydoc: 500
    app.connect("autodoc-process-docstring", _restore, priority=900)
