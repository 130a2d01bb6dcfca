"""Spread across runs: one record merged from a script's runs in separate processes, and the flags a
reader needs beside its numbers (modelled values, noisy cases, how many runs).

Each time of a merged record is the median of the runs' medians, with the min-max across runs beside
it; a case whose speedup moves more than NOISY_SPREAD across runs is marked `noisy`. A value a script
computes instead of timing is named in its case's `modelled` map.
"""

from __future__ import annotations

from .errors import DossierError

RUNS = 3  # separate processes per script
NOISY_SPREAD = 0.20  # (max - min) / median speedup across runs above this: noisy


def run_problems(record: dict) -> list[str]:
    """What a filed record lacks of its cross-run spread; [] when it merges RUNS runs or more."""
    runs = record.get("runs")
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < RUNS:
        return [f"measured in {runs if isinstance(runs, int) else 1} process(es): a record merges at least {RUNS} "
                "runs (`dossier repro run`, or `dossier repro record` of the runs' raw files together)"]
    return []


def _median(values: list[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _merge_value(values: list):
    """Numbers: the median across runs; dicts: key by key; anything else: the first run's."""
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        m = _median([float(v) for v in values])
        return int(m) if all(isinstance(v, int) for v in values) and m == int(m) else round(m, 4)
    if values and all(isinstance(v, dict) for v in values):
        keys = list(dict.fromkeys(k for v in values for k in v))
        return {k: _merge_value([v[k] for v in values if k in v]) for k in keys}
    return values[0] if values else None


def _span(values: list[float]) -> list[float]:
    return [round(min(values), 4), round(max(values), 4)]


def merge_runs(raws: list[dict]) -> dict:
    """One record from several runs of one script: medians of the runs' medians, min-max across runs."""
    if len(raws) < 2:
        raise DossierError("merging needs at least two runs")
    first = raws[0]
    for key in ("subject", "script", "script_sha256"):
        if any(r.get(key) != first.get(key) for r in raws):
            raise DossierError(f"runs disagree on {key}: they are not runs of one script")
    if any(r.get("device", {}).get("gpu") != first.get("device", {}).get("gpu") for r in raws):
        raise DossierError("runs were measured on different GPUs")
    names = [[c.get("name") for c in r.get("cases", [])] for r in raws]
    if any(n != names[0] for n in names):
        raise DossierError("runs have different cases; they cannot be merged")
    cases = []
    for i, case in enumerate(first["cases"]):
        rows = [r["cases"][i] for r in raws]
        out = {"name": case["name"], "shape": case["shape"]}
        if "before_ms" in case:
            before = [float(c["before_ms"]) for c in rows]
            after = [float(c["after_ms"]) for c in rows]
            b, a = _median(before), _median(after)
            per_run = [x / y for x, y in zip(before, after) if y > 0]
            out.update({"before_ms": round(b, 4), "after_ms": round(a, 4), "speedup": round(b / a, 3)})
            for key in ("before_spread_ms", "after_spread_ms"):  # within a run: the runs' median p10 and p90
                if all(isinstance(c.get(key), list) and len(c[key]) == 2 for c in rows):
                    out[key] = [round(_median([c[key][k] for c in rows]), 4) for k in (0, 1)]
            out.update({"before_runs_ms": _span(before), "after_runs_ms": _span(after),
                        "speedup_runs": [round(min(per_run), 3), round(max(per_run), 3)]})
            if (max(per_run) - min(per_run)) / out["speedup"] > NOISY_SPREAD:
                out["noisy"] = True
        for key in ("peak_mib_before", "peak_mib_after"):
            vals = [c.get(key) for c in rows if c.get(key) is not None]
            out[key] = round(_median(vals), 2) if vals else None
        errs = [c.get("max_abs_err") for c in rows if c.get("max_abs_err") is not None]
        out["max_abs_err"] = max(errs) if errs else None
        if case.get("modelled"):
            out["modelled"] = case["modelled"]
        extras = [c.get("extra") for c in rows if isinstance(c.get("extra"), dict)]
        if extras:
            out["extra"] = _merge_value(extras)
            spans = {k: _span([e[k] for e in extras]) for k in out["extra"]
                     if all(isinstance(e.get(k), float) for e in extras) and len({e[k] for e in extras}) > 1}
            if spans:
                out["extra_runs"] = spans
        cases.append(out)
    merged = {k: v for k, v in first.items() if k != "cases"}
    merged["measured"] = max(r["measured"] for r in raws)
    merged["runs"] = len(raws)
    merged["cases"] = cases
    return merged


def is_modelled(case: dict, field: str = "speedup") -> bool:
    """Whether a case's value (or, for speedup, either of its times) was computed rather than timed."""
    m = case.get("modelled") if isinstance(case.get("modelled"), dict) else {}
    if field == "speedup":
        return bool({"before_ms", "after_ms", "speedup"} & set(m))
    return field in m


def speedups(record: dict, modelled: bool = False) -> list[float]:
    """The timed cases' speedups (or, with modelled=True, the modelled cases')."""
    return [c["speedup"] for c in record.get("cases", []) if isinstance(c.get("speedup"), (int, float))
            and is_modelled(c) == modelled]


def noisy_cases(record: dict) -> list[str]:
    return [c["name"] for c in record.get("cases", []) if c.get("noisy")]


def flags(record: dict) -> dict:
    """What a reader must know about a record's numbers: modelled values, noisy cases, runs."""
    return {"runs": record.get("runs", 1), "noisy": noisy_cases(record),
            "modelled": [c["name"] for c in record.get("cases", []) if c.get("modelled")]}


def notes(record: dict) -> list[str]:
    """The lines a card's block prints under its table: modelled values and how, noisy cases, what upstream
    code ran (or why not), and a single-run warning."""
    lines: list[str] = []
    how = {f"{c['name']}: {k}": v for c in record["cases"] if "before_ms" in c
           for k, v in (c.get("modelled") or {}).items()}
    if how:
        lines += ["Modelled (computed, not timed): " + "; ".join(f"{k} = {v}" for k, v in how.items()) + ".", ""]
    noisy = [c["name"] for c in record["cases"] if "before_ms" in c and c.get("noisy")]
    if noisy:
        lines += [f"Noisy (speedup moved more than {NOISY_SPREAD:.0%} across runs): {', '.join(noisy)}.", ""]
    up = record.get("upstream")
    if isinstance(up, dict) and up.get("ran"):
        lines += [f"Upstream's own code ran: {up['ran']} ({'; '.join(map(str, up.get('modules') or []))})"
                  + (f"; not run: {up['not_run']}" if up.get("not_run") else "") + ".", ""]
    elif isinstance(up, dict) and up.get("import_error"):
        lines += [f"Upstream's code did not import: `{str(up['import_error']).splitlines()[-1]}`.", ""]
    if record.get("runs", 1) < RUNS:
        lines += [f"Fewer than {RUNS} runs merged: no cross-run spread.", ""]
    return lines
