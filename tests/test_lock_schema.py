"""Lock schema 3 (each hunk's hashes in one string, a compact canonical digest) read beside
schema 2 (a list per hunk, json's default digest): the same excerpts pass and fail with the
same messages, the digest's two writers agree, and a damaged lock matches nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from dossier.evidence import (ENTRY_LEN, SCHEMA, canonical_bytes, hunk_lines, load_lock, lock_digest,
                              write_lock)
from dossier.quotes import _find_packed
from test_evidence_fidelity import EDITED, EXACT, _findings, _replace_excerpt, kb7  # noqa: F401 - kb7 is a fixture

ROOT = Path(__file__).resolve().parents[1]
COMPACT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _as_schema_2(path: Path) -> None:
    """Rewrite a fetched (schema 3) lock as schema 2 would have held it."""
    lock = json.loads(path.read_text(encoding="utf-8"))
    for f in lock["files"]:
        for hunk in f["hunks"]:
            hunk["lines"] = hunk_lines(hunk)
    lock["schema"] = 2
    lock["lock_sha256"] = lock_digest(lock)
    write_lock(path, lock)


def _both_schemas(kb, body):
    """G001 and G004 findings for `body` as the excerpt, on the fetched lock, then on it as schema 2."""
    lock = kb / "references/evidence/sglang/7.json"
    assert json.loads(lock.read_text())["schema"] == SCHEMA == 3
    _replace_excerpt(kb, body, heading_hunk="")
    first = _findings(kb, ["G001", "G004"])
    _as_schema_2(lock)
    assert isinstance(json.loads(lock.read_text())["files"][0]["hunks"][0]["lines"], list)
    return first, _findings(kb, ["G001", "G004"])


@pytest.mark.parametrize("body", EXACT + [b for b, _ in EDITED])
def test_both_schemas_judge_an_excerpt_alike(kb7, body):  # noqa: F811 - the fixture
    three, two = _both_schemas(kb7, body)
    assert three == two
    assert all(f.code == "G001" for f in three)  # both digests hold


def test_an_edited_excerpt_fires_on_both_schemas(kb7):  # noqa: F811
    three, two = _both_schemas(kb7, '     def forward(self, x):\n+        y = x + 1')
    assert [f.code for f in three] == ["G001"] and "sign differs" in three[0].message and three == two


def test_a_hand_edit_of_a_schema_3_lock_fails_its_digest(kb7):  # noqa: F811
    path = kb7 / "references/evidence/sglang/7.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"title": "', '"title": "x', 1), encoding="utf-8")
    assert [f.code for f in _findings(kb7, ["G004"])] == ["G004"]


VALUES = [
    "".join(map(chr, range(0x80))), "\u2028\u2029\x7f\x80\xff", "é😀\ufeff “q” \\ \"", 0, -1, 2 ** 63 - 1, -2 ** 63,
    True, False, None, [], {}, {"b": [1, {"z": None, "a": "x"}], "a": "", "é": 1, "Z": 2, "\x00": 3},
]


@pytest.mark.parametrize("value", VALUES)
def test_orjson_writes_the_compact_canonical_form(value):
    """What a lock holds is written by orjson exactly as json writes the compact form."""
    assert canonical_bytes({"v": value}) == COMPACT.encode({"v": value}).encode("utf-8")


@pytest.mark.parametrize("value", [10 ** 30, "\ud800 lone", ["\udcff"]])
def test_what_orjson_refuses_json_writes(value):
    assert canonical_bytes({"v": value}) == COMPACT.encode({"v": value}).encode("utf-8", "surrogatepass")
    body = {"schema": 3, "pr": 1, "files": [], "title": value}
    expected = hashlib.sha256(COMPACT.encode(body).encode("utf-8", "surrogatepass")).hexdigest()
    assert lock_digest({**body, "lock_sha256": "x"}) == expected


def test_every_shipped_lock_is_schema_3_with_the_same_bytes_from_either_writer():
    paths = sorted((ROOT / "references/evidence").glob("*/*.json"))
    assert len(paths) > 400
    for path in paths:
        lock = load_lock(path)
        assert lock["schema"] == 3, path
        assert all(isinstance(h["lines"], str) and len(h["lines"]) % ENTRY_LEN == 0
                   for f in lock["files"] for h in f["hunks"]), path
        body = {k: v for k, v in lock.items() if k != "lock_sha256"}
        assert canonical_bytes(body) == COMPACT.encode(body).encode("utf-8"), path


def test_a_match_counts_only_on_an_entry_boundary():
    good = "+aaaaaaaaaa bbbbbbbbbb-cccccccccc"
    assert _find_packed(good, " bbbbbbbbbb-cccccccccc", 0) == 1
    assert _find_packed(good, " bbbbbbbbbb", 2) is None  # at or after entry 2
    damaged = "+abc+aaaaaaaaaa"  # a short entry shifts the next one off the boundary
    assert _find_packed(damaged, "+aaaaaaaaaa", 0) is None
    assert "+aaaaaaaaaa" not in hunk_lines({"lines": damaged})  # the list view agrees
    assert _find_packed("+abc+aaaaaaaaaa+aaaaaaaaaa", "+aaaaaaaaaa", 0) is None
    assert _find_packed("+aaaaaaaaaa+abc" + "+aaaaaaaaaa", "+aaaaaaaaaa", 1) is None


def test_hunk_lines_reads_either_schema_and_tolerates_damage():
    assert hunk_lines({"lines": "+aaaaaaaaaa bbbbbbbbbb"}) == ["+aaaaaaaaaa", " bbbbbbbbbb"]
    assert hunk_lines({"lines": ["+a", " b"]}) == ["+a", " b"]
    assert hunk_lines({"lines": None}) == [] and hunk_lines({}) == []


def _as_lists(facts: dict) -> dict:
    return {**facts, "hunks": [{**h, "lines": hunk_lines(h)} for h in facts.get("hunks", [])]}


def test_every_shipped_excerpt_matches_alike_in_both_forms():
    """match_block on each shipped excerpt, as quoted and with a line dropped, swapped or
    re-signed, gives the same problems against a hunk's string as against its list."""
    from dossier.config import load_config
    from dossier.kb import KnowledgeBase
    from dossier.quotes import match_block

    kb = KnowledgeBase(load_config(ROOT))
    cards, _ = kb.loaded
    compared = failing = 0
    for card in cards:
        lock = kb.card_lock(card)
        files = kb.lock_files(lock) if lock else {}
        for ex in card.excerpts:
            facts = files.get(ex.path)
            if facts is None or not ex.lines:
                continue
            lines = list(ex.lines)
            variants = [lines, lines[1:], lines[::-1], [(n, ("-" if t[:1] == "+" else "+") + t[1:]) for n, t in lines]]
            for variant in variants:
                packed = match_block(variant, ex.hunk, facts)
                assert packed == match_block(variant, ex.hunk, _as_lists(facts)), (card.path, variant)
                compared += 1
                failing += bool(packed)
    assert compared > 1000 and failing > 300  # both outcomes, many times
