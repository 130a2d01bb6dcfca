"""The `dossier find` index: one BM25 document per playbook entry, card and file, cached on disk.

Entries weigh their symptom and aliases, cards their title, motivation and key
implementation, files their path, symbols and the titles of the cards and entries
that name them. The index is kept in the one on-disk cache, keyed by the content of
every input and of this package, so any edit rebuilds it and a bare `touch` does not.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from ..cache import DiskCache, content_key
from ._text import tokenize

CACHE_NAME = "find-index"


def _inputs(config) -> list[Path]:
    from ..playbook import playbook_files

    refs = config.references_dir
    paths = list(playbook_files(config.root))
    paths += sorted(config.cards_dir.glob("*/*.md"))
    paths += sorted(config.evidence_dir.glob("*/*.json"))
    paths += sorted((refs / "trees").glob("*.symbols.json")) + sorted((refs / "trees").glob("*.txt"))
    paths += sorted((refs / "measurements").glob("*/*.json"))
    paths += [p for p in [refs / "supersession.json", config.playbook_dir / "lanes.yaml"] if p.exists()]
    paths += sorted((refs / "trees").glob("*-release.json"))
    # The code and the synonym table shape the index too: a new ranking rebuilds it.
    here = Path(__file__).parent
    return paths + sorted(here.glob("*.py")) + sorted(here.glob("*.yaml"))


def _doc(kind, did, weighted: list[tuple[str, int]], **payload) -> dict:
    tf: Counter = Counter()
    for text, weight in weighted:
        for tok in tokenize(text):
            tf[tok] += weight
    return {"kind": kind, "id": did, "tf": dict(tf), "len": sum(tf.values()), **payload}


def _path_words(path: str) -> str:
    return path.replace("/", " ").replace("_", " ").replace(".", " ")


def _mention_order(text: str, paths: list[str]) -> list[str]:
    """The paths `text` names, in the order it first names them.

    Prose names a file by its full path or by a tail of it (`realtime/session.py`,
    `streaming_asr.py`); paths named at the same spot keep their order in `paths`.
    """
    first: dict[str, int] = {}
    for path in paths:
        parts = path.split("/")
        for tail in ("/".join(parts[i:]) for i in range(len(parts))):
            m = re.search(r"(?<![\w/.-])" + re.escape(tail) + r"(?!\w)", text)
            if m:
                first[path] = m.start()
                break
    return sorted(first, key=first.get)


def _today(sup, entry: dict | None, release: dict | None = None) -> dict | None:
    """A card's state at the pinned SHA and who superseded it, and its state in the newest release."""
    from .. import release as rel

    if not entry and not release:
        return None
    entry = entry or {"state": "not computed"}
    out = {"state": entry["state"], "superseded_by": [sup.label(e) for e in sup.significant(entry)],
           "summary": sup.summary(entry) if "added" in entry else entry["state"]}
    if release:
        out["release"] = rel.phrase(release)
    return out


class _Places:
    """Where a file a card or entry names stands at the pin: there, moved (was X; now Y), or absent (dropped)."""

    def __init__(self, kb, supersession):
        from .. import supersede as sup
        from ..trees import load_paths

        self.listed = load_paths(kb.root)
        self.moves = {repo: sup.moved_files(supersession, repo) for repo in self.listed}
        self.was: dict[str, str] = {}  # "repo:new path" -> the old path it replaces
        self.direct: set[str] = set()  # "repo:path" that some document names as it stands at the pin

    def now(self, repo, path: str, collect: dict | None = None) -> str | None:
        """The path at the pin; `collect` gathers this document's own moves (new -> old), so a
        document that names the new path itself never shows it as "was X"."""
        from ..trees import absent_at_pin

        if not absent_at_pin(self.listed, repo, path):
            self.direct.add(f"{repo}:{path}")
            return path
        new = self.moves.get(repo, {}).get(path)
        if new and not absent_at_pin(self.listed, repo, new):
            self.was.setdefault(f"{repo}:{new}", path)
            if collect is not None:
                collect.setdefault(new, path)
            return new
        return None

    def keep(self, repo, paths: list[str], collect: dict | None = None) -> list[str]:
        return list(dict.fromkeys(p for p in (self.now(repo, x, collect) for x in paths) if p))

    def shown_was(self) -> dict[str, str]:
        """Moves to show on the global file list: only for files no document names directly."""
        return {k: v for k, v in self.was.items() if k not in self.direct}


def build_index(kb) -> dict:
    from .. import measurements as ms
    from .. import playbook
    from .. import release
    from .. import supersede as sup
    from ..cards import classify_file
    from ..trees import load_symbols

    docs: list[dict] = []
    file_info: dict[tuple[str, str], dict] = {}
    measured = {subj: rec for subj, (_, rec, err) in kb.measurement_records.items()
                if rec and not err and not ms.problems(rec)}
    supersession = kb.supersession
    places = _Places(kb, supersession)

    def info(repo, path):
        return file_info.setdefault((repo, path), {"text": [], "cards": [], "lanes": set(), "symbols": set()})

    for e in kb.playbook.entries:
        entry_was: dict = {}
        looks = [{**l, "file": places.now(l.get("repo"), str(l["file"]), entry_was)}
                 for l in e.get("look") or [] if isinstance(l, dict) and l.get("file")]
        looks = [l for l in looks if l["file"]]
        syms = [s for l in looks for s in l.get("symbols") or []]
        lanes = [str(x) for x in e.get("lanes") or []]
        weighted = [(e.get("symptom", ""), 3), (" ".join(map(str, e.get("aliases") or [])), 3),
                    (e.get("id", ""), 1), (playbook.SUBLANES.get(e.get("sublane"), ""), 1),
                    (" ".join(map(str, e.get("knobs") or [])), 1), (" ".join(syms), 1),
                    (" ".join(_path_words(l["file"]) for l in looks), 1),
                    (" ".join(str(l.get("why", "")) for l in looks), 1), (str(e.get("measure", "")), 1)]
        docs.append(_doc("entry", e.get("id"), weighted, title=e.get("symptom", ""), sublane=e.get("sublane"),
                         files=[l["file"] for l in looks], repos=[l.get("repo") for l in looks],
                         cards=[str(c) for c in e.get("cards") or []], lanes=lanes,
                         symbols={l["file"]: list(l.get("symbols") or []) for l in looks},
                         was={f: o for f, o in entry_was.items() if f in {l["file"] for l in looks}}))
        for l in looks:
            fi = info(l.get("repo"), l["file"])
            fi["text"].append(f"{e.get('symptom', '')} {' '.join(map(str, e.get('aliases') or []))} {l.get('why', '')}")
            fi["lanes"].update(lanes)
            fi["symbols"].update(map(str, l.get("symbols") or []))

    for card in kb.all_cards:
        meta = card.meta or {}
        lock = kb.card_lock(card)
        cid = kb.card_id(card)
        section = lambda name: card.sections[name].prose() if name in card.sections else ""  # noqa: E731
        files = []
        card_was: dict = {}
        if lock:
            runtime = [f for f in lock["files"] if classify_file(f["path"]) == "Runtime"] or lock["files"]
            by_churn = [f["path"] for f in sorted(runtime, key=lambda f: -(f["additions"] + f["deletions"]))]
            # The writer's order of importance: the files the key implementation describes, in the
            # order it describes them, then the files quoted in excerpts, then the rest by churn.
            described = _mention_order(section("Key implementation"), by_churn)
            quoted = [e.path for e in card.excerpts if e.path in by_churn]
            # A file gone from the pin is never one to open: its new place where the move is known, else dropped.
            files = places.keep(cid.split("/")[0], list(dict.fromkeys(described + quoted + by_churn)), card_was)
        weighted = [(str(meta.get("title", "")), 3), (" ".join(map(str, meta.get("families") or [])), 1),
                    (" ".join(map(str, meta.get("symptoms") or [])), 1), (section("Motivation"), 1),
                    (section("Key implementation"), 1), (" ".join(_path_words(p) for p in files[:5]), 1)]
        lanes = [str(x) for x in meta.get("lanes") or []]
        merged = str((lock or {}).get("merged") or meta.get("merged") or "")
        record = measured.get(cid.replace("/", "#"))
        docs.append(_doc("card", cid, weighted, title=str(meta.get("title", "")), files=files[:5],
                         repos=[cid.split("/")[0]] * len(files[:5]), cards=[cid], lanes=lanes, merged=merged,
                         measured={"speedup": ms.headline(record), "measured": record["measured"],
                                   "device": record["device"]["gpu"], **ms.flags(record)} if record else None,
                         today=_today(sup, sup.for_card(kb.root, cid, supersession), release.for_card(kb.releases, cid)),
                         was={f: o for f, o in card_was.items() if f in files[:5]}))
        for path in files:
            fi = info(cid.split("/")[0], path)
            fi["text"].append(str(meta.get("title", "")))
            fi["cards"].append((merged, cid))
            fi["lanes"].update(lanes)

    for (repo, _), lock in kb.all_locks.items():
        for f in lock["files"]:
            path = places.now(repo, f["path"])
            if path is None:
                continue
            fi = info(repo, path)
            fi["symbols"].update(f.get("symbols") or [])
            if not any(c for _, c in fi["cards"]):
                fi["text"].append(lock.get("title", ""))
    for repo, files in load_symbols(kb.root).items():
        for path, names in files.items():
            if places.now(repo, path) != path:
                continue
            info(repo, path)["symbols"].update(n for n in names if "." not in n)

    for (repo, path), fi in file_info.items():
        base = path.rsplit("/", 1)[-1]
        weighted = [(_path_words(base), 3), (_path_words(path), 1), (" ".join(sorted(fi["symbols"])), 1),
                    (" ".join(fi["text"]), 1)]
        cards = [c for _, c in sorted(set(fi["cards"]), reverse=True)]
        docs.append(_doc("file", f"{repo}:{path}", weighted, title=path, files=[path], repos=[repo],
                         cards=cards, lanes=sorted(fi["lanes"])))

    df: Counter = Counter()
    for d in docs:
        df.update(d["tf"].keys())
    avg = sum(d["len"] for d in docs) / max(len(docs), 1)
    return {"docs": docs, "df": dict(df), "avg": avg, "was": places.shown_was()}


def load_index(kb) -> dict:
    """The index, from the on-disk cache when no input changed since it was built."""
    cache = DiskCache(kb.root, CACHE_NAME)
    key = content_key(*_inputs(kb.config))
    index = cache.get(key)
    if index is None:
        from ..readable import require_readable_inputs

        require_readable_inputs(kb, "find needs every input readable")  # else results drop what broke
        index = build_index(kb)
        cache.put(key, index)
    cache.save(keep={key})  # one index at a time: the one these inputs need
    return index
