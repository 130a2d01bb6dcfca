"""What a run reports: the summary statistics, the JSON result file, the table, and --compare's PR table."""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
import time
from dataclasses import asdict

from _lane import Sample

COMPARE_ROWS = [
    ("latency_p50_s", "latency p50 (s)", -1), ("latency_p90_s", "latency p90 (s)", -1),
    ("ttft_p50_s", "TTFT p50 (s)", -1), ("ttft_p90_s", "TTFT p90 (s)", -1),
    ("ttfa_p50_s", "TTFA p50 (s)", -1), ("ttfa_p90_s", "TTFA p90 (s)", -1),
    ("req_per_s", "throughput (req/s)", 1), ("rtf_mean", "RTF (mean)", -1), ("wer", "WER", -1),
]


def pct(values: list[float], q: float) -> float | None:
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    k = (len(vals) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def summarize(samples: list[Sample], wall: float, wer: float | None = None) -> dict:
    lat = [s.latency for s in samples]
    out = {
        "requests": len(samples),
        "wall_s": round(wall, 4),
        "req_per_s": round(len(samples) / wall, 4) if wall > 0 else None,
        "latency_p50_s": pct(lat, 0.5), "latency_p90_s": pct(lat, 0.9), "latency_p99_s": pct(lat, 0.99),
        "latency_mean_s": statistics.fmean(lat) if lat else None,
    }
    for key in ("ttft", "ttfa"):
        vals = [getattr(s, key) for s in samples if getattr(s, key) is not None]
        if vals:
            out[f"{key}_p50_s"], out[f"{key}_p90_s"] = pct(vals, 0.5), pct(vals, 0.9)
    rtfs = [s.latency / s.audio_seconds for s in samples if s.audio_seconds]
    if rtfs:
        out["rtf_mean"] = statistics.fmean(rtfs)
    if wer is not None:
        out["wer"] = wer
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


def print_table(lane_name: str, summary: dict, status: str, message: str) -> None:
    print(f"\nlane {lane_name}: {status.upper()} - {message}", flush=True)
    for key, value in summary.items():
        print(f"  {key:<16} {value}", flush=True)


def write_result(args, lane, status: str, summary: dict, samples: list[Sample], message: str) -> None:
    """The JSON result --output names (atomically); nothing without --output."""
    if not args.output:
        return
    result = {
        "lane": lane.name, "repo": lane.repo, "model": args.model, "status": status,
        "server_url": args.server_url, "launched": bool(args.launch),
        "config": {k: v for k, v in vars(args).items() if k not in ("compare", "dry_run")},
        "check": {"passed": status == "pass", "message": message},
        "summary": summary, "samples": [asdict(s) for s in samples],
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    folder = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".result.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    os.replace(tmp, args.output)


def compare_table(before: dict, after: dict) -> str:
    """Markdown before/after table for a PR description; only metrics both runs have."""
    b, a = before.get("summary", {}), after.get("summary", {})
    lines = [f"Lane `{after.get('lane', '?')}` ({after.get('model', '?')}), "
             f"{after.get('config', {}).get('requests', '?')} requests at concurrency "
             f"{after.get('config', {}).get('concurrency', '?')}", "",
             "| metric | before | after | delta | change |", "|---|---:|---:|---:|---:|"]
    for key, label, better in COMPARE_ROWS:
        if b.get(key) is None or a.get(key) is None:
            continue
        delta = a[key] - b[key]
        change = f"{delta / b[key] * 100:+.1f}%" if b[key] else "n/a"
        verdict = "" if abs(delta) < 1e-12 else (" better" if delta * better > 0 else " worse")
        lines.append(f"| {label} | {b[key]:.4g} | {a[key]:.4g} | {delta:+.4g} | {change}{verdict} |")
    for name, run in (("before", before), ("after", after)):
        lines.append(f"\n{name}: status {run.get('status', '?')}, check: {run.get('check', {}).get('message', '')}")
    return "\n".join(lines)
