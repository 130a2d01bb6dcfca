"""Lane registry rules (L010-L012): entries well formed, scripts present, `--dry-run` clean."""

from __future__ import annotations

from ..lanes import REGISTRY
from .base import Finding, rule

REQUIRED = ("id", "title", "script")


def _entries(ctx):
    """[(line, entry)] of the registry, and the problem that stopped reading it (or None)."""
    return ctx.lane_registry.entries, ctx.lane_registry.problem


def _problems(ctx, entry, seen: set) -> list[str]:
    if not isinstance(entry, dict):
        return ["lane entry is not a mapping"]
    out = [f"lane entry missing '{key}'" for key in REQUIRED if not entry.get(key)]
    lid = entry.get("id")
    if lid:
        if lid in seen:
            out.append(f"duplicate lane id '{lid}'")
        seen.add(lid)
    families = entry.get("families") or []
    if not isinstance(families, list):
        out.append("'families' must be a list")
    else:
        out += [f"unknown family '{f}' (see dossier.toml)" for f in families if f not in ctx.config.families]
    if entry.get("repo") and entry["repo"] not in ctx.config.repos:
        out.append(f"unknown repo '{entry['repo']}' (see dossier.toml)")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        out.append("'args' must be a list of strings")
    server = entry.get("server")
    if server is not None and not (isinstance(server, dict) and isinstance(server.get("cmd", ""), str)
                                   and isinstance(server.get("env", {}) or {}, dict)):
        out.append("'server' must be a mapping with a 'cmd' string and an 'env' mapping")
    return out


def _script_missing(ctx, entry) -> str | None:
    script = str(entry.get("script"))
    path = (ctx.root / script).resolve()
    if not path.is_relative_to(ctx.root.resolve()):
        return f"lane '{entry.get('id')}' script '{script}' is outside the knowledge base"
    if not path.is_file():
        return f"lane '{entry.get('id')}' script '{script}' not found"
    return None


@rule("L010", "lane-entry-malformed", scope="project")
def lane_entry_malformed(ctx):
    """A lane registry entry is malformed: missing id/title/script, duplicate id, unknown family or repo.

    Every entry of `playbook/lanes.yaml` needs `id`, `title` and `script`; ids are
    unique; `families` and `repo` must be names from `dossier.toml`; `args` is a list
    of strings and `server` a mapping with `cmd` (and optional `env`).
    """
    entries, problem = _entries(ctx)
    if problem:
        yield Finding(REGISTRY, problem[0], 1, "L010", problem[1])
        return
    seen: set = set()
    for line, entry in entries:
        for msg in _problems(ctx, entry, seen):
            yield Finding(REGISTRY, line, 1, "L010", msg)


@rule("L011", "lane-script-missing", scope="project")
def lane_script_missing(ctx):
    """A registered lane's script does not exist.

    `script` is a path from the knowledge-base root (e.g. `playbook/lanes/vl_image.py`)
    and must name a file inside it.
    """
    entries, _ = _entries(ctx)
    for line, entry in entries:
        if isinstance(entry, dict) and entry.get("script"):
            msg = _script_missing(ctx, entry)
            if msg:
                yield Finding(REGISTRY, line, 1, "L011", msg)


def _ready(ctx) -> list[tuple[int, dict]]:
    """(line, entry) of each lane L012 dry-runs: the first of its id, well formed, with its
    script present (L010/L011 speak for the others)."""
    entries, _ = _entries(ctx)
    ready, seen = [], set()
    for line, entry in entries:
        if _problems(ctx, entry, set()) or entry["id"] in seen or _script_missing(ctx, entry):
            continue
        seen.add(entry["id"])
        ready.append((line, entry))
    return ready


def _dry_runs_ahead(ctx) -> None:
    ctx.send_lane_verdicts_ahead([e for _, e in _ready(ctx)])


@rule("L012", "lane-dry-run-fails", scope="project", background=True, ahead=_dry_runs_ahead)
def lane_dry_run_fails(ctx):
    """A lane script fails `--dry-run`, or the server command it prints is not the registry's `server.cmd` (`engine`).

    `dossier check` runs `script --dry-run <args> --model <model>` for each lane, all in
    one lane subprocess that imports the lane scripts once (a process per lane only when
    that one breaks), and caches the verdict in `.dossier-cache/` by the hash of the entry
    and the lane scripts. Run `dossier lanes show ID` to see the exact command.
    """
    ready = _ready(ctx)
    verdicts = ctx.lane_verdicts([e for _, e in ready])
    for line, entry in ready:
        ok, msg = verdicts[entry["id"]]
        if not ok:
            yield Finding(REGISTRY, line, 1, "L012", f"lane '{entry['id']}': {msg}")
