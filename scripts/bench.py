#!/usr/bin/env python3
"""Speed figures for the closing note: check, trace and fetch.

Usage: .venv/bin/python scripts/bench.py [--clone PATH] [--cards 200] [--fetch 150]
       .venv/bin/python scripts/bench.py --against REF [--cards 700] [--pairs 8]
       .venv/bin/python scripts/bench.py --against-python PATH [--cards 700] [--pairs 8]
       Any of them with --python PATH: run `dossier` on that interpreter instead.

- `dossier check` on the shipped knowledge base (wall time, per card), and on a
  synthetic knowledge base of N cards made by renumbering the shipped ones.
- `dossier trace --all` over the clone against plain `git log --first-parent
  --name-only` over the same pathspecs (the floor).
- `dossier fetch` of the newest M PRs that touched family files, into a temp folder.
- With `--against REF`, only an A/B: this tree's `check` and REF's, each cold on a synthetic
  base its own code builds from its own shipped base, run alternately. The machine's speed
  drifts by tens of percent over minutes, so alternating runs are the fair comparison.
- With `--against-python PATH`, only an A/B of interpreters: this tree's `check` on this
  interpreter (or --python) and on PATH, alternately. The same code runs about a quarter
  faster on a build with PGO and LTO and a statically linked libpython than on one with a
  shared libpython and no PGO (pyenv's default build).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable  # the interpreter `check` runs on; --python picks another


def dossier(python: str | None = None) -> list[str]:
    return [python or PYTHON, "-m", "dossier.cli"]


_DESCRIBE = (
    "import platform, sys, sysconfig\n"
    "try:\n"
    "    shared = any('libpython' in line for line in open('/proc/self/maps'))\n"
    "except OSError:\n"
    "    shared = bool(sysconfig.get_config_var('Py_ENABLE_SHARED'))\n"
    "print(f\"{platform.python_implementation()} {platform.python_version()}, \"\n"
    "      f\"libpython {'shared' if shared else 'linked in'}\")\n"
)


def describe(python: str) -> str:
    """What the interpreter is: its version and whether it runs from a shared libpython (a
    build without --enable-shared, or with PGO and LTO, runs the same code faster)."""
    try:
        res = subprocess.run([python, "-c", _DESCRIBE], capture_output=True, text=True)
    except OSError as exc:
        raise SystemExit(f"--python {python}: does not run ({exc.strerror})") from None
    if res.returncode:
        raise SystemExit(f"--python {python}: does not run ({res.stderr.strip()[-200:] or res.returncode})")
    return f"{res.stdout.strip()} ({python})"


def timed(cmd, repeat=3, **kw) -> float:
    """Median wall time of `repeat` runs after one warm-up run (which fills .dossier-cache)."""
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def cold_run(cmd, root: Path, env: dict, repeat: int = 3) -> tuple[float, float]:
    """Median wall time of `repeat` runs, each without .dossier-cache, and the median CPU
    time (user + system) of each run's processes: the command, its fork and its subprocesses."""
    walls, cpus = [], []
    for _ in range(repeat):
        shutil.rmtree(root / ".dossier-cache", ignore_errors=True)
        before = os.times()
        start = time.perf_counter()
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        walls.append(time.perf_counter() - start)
        after = os.times()
        cpus.append(after.children_user - before.children_user + after.children_system - before.children_system)
    return statistics.median(walls), statistics.median(cpus)


_WORD = re.compile(r"(?<![\w`/.-])[a-z]{4,}(?![\w`/.-])")


def _scramble(text: str, seed: int) -> str:
    """Replace prose words by per-card pseudo-words, leaving code, paths, frontmatter and
    excerpts alone: the card keeps its shape and its rule workload but no longer repeats
    another card's sentences (which the templated-text rules would rightly flag)."""
    rng = random.Random(seed)
    mapping: dict[str, str] = {}

    def swap(m):
        word = m.group(0)
        if word not in mapping:
            mapping[word] = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in word)
        return mapping[word]

    out, fenced, front = [], False, 0
    for line in text.split("\n"):
        if line.strip() == "---" and front < 2:
            front += 1
        elif line.lstrip().startswith("```"):
            fenced = not fenced
        elif front >= 2 and not fenced and not line.startswith(("#", "- `")):
            parts = line.split("`")
            line = "`".join(_WORD.sub(swap, p) if i % 2 == 0 else p for i, p in enumerate(parts))
        out.append(line)
    return "\n".join(out)


def synthetic_kb(n: int, distinct: bool = True, source: Path = ROOT) -> Path:
    """Copy the knowledge base at `source` and renumber its cards (of every repo, in turn) until
    there are n cards in all; a copy stays in its card's repo, with its lock renumbered too
    (written by the `dossier` on the path, so each version builds locks it reads)."""
    source = Path(source)
    tmp = Path(tempfile.mkdtemp(prefix="dossier-bench-"))
    for name in ("dossier.toml", "SKILL.md"):
        shutil.copy(source / name, tmp / name)
    for name in ("playbook", "references"):
        shutil.copytree(source / name, tmp / name)
    cards = sorted((source / "references/cards").glob("*/*.md"))
    from dossier.evidence import lock_digest, write_lock

    made, k = len(cards), 0
    while made < n:
        src = cards[k % len(cards)]
        repo, pr = src.parent.name, 900000 + made
        lock_src = source / f"references/evidence/{repo}/{src.stem}.json"
        k += 1
        if not lock_src.is_file():
            continue
        lock = json.loads(lock_src.read_text())
        lock["pr"], lock["url"] = pr, re.sub(r"/pull/\d+", f"/pull/{pr}", lock["url"])
        lock["lock_sha256"] = lock_digest(lock)
        write_lock(tmp / f"references/evidence/{repo}/{pr}.json", lock)
        text = src.read_text()
        text = re.sub(r"^pr: \d+", f"pr: {pr}", text, count=1, flags=re.M)
        text = re.sub(r"/pull/\d+", f"/pull/{pr}", text, count=1)
        if distinct:
            text = _scramble(text, pr)
        (tmp / f"references/cards/{repo}/{pr}.md").write_text(text)
        made += 1
    return tmp


def where_the_time_goes(root: Path, env: dict, top: int = 6) -> str:
    """The slowest steps of one cold `check --timings` on `root`, and each process's total."""
    shutil.rmtree(root / ".dossier-cache", ignore_errors=True)
    res = subprocess.run([*dossier(), "check", "--root", str(root), "--timings"], env=env, capture_output=True, text=True)
    rows = [line for line in res.stderr.splitlines() if line.startswith("  ")]
    totals = [line.strip() for line in rows if line.startswith("  totals:")]
    if not totals:
        return "no timings (" + (res.stderr.strip().splitlines() or ["no output"])[-1][:200] + ")"
    steps = [" ".join(line.split()) for line in rows[:rows.index("  " + totals[0])]]
    wall = [line.strip() for line in rows if line.startswith("  wall clock")]
    return "; ".join([*steps[:top], *totals, *wall])


def tree_at(ref: str) -> Path:
    """The project's files at `ref` (its code and its shipped base), unpacked in a temp folder."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True)
    if archive.returncode:
        raise SystemExit(f"--against {ref}: {archive.stderr.decode(errors='replace').strip()}")
    out = Path(tempfile.mkdtemp(prefix="dossier-ref-"))
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(out, filter="data")
        else:  # Python before 3.10.12 / 3.11.4; the archive is this repository's own
            tar.extractall(out)
    return out


def against(ref: str, n: int, pairs: int, env: dict) -> None:
    """Print REF's and this tree's `check` figures from `pairs` alternating cold runs each."""
    ref_root = tree_at(ref)
    try:
        alternate([(ref, ref_root, PYTHON), ("this tree", ROOT, PYTHON)], n, pairs, env, f"A/B against {ref}")
    finally:
        shutil.rmtree(ref_root, ignore_errors=True)


def alternate(sides: list[tuple[str, Path, str]], n: int, pairs: int, env: dict, title: str) -> None:
    """Print both sides' `check` figures from `pairs` alternating cold runs each. A side is
    (label, the tree whose code and shipped base it uses, the interpreter it runs on)."""
    bases = {}
    try:
        for label, root, python in sides:
            code_env = {**env, "PYTHONPATH": str(root / "tools")}
            build = ("import sys; sys.path.insert(0, sys.argv[1]); import bench; "
                     "print(bench.synthetic_kb(int(sys.argv[2]), source=sys.argv[3]))")
            made = subprocess.run([sys.executable, "-c", build, str(ROOT / "scripts"), str(n), str(root)],
                                  env=code_env, capture_output=True, text=True)
            if made.returncode:
                raise SystemExit(f"building the {label} base failed: {made.stderr.strip()[-300:]}")
            base = Path(made.stdout.strip())
            bases[label] = (base, code_env, python)
            subprocess.run([*dossier(python), "build", "--root", str(base)], env=code_env, capture_output=True)
        for base, code_env, python in bases.values():  # uncounted: writes each side's bytecode caches
            cold_run([*dossier(python), "check", "--root", str(base)], base, code_env, repeat=1)
        runs = {label: ([], []) for label in bases}
        for _ in range(pairs):
            for label, (base, code_env, python) in bases.items():
                wall, cpu = cold_run([*dossier(python), "check", "--root", str(base)], base, code_env, repeat=1)
                runs[label][0].append(wall)
                runs[label][1].append(cpu)
        (l0, (w0, c0)), (l1, (w1, c1)) = ((label, (statistics.median(w), statistics.median(c)))
                                          for label, (w, c) in runs.items())
        print(f"{title}, {n} cards, {pairs} alternating cold runs each (medians): "
              f"{l0} {w0:.3f} s wall, {c0:.2f} s CPU; {l1} {w1:.3f} s wall, {c1:.2f} s CPU "
              f"({(w1 / w0 - 1) * 100:+.0f}% wall, {(c1 / c0 - 1) * 100:+.0f}% CPU)")
    finally:
        for base, *_ in bases.values():
            shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clone", default=os.environ.get("DOSSIER_CLONE"))
    ap.add_argument("--cards", type=int, default=200)
    ap.add_argument("--fetch", type=int, default=150)
    ap.add_argument("--against", metavar="REF", help="only an A/B of check: this tree against the commit REF")
    ap.add_argument("--pairs", type=int, default=8,
                    help="alternating cold runs of each side for --against / --against-python")
    ap.add_argument("--python", metavar="PATH",
                    help="run `dossier` on this interpreter (one with the project's dependencies, e.g. another venv's)")
    ap.add_argument("--against-python", metavar="PATH",
                    help="only an A/B of check: this tree on --python (or this interpreter) against PATH")
    args = ap.parse_args()
    global PYTHON
    if args.python:
        PYTHON = args.python
    print(f"interpreter: {describe(PYTHON)}")
    # Bytecode caching as on a user's machine: with PYTHONDONTWRITEBYTECODE every run would
    # recompile the tool's modules (~0.25 s here), which is no part of what check costs.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT / "tools")
    if args.against and args.against_python:
        raise SystemExit("--against and --against-python: one A/B at a time")
    if args.against:
        against(args.against, args.cards, max(args.pairs, 1), env)
        return 0
    if args.against_python:
        other = describe(args.against_python)
        print(f"against:     {other}")
        alternate([("this interpreter", ROOT, PYTHON), ("the other", ROOT, args.against_python)],
                  args.cards, max(args.pairs, 1), env, "A/B of interpreters")
        return 0
    n_cards = len(list((ROOT / "references/cards").glob("*/*.md")))
    t = timed([*dossier(), "check", "--root", str(ROOT)], env=env)
    print(f"check, shipped knowledge base: {n_cards} cards, {t:.3f} s wall ({t / max(n_cards, 1) * 1000:.1f} ms/card)")
    for distinct, label in ((True, "distinct prose"), (False, "worst case: verbatim copies, every sentence templated")):
        tmp = synthetic_kb(args.cards, distinct)
        subprocess.run([*dossier(), "build", "--root", str(tmp)], env=env, capture_output=True)
        res = subprocess.run([*dossier(), "check", "--root", str(tmp), "--format", "json"], env=env,
                             capture_output=True, text=True)
        if res.returncode == 2 or not res.stdout.strip():
            raise SystemExit(f"dossier check failed on the synthetic base: {res.stderr.strip()[-300:]}")
        count = len(json.loads(res.stdout))
        t = timed([*dossier(), "check", "--root", str(tmp)], env=env)
        cold, cpu = cold_run([*dossier(), "check", "--root", str(tmp)], tmp, env)
        print(f"check, {args.cards} cards ({label}): {t:.3f} s wall with .dossier-cache warm, {cold:.3f} s cold "
              f"({cpu:.2f} s of CPU in all processes); {t / args.cards * 1000:.1f} ms/card, {count} findings")
        if distinct:
            one, cpu = cold_run([*dossier(), "check", "--root", str(tmp)], tmp, {**env, "DOSSIER_JOBS": "1"})
            print(f"  in one process (DOSSIER_JOBS=1): {one:.3f} s cold ({cpu:.2f} s of CPU)")
        if distinct:
            print(f"  where the time goes (one cold run, check --timings): {where_the_time_goes(tmp, env)}")
        if distinct:
            # The floor under any rule: interpreter, imports and reading every card (S001 is
            # the card-reading rule; selecting it alone runs nothing else).
            floor = timed([*dossier(), "check", "--root", str(tmp), "--select", "S001"], env=env)
            print(f"  of which the floor (start, imports, reading {args.cards} cards; --select S001): {floor:.3f} s")
        shutil.rmtree(tmp)
    start = time.perf_counter()
    subprocess.run([PYTHON, "-c", "import dossier.cli"], env=env, check=True)
    print(f"  of which interpreter start + imports: {time.perf_counter() - start:.3f} s")
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
    trace = timed([*dossier(), "trace", "--all", "--clone", args.clone, "--root", str(ROOT), "--format", "json"], env=env)
    print(f"trace --all over {commits} commits: {trace:.3f} s; git log floor {floor:.3f} s; ratio {trace / floor:.2f}x")
    out = subprocess.run([*dossier(), "trace", "--all", "--clone", args.clone, "--root", str(ROOT), "--format", "json"],
                         env=env, capture_output=True, text=True).stdout
    prs = [str(r["pr"]) for r in json.loads(out) if r.get("pr")][: args.fetch]
    tmp = Path(tempfile.mkdtemp(prefix="dossier-fetch-"))
    shutil.copy(ROOT / "dossier.toml", tmp / "dossier.toml")
    start = time.perf_counter()
    subprocess.run([*dossier(), "fetch", "sglang", *prs, "--clone", args.clone, "--root", str(tmp)],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = time.perf_counter() - start
    got = len(list((tmp / "references/evidence/sglang").glob("*.json")))
    print(f"fetch of {len(prs)} PRs from the clone: {t:.2f} s ({got} locks written)")
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
