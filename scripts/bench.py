#!/usr/bin/env python3
"""Speed figures for the closing note: check, trace and fetch.

Usage: .venv/bin/python scripts/bench.py [--clone PATH] [--cards 200] [--fetch 150]

- `dossier check` on the shipped knowledge base (wall time, per card), and on a
  synthetic knowledge base of N cards made by renumbering the shipped ones.
- `dossier trace --all` over the clone against plain `git log --first-parent
  --name-only` over the same pathspecs (the floor).
- `dossier fetch` of the newest M PRs that touched family files, into a temp folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOSSIER = [sys.executable, "-m", "dossier.cli"]


def timed(cmd, repeat=3, **kw) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def synthetic_kb(n: int) -> Path:
    """Copy the knowledge base and renumber its cards until there are n of them."""
    tmp = Path(tempfile.mkdtemp(prefix="dossier-bench-"))
    for name in ("dossier.toml", "SKILL.md"):
        shutil.copy(ROOT / name, tmp / name)
    for name in ("playbook", "references"):
        shutil.copytree(ROOT / name, tmp / name)
    cards = sorted((ROOT / "references/cards/sglang").glob("*.md"))
    from dossier.evidence import lock_digest, write_lock

    made, k = len(cards), 0
    while made < n:
        src = cards[k % len(cards)]
        pr = 900000 + made
        lock = json.loads((ROOT / f"references/evidence/sglang/{src.stem}.json").read_text())
        lock["pr"], lock["url"] = pr, re.sub(r"/pull/\d+", f"/pull/{pr}", lock["url"])
        lock["lock_sha256"] = lock_digest(lock)
        write_lock(tmp / f"references/evidence/sglang/{pr}.json", lock)
        text = src.read_text()
        text = re.sub(r"^pr: \d+", f"pr: {pr}", text, count=1, flags=re.M)
        text = re.sub(r"/pull/\d+", f"/pull/{pr}", text, count=1)
        (tmp / f"references/cards/sglang/{pr}.md").write_text(text)
        made, k = made + 1, k + 1
    return tmp


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clone", default=os.environ.get("DOSSIER_CLONE"))
    ap.add_argument("--cards", type=int, default=200)
    ap.add_argument("--fetch", type=int, default=150)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    n_cards = len(list((ROOT / "references/cards").glob("*/*.md")))
    t = timed([*DOSSIER, "check", "--root", str(ROOT)], env=env)
    print(f"check, shipped knowledge base: {n_cards} cards, {t:.3f} s wall ({t / max(n_cards, 1) * 1000:.1f} ms/card)")
    empty = synthetic_kb(0)
    shutil.rmtree(empty / "references/cards")
    base = timed([*DOSSIER, "check", "--root", str(empty)], env=env)
    shutil.rmtree(empty)
    per_card = (t - base) / max(n_cards, 1)
    print(f"check with no cards: {base:.3f} s; marginal cost {per_card * 1000:.1f} ms/card; "
          f"projected for {args.cards} distinct cards: {base + per_card * args.cards:.3f} s")
    tmp = synthetic_kb(args.cards)
    t = timed([*DOSSIER, "check", "--root", str(tmp)], env=env)
    print(f"check, worst case: {args.cards} cards renumbered from the shipped ones (every sentence templated, "
          f"thousands of findings): {t:.3f} s wall ({t / args.cards * 1000:.1f} ms/card)")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import dossier.cli"], env=env, check=True)
    print(f"  of which interpreter start + imports: {time.perf_counter() - start:.3f} s")
    shutil.rmtree(tmp)
    if not args.clone:
        print("no --clone given: skipping trace and fetch")
        return 0
    from dossier.config import load_config

    config = load_config(ROOT)
    globs = sorted({g for f in config.families.values() for g in f.globs.get("sglang", ())})
    commits = subprocess.run(["git", "--git-dir", args.clone, "rev-list", "--count", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
    floor = timed(["git", "--git-dir", args.clone, "log", "--first-parent", "--name-only", "--format=%H %s", "HEAD",
                   "--", *[f":(glob){g}" for g in globs]])
    trace = timed([*DOSSIER, "trace", "--all", "--clone", args.clone, "--root", str(ROOT), "--format", "json"], env=env)
    print(f"trace --all over {commits} commits: {trace:.3f} s; git log floor {floor:.3f} s; ratio {trace / floor:.2f}x")
    out = subprocess.run([*DOSSIER, "trace", "--all", "--clone", args.clone, "--root", str(ROOT), "--format", "json"],
                         env=env, capture_output=True, text=True).stdout
    prs = [str(r["pr"]) for r in json.loads(out) if r.get("pr")][: args.fetch]
    tmp = Path(tempfile.mkdtemp(prefix="dossier-fetch-"))
    shutil.copy(ROOT / "dossier.toml", tmp / "dossier.toml")
    start = time.perf_counter()
    subprocess.run([*DOSSIER, "fetch", "sglang", *prs, "--clone", args.clone, "--root", str(tmp)],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = time.perf_counter() - start
    got = len(list((tmp / "references/evidence/sglang").glob("*.json")))
    print(f"fetch of {len(prs)} PRs from the clone: {t:.2f} s ({got} locks written)")
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
