"""`dossier find "<symptom>"`: rank playbook entries, cards and files for a free-text report.

Offline and small: a BM25 index over the playbook (symptom, aliases, knobs, files,
symbols), the cards (title, motivation, implementation, families) and the locks
(paths, symbols). Users describe the same problem in different words ("OOM",
"memory blow up"), so text on both sides goes through one synonym table that
adds a canonical token for every variant it finds. The index is cached under
.dossier-cache/, keyed by the inputs' paths, sizes and mtimes.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
import re
from collections import Counter
from pathlib import Path


from .errors import DossierError

CACHE = ".dossier-cache/find-index.json"
K1, B = 1.2, 0.75

# canonical token -> ways users and PRs say it. Matched on stemmed tokens, both sides.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "oom": ("oom", "out of memory", "memory blow up", "blow up memory", "blows up memory", "memory explodes",
            "memory explosion", "cuda oom", "vram", "runs out of memory", "run out of memory", "memory usage",
            "gpu memory", "peak memory", "memory leak"),
    "ttft": ("ttft", "time to first token", "first token latency", "first token", "prefill latency"),
    "ttfa": ("ttfa", "time to first audio", "first audio", "first sound", "first audio chunk", "audio starts late",
             "first audio latency", "first chunk of audio"),
    "vit": ("vit", "vision encoder", "vision tower", "visual encoder", "image encoder", "vision transformer",
            "vision model", "visual tower", "patch embed"),
    "mrope": ("mrope", "m rope", "position ids", "position id", "rope index", "get rope index", "3d rope",
              "multimodal rope", "rotary position", "positions"),
    "asr": ("asr", "transcription", "transcribe", "transcripts", "transcript", "speech recognition",
            "speech to text", "stt", "qwen3 asr"),
    "h2d": ("h2d", "host to device", "cpu to gpu copy", "memcpy", "device copy", "to device copy",
            "small copies", "copy to gpu"),
    "cudagraph": ("cuda graph", "cudagraph", "cuda graphs", "graph capture", "graph replay", "captured graph",
                  "piecewise cuda graph", "npu graph"),
    "dp": ("dp", "data parallel", "data parallelism", "dp encoder"),
    "epd": ("epd", "encoder disaggregation", "encoder only", "language only", "disaggregated encoder",
            "encode server", "separate encoder", "encoder node", "encoder url", "encoder urls"),
    "pp": ("pp", "pipeline parallel", "pipeline parallelism", "pp size"),
    "npu": ("npu", "ascend", "huawei", "910b", "cann", "torch npu"),
    "amd": ("amd", "rocm", "aiter", "mi300", "mi300x", "mi325", "mi355", "mi355x", "hip", "instinct"),
    "cpu": ("cpu", "xeon", "amx", "intel amx", "no gpu", "cpu only"),
    "chunkedprefill": ("chunked prefill", "chunk prefill", "prefill chunk", "prefill chunks", "chunked prefill size"),
    "mmcache": ("mm cache", "multimodal cache", "embedding cache", "encoder cache", "feature cache",
                "vlm cache", "cache hit", "cache miss", "reuse embeddings", "re encode", "reencode"),
    "video": ("video", "videos", "clip", "movie", "mp4", "frames", "frame"),
    "image": ("image", "images", "picture", "photo", "screenshot", "jpeg", "jpg", "png", "img"),
    "audio": ("audio", "sound", "wav", "mp3", "soundtrack", "microphone", "mic"),
    "multiimage": ("multi image", "multiple images", "many images", "several images", "multi images",
                   "4 images", "image batch"),
    "longvideo": ("long video", "long videos", "hour long", "long clip", "minute video", "minutes of video"),
    "slow": ("slow", "slower", "latency", "sluggish", "takes long", "takes forever", "lag", "lags", "delay",
             "late", "bottleneck", "spends"),
    "hang": ("hang", "hangs", "stuck", "freeze", "freezes", "deadlock", "never returns", "no response"),
    "wrong": ("wrong", "garbage", "incorrect", "gibberish", "nonsense", "hallucinate", "degrade", "drift",
              "mismatch", "off topic", "ignores"),
    "crash": ("crash", "crashes", "error", "exception", "attributeerror", "dies", "fails", "traceback"),
    "stream": ("stream", "streaming", "realtime", "real time", "live", "partial", "incremental"),
    "websocket": ("websocket", "web socket", "ws", "realtime", "v1 realtime", "live microphone"),
    "tts": ("tts", "text to speech", "speech output", "talker", "vocoder", "code2wav", "voice output",
            "spoken reply", "speech generation", "sglang omni"),
    "deepstack": ("deepstack", "deep stack", "multi level features", "multi level visual features"),
    "speculative": ("eagle", "eagle3", "speculative", "spec decode", "speculative decoding", "draft model",
                    "accept length", "acceptance"),
    "attnbackend": ("attention backend", "attn backend", "fa3", "fa4", "flashattention", "flash attention",
                    "flashinfer", "cudnn", "sdpa", "triton attn", "mm attention backend"),
    "throughput": ("throughput", "req s", "requests per second", "qps", "tokens per second", "rps"),
    "preprocess": ("preprocess", "preprocessing", "processor", "resize", "resizing", "decode video",
                   "frame sampling", "tokenizer process", "tokenizer manager", "image processing"),
    "wer": ("wer", "word error rate", "word error"),
    "omni": ("omni", "qwen3 omni", "qwen omni", "thinker"),
    "batch": ("batch", "batching", "batched", "concurrency", "concurrent", "many requests", "under load"),
}
STOPWORDS = frozenset(
    "a an the and or of to in on for with when is are was were be been it its this that these those my our we i "
    "you they it's as at by from into than then so but not no do does did can could should would will just very "
    "much more most some any all every each only also there here what which who how why whose about after "
    "before while even still same too".split()
)


def _stem(tok: str) -> str:
    if len(tok) <= 3 or tok.isdigit():
        return tok
    if tok.endswith("ies") and len(tok) > 4:
        tok = tok[:-3] + "y"
    elif tok.endswith(("ches", "shes", "xes", "sses")):
        tok = tok[:-2]
    elif tok.endswith("s") and not tok.endswith(("ss", "us", "is")):
        tok = tok[:-1]
    if tok.endswith("ing") and len(tok) > 5:
        tok = tok[:-3]
    elif tok.endswith("ed") and len(tok) > 4:
        tok = tok[:-2]
    if tok.endswith("e") and len(tok) > 3:
        tok = tok[:-1]
    return tok


def _raw_tokens(text: str) -> list[str]:
    out = []
    for word in re.findall(r"[A-Za-z0-9]+", str(text)):
        # camelCase and acronyms split ("Qwen3VLForCausal" -> qwen3 vl for causal); the whole
        # word stays too, so "ViT" still reads as "vit".
        parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+|[0-9]+", word)
        out.extend(_stem(p.lower()) for p in parts)
        if len(parts) > 1:
            out.append(_stem(word.lower()))
    return out


def _phrase_table() -> dict[tuple[str, ...], set[str]]:
    table: dict[tuple[str, ...], set[str]] = {}
    for canon, variants in SYNONYMS.items():
        for v in (canon, *variants):
            table.setdefault(tuple(_raw_tokens(v)), set()).add(canon)
    return table


_PHRASES = _phrase_table()
_MAX_PHRASE = max(len(k) for k in _PHRASES)


def tokenize(text: str) -> list[str]:
    """Stemmed tokens without stop words, plus a `~canon` token for every synonym matched."""
    raw = _raw_tokens(text)
    out = [t for t in raw if t not in STOPWORDS]
    for i in range(len(raw)):
        for n in range(1, min(_MAX_PHRASE, len(raw) - i) + 1):
            canon = _PHRASES.get(tuple(raw[i:i + n]))
            if canon:
                out.extend(f"~{c}" for c in canon)
    return out


# --- the index -------------------------------------------------------------------------------


def _inputs(root: Path) -> list[Path]:
    from .playbook import playbook_files

    paths = list(playbook_files(root))
    paths += sorted((root / "references" / "cards").glob("*/*.md"))
    paths += sorted((root / "references" / "evidence").glob("*/*.json"))
    paths += sorted((root / "references" / "trees").glob("*.symbols.json"))
    paths += sorted((root / "references" / "measurements").glob("*/*.json"))
    paths += [p for p in [root / "references" / "supersession.json"] if p.exists()]
    lanes = root / "playbook" / "lanes.yaml"
    return paths + ([lanes] if lanes.exists() else [])


def _fingerprint(root: Path) -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    for p in _inputs(root):
        st = p.stat()
        h.update(f"{p.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _doc(kind, did, weighted: list[tuple[str, int]], **payload) -> dict:
    tf: Counter = Counter()
    for text, weight in weighted:
        for tok in tokenize(text):
            tf[tok] += weight
    return {"kind": kind, "id": did, "tf": dict(tf), "len": sum(tf.values()), **payload}


def _path_words(path: str) -> str:
    return path.replace("/", " ").replace("_", " ").replace(".", " ")


def _today(sup, entry: dict | None) -> dict | None:
    """A card's state at the pinned SHA and who superseded it, for find results."""
    if not entry:
        return None
    return {"state": entry["state"], "superseded_by": [sup.label(e) for e in sup.significant(entry)]}


def build_index(ctx) -> dict:
    from . import playbook
    from .cards import classify_file
    from .trees import load_symbols

    from . import measurements as ms

    docs: list[dict] = []
    file_info: dict[tuple[str, str], dict] = {}
    measured = {subj: rec for subj, (_, rec, err) in ms.records(ctx.root).items()
                if rec and not err and not ms.problems(rec)}
    from . import supersede as sup

    supersession = sup.load(ctx.root)

    def info(repo, path):
        return file_info.setdefault((repo, path), {"text": [], "cards": [], "lanes": set(), "symbols": set()})

    for e in playbook.load(ctx.root).entries:
        looks = [l for l in e.get("look") or [] if isinstance(l, dict) and l.get("file")]
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
                         symbols={l["file"]: list(l.get("symbols") or []) for l in looks}))
        for l in looks:
            fi = info(l.get("repo"), l["file"])
            fi["text"].append(f"{e.get('symptom', '')} {' '.join(map(str, e.get('aliases') or []))} {l.get('why', '')}")
            fi["lanes"].update(lanes)
            fi["symbols"].update(map(str, l.get("symbols") or []))

    rows = []
    for card in ctx.all_cards:
        meta = card.meta or {}
        lock = ctx.card_lock(card)
        cid = ctx.card_id(card)
        files = []
        if lock:
            runtime = [f for f in lock["files"] if classify_file(f["path"]) == "Runtime"] or lock["files"]
            by_churn = [f["path"] for f in sorted(runtime, key=lambda f: -(f["additions"] + f["deletions"]))]
            # The writer quoted the lines that matter: files with excerpts lead, in excerpt order,
            # then the rest by churn.
            quoted = [e.path for e in card.excerpts if e.path in by_churn]
            files = list(dict.fromkeys(quoted + by_churn))
        section = lambda name: card.sections[name].prose() if name in card.sections else ""  # noqa: E731
        weighted = [(str(meta.get("title", "")), 3), (" ".join(map(str, meta.get("families") or [])), 1),
                    (" ".join(map(str, meta.get("symptoms") or [])), 1), (section("Motivation"), 1),
                    (section("Key implementation"), 1), (" ".join(_path_words(p) for p in files[:5]), 1)]
        lanes = [str(x) for x in meta.get("lanes") or []]
        merged = str((lock or {}).get("merged") or meta.get("merged") or "")
        rows.append((merged, cid))
        record = measured.get(cid.replace("/", "#"))
        docs.append(_doc("card", cid, weighted, title=str(meta.get("title", "")), files=files[:5],
                         repos=[cid.split("/")[0]] * len(files[:5]), cards=[cid], lanes=lanes, merged=merged,
                         measured={"speedup": ms.headline(record), "measured": record["measured"],
                                   "device": record["device"]["gpu"]} if record else None,
                         today=_today(sup, sup.for_card(ctx.root, cid, supersession))))
        for path in files:
            fi = info(cid.split("/")[0], path)
            fi["text"].append(str(meta.get("title", "")))
            fi["cards"].append((merged, cid))
            fi["lanes"].update(lanes)

    for (repo, _), lock in ctx.all_locks.items():
        for f in lock["files"]:
            fi = info(repo, f["path"])
            fi["symbols"].update(f.get("symbols") or [])
            if not any(c for _, c in fi["cards"]):
                fi["text"].append(lock.get("title", ""))
    for repo, files in load_symbols(ctx.root).items():
        for path, names in files.items():
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
    return {"docs": docs, "df": dict(df), "avg": avg}


def load_index(ctx) -> dict:
    """The index, from the cache when no input changed since it was built."""
    path = ctx.root / CACHE
    key = _fingerprint(ctx.root)
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("key") == key:
            return cached["index"]
    except (OSError, ValueError):
        pass
    index = build_index(ctx)
    try:
        from .fsio import write_atomic

        write_atomic(path, json.dumps({"key": key, "index": index}))
    except OSError:
        pass  # a read-only checkout still answers, just without the cache
    return index


# --- ranking ---------------------------------------------------------------------------------


def search(index: dict, query: str, limit: int = 10) -> dict:
    terms = sorted(set(tokenize(query)))
    if not terms:
        raise DossierError("empty query: describe the symptom, e.g. `dossier find \"Qwen3-VL video OOM\"`")
    docs, df, avg = index["docs"], index["df"], index["avg"] or 1.0
    n = len(docs)
    known = [t for t in terms if t in df]
    if not known:
        raise DossierError(f"nothing in the playbook, cards or files matches {query!r}; "
                           "try the model, modality and symptom (e.g. 'video OOM', 'ASR streaming latency')")
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in known}
    scored, file_score = [], {}
    for d in docs:
        s = 0.0
        norm = K1 * (1 - B + B * d["len"] / avg)
        for t in known:
            f = d["tf"].get(t)
            if f:
                s += idf[t] * f * (K1 + 1) / (f + norm)
        if s > 0:
            scored.append((s, d))
            if d["kind"] == "file":
                file_score[(d["repos"][0], d["files"][0])] = s
    scored.sort(key=lambda x: (-x[0], x[1]["kind"], str(x[1]["id"])))
    # A file's rank: the documents that name it, each by its score, decaying with the
    # document's rank and the file's place in it (a card lists its quoted files first),
    # plus a share of how well the file itself matches the query.
    files: dict[tuple[str, str], float] = {}
    weight = {"entry": 1.0, "card": 1.0, "file": 0.8}
    for rank, (s, d) in enumerate(scored[:30]):
        for i, (repo, path) in enumerate(zip(d["repos"], d["files"])):
            key = (repo, path)
            own = file_score.get(key, 0.0)
            files[key] = files.get(key, 0.0) + s * weight[d["kind"]] * _serving(path) / (1 + rank) * (
                1 / (1 + i) + 0.5 * own / (1 + own))
    top_files = sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))
    results = [_result(s, d) for s, d in scored[:limit]]
    return {"query": query, "terms": terms,
            "files": [p for (_, p), _ in top_files[:limit]],
            "top_files": [{"repo": r, "path": p, "score": round(v, 3)} for (r, p), v in top_files[:limit]],
            "results": results}


@lru_cache(maxsize=8192)
def _serving(path: str) -> float:
    """Files to open for a symptom are serving code; tests, docs, CI and examples rank lower."""
    from .cards import classify_file

    return 1.0 if classify_file(path) == "Runtime" else 0.3


def _result(score: float, d: dict) -> dict:
    out = {"kind": d["kind"], "id": d["id"], "score": round(score, 3),
           "files": d["files"], "cards": d["cards"], "lanes": d["lanes"]}
    if d["kind"] == "entry":
        out.update(symptom=d["title"], sublane=d.get("sublane"), symbols=d.get("symbols", {}))
    else:
        out["title"] = d["title"]
    if d.get("measured"):
        out["measured"] = d["measured"]
    if d.get("today"):
        out["today"] = d["today"]
    return out


def format_text(found: dict) -> str:
    lines = ["Files to open first:"]
    for i, f in enumerate(found["top_files"][:5], 1):
        lines.append(f"  {i}. {f['path']}" + (f"  [{f['repo']}]" if f["repo"] != "sglang" else ""))
    lines.append("")
    for i, r in enumerate(found["results"], 1):
        lines.append(f"{i:>2}. {r['kind']:<5} {r['id']}  ({r['score']})")
        lines.append(f"      {r.get('symptom') or r.get('title')}")
        if r["files"]:
            syms = r.get("symbols", {})
            shown = [f + (f" ({', '.join(syms[f][:3])})" if syms.get(f) else "") for f in r["files"][:3]]
            lines.append("      open:  " + "; ".join(shown))
        if r["cards"]:
            lines.append("      cards: " + ", ".join(r["cards"][:6]))
        if r["lanes"]:
            lines.append("      lanes: " + ", ".join(r["lanes"]))
        if r.get("today") and r["today"]["state"] != "live":
            t = r["today"]
            by = f"; superseded by {', '.join(t['superseded_by'])}" if t["superseded_by"] else ""
            lines.append(f"      today: {t['state']} at the pinned SHA{by}")
        if r.get("measured"):
            m = r["measured"]
            lines.append(f"      measured: {m['speedup']} on {m['device']} ({m['measured']}, playbook/repros)")
    return "\n".join(lines)
