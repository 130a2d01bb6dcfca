"""Measurement rules (M): records of playbook/repros/ runs are valid, current, and shown, never typed."""

from __future__ import annotations

import re

from .. import measurements as ms
from ..measurement_blocks import card_blocks
from ..cards import is_fence
from ..errors import DossierError
from .base import Finding, rule


@rule("M001", "measurement-malformed", scope="project")
def measurement_malformed(ctx):
    """A measurement record is unreadable, malformed, or not a GPU measurement.

    A record under `references/measurements/<repo>/<subject>.json` is what a repro
    script wrote on the device: schema, subject (`sglang#N`, `sglang-omni#N` or
    `seed:<slug>`), technique, script and its sha256, device (gpu, torch, cuda,
    transformers), date, and cases with before/after times, peak memory and the
    equivalence error. `--quick` smoke runs and CPU runs are not measurements. The
    file must sit where its subject says.
    """
    for key, (path, record, error) in ctx.measurement_records.items():
        rel = ctx.rel(path)
        if error:
            yield Finding(rel, 1, 1, "M001", error)
            continue
        for problem in ms.problems(record):
            yield Finding(rel, 1, 1, "M001", problem)
        if ms.subject_parts(key) and ms.record_path(ctx.root, key).resolve() != path.resolve():
            yield Finding(rel, 1, 1, "M001", f"a record of {key} belongs at {ctx.rel(ms.record_path(ctx.root, key))}")


@rule("M002", "measurement-stale", scope="project")
def measurement_stale(ctx):
    """A repro script changed since its record was measured, or has no record.

    Each record carries the sha256 of the script that produced it. Editing the
    script (even a comment) makes the numbers unproven: run it again on the device
    and file the new record with `dossier repro record`. A script with no record
    has never run on the device.
    """
    try:
        scripts = {s.rel: s for s in ctx.repro_scripts}
    except DossierError as exc:
        yield Finding(ms.REPROS_DIR, 1, 1, "M002", str(exc))
        return
    recorded = set()
    for _, (path, record, error) in ctx.measurement_records.items():
        if error or not isinstance(record, dict) or not isinstance(record.get("script"), str):
            continue
        recorded.add(record["script"])
        script = scripts.get(record["script"])
        if script is None:
            yield Finding(ctx.rel(path), 1, 1, "M002", f"its script {record['script']} no longer exists")
        elif script.sha256 != record.get("script_sha256"):
            yield Finding(ctx.rel(path), 1, 1, "M002",
                          f"stale: {record['script']} changed since it was measured; re-run it and `dossier repro record`")
    for rel, script in scripts.items():
        if rel not in recorded:
            yield Finding(rel, 1, 1, "M002", "repro script has no measurement record; run it on the device")
        elif not script.subject or ms.subject_parts(script.subject) is None:
            yield Finding(rel, 1, 1, "M002", "repro script needs SUBJECT = 'sglang#N' or 'seed:<slug>'")


@rule("M003", "measurement-not-shown", scope="project", on_cards=True)
def measurement_not_shown(ctx):
    """A card's generated "Measured on H200" block is missing, out of date, or has no record.

    Cards show their PR's measurements in a block that `dossier build` writes from
    the record; run `dossier build` after filing a record.
    """
    cards, unreadable = ctx.all_loaded  # read already: card_blocks reads only what could not be loaded
    known = [(card.path, card.text) for card in cards] + [(path, None) for path, _ in unreadable]
    for path, expected in card_blocks(ctx.root, known, ctx.measurement_records).items():
        if ctx.card_paths is not None and path not in ctx.card_paths:
            continue
        current = path.read_text(encoding="utf-8").split("\n")
        line = next((i for i, (a, b) in enumerate(zip(current, expected.split("\n")), 1) if a != b),
                    len(current))
        yield Finding(ctx.rel(path), line, 1, "M003", "measurement block is out of date; run `dossier build`")


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _record_numbers(record: dict) -> set[str]:
    """Every measured value of a record as a card would print it (3 significant digits or more)."""
    out = set()
    for case in record.get("cases", []):
        for key in ("before_ms", "after_ms", "speedup", "peak_mib_before", "peak_mib_after"):
            value = case.get(key)
            if isinstance(value, (int, float)) and value:
                for text in (f"{value:.3g}", f"{value:.2f}", f"{value:.1f}", f"{value:.0f}"):
                    if len(text.replace(".", "").lstrip("0")) >= 3:
                        out.add(text)
    return out


@rule("M004", "measured-number-by-hand")
def measured_number_by_hand(ctx, card):
    """A card states a measured number by hand instead of through its record.

    Numbers measured with playbook/repros/ come only from records, rendered by
    `dossier build` between the `measured-block` markers. Outside that block, a
    "## Measured on H200" heading or a number equal to one of the card's record
    values (3 significant digits or more) is a measurement typed by hand. Numbers an
    upstream author reported stay in the prose, attributed to them. Only the prose
    counts: the frontmatter's facts (`additions: 100`), fenced code and `code spans`
    are not measurements.
    """
    rec = ctx.measurement_records.get(card.cid.replace("/", "#"))  # `repo#pr`
    numbers = _record_numbers(rec[1]) if rec and isinstance(rec[1], dict) else set()
    # lower() leaves digits as they are: a card without "200" cannot hold the heading.
    if not numbers and ("200" not in card.text or "measured on h200" not in card.text_lower):
        return
    inside = fenced = False
    lines = card.text.split("\n")
    for number, line in enumerate(lines, 1):
        if number < card.body_start:
            continue  # frontmatter: facts from the lock, not measurements
        if is_fence(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith(ms.BLOCK_START):
            inside = True
        elif line.startswith(ms.BLOCK_END):
            inside = False
        elif inside:
            continue
        elif line.strip().lower() == "## measured on h200":
            nxt = lines[number:number + 2]
            if not any(n.startswith(ms.BLOCK_START) for n in nxt):
                yield Finding(ctx.rel(card.path), number, 1, "M004",
                              "hand-written measurement section: `dossier build` writes it from the record")
        elif numbers:
            prose = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)  # keep columns
            hit = next((m for m in _NUMBER.finditer(prose) if m.group(0) in numbers), None)
            if hit:
                yield Finding(ctx.rel(card.path), number, hit.start() + 1, "M004",
                              f"{hit.group(0)} is a measured value typed by hand: the generated block shows it")


@rule("M005", "measurement-single-run", scope="project")
def measurement_single_run(ctx):
    """A measurement record merges fewer than three runs, so it has no cross-run spread.

    Eager, launch-bound paths move between processes far more than within one run's
    p10-p90 (one re-run moved a code2wav speedup by 35%). `dossier repro run` runs each
    script in three separate processes and files one record: every time is the median of
    the runs' medians with the min-max across runs beside it, and a case whose speedup
    moves more than 20% is marked noisy. Every record needs it, those of the earlier
    harness (no `pinning`) too: all of them were measured again in three processes.
    """
    for _, (path, record, error) in ctx.measurement_records.items():
        if error or not isinstance(record, dict) or ms.problems(record):
            continue
        for problem in ms.run_problems(record):
            yield Finding(ctx.rel(path), 1, 1, "M005", problem)


_DERIVES = re.compile(r"\bsimulat\w*|\bmodelled\b|\b[a-z-]+ model:")


@rule("M006", "modelled-value-unlabelled", scope="project")
def modelled_value_unlabelled(ctx):
    """A repro script derives a value instead of timing it, and its record does not label it modelled.

    A script says it derives values either with `MODELLED = ("before_ms", ...)` (the
    fields, or extra keys, it computes: N x a batch-1 time, a queueing simulation, a TTFA
    model from an assumed talker frame time) or in its docstring (a simulation, a
    "... model:", "modelled"). Its record must then name each such value in a case's
    `modelled` map with how it was derived, so that cards, `find` and the site show it as
    modelled rather than measured. A docstring that says it derives but no MODELLED
    constant fires too.
    """
    try:
        scripts = {s.rel: s for s in ctx.repro_scripts}
    except DossierError:
        return  # M002 reports it
    for _, (path, record, error) in ctx.measurement_records.items():
        if error or not isinstance(record, dict):
            continue
        script = scripts.get(record.get("script"))
        if script is None or script.sha256 != record.get("script_sha256"):
            continue  # M002: stale records are re-run first
        if not script.modelled and _DERIVES.search(script.doc):
            yield Finding(script.rel, 1, 1, "M006", f"the docstring says it derives values "
                          f"({_DERIVES.search(script.doc).group(0)!r}) but the script declares no MODELLED fields")
            continue
        labelled = {k for c in record.get("cases", []) if isinstance(c, dict) and isinstance(c.get("modelled"), dict)
                    for k in c["modelled"]}
        for field in script.modelled:
            if field not in labelled:
                yield Finding(ctx.rel(path), 1, 1, "M006", f"{script.rel} derives {field} but no case of the record "
                              "labels it in 'modelled'")
