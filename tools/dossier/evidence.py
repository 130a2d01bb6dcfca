"""Evidence locks: facts and hashes of a PR's diff, never its code text.

A lock is built the same way whatever the source (git clone, GitHub API, a
saved diff), so `dossier check` cannot tell them apart and needs no network.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import orjson
import unidiff

from . import __version__
from .errors import DossierError
from .fsio import read_text, write_atomic

# Schema 2: line hashes live per hunk, in diff order, and keep leading whitespace,
# so an excerpt can be checked as a contiguous, in-order, exactly indented quotation.
# Schema 3 holds the same hashes, each hunk's as one string (the fixed-width entries
# concatenated), and its lock_sha256 is over compact UTF-8 JSON: a lock is then a few
# thousand strings, not half a million, and reads and hashes several times faster
# (`dossier check` reads every lock). Both schemas are read; locks are written as 3.
SCHEMA = 3
HUNK_SCHEMA = 2  # the first schema with ordered per-hunk hashes, which excerpts need
LINE_HASH_LEN = 10
ENTRY_LEN = LINE_HASH_LEN + 1  # a sign, then the hash
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_SECTION_NAME = re.compile(r"(?:def|class)\s+([A-Za-z_]\w*)")
_ASSIGN = re.compile(r"^([A-Z_][A-Z0-9_]{2,})\s*[:=]")


def line_hash(sign: str, text: str) -> str:
    """Sign plus short hash of one diff line; leading whitespace counts, trailing does not.

    The sign stays readable so `trace --live` can tell added lines from removed ones.
    """
    digest = hashlib.sha256(text.rstrip().encode("utf-8", "surrogateescape"))
    return sign + digest.hexdigest()[:LINE_HASH_LEN]


def hunk_lines(hunk: dict) -> list[str]:
    """A hunk's line hashes in diff order, from either schema's `lines` (a list, or the
    entries concatenated in one string)."""
    lines = hunk.get("lines")
    if isinstance(lines, str):
        return [lines[i:i + ENTRY_LEN] for i in range(0, len(lines), ENTRY_LEN)]
    return lines if isinstance(lines, list) else []


def file_lines(facts: dict) -> list[str]:
    """Every line hash of one file of a lock, in diff order (hunks concatenated)."""
    return [h for hunk in facts.get("hunks", []) for h in hunk_lines(hunk)]


_DEF_INDENT = re.compile(r"^(\s*)(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def defined_names(source: str) -> list[str]:
    """Names a Python file defines: top-level `def`/`class`, and `Class::method` one level in.

    What `dossier check` needs to verify a `tests/x.py::TestY::test_z` reference,
    and nothing of the code itself.
    """
    names, current_class, body_indent = set(), None, None
    for line in source.splitlines():
        m = _DEF_INDENT.match(line)
        if not m:
            continue
        indent, name = len(m.group(1).expandtabs()), m.group(2)
        if indent == 0:
            names.add(name)
            current_class = name if line.lstrip().startswith("class") else None
            body_indent = None
        elif current_class and (body_indent is None or indent == body_indent):
            body_indent = indent
            names.add(f"{current_class}::{name}")
    return sorted(names)


def decode_diff(data: bytes | str) -> tuple[str, bool]:
    """Decode diff bytes; invalid UTF-8 survives as surrogate escapes and is flagged."""
    if isinstance(data, str):
        return data, False
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape"), True


def parse_diff(text: str) -> unidiff.PatchSet:
    try:
        return unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as exc:
        raise DossierError(f"cannot parse diff: {exc}") from None


def _strip_prefix(name: str | None) -> str | None:
    if name is None or name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def _status(pf: unidiff.PatchedFile, info: str) -> str:
    if pf.is_rename:
        return "renamed"
    if pf.is_added_file:
        return "added"
    if pf.is_removed_file:
        return "deleted"
    if "old mode" in info and "new mode" in info and not len(pf) and not pf.is_binary_file:
        return "mode-changed"
    return "modified"


def file_facts(pf: unidiff.PatchedFile) -> dict:
    info = str(pf.patch_info or "")
    old_path = _strip_prefix(pf.source_file)
    new_path = _strip_prefix(pf.target_file)
    path = new_path or old_path or pf.path
    hunks, symbols = [], []
    for hunk in pf:
        header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"
        section = (hunk.section_header or "").strip()
        lines: list[str] = []
        hunks.append({"header": header, "section": section, "lines": lines})
        m = _SECTION_NAME.search(section)
        if m:
            symbols.append(m.group(1))
        for line in hunk:
            value = line.value.rstrip("\r\n")
            sign = line.line_type
            if sign not in "+- ":
                continue  # "\ No newline at end of file"
            lines.append(line_hash(sign, value))
            if sign in "+-":
                m = _DEF.match(value) or _ASSIGN.match(value)
                if m:
                    symbols.append(m.group(1))
    facts = {
        "path": path,
        "status": _status(pf, info),
        "old_path": old_path if pf.is_rename else None,
        "binary": bool(pf.is_binary_file),
        "additions": pf.added,
        "deletions": pf.removed,
        "hunks": hunks,
        "symbols": sorted(set(symbols)),
    }
    if "old mode" in info:
        facts["mode_change"] = True
    return facts


def normalized_diff(patch: unidiff.PatchSet) -> str:
    """Canonical text of a diff: file headers and hunks, no index lines or SHAs."""
    parts = []
    for pf in patch:
        old = _strip_prefix(pf.source_file) or "/dev/null"
        new = _strip_prefix(pf.target_file) or "/dev/null"
        parts.append(f"--- {old}\n+++ {new}\n")
        if pf.is_binary_file:
            parts.append("binary\n")
        for hunk in pf:
            parts.append(f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@\n")
            for line in hunk:
                parts.append(line.line_type + line.value.rstrip("\r\n") + "\n")
    return "".join(parts)


def build_lock(meta: dict, diff: bytes | str, source: dict, repo_name: str, url: str) -> dict:
    """Assemble a lock from PR metadata, raw diff and provenance."""
    text, bad_bytes = decode_diff(diff)
    patch = parse_diff(text) if text.strip() else unidiff.PatchSet("")
    files = [file_facts(pf) for pf in patch]
    for extra in meta.get("file_notes", []) or []:
        for f in files:
            if f["path"] == extra.get("path"):
                f.update({k: v for k, v in extra.items() if k != "path"})
    additions = sum(f["additions"] for f in files)
    deletions = sum(f["deletions"] for f in files)
    lock = {
        "schema": SCHEMA,
        "repo": repo_name,
        "pr": int(meta["pr"]),
        "url": url,
        "title": meta.get("title", ""),
        "state": meta.get("state", "merged"),
        "author": meta.get("author"),
        "created": meta.get("created"),
        "merged": meta.get("merged"),
        "closed": meta.get("closed"),
        "source": {**source, "tool_version": __version__},
        "stats": {
            "files": len(files),
            "additions": additions,
            "deletions": deletions,
            "diff_lines": sum(len(file_lines(f)) for f in files),
        },
        "diff_sha256": hashlib.sha256(
            normalized_diff(patch).encode("utf-8", "surrogateescape")
        ).hexdigest(),
        "non_utf8": bad_bytes,
        "files": files,
    }
    for f in files:
        for hunk in f["hunks"]:
            hunk["lines"] = "".join(hunk["lines"])  # schema 3: one string per hunk
    lock["lock_sha256"] = lock_digest(lock)
    return lock


# Schema 2's canonical form, `json.dumps(body, sort_keys=True)`, with the encoder built once;
# a lock is parsed JSON or built from a diff, never circular, so that check is skipped.
_CANONICAL = json.JSONEncoder(sort_keys=True, check_circular=False)
# Schema 3's: sorted keys, no whitespace, UTF-8. orjson writes it about five times faster
# than json, and the same bytes for everything a lock holds (strings, integers, booleans,
# null, lists, objects; tests/test_lock_schema.py compares them). Where orjson refuses a
# value (an integer past 64 bits, a lone surrogate from a `\\ud800` escape) json writes it.
# No writer puts a float in a lock; a hand-edited one is hashed as orjson writes it.
_COMPACT = json.JSONEncoder(sort_keys=True, check_circular=False, ensure_ascii=False, separators=(",", ":"))


def canonical_bytes(body: dict) -> bytes:
    """Schema 3's canonical JSON of a lock body: sorted keys, no whitespace, UTF-8."""
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return _COMPACT.encode(body).encode("utf-8", "surrogatepass")


def lock_digest(lock: dict) -> str:
    """sha256 of the lock without its own `lock_sha256`: as sorted-key, ASCII-only JSON with
    json's default separators for schema 1 and 2, as `canonical_bytes` from schema 3 on."""
    body = {k: v for k, v in lock.items() if k != "lock_sha256"}
    schema = body.get("schema")
    if isinstance(schema, int) and not isinstance(schema, bool) and schema >= 3:
        return hashlib.sha256(canonical_bytes(body)).hexdigest()
    return hashlib.sha256(_CANONICAL.encode(body).encode()).hexdigest()


def dump_lock(lock: dict) -> str:
    text = json.dumps(lock, indent=1, sort_keys=False, ensure_ascii=False)
    # One line per hunk's hashes keeps locks short and their git diffs readable (a schema 3
    # hunk's are one string already; a schema 2 list is put on one line).
    return re.sub(r'"lines": \[[^\]]*\]', lambda m: '"lines": ' + json.dumps(json.loads(m.group(0)[9:])), text) + "\n"


def write_lock(path: Path, lock: dict) -> None:
    write_atomic(path, dump_lock(lock))


def load_lock(path: Path) -> dict:
    return parse_lock(read_text(path), path)


def parse_lock(text: str, path: Path) -> dict:
    """A lock from the text of `path`, or one DossierError line saying why it is none."""
    try:
        lock = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DossierError(f"{path}: broken JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(lock, dict) or "files" not in lock or "pr" not in lock:
        raise DossierError(f"{path}: not an evidence lock (no 'pr' or 'files')")
    return lock


def file_index(lock: dict) -> dict[str, dict]:
    """Files by path, renamed files also by their old path."""
    out = {}
    for f in lock.get("files", []):
        out[f["path"]] = f
        if f.get("old_path"):
            out.setdefault(f["old_path"], f)
    return out
