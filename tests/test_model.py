"""The shared model: the one YAML reader, the one on-disk cache, and the knowledge base reading each input once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from dossier.cache import DiskCache, content_key
from dossier.config import load_config
from dossier.errors import DossierError
from dossier.kb import KnowledgeBase
from dossier.yamlio import LinedList, LinedMap, YamlError, line_of, parse_yaml, read_yaml

ROOT = Path(__file__).resolve().parents[1]


# --- yamlio ---------------------------------------------------------------------------


def test_mappings_and_lists_carry_their_lines():
    data = parse_yaml("a: 1\nb:\n  - x\n  - y: 2\n    z: [1, 2]\n", "f.yaml")
    assert data == {"a": 1, "b": ["x", {"y": 2, "z": [1, 2]}]}
    assert isinstance(data, LinedMap) and isinstance(data["b"], LinedList)
    assert data.key_lines == {"a": 1, "b": 2}
    assert line_of(data, "b", 1) == 4 and line_of(data["b"][1], "z") == 5
    assert line_of(data["b"], index=0) == 3
    assert line_of(data, "missing") == data.line == 1
    assert line_of("not a node") == 1


def test_first_line_offsets_frontmatter_lines():
    data = parse_yaml("repo: sglang\npr: 7\n", "card.md", first_line=2)
    assert data.key_lines == {"repo": 2, "pr": 3}


def test_spans_let_an_editor_rewrite_one_value():
    text = "items:\n  - id: a\n    state: open\n"
    item = parse_yaml(text)["items"][0]
    start, end, column = item.spans["state"]
    assert text[start:end] == "open" and column == 4


@pytest.mark.parametrize("text, line, col, words", [
    ("a: [1\nb: 2\n", 2, 2, "expected ',' or ']'"),
    ("? [1]\n: 2\n", 1, 3, "unhashable key"),
    ("a: 1\n  b: 2\n", 2, 4, "mapping values are not allowed"),
])
def test_invalid_yaml_is_one_error_line_with_its_position(text, line, col, words):
    with pytest.raises(YamlError) as info:
        parse_yaml(text, "broken.yaml", first_line=1)
    err = info.value
    assert (err.line, err.col) == (line, col) and words in err.problem
    assert str(err).startswith(f"broken.yaml:{line}:{col}: invalid YAML: ") and "\n" not in str(err)


def test_read_yaml_reports_unreadable_files_as_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: \xff\n")
    with pytest.raises(DossierError, match="not valid UTF-8"):
        read_yaml(bad)
    with pytest.raises(DossierError, match="no such file"):
        read_yaml(tmp_path / "absent.yaml")


def test_what_was_read_dumps_as_plain_yaml():
    data = parse_yaml("a: [1, {b: 2}]\n")
    assert yaml.safe_dump(data) == "a:\n- 1\n- b: 2\n"


# --- cache ----------------------------------------------------------------------------


def test_content_key_follows_bytes_not_timestamps(tmp_path):
    f = tmp_path / "input.txt"
    f.write_text("one")
    first = content_key("rule", f)
    os.utime(f, (1, 1))
    assert content_key("rule", f) == first
    f.write_text("two")
    assert content_key("rule", f) != first
    f.unlink()
    assert content_key("rule", f) not in (first, content_key("rule", "two"))
    assert content_key("a", "bc") != content_key("ab", "c")


def test_disk_cache_persists_keeps_only_live_keys_and_survives_damage(tmp_path):
    cache = DiskCache(tmp_path, "demo")
    cache.put("k1", [True, "ok"])
    cache.put("k2", {"n": 1})
    cache.save()
    again = DiskCache(tmp_path, "demo")
    assert again.get("k1") == [True, "ok"] and again.get("k2") == {"n": 1}
    again.save(keep={"k2"})
    assert DiskCache(tmp_path, "demo").get("k1") is None
    (tmp_path / ".dossier-cache" / "demo.json").write_text("{broken")
    assert DiskCache(tmp_path, "demo").get("k2") is None  # damaged: computed again, no traceback


def test_disk_cache_on_a_read_only_tree_still_answers(tmp_path):
    (tmp_path / ".dossier-cache").mkdir()
    os.chmod(tmp_path / ".dossier-cache", 0o500)
    try:
        cache = DiskCache(tmp_path, "demo")
        cache.put("k", 1)
        cache.save()  # cannot write: ignored
        assert cache.get("k") == 1
    finally:
        os.chmod(tmp_path / ".dossier-cache", 0o700)


# --- the knowledge base ---------------------------------------------------------------


def test_each_input_is_parsed_once_per_run(monkeypatch):
    from dossier import playbook, radar, lanes

    calls = {"playbook": 0, "radar": 0, "lanes": 0}
    real = (playbook.load, radar.load, lanes.read_registry)

    def counting(name, func):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return func(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(playbook, "load", counting("playbook", real[0]))
    monkeypatch.setattr(radar, "load", counting("radar", real[1]))
    monkeypatch.setattr(lanes, "read_registry", counting("lanes", real[2]))
    kb = KnowledgeBase(load_config(ROOT))
    for _ in range(3):
        assert kb.playbook.entries and kb.playbook_ids and kb.radar.items and kb.lanes and kb.lane_registry
    assert calls == {"playbook": 1, "radar": 1, "lanes": 1}


def test_no_rule_reaches_into_commands_or_caches_on_objects():
    rules = sorted((ROOT / "tools/dossier/rules").glob("*.py"))
    for path in rules:
        text = path.read_text(encoding="utf-8")
        assert "__dict__" not in text, path.name
        assert "import click" not in text and "from ..cli" not in text, path.name
    outside = [p for p in (ROOT / "tools/dossier").rglob("*.py") if "cli" not in p.relative_to(ROOT / "tools/dossier").parts]
    assert [p.name for p in outside if "import click" in p.read_text(encoding="utf-8")] == []


def test_yaml_is_parsed_in_one_module_and_modules_stay_short():
    package = ROOT / "tools/dossier"
    parsers = [p.relative_to(package).as_posix() for p in package.rglob("*.py")
               if any(call in p.read_text(encoding="utf-8") for call in ("yaml.load(", "yaml.safe_load(", "yaml.compose("))]
    assert parsers == ["yamlio.py"]
    long = {p.relative_to(package).as_posix(): n for p in package.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}
