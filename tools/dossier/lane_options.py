"""Each lane script's command line as its own argparse parser defines it (options, choices).

Read in the lane interpreter (dossier.lane_interpreter), which imports every lane script
without running it and builds its parser with the lanes' shared `_runner.build_parser`, so
the options a card or a playbook entry passes are checked against the lane as it is today. Cached on disk by the content of
the lane folder.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

from .cache import DiskCache, content_key
from .lane_interpreter import LaneInterpreter, ask

LANES_DIR = "playbook/lanes"
_SCRIPT = re.compile(r"playbook/lanes/(\w+\.py)")
_INLINE = re.compile(r"`([^`]+)`")
_STOP = {";", "&&", "||", "|", ">", ">>", "2>&1", "&"}
# A card may write a value as a placeholder ("--server-url <url>", "--media-dir <your clips>").
_PLACEHOLDER = re.compile(r"<[^<>`]{1,60}>")
PLACEHOLDER = "PLACEHOLDER"


# Prose that runs a registered lane with options: "the `vl-single-image` lane with
# `--image-size 1280`" or "... lane with `--long` and `--frames 64`".
_PROSE_RUN = re.compile(r"`([a-z0-9][a-z0-9.-]*)`\s+lanes?\s+with\s+"
                        r"(`--[^`]+`(?:(?:,\s*|\s+(?:and|plus)\s+|\s+)`--[^`]+`)*)")

_SERVER_SIDE = re.compile(r"\s+(?:in|inside|into|through|via|on|to)\b")


def _blank_fences(text: str) -> str:
    """`text` with fenced blocks blanked to spaces, so offsets into it are offsets into `text`."""
    if "```" not in text and "~~~" not in text:
        return text  # no fence to blank (most Validation sections): skip the regex pass
    return re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1[^\n]*$", lambda m: " " * len(m.group(0)), text)


def _words(rest: str) -> list[str]:
    rest = _PLACEHOLDER.sub(PLACEHOLDER, rest.replace("\\\n", " ").replace("\n", " "))
    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


def lane_invocations(text: str) -> list[tuple[int, str, list[str]]]:
    """(offset, lane script, its arguments) of every lane command in the code of `text`:
    inline code spans (which may wrap across lines) and fenced blocks."""
    if "playbook/lanes/" not in text:
        return []  # every command holds the path _SCRIPT looks for (most cards run no lane script)
    spans: list[tuple[int, str]] = []
    fenced, block, start = False, [], 0
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            if fenced:
                spans.append((start, "".join(block)))
            fenced, block, start = not fenced, [], pos + len(line)
        elif fenced:
            block.append(line)
        pos += len(line)
    prose = _blank_fences(text)
    spans += [(m.start(1), m.group(1)) for m in _INLINE.finditer(prose)]
    out = []
    for offset, code in spans:
        for m in _SCRIPT.finditer(code):
            words = _words(code[m.end():])  # "<dir of clips>" is one value, not three words
            args = []
            for w in words:
                if w in _STOP or _SCRIPT.search(w) or w in ("python", "python3"):
                    break
                args.append(w)
            out.append((offset + m.start(), m.group(1), args))
    return out


def lane_mentions(text: str, registry: dict[str, dict]) -> list[tuple[int, str, list[str]]]:
    """(offset, lane script, the words of one span) for each option span of prose that runs a
    registered lane with options. A span is read on its own (a value may be in the prose
    around it), and the `--` that `dossier lanes run ID -- ...` puts before lane options is
    dropped."""
    if "`--" not in text or "lane" not in text or "with" not in text:
        return []  # literals every _PROSE_RUN match holds (blanking fences only adds spaces)
    prose = _blank_fences(text)
    out = []
    for m in _PROSE_RUN.finditer(prose):
        script = _SCRIPT.search(str((registry.get(m.group(1)) or {}).get("script", "")))
        for span in _INLINE.finditer(m.group(2)) if script else ():
            if _SERVER_SIDE.match(prose, m.start(2) + span.end()):
                continue  # "`--flag` in `--server-cmd`": a server flag, not the lane's
            words = _words(span.group(1))
            out.append((m.start(2) + span.start(), script.group(1), words[1:] if words[:1] == ["--"] else words))
    return out



_TIMEOUT = 60


def lane_options(root: Path, interpreter: LaneInterpreter | None = None) -> dict[str, dict]:
    """`{script file name: {"options": {flag: {takes_value, nargs, choices}}}}` (or `{"error": ...}`),
    probed in `interpreter` (the lane interpreter; a one-off one when None)."""
    key = _options_key(root)
    if key is None:
        return {}
    cache = DiskCache(root, "lane-options")
    hit = cache.get(key)
    if hit is not None:
        return hit
    found = ask(root, interpreter, *_probe(root), _TIMEOUT)
    if not isinstance(found, dict):
        return {}
    cache.put(key, found)
    cache.save(keep={key})
    return found


def _probe(root: Path) -> tuple[str, str]:
    """The lane interpreter's request for the options of every script in the lane folder."""
    return "options", str(Path(root) / LANES_DIR)


def probe_ahead(root: Path, interpreter: LaneInterpreter) -> bool:
    """When the options are not cached, send their probe to `interpreter` now (it starts
    the interpreter), so it runs while the caller goes on; `lane_options` then takes the
    answer. Whether it was sent."""
    if options_cached(root):
        return False
    interpreter.send_ahead(*_probe(root))
    return True


def options_cached(root: Path) -> bool:
    """Whether `lane_options` would answer from the cache (no lane folder counts as cached)."""
    key = _options_key(root)
    return key is None or DiskCache(root, "lane-options").get(key) is not None


def _options_key(root: Path) -> str | None:
    """The cache key of the lane folder's options: its scripts' content; None without scripts."""
    folder = Path(root) / LANES_DIR
    files = sorted(folder.glob("*.py")) if folder.is_dir() else []
    return content_key(sys.version, *files) if files else None


# Options that start work instead of describing it: a dry-run of a card's command leaves them out.
_RUN_ONLY = {"--launch": 0, "--output": 1, "--log-dir": 1, "--compare": 2}


def dry_run_argv(args: list[str]) -> list[str] | None:
    """A card's lane arguments turned into a `--dry-run` (None for a `--compare` of two results)."""
    if "--compare" in args:
        return None
    out, skip = [], 0
    for word in args:
        if skip:
            skip -= 1
            continue
        flag = word.split("=", 1)[0]
        if word == PLACEHOLDER and out and out[-1] == "--server-url":
            word = "http://127.0.0.1:30000"  # any well-formed URL: a dry-run sends nothing
        if flag in _RUN_ONLY:
            skip = 0 if "=" in word else _RUN_ONLY[flag]
            continue
        out.append(word)
    return out + ["--dry-run"]


def command_key(script: str, argv: list[str]) -> str:
    """How a lane command's dry-run verdict is looked up."""
    return f"{script} {json.dumps(argv)}"


def command_verdicts(root: Path, commands: list[tuple[str, list[str]]],
                     interpreter: LaneInterpreter | None = None) -> dict[str, str | None]:
    """Each lane command's `--dry-run` verdict: None when the lane takes it, else its error line.
    Keyed by "script args"; run in the lane interpreter and cached by the lane folder's content."""
    folder = Path(root) / LANES_DIR
    files = sorted(folder.glob("*.py")) if folder.is_dir() else []
    cache = DiskCache(root, "lane-commands")
    base = content_key(sys.version, *files)
    out: dict[str, str | None] = {}
    todo = []
    for script, args in commands:
        argv = dry_run_argv(args)
        if argv is None:
            continue
        key = command_key(script, argv)
        hit = cache.get(content_key(base, key))
        if hit is not None:
            out[key] = hit[0]
        elif key not in {k for k, _, _ in todo}:
            todo.append((key, str(folder / script), argv))
    if todo:
        results = ask(root, interpreter, "dry_runs", [[p, a] for _, p, a in todo], _TIMEOUT)
        if not isinstance(results, list) or len(results) != len(todo):
            return out
        for (key, _, _), (code, stdout, stderr) in zip(todo, results):
            lines = (stderr.strip() or stdout.strip()).splitlines()
            verdict = None if code == 0 else (lines[-1][:200] if lines else f"exit {code}")
            if verdict and PLACEHOLDER in verdict:
                verdict = None  # it refused the placeholder, not the card's options
            out[key] = verdict
            cache.put(content_key(base, key), [verdict])
        cache.save()
    return out
