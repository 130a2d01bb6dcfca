"""What a run reports: the summary statistics, the JSON result file, the table, and --compare's PR table."""

from __future__ import annotations

import json
import math
import re
import os
import time
from dataclasses import asdict

from _lane import Sample

# Per-request latencies --compare spreads over p50/p90/p99: (name, label, where a sample keeps it).
LATENCIES = [("latency", "latency", None), ("ttft", "TTFT", None), ("ttfa", "TTFA", None),
             ("final_after_commit", "final after commit", "final_after_commit_s")]
QUANTILES = (0.5, 0.9, 0.99)
# Run-level numbers --compare shows once each: (summary key, label, +1 when higher is better).
COMPARE_ROWS = [
    ("req_per_s", "throughput (req/s)", 1), ("rtf_mean", "RTF (mean)", -1), ("wer", "WER", -1),
    ("speech_wer", "speech WER (ASR of the audio)", -1), ("seam_worst", "seam score (worst join)", -1),
    ("stalls", "playback stalls", -1),
]


def samples_needed(q: float) -> int:
    """How many samples a q-quantile needs before it is more than the extreme value: p99 100, p90 10, p50 2."""
    return math.ceil(1 / min(q, 1 - q) - 1e-9)


def pct(values: list[float], q: float) -> float | None:
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    k = (len(vals) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def summarize(samples: list[Sample], wall: float, wer: float | None = None) -> dict:
    import statistics  # here, not at the top: lanes import pct for their dry-runs too

    lat = [s.latency for s in samples]
    out = {
        "requests": len(samples),
        "wall_s": round(wall, 4),
        "req_per_s": round(len(samples) / wall, 4) if wall > 0 else None,
        "latency_p10_s": pct(lat, 0.1), "latency_p50_s": pct(lat, 0.5), "latency_p90_s": pct(lat, 0.9),
        "latency_p99_s": pct(lat, 0.99), "latency_mean_s": statistics.fmean(lat) if lat else None,
    }
    for key in ("ttft", "ttfa"):
        vals = [getattr(s, key) for s in samples if getattr(s, key) is not None]
        if vals:
            for q in (0.1, 0.5, 0.9, 0.99):
                out[f"{key}_p{round(q * 100)}_s"] = pct(vals, q)
    # a quantile from fewer samples than it needs is only the largest (or smallest) one: mark it
    short = [k for k in out if (m := re.fullmatch(r"\w+_p(\d+)_s", k)) and out[k] is not None
             and len(samples) < samples_needed(int(m.group(1)) / 100)]
    rtfs = [s.latency / s.audio_seconds for s in samples if s.audio_seconds]
    if rtfs:
        out["rtf_mean"] = statistics.fmean(rtfs)
    if wer is not None:
        out["wer"] = wer
    if short:
        out["undersampled"] = short
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def print_table(lane_name: str, summary: dict, status: str, message: str) -> None:
    print(f"\nlane {lane_name}: {status.upper()} - {message}", flush=True)
    short = set(summary.get("undersampled") or ())
    for key, value in summary.items():
        if key == "undersampled":
            continue
        mark = f"  (too few samples: {summary.get('requests')} < {_needed(key)})" if key in short else ""
        print(f"  {key:<16} {value}{mark}", flush=True)


def _needed(key: str) -> int:
    return samples_needed(int(re.fullmatch(r"\w+_p(\d+)_s", key).group(1)) / 100)


def write_result(args, lane, status: str, summary: dict, samples: list[Sample], message: str,
                 ran: dict | None = None) -> None:
    """The JSON result --output names (atomically); nothing without --output.

    `ran` says what ran (GPU, server version, commit and command, the lane's commit: _provenance).
    """
    if not args.output:
        return
    ran = ran or {}
    result = {
        "lane": lane.name, "repo": lane.repo, "model": args.model, "status": status,
        "server_url": args.server_url, "launched": bool(args.launch),
        "gpu": ran.get("gpu"), "server": ran.get("server"), "lane_commit": ran.get("lane"),
        "config": {k: v for k, v in vars(args).items() if k not in ("compare", "dry_run")},
        "check": {"passed": status == "pass", "message": message},
        "summary": summary, "samples": [asdict(s) for s in samples],
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    import tempfile

    folder = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".result.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    os.replace(tmp, args.output)


def _latencies(run: dict, name: str, extra_key: str | None) -> list[float]:
    """One latency of every sample of a result ([] when the run has none)."""
    samples = run.get("samples") or []
    vals = [(s.get("extra") or {}).get(extra_key) if extra_key else s.get(name) for s in samples]
    return [v for v in vals if isinstance(v, (int, float))]


def _row(label: str, before: float, after: float, better: int, noise: bool) -> str:
    delta = after - before
    change = f"{delta / before * 100:+.1f}%" if before else "n/a"
    if abs(delta) < 1e-12:
        verdict = ""
    elif noise:
        verdict = " within noise"
    else:
        verdict = " better" if delta * better > 0 else " worse"
    return f"| {label} | {before:.4g} | {after:.4g} | {delta:+.4g} | {change}{verdict} |"


def compare_table(before: dict, after: dict) -> str:
    """Markdown before/after table for a PR description; only metrics both runs have.

    Each latency shows p50, p90 and p99. When the two runs' p10-p90 spreads overlap, its
    changes are marked "within noise" and a note under the table gives both spreads.
    """
    b, a = before.get("summary", {}), after.get("summary", {})
    lines = [f"Lane `{after.get('lane', '?')}` ({after.get('model', '?')}), "
             f"{after.get('config', {}).get('requests', '?')} requests at concurrency "
             f"{after.get('config', {}).get('concurrency', '?')}", "",
             "| metric | before | after | delta | change |", "|---|---:|---:|---:|---:|"]
    notes = []
    for name, label, extra_key in LATENCIES:
        xs, ys = _latencies(before, name, extra_key), _latencies(after, name, extra_key)
        if not xs or not ys:
            continue
        spread_b, spread_a = (pct(xs, 0.1), pct(xs, 0.9)), (pct(ys, 0.1), pct(ys, 0.9))
        noise = spread_b[0] <= spread_a[1] and spread_a[0] <= spread_b[1]
        for q in QUANTILES:
            few = min(len(xs), len(ys)) < samples_needed(q)
            lines.append(_row(f"{label} p{round(q * 100)} (s){' *' if few else ''}", pct(xs, q), pct(ys, q), -1, noise))
            if few and not any(n.startswith("* ") for n in notes):
                notes.append(f"* too few samples for this percentile (p{round(q * 100)} needs {samples_needed(q)}; "
                             f"before has {len(xs)}, after {len(ys)}): it is the extreme sample, not a percentile.")
        if noise:
            notes.append(f"{label}: the p10-p90 spreads overlap (before {spread_b[0]:.4g}-{spread_b[1]:.4g} s, "
                         f"after {spread_a[0]:.4g}-{spread_a[1]:.4g} s): the difference is within noise.")
    for key, label, better in COMPARE_ROWS:
        if isinstance(b.get(key), (int, float)) and isinstance(a.get(key), (int, float)):
            lines.append(_row(label, b[key], a[key], better, False))
    if notes:
        lines += [""] + [f"Note: {n}" for n in notes]
    for name, run in (("before", before), ("after", after)):
        lines.append(f"\n{name}: status {run.get('status', '?')}, check: {run.get('check', {}).get('message', '')}")
        ran = describe_run(run)
        if ran:
            lines.append(f"{name} ran on: {ran}")
    return "\n".join(lines)


def describe_run(run: dict) -> str:
    """'1x NVIDIA H200, driver 570.1, CUDA 12.8; server 0.5.23 (commit abc1234); lane commit 1a2b3c4d5e6f'."""
    parts = []
    gpu = run.get("gpu") or {}
    if gpu.get("present"):
        parts.append(f"{gpu.get('count')}x {gpu.get('model')}, driver {gpu.get('driver')}, CUDA {gpu.get('cuda')}")
    server = run.get("server") or {}
    if server.get("version"):
        parts.append(f"server {server['version']}" + (f" (commit {server['commit'][:12]})" if server.get("commit") else ""))
    commit = (run.get("lane_commit") or {}).get("commit")
    if commit:
        parts.append(f"lane commit {commit[:12]}" + (" with local edits" if run["lane_commit"].get("dirty") else ""))
    return "; ".join(parts)
