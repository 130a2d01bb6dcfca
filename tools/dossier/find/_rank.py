"""Ranking for `dossier find`: BM25 over the index's documents, then files by the documents that name them."""

from __future__ import annotations

import math
from functools import lru_cache

K1, B = 1.2, 0.75


def bm25(index: dict, terms: list[str]) -> list[tuple[float, dict]]:
    """Every document that matches a term, best first, with its BM25 score."""
    docs, df, avg = index["docs"], index["df"], index["avg"] or 1.0
    n = len(docs)
    known = [t for t in terms if t in df]
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in known}
    scored = []
    for d in docs:
        s = 0.0
        norm = K1 * (1 - B + B * d["len"] / avg)
        for t in known:
            f = d["tf"].get(t)
            if f:
                s += idf[t] * f * (K1 + 1) / (f + norm)
        if s > 0:
            scored.append((s, d))
    scored.sort(key=lambda x: (-x[0], x[1]["kind"], str(x[1]["id"])))
    return scored


def rank_files(scored: list[tuple[float, dict]]) -> list[tuple[tuple[str, str], float]]:
    """(repo, path) pairs, best first.

    A file's rank: the documents that name it, each by its score, decaying with the
    document's rank and the file's place in it (a card leads with the file its key
    implementation describes first), plus a share of how well the file itself matches
    the query. A playbook entry names the places to look for a whole class of symptoms,
    a card the files of one fix, so an entry's evidence is divided among its files.
    """
    file_score = {(d["repos"][0], d["files"][0]): s for s, d in scored if d["kind"] == "file"}
    files: dict[tuple[str, str], float] = {}
    weight = {"entry": 1.0, "card": 1.0, "file": 0.8}
    for rank, (s, d) in enumerate(scored[:30]):
        share = 1 / len(d["files"]) if d["kind"] == "entry" and d["files"] else 1.0
        for i, (repo, path) in enumerate(zip(d["repos"], d["files"])):
            key = (repo, path)
            own = file_score.get(key, 0.0)
            files[key] = files.get(key, 0.0) + s * weight[d["kind"]] * share * _serving(path) / (1 + rank) * (
                1 / (1 + i) + 0.5 * own / (1 + own))
    return sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))


@lru_cache(maxsize=8192)
def _serving(path: str) -> float:
    """Files to open for a symptom are serving code; tests, docs, CI and examples rank lower."""
    from ..cards import classify_file

    return 1.0 if classify_file(path) == "Runtime" else 0.3
