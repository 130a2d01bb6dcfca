"""Measurements: records of the op-level reproductions in playbook/repros/.

A repro script writes a raw record on the device; `dossier repro record` files it
under `references/measurements/<repo>/<subject>.json` byte for byte (numbers are
never typed or edited). A record names the script and its sha256, so a changed
script makes its record stale (rule M002). Cards whose PR has a record show it
in a generated "Measured on H200" block that `dossier build` writes (M003).

Spread across runs: `dossier repro run` runs each script in RUNS separate processes
and files one record merged from them (`merge_runs`): each time is the median of the
runs' medians, with the min-max across runs beside it, and a case whose speedup
moves more than NOISY_SPREAD across runs is marked `noisy`. A value a script
computes instead of timing (N x a batch-1 time, a queueing simulation, a model of
time to first audio) is named in the case's `modelled` map with how it was derived;
cards, `find` and the site show it as modelled (M005, M006).
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import DossierError
from .fsio import read_text, write_atomic
from .measurement_runs import (NOISY_SPREAD, RUNS, flags, is_modelled, merge_runs,  # noqa: F401
                               noisy_cases, notes, run_problems, speedups)

REPROS_DIR = "playbook/repros"
MEASUREMENTS_DIR = "references/measurements"
SCHEMA = 1
SUBJECT = re.compile(r"^(?:(?P<repo>sglang(?:-omni)?)#(?P<pr>\d+)|seed:(?P<slug>[a-z0-9][a-z0-9-]*))$")
SEED_REPO = "sglang-omni"  # the seed's open items are sglang-omni's
CASE_KEYS = ("name", "shape", "peak_mib_before", "peak_mib_after", "max_abs_err")
BLOCK_START = "<!-- measured-block"
BLOCK_END = "<!-- /measured-block -->"
BLOCK = re.compile(r"\n*## Measured on H200\n+<!-- measured-block.*?<!-- /measured-block -->\n?", re.DOTALL)


@dataclass
class Script:
    path: Path
    rel: str
    subject: str | None
    technique: str | None
    doc: str
    modelled: tuple[str, ...] = ()  # MODELLED: the values the script computes rather than times

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def subject_parts(subject: str) -> tuple[str, str] | None:
    """(repo, file stem) of a subject: sglang#26167 -> (sglang, 26167); seed:x -> (sglang-omni, seed-x)."""
    m = SUBJECT.match(subject or "")
    if not m:
        return None
    if m.group("slug"):
        return SEED_REPO, f"seed-{m.group('slug')}"
    return m.group("repo"), m.group("pr")


def record_path(root: Path, subject: str) -> Path:
    parts = subject_parts(subject)
    if parts is None:
        raise DossierError(f"subject {subject!r} is neither REPO#PR (sglang, sglang-omni) nor seed:<slug>")
    return root / MEASUREMENTS_DIR / parts[0] / f"{parts[1]}.json"


def scripts(root: Path) -> list[Script]:
    """Every repro script (helpers start with `_`), with SUBJECT and TECHNIQUE read from its source."""
    out = []
    for path in sorted((root / REPROS_DIR).glob("[!_]*.py")):
        try:
            tree = ast.parse(read_text(path))
        except SyntaxError as exc:
            raise DossierError(f"{path.relative_to(root)}:{exc.lineno}: not valid Python: {exc.msg}") from None
        consts = {}
        for n in tree.body:
            if isinstance(n, ast.Assign):
                try:
                    value = ast.literal_eval(n.value)
                except ValueError:
                    continue
                consts.update({t.id: value for t in n.targets if isinstance(t, ast.Name)})
        derived = consts.get("MODELLED") or ()
        out.append(Script(path, str(path.relative_to(root)), consts.get("SUBJECT"), consts.get("TECHNIQUE"),
                          (ast.get_docstring(tree) or "").strip(),
                          tuple(str(x) for x in derived) if isinstance(derived, (tuple, list)) else ()))
    return out


_CUDA_VERSION = re.compile(r"^\d{1,2}\.\d{1,2}(?:\.\d{1,3})?$")
# A GPU's name, whatever its case: a vendor or product family (a "cpu" is none of these).
_GPU_NAME = re.compile(r"nvidia|geforce|rtx|tesla|quadro|\b[abhlv]\d{2,3}\b|\bgb?\d{3}\b|amd|radeon|instinct"
                       r"|\bmi\d{3}|intel.*(?:arc|max|gaudi)|gaudi|ascend|\bnpu\b", re.I)
# Measured speedup is before/after rounded (the scripts keep 3 decimals): a 1% or 0.002 slack.
_SPEEDUP_SLACK = (0.01, 0.002)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _nonnegative_or_none(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value) and value >= 0)


def _iso_date(value) -> bool:
    if not isinstance(value, str):
        return False
    try:
        (datetime.datetime if "T" in value else datetime.date).fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _case_problems(i: int, case: dict) -> list[str]:
    out, at = [], f"case {i + 1}"
    for key in ("before_ms", "after_ms"):
        if key in case and not _positive(case[key]):
            out.append(f"{at}: {key} must be a finite positive number of milliseconds, got {case[key]!r}")
    for key in ("peak_mib_before", "peak_mib_after", "max_abs_err"):
        if not _nonnegative_or_none(case.get(key)):
            out.append(f"{at}: {key} must be a finite number >= 0 or null, got {case.get(key)!r}")
    for key in ("before_spread_ms", "after_spread_ms"):
        if key in case and (not isinstance(case[key], list) or not all(_positive(v) for v in case[key])):
            out.append(f"{at}: {key} must be a list of finite positive numbers")
    if "speedup" in case:
        sp = case["speedup"]
        if not _positive(sp):
            out.append(f"{at}: speedup must be a finite positive number, got {sp!r}")
        elif _positive(case.get("before_ms")) and _positive(case.get("after_ms")):
            ratio = case["before_ms"] / case["after_ms"]
            if abs(sp - ratio) > max(_SPEEDUP_SLACK[0] * ratio, _SPEEDUP_SLACK[1]):
                out.append(f"{at}: speedup {sp} disagrees with before_ms / after_ms = {ratio:.3f}")
    return out


def problems(record: object) -> list[str]:
    """What is wrong with a record's shape; [] for a valid one.

    Strict, since a record is filed as it is and its numbers are shown as measured: times
    finite and positive, a speedup that is before/after, a GPU named, ISO dates, a CUDA version.
    """
    if not isinstance(record, dict):
        return ["a record is a JSON object"]
    out = []
    if record.get("schema") != SCHEMA:
        out.append(f"schema must be {SCHEMA}")
    for key in ("subject", "technique", "script", "script_sha256", "measured"):
        if not isinstance(record.get(key), str) or not record.get(key):
            out.append(f"'{key}' is missing")
    if record.get("subject") and subject_parts(record["subject"]) is None:
        out.append(f"subject {record['subject']!r} is neither REPO#PR nor seed:<slug>")
    device = record.get("device")
    if not isinstance(device, dict) or not all(k in device for k in ("gpu", "torch", "cuda", "transformers")):
        out.append("'device' needs gpu, torch, cuda and transformers")
    elif not device.get("cuda") or not isinstance(device.get("gpu"), str) or "cpu" in device["gpu"].lower() \
            or not _GPU_NAME.search(device["gpu"]):
        out.append(f"measured without a GPU (device.gpu {device.get('gpu')!r}): run it on the device")
    elif not _CUDA_VERSION.match(str(device.get("cuda"))):
        out.append(f"device.cuda {device.get('cuda')!r} is not a CUDA version such as 12.4")
    elif not all(isinstance(device.get(k), str) and device[k].strip() for k in ("torch", "transformers")):
        out.append("device.torch and device.transformers are version strings")
    if isinstance(record.get("measured"), str) and record["measured"] and not _iso_date(record["measured"]):
        out.append(f"measured {record['measured']!r} is not an ISO date (YYYY-MM-DD)")
    if record.get("quick"):
        out.append("a --quick smoke run is not a measurement")
    cases = record.get("cases")
    if not isinstance(cases, list) or not cases:
        out.append("'cases' must be a non-empty list")
    else:
        for i, case in enumerate(cases):
            if not isinstance(case, dict) or any(k not in case for k in CASE_KEYS):
                out.append(f"case {i + 1} needs {', '.join(CASE_KEYS)}")
            elif ("before_ms" in case) != ("after_ms" in case):
                out.append(f"case {i + 1} has only one of before_ms / after_ms")
            elif "modelled" in case and (not isinstance(case["modelled"], dict) or not all(
                    isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in case["modelled"].items())):
                out.append(f"case {i + 1}: 'modelled' maps each computed value to how it was derived")
            else:
                out.extend(_case_problems(i, case))
        if not any(isinstance(c, dict) and "before_ms" in c for c in cases):
            out.append("no case has before_ms and after_ms")
    return out


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a measurement can have")


def load_record(path: Path, root: Path | None = None) -> dict:
    try:
        return json.loads(read_text(path, root), parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise DossierError(f"{path}: broken JSON at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # NaN, Infinity (Python's json reads them; JSON has no such numbers)
        raise DossierError(f"{path}: {exc}") from None


def records(root: Path) -> dict[str, tuple[Path, dict | None, str | None]]:
    """subject (or file name when unreadable) -> (path, record or None, error)."""
    out = {}
    for path in sorted((root / MEASUREMENTS_DIR).glob("*/*.json")):
        try:
            rec = load_record(path, root)
        except DossierError as exc:
            out[str(path.relative_to(root))] = (path, None, str(exc).split(": ", 1)[-1])
            continue
        key = rec.get("subject") if isinstance(rec, dict) and isinstance(rec.get("subject"), str) else str(path)
        out[key] = (path, rec, None)
    return out


def _checked_raw(root: Path, raw_path: Path) -> dict:
    rec = load_record(raw_path)
    bad = problems(rec)
    if bad:
        raise DossierError(f"{raw_path}: not a measurement record: {'; '.join(bad)}")
    script = root / rec["script"]
    if not script.is_file():
        raise DossierError(f"{raw_path}: its script {rec['script']} does not exist here")
    if hashlib.sha256(script.read_bytes()).hexdigest() != rec["script_sha256"]:
        raise DossierError(f"{raw_path}: measured with another version of {rec['script']} (sha256 differs); re-run it")
    return rec


def file_record(root: Path, raw_path: Path) -> Path:
    """File one record from the device as it is (already merged, or one run); refuse one that does not
    match its script."""
    rec = _checked_raw(root, raw_path)
    target = record_path(root, rec["subject"])
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, read_text(raw_path))
    return target


def file_runs(root: Path, raw_paths: list[Path]) -> Path:
    """Merge several runs of one script (raw files from separate processes) and file the merged record."""
    raws = [_checked_raw(root, p) for p in raw_paths]
    merged = merge_runs(raws)
    target = record_path(root, merged["subject"])
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, json.dumps(merged, indent=1) + "\n")
    return target


_SAME = 0.005  # ratios this close to 1 read "same speed"


def _times(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def ratio_text(speedup: float) -> str:
    """A before/after time ratio as people say it: 7.6x faster, 3.5x slower, same speed."""
    if abs(speedup - 1) < _SAME:
        return "same speed"
    return f"{_times(speedup)}x faster" if speedup > 1 else f"{_times(1 / speedup)}x slower"


def _ratio_range(lo: float, hi: float) -> str:
    """'1.1-1.9x faster', '3.2-3.5x slower', or both ends spelt out when the range crosses 'same speed'."""
    if abs(hi - lo) < _SAME:
        return ratio_text(lo)
    if lo > 1 + _SAME:
        return f"{_times(lo)}-{_times(hi)}x faster"
    if hi < 1 - _SAME:
        return f"{_times(1 / hi)}-{_times(1 / lo)}x slower"
    return f"{ratio_text(lo)} to {ratio_text(hi)}"


def headline(record: dict) -> str:
    """The range of timed before/after time ratios, e.g. '1.1-35x faster' or '3.5x slower', and of peak-memory
    change; modelled ratios and noisy cases are named after it."""
    sp = speedups(record)
    msp = speedups(record, modelled=True)
    if not sp and not msp:
        return "-"
    text = _ratio_range(min(sp), max(sp)) if sp else "no timed ratio"
    peaks = [c["peak_mib_after"] / c["peak_mib_before"] - 1 for c in record.get("cases", [])
             if c.get("peak_mib_before") and c.get("peak_mib_after") is not None]
    if peaks:
        a, b = round(100 * min(peaks)), round(100 * max(peaks))
        text += f", peak memory {a:+d}%" if a == b else f", peak memory {a:+d}..{b:+d}%"
    if msp:
        text += f"; modelled {_ratio_range(min(msp), max(msp))}"
    noisy = noisy_cases(record)
    if noisy:
        text += f"; noisy: {len(noisy)} case{'s' if len(noisy) > 1 else ''} moved >{NOISY_SPREAD:.0%} across runs"
    return text


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items() if not isinstance(v, (list, dict)))
    return str(value)


def device_line(record: dict) -> str:
    d = record["device"]
    runs = record.get("runs", 1)
    line = (f"{d['gpu']}, torch {d['torch']}, CUDA {d['cuda']}, transformers {d['transformers']}; "
            f"measured {record['measured']} by `{record['script']}` (sha256 {record['script_sha256'][:12]})")
    if runs > 1:
        line += (f"; {runs} separate runs, each time the median of the runs' medians, the ratio's range "
                 "across runs beside it")
    pin = record.get("pinning")
    if isinstance(pin, dict) and pin:
        line += "; pinned: " + ", ".join(f"{k} {_fmt(v) if not isinstance(v, list) else v}" for k, v in pin.items())
    return line


def _cell(case: dict, field: str) -> str:
    text = _fmt(case.get(field))
    return f"{text} (modelled)" if is_modelled(case, field) and field != "speedup" else text


def _speedup_cell(case: dict) -> str:
    if not isinstance(case.get("speedup"), (int, float)):
        return "-"
    text = ratio_text(case["speedup"])
    runs = case.get("speedup_runs")
    if isinstance(runs, list) and len(runs) == 2 and all(isinstance(r, (int, float)) and r > 0 for r in runs):
        text += f" (runs: {_ratio_range(min(runs), max(runs))})"
    if case.get("noisy"):
        text += " noisy"
    if is_modelled(case):
        text += " (modelled)"
    return text


def render_block(record: dict) -> str:
    """The card's generated "Measured on H200" section (written by `dossier build`)."""
    lines = ["## Measured on H200", "",
             f"{BLOCK_START} {record['subject']}: generated by `dossier build` from "
             f"references/measurements; do not edit -->", "",
             f"Technique reproduced: {record['technique']}. Inputs (and model weights, where a model part runs) "
             "are random, at real model sizes; before and after run the same inputs.", "",
             "| case | shape | before ms | after ms | after vs before | peak MiB before | peak MiB after | max abs err |",
             "|---|---|---|---|---|---|---|---|"]
    for c in record["cases"]:
        if "before_ms" not in c:
            continue
        lines.append("| " + " | ".join([c["name"], _fmt(c["shape"]), _cell(c, "before_ms"), _cell(c, "after_ms"),
                                         _speedup_cell(c), _fmt(c["peak_mib_before"]),
                                         _fmt(c["peak_mib_after"]), _fmt(c["max_abs_err"])]) + " |")
    lines.append("")
    lines += notes(record)
    lines += [f"Device: {device_line(record)}.", "", BLOCK_END, ""]
    return "\n".join(lines)
