"""Locks read by orjson from their bytes (evidence.parse_lock_fast) give the lock json gives,
and every input it is not sure of takes the exact old path: the same lock or the same error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dossier.config import load_config
from dossier.errors import DossierError
from dossier.evidence import parse_lock, parse_lock_fast
from dossier.kb import KnowledgeBase

LOCK = {"schema": 3, "pr": 7, "title": "é — 😀", "files": [{"path": "a.py", "hunks": [{"lines": "+0123456789"}]}],
        "stats": {"additions": 1, "deletions": 0}, "test_symbols": {"t.py": ["test_x"]}, "float": 1.5, "neg": -0.0}


def _old(data: bytes):
    """What lock_for gave before the fast path: strict UTF-8 text, then parse_lock."""
    try:
        return parse_lock(data.decode("utf-8"), Path("x.json"))
    except (UnicodeDecodeError, DossierError) as exc:
        return type(exc).__name__


@pytest.mark.parametrize("data", [
    json.dumps(LOCK, indent=1, ensure_ascii=False).encode() + b"\n",  # as dump_lock writes it
    json.dumps(LOCK).encode(),  # \u escapes, surrogate pairs
    b'{"pr": 1, "files": [], "pr": 2}',  # a repeated key: the last one, in the first one's place
    b' {"pr": 1, "files": [], "x": [1e5, 1E-3, 999999999999999999, -999999999999999999]}\r\n',
])
def test_fast_path_taken_gives_the_lock_json_gives(data):
    fast = parse_lock_fast(data)
    assert fast is not None
    assert fast == _old(data) and list(fast) == list(_old(data))
    assert json.dumps(fast) == json.dumps(_old(data))  # floats, ints and key order alike


@pytest.mark.parametrize("data", [
    b'{"pr": 1, "files": [], "big": 18446744073709551616}',  # orjson: a float; json: an int
    b'{"pr": 1, "files": [], "big": -9223372036854775809}', b'{"pr": 1, "files": [], "n": 1234567890123456789}',
    b'{"pr": 1, "files": [], "sha": "1234567890123456789a"}',  # a long digit run in a string: json reads it
    b'{"pr": 1, "files": [], "x": NaN}', b'{"pr": 1, "files": [], "x": 1e400}', b'{"pr": 1, "files": [], "x": "\\ud800"}',
    b'\xef\xbb\xbf{"pr": 1, "files": []}', b'{"pr": 1, "files": [], "x": "\xff"}', b'{"pr": 1, "files": [], "x": "\xed\xa0\x80"}',
    b'{"pr": 1, "files": [' + b"[" * 2000 + b"]" * 2000 + b"]}", b'{"pr": 1}', b'[1, 2]', b'{"pr": 1, "files": [],}', b"",
])
def test_fallback_taken_where_orjson_may_differ_or_fails(data):
    assert parse_lock_fast(data) is None


def test_lock_for_takes_either_path_with_the_old_answer(tmp_path):
    (tmp_path / "dossier.toml").write_text('[repos.sglang]\nupstream = "sgl-project/sglang"\n')
    folder = tmp_path / "references/evidence/sglang"
    folder.mkdir(parents=True)
    files = {1: json.dumps(LOCK).encode(), 2: b'{"pr": 2, "files": [], "n": 123456789012345678901234}',
             3: b'{"pr": 3, "files": [}', 4: b'{"pr": 4, "files": [], "t": "\xff"}', 5: b'{"files": []}'}
    for pr, data in files.items():
        (folder / f"{pr}.json").write_bytes(data)
    ctx = KnowledgeBase(load_config(tmp_path))
    got = {pr: ctx.lock_for("sglang", pr) for pr in files}
    assert got[1] == (LOCK, None) and got[2][0]["n"] == 123456789012345678901234  # fast, then json's int
    assert got[3][0] is None and "broken JSON at line 1" in got[3][1]
    assert got[4][0] is None and "UTF-8" in got[4][1]
    assert got[5] == (None, f"{folder / '5.json'}: not an evidence lock (no 'pr' or 'files')")
    # B001 hashes what lock_for read: the bytes on the fast path, the text on the other.
    assert isinstance(ctx.lock_texts[folder / "1.json"], bytes) and isinstance(ctx.lock_texts[folder / "2.json"], str)
