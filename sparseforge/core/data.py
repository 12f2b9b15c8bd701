"""Where the real data sets live, and how to fetch them.

The shared collection of real sparse matrices and tensors sits beside the
repository (``../shared/data``); ``SPARSEFORGE_DATA`` overrides that. Where
neither exists, the folder ``sparseforge data fetch`` fills (the user cache,
:func:`cache_dir`) is used. A small real matrix ships inside the package so
the demo runs on any machine.

``datasets/data_manifest.csv`` lists every file of the collection: its path in
the folder, its SHA-256 and size, the public source it came from (a raw-file
URL pinned to a commit, a package release or an archive, with the ``member``
inside it), and ``verbatim``: ``yes`` where the file is byte for byte the one
at that URL (checked against the source repository at the pinned commit),
``no`` where it was converted from it (Matrix Market header added, a graph
format rewritten, a tensor built from ratings). Verbatim files are fetched
from their public URL; converted ones need ``--mirror``, a server holding a
copy of the folder. The collection's index files (``MANIFEST_*.csv``,
``SOURCES.tsv``) ship in the package as ``datasets/collection_*`` and are
copied.
"""

import csv
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .errors import SparseforgeError

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFEST = "data_manifest.csv"


class DataError(SparseforgeError):
    """A data file could not be fetched, or is not the file the manifest names."""


@dataclass(frozen=True)
class Entry:
    """One file of the data collection, as the manifest lists it."""

    path: str           # relative to the data folder, '/'-separated
    sha256: str
    size: int
    verbatim: bool      # the file is the one at ``url``, byte for byte
    url: str            # public source: the file itself, or what it was converted from
    member: str         # the part of ``url`` it came from (archive member, package file)


def cache_dir():
    """The folder ``sparseforge data fetch`` fills by default (the user cache)."""
    import pooch

    return Path(pooch.os_cache("sparseforge")) / "data"


def shared_data_dir():
    """The real-data folder, or ``None`` where there is none.

    ``SPARSEFORGE_DATA`` when set; otherwise ``../shared/data`` beside the
    repository; otherwise the fetched copy in :func:`cache_dir`.
    """
    env = os.environ.get("SPARSEFORGE_DATA")
    if env:
        path = Path(env)
        return path if path.is_dir() else None
    for path in (REPO_ROOT.parent / "shared" / "data", cache_dir()):
        if path.is_dir():
            return path
    return None


def is_partial(root):
    """Whether ``root`` is a fetched folder (which may hold only part of the collection)."""
    return (Path(root) / FETCHED).is_file()


FETCHED = ".sparseforge-fetched"     # written by fetch() into the folder it fills


def manifest(path=None):
    """The manifest's entries (the shipped one, or the CSV at ``path``)."""
    source = Path(path) if path else Path(str(resources.files("sparseforge.datasets") / MANIFEST))
    try:
        with open(source, newline="") as file:
            rows = list(csv.DictReader(file))
        return [Entry(r["path"], r["sha256"].lower(), int(r["bytes"]), r["verbatim"] == "yes",
                      r["url"], r.get("member") or "") for r in rows]
    except (KeyError, ValueError, TypeError) as exc:
        raise DataError(f"{source}: not a data manifest ({exc})") from None


def select(entries, names):
    """The entries matching any of ``names``: a path in the folder, its tail (a file name,
    ``suitesparse/494_bus.mtx``) or a folder (``matrices/suitesparse``, ``suitesparse``)."""
    if not names:
        return list(entries)
    chosen, unknown = [], []
    for name in names:
        key = name.strip("/")
        hits = [e for e in entries if e.path == key or e.path.endswith("/" + key)
                or e.path.startswith(key + "/") or f"/{key}/" in e.path]
        (chosen.extend(hits) if hits else unknown.append(name))
    if unknown:
        raise DataError(f"--only {unknown[0]}: no such file or folder in the data manifest")
    seen = set()
    return [e for e in chosen if not (e.path in seen or seen.add(e.path))]


def sha256(path):
    """The SHA-256 of the file at ``path`` (hex)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(entries, dest, mirror=None, timeout=60):
    """Download ``entries`` into ``dest``, each checked against its SHA-256.

    Verbatim files come from their public URL, or from ``mirror`` (a base URL
    laid out as the data folder) when given; converted files only from
    ``mirror``. A file already present with the right hash is kept. Returns
    ``{path: "fetched" | "present" | "needs --mirror"}``; raises
    :class:`DataError` on the first file that cannot be downloaded or whose
    hash differs (nothing is left under its name).
    """
    import pooch
    import requests

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / FETCHED).touch()
    downloader = pooch.HTTPDownloader(progressbar=False, timeout=timeout)
    status = {}
    for entry in entries:
        target = dest / entry.path
        if target.is_file() and sha256(target) == entry.sha256:
            status[entry.path] = "present"
            continue
        shipped = bundled(f"collection_{entry.path}")
        if not entry.url and "/" not in entry.path and shipped.is_file():
            _copy_checked(shipped, target, entry)        # the collection's own index
            status[entry.path] = "fetched"
            continue
        if mirror:
            url = f"{mirror.rstrip('/')}/{entry.path}"
        elif entry.verbatim:
            url = entry.url
        else:
            status[entry.path] = "needs --mirror"
            continue
        try:
            pooch.retrieve(url, known_hash=f"sha256:{entry.sha256}", fname=target.name,
                           path=target.parent, downloader=downloader, progressbar=False)
        except ValueError as exc:
            if "hash" not in str(exc).lower():
                raise DataError(f"{entry.path}: {exc}") from None
            raise DataError(f"{entry.path}: the file at {url} does not have the manifest's "
                            f"SHA-256 {entry.sha256[:16]}...; nothing was kept") from None
        except requests.exceptions.RequestException as exc:
            raise DataError(f"{entry.path}: cannot download {url}: "
                            f"{_reason(exc)}") from None
        status[entry.path] = "fetched"
    return status


def _copy_checked(source, target, entry):
    import shutil

    if sha256(source) != entry.sha256:
        raise DataError(f"{entry.path}: the copy shipped in the package does not have the "
                        f"manifest's SHA-256 {entry.sha256[:16]}...")
    shutil.copyfile(source, target)


def _reason(exc):
    response = getattr(exc, "response", None)
    if response is not None:
        return f"HTTP {response.status_code}"
    return type(exc).__name__


def bundled(name):
    """Path of a data file shipped inside the package (``sparseforge/datasets``)."""
    return Path(str(resources.files("sparseforge.datasets") / name))
