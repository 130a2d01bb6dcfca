"""Lane commands (L033, L034): a lane invocation in a card or the playbook is one the lane takes today.

Every `python playbook/lanes/<lane>.py ...` in a card's Validation or a playbook entry's
`measure` is read with that lane's own argument parser (`dossier.lane_options`); a server
flag it passes through `--server-cmd` to `python -m sglang.launch_server` must exist in
sglang's server arguments at the pinned SHA or in the newest release.
"""

from __future__ import annotations

import shlex

from ..lane_options import PLACEHOLDER, command_key, dry_run_argv, lane_invocations, lane_mentions
from .base import Finding, rule


def _problems(options: dict, args: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.startswith("--") or word == "--":
            continue
        flag, eq, value = word.partition("=")
        spec = options.get(flag)
        if spec is None:
            out.append(f"unknown option {flag}")
            continue
        if spec.get("takes_value") and not eq:
            value = args[i] if i < len(args) else ""
            i += 1 if i < len(args) and not value.startswith("--") else 0
        if spec.get("choices") and value and value not in spec["choices"]:
            out.append(f"{flag} {value} is not one of {', '.join(spec['choices'])}")
        elif spec.get("type") and value and value != PLACEHOLDER and spec.get("nargs") in (None, 1):
            try:
                {"int": int, "float": float}[spec["type"]](value)
            except (KeyError, ValueError):
                out.append(f"{flag} takes {'an' if spec['type'] == 'int' else 'a'} {spec['type']}, not {value}")
    return out


def _server_flag_problems(ctx, args: list[str]) -> list[str]:
    """Flags a `--server-cmd` passes to `python -m sglang.launch_server` that sglang lacks."""
    if "--server-cmd" not in args:
        return []
    i = args.index("--server-cmd")
    if i + 1 >= len(args):
        return []
    try:
        words = shlex.split(args[i + 1])
    except ValueError:
        return []
    if "sglang.launch_server" not in words[:3]:
        return []
    pinned = set((ctx.pinned_names or (set(), set()))[0])
    release = set((ctx.release or {}).get("flags") or ())
    known = pinned | release
    if not known:
        return []
    return [f"server flag {w.split('=')[0]} is in neither sglang at the pin nor the newest release"
            for w in words if w.startswith("--") and w.split("=")[0] not in known]


def _check(ctx, text: str):
    options = ctx.lane_options
    verdicts = ctx.lane_command_verdicts
    for offset, script, args in lane_invocations(text):
        spec = options.get(script)
        if spec is None:
            yield offset, f"playbook/lanes/{script} is not a lane script"
            continue
        if "options" not in spec:
            continue  # the lane does not import; L011 reports it
        problems = _problems(spec["options"], args) + _server_flag_problems(ctx, args)
        for problem in problems:
            yield offset, f"{script}: {problem}"
        argv = dry_run_argv(args)
        refusal = verdicts.get(command_key(script, argv)) if argv and not problems else None
        if refusal:
            yield offset, f"{script} refuses these options (its --dry-run says: {refusal})"
    # "the `vl-single-image` lane with `--image-size 1280x720`": names, choices and types only;
    # prose around the spans may hold values, so there is no dry-run.
    for offset, script, words in lane_mentions(text, ctx.lanes):
        spec = options.get(script)
        if spec and "options" in spec:
            for problem in _problems(spec["options"], words):
                yield offset, f"{script}: {problem}"


@rule("L033", "lane-command-invalid", prefetch=("lane_options", "lane_command_verdicts"))
def lane_command_invalid(ctx, card):
    """A card's Validation runs a lane with an option the lane does not take today.

    Lanes change (distinct media per request, placements, new flags); a card that tells a
    user to run `--gpus 4` or a removed option sends them to an error. Each command is
    parsed with the lane's own argument parser; a `--server-cmd` for
    `python -m sglang.launch_server` must use flags sglang has at the pin or in the
    newest release.
    """
    section = card.sections.get("Validation")
    if section is None or not section.body:
        return
    text = card.body_text("Validation") + "\n"  # each body line and its newline
    for offset, message in _check(ctx, text):
        # The line holding the offset: its index is the count of newlines before it.
        index = text.count("\n", 0, offset)
        number = section.body[index][0]
        line_start = text.rfind("\n", 0, offset) + 1
        yield Finding(ctx.rel(card.path), number, offset - line_start + 1, "L033", message)


@rule("L034", "playbook-lane-command-invalid", scope="project", prefetch=("lane_options", "lane_command_verdicts"))
def playbook_lane_command_invalid(ctx):
    """A playbook entry's `measure` runs a lane with an option the lane does not take today."""
    from ..yamlio import line_of

    for entry in ctx.playbook.entries:
        measure = entry.get("measure")
        if not isinstance(measure, str):
            continue
        # measure is prose: treat the whole value as code when it names a lane script
        for _, message in _check(ctx, f"`{measure}`"):
            yield Finding(entry["_file"], line_of(entry, "measure"), 1, "L034",
                          f"entry '{entry.get('id')}': {message}")
