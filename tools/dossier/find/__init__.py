"""`dossier find "<symptom>"`: rank playbook entries, cards and files for a free-text report.

Offline and small: a BM25 index over the playbook (symptom, aliases, knobs, files,
symbols), the cards (title, motivation, implementation, families) and the locks
(paths, symbols), with a synonym table so users' words meet the code's.

    search(load_index(kb), "Qwen3-VL video OOM")  ->  {"files", "top_files", "results", ...}
"""

from __future__ import annotations

from ..errors import DossierError
from ._format import format_text
from ._index import CACHE_NAME, build_index, load_index
from ._rank import bm25, rank_files
from ._text import tokenize

__all__ = ["CACHE_NAME", "build_index", "format_text", "load_index", "rank_files", "search", "tokenize"]


class NoMatch(DossierError):
    """No document shares a word with the query: `dossier find` exits 1, not 2 (a tool error)."""


def search(index: dict, query: str, limit: int = 10) -> dict:
    """The files to open first and the best documents for `query`; bad queries raise one clear line."""
    terms = sorted(set(tokenize(query)))
    if not terms:
        raise DossierError("empty query: describe the symptom, e.g. `dossier find \"Qwen3-VL video OOM\"`")
    if not any(t in index["df"] for t in terms):
        raise NoMatch(f"nothing in the playbook, cards or files matches {query!r}; "
                           "try the model, modality and symptom (e.g. 'video OOM', 'ASR streaming latency')")
    scored = bm25(index, terms)
    top_files = rank_files(scored)
    return {"query": query, "terms": terms,
            "files": [p for (_, p), _ in top_files[:limit]],
            "top_files": [_top(index, r, p, v) for (r, p), v in top_files[:limit]],
            "results": [_result(index, s, d) for s, d in scored[:limit]]}


def _top(index: dict, repo: str, path: str, score: float) -> dict:
    out = {"repo": repo, "path": path, "score": round(score, 3)}
    was = index.get("was", {}).get(f"{repo}:{path}")
    if was:
        out["was"] = was  # "was X; now Y": the file the card's diff touched is gone from the pin
    return out


def _result(index: dict, score: float, d: dict) -> dict:
    # Nested mappings are rebuilt in a fixed key order: the on-disk cache stores them with sorted keys.
    out = {"kind": d["kind"], "id": d["id"], "score": round(score, 3),
           "files": d["files"], "cards": d["cards"], "lanes": d["lanes"]}
    was = d.get("was") or {}  # this document's own moves, never another's
    if was:
        out["was"] = was
    if d["kind"] == "entry":
        syms = d.get("symbols", {})
        out.update(symptom=d["title"], sublane=d.get("sublane"),
                   symbols={f: syms[f] for f in d["files"] if f in syms})
    else:
        out["title"] = d["title"]
    if d.get("measured"):
        m = d["measured"]
        out["measured"] = {"speedup": m["speedup"], "measured": m["measured"], "device": m["device"],
                           "runs": m.get("runs", 1), "noisy": m.get("noisy", []), "modelled": m.get("modelled", [])}
    if d.get("today"):
        t = d["today"]
        out["today"] = {"state": t["state"], "superseded_by": t["superseded_by"], "summary": t.get("summary", "")}
        if t.get("release"):
            out["today"]["release"] = t["release"]
    return out
