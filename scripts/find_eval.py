#!/usr/bin/env python3
"""Score `dossier find` on real upstream reports (tests/find_reports*.yaml).

For each report: is the fixing PR's card among the first five cards find names, and
is the right file the first file it names? Prints both shares overall and for the
sglang-omni / Qwen3-Omni / Qwen3-ASR subset. tests/test_find.py asserts the bars.

    .venv/bin/python scripts/find_eval.py [FILE.yaml ...] [--misses]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from dossier import find  # noqa: E402
from dossier.config import load_config  # noqa: E402
from dossier.kb import KnowledgeBase  # noqa: E402
from dossier.yamlio import read_yaml  # noqa: E402


def ranked_cards(found: dict) -> list[str]:
    out: list[str] = []
    for r in found["results"]:
        for c in r.get("cards") or []:
            if c not in out:
                out.append(c)
    return out


def score(reports: list[dict], index: dict) -> list[dict]:
    from dossier.trees import absent_at_pin, load_paths

    listed = load_paths(ROOT)
    rows = []
    for rep in reports:
        found = find.search(index, rep["q"], limit=10)
        cards = ranked_cards(found)
        files = [f["path"] for f in found["top_files"]]
        first = found["top_files"][0] if found["top_files"] else {}
        # A file gone from the pin is never one to open: its new place counts, and a report whose
        # file is gone with no known new place is scored on its card alone.
        gone = absent_at_pin(listed, rep.get("repo") or _repo_of(rep["file"]), rep["file"])
        hit = bool(first) and rep["file"] in (first.get("path"), first.get("was"))
        rows.append({**rep, "card_top5": rep["card"] in cards[:5],
                     "file_first": hit if (hit or not gone or rep["file"] in index.get("was", {}).values()) else None,
                     "cards": cards[:5], "files": files[:3]})
    return rows


def _repo_of(path: str) -> str:
    return "sglang-omni" if path.startswith(("sglang_omni", "sglang_omni_v1", "examples/", "benchmarks/")) else "sglang"


def load_reports(paths: list[Path]) -> list[dict]:
    reports = []
    for path in paths:
        data = read_yaml(path) or []
        reports += data if isinstance(data, list) else data.get("reports", [])
    return reports


def summary(rows: list[dict]) -> dict:
    def share(sub, key):
        scored = [r for r in sub if r[key] is not None]
        return sum(r[key] for r in scored) / len(scored) if scored else 0.0

    omni = [r for r in rows if r.get("topic") in ("omni", "asr")]
    return {"reports": len(rows), "omni_asr": len(omni),
            "card_top5": share(rows, "card_top5"), "file_first": share(rows, "file_first"),
            "omni_card_top5": share(omni, "card_top5"), "omni_file_first": share(omni, "file_first")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", type=Path)
    p.add_argument("--misses", action="store_true", help="list the reports that missed")
    args = p.parse_args()
    paths = args.files or sorted((ROOT / "tests").glob("find_reports*.yaml"))
    rows = score(load_reports(paths), find.build_index(KnowledgeBase(load_config(ROOT))))
    s = summary(rows)
    print(f"{s['reports']} reports ({s['omni_asr']} sglang-omni / Qwen3-Omni / Qwen3-ASR): "
          f"fixing card in top 5 for {s['card_top5']:.0%}, right file first for {s['file_first']:.0%} "
          f"(omni/asr subset: {s['omni_card_top5']:.0%} / {s['omni_file_first']:.0%})")
    if args.misses:
        for r in rows:
            if not (r["card_top5"] and r["file_first"] is not False):
                print(f"- {r['q']}\n    want {r['card']} / {r['file']}\n    got  {r['cards']} / {r['files']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
