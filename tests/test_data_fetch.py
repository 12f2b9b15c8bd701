"""``sparseforge data fetch`` against a file server on 127.0.0.1; never a real host."""

import csv
import functools
import hashlib
import http.server
import json
import re
import threading

import pytest

from sparseforge.cli import main
from sparseforge.core import data

SMALL = b"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 2 -3\n"
TENSOR = b"1 1 1 2\n2 1 3 5\n"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A base URL serving ``tmp_path/www``: ``small.mtx`` and ``copy/tensors/t.tns``."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    www = tmp_path / "www"
    (www / "copy" / "tensors").mkdir(parents=True)
    (www / "small.mtx").write_bytes(SMALL)
    (www / "copy" / "tensors" / "t.tns").write_bytes(TENSOR)
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def write_manifest(path, rows):
    with open(path, "w", newline="") as file:
        out = csv.writer(file)
        out.writerow(["path", "sha256", "bytes", "verbatim", "url", "member"])
        out.writerows(rows)
    return path


def sha(content):
    return hashlib.sha256(content).hexdigest()


def run(capsys, *args):
    """``sparseforge ARGS`` in this process: (exit code, stdout, stderr)."""
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def manifest(tmp_path, server):
    return write_manifest(tmp_path / "manifest.csv", [
        ["matrices/small.mtx", sha(SMALL), len(SMALL), "yes", f"{server}/small.mtx", ""],
        ["tensors/t.tns", sha(TENSOR), len(TENSOR), "no", f"{server}/ratings.csv", ""],
    ])


def test_fetches_verbatim_files_and_lists_converted_ones(capsys, tmp_path, manifest):
    dest = tmp_path / "data"
    code, out, err = run(capsys, "data", "fetch", "--dest", dest, "--manifest", manifest, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["fetched"], result["present"], result["needs_mirror"]) == (1, 0, 1)
    assert result["needs_mirror_files"] == ["tensors/t.tns"]
    assert (dest / "matrices" / "small.mtx").read_bytes() == SMALL
    assert not (dest / "tensors" / "t.tns").exists()
    assert data.is_partial(dest)

    code, out, err = run(capsys, "data", "fetch", "--dest", dest, "--manifest", manifest)
    assert code == 0, err
    assert "0 fetched, 1 already present, 1 need --mirror" in out


def test_mirror_brings_converted_files(capsys, tmp_path, server, manifest):
    dest = tmp_path / "data"
    code, out, err = run(capsys, "data", "fetch", "--dest", dest, "--manifest", manifest,
                         "--mirror", f"{server}/copy", "--only", "tensors", "--json")
    assert code == 0, err
    assert json.loads(out)["fetched"] == 1
    assert (dest / "tensors" / "t.tns").read_bytes() == TENSOR
    assert not (dest / "matrices").exists()


def test_a_wrong_hash_fails_in_one_line_and_keeps_nothing(capsys, tmp_path, server):
    manifest = write_manifest(tmp_path / "m.csv", [
        ["matrices/small.mtx", sha(b"something else"), len(SMALL), "yes", f"{server}/small.mtx",
         ""]])
    dest = tmp_path / "data"
    code, _out, err = run(capsys, "data", "fetch", "--dest", dest, "--manifest", manifest)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: matrices/small.mtx")
    assert "SHA-256" in err and "Traceback" not in err
    assert list((dest / "matrices").iterdir()) == []


@pytest.mark.parametrize("url, words", [
    ("{server}/missing.mtx", ["HTTP 404", "missing.mtx"]),
    ("http://127.0.0.1:1/small.mtx", ["cannot download", "127.0.0.1:1"]),
])
def test_an_unreachable_file_fails_in_one_line(capsys, tmp_path, server, url, words):
    manifest = write_manifest(tmp_path / "m.csv", [
        ["small.mtx", sha(SMALL), len(SMALL), "yes", url.format(server=server), ""]])
    code, _out, err = run(capsys, "data", "fetch", "--dest", tmp_path / "d", "--manifest",
                         manifest, "--timeout", 5)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert all(word in err for word in words), err


@pytest.mark.parametrize("args, words", [
    (["--only", "nosuch.mtx"], ["--only nosuch.mtx", "manifest"]),
    (["--timeout", "0"], ["--timeout"]),
    (["--manifest", "{tmp}/absent.csv"], ["--manifest", "absent.csv"]),
    (["--manifest", "{tmp}/bad.csv"], ["bad.csv", "not a data manifest"]),
])
def test_refuses_bad_options(capsys, tmp_path, args, words):
    (tmp_path / "bad.csv").write_text("name,size\nx,1\n")
    args = [a.format(tmp=tmp_path) for a in args]
    code, _out, err = run(capsys, "data", "fetch", "--dest", tmp_path / "d", *args)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert all(word in err for word in words), err


def test_tests_find_the_fetched_data(capsys, tmp_path, monkeypatch, server, manifest):
    """Without ../shared/data or SPARSEFORGE_DATA, the default fetch folder is the data folder."""
    monkeypatch.delenv("SPARSEFORGE_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(data, "REPO_ROOT", tmp_path / "clone")
    assert data.shared_data_dir() is None
    code, _out, err = run(capsys, "data", "fetch", "--manifest", manifest)
    assert code == 0, err
    assert data.shared_data_dir() == data.cache_dir()
    assert data.cache_dir().is_relative_to(tmp_path / "cache")
    assert (data.shared_data_dir() / "matrices" / "small.mtx").read_bytes() == SMALL
    monkeypatch.setenv("SPARSEFORGE_DATA", str(tmp_path / "elsewhere"))
    assert data.shared_data_dir() is None


def test_the_collection_index_ships_in_the_package(capsys, tmp_path):
    dest = tmp_path / "data"
    code, _out, err = run(capsys, "data", "fetch", "--dest", dest, "--only", "MANIFEST_tensors.csv",
                         "--only", "SOURCES.tsv")
    assert code == 0, err
    assert (dest / "MANIFEST_tensors.csv").read_text().startswith("file,order,dims")


def test_the_shipped_manifest_names_each_file_once_with_a_pinned_source():
    entries = data.manifest()
    assert len({e.path for e in entries}) == len(entries) > 500
    for entry in entries:
        assert re.fullmatch(r"[0-9a-f]{64}", entry.sha256), entry
        if entry.verbatim:
            assert re.fullmatch(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/"
                                r"\S+", entry.url), entry
    assert sum(e.verbatim for e in entries) >= 70


def test_the_shipped_manifest_matches_the_shared_folder(shared_data):
    if data.is_partial(shared_data):
        pytest.skip("the data folder is a fetched copy, not the shared collection")
    for entry in data.manifest():
        path = shared_data / entry.path
        assert path.stat().st_size == entry.size, entry.path
        assert data.sha256(path) == entry.sha256, entry.path


def test_any_selection_brings_the_index_and_names_match_by_their_tail(capsys, tmp_path):
    """``--only pypi/nx_karate_club.mtx`` as the tests name it; the collection's index comes
    too (the tests read it), the converted matrix is listed as needing --mirror."""
    dest = tmp_path / "data"
    code, out, err = run(capsys, "data", "fetch", "--dest", dest, "--only",
                         "pypi/nx_karate_club.mtx", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["needs_mirror_files"] == ["matrices/pypi/nx_karate_club.mtx"]
    assert result["fetched"] == 4 and (dest / "MANIFEST_matrices.csv").is_file()
