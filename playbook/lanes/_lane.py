"""The contract a lane script fills in: the `Lane` hooks, the `Sample` each request yields, the errors.

Lane scripts must run on a GPU box that has sglang but not the dossier package, so
this folder's helpers use the standard library only and import extras lazily.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field


class LaneError(Exception):
    """Server or environment failure: reported as one line, exit 2."""


class LaneSkip(Exception):
    """A mode that cannot run here (missing optional tool); reported, not failed."""


@dataclass
class Call:
    """One request as data: what `send` transmits and what the contract tests check against upstream.

    kind: chat | transcription | realtime | speech | generate | engine (an in-process
    `sglang.Engine.generate(**body)`). body is the JSON body, the form fields, or the
    keyword arguments; files are multipart parts (name -> (filename, bytes, mime));
    events are the websocket client events, in order.
    """

    kind: str
    method: str = "POST"
    path: str = ""
    body: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    events: list = field(default_factory=list)


@dataclass
class Sample:
    latency: float
    output: str = ""
    ttft: float | None = None  # time to first text
    ttfa: float | None = None  # time to first audio
    audio_seconds: float | None = None
    mode: str = ""
    ok: bool = True
    detail: str = ""
    extra: dict = field(default_factory=dict)


def comma_choices(lane: Lane, option: str, value: str, allowed: tuple[str, ...]) -> list[str]:
    """The input styles named in a comma-separated option; an unknown one ends the run with one line."""
    chosen = [m.strip() for m in value.split(",") if m.strip()]
    bad = [m for m in chosen if m not in allowed]
    if bad or not chosen:
        raise SystemExit(f"lane {lane.name}: error: unknown {option} {bad or chosen}; choose from {allowed}")
    return chosen


class Lane:
    """One validation lane; subclasses override the hooks below."""

    name = "lane"
    repo = "sglang"
    default_model = ""
    default_port = 30000
    default_served: str | None = None  # name the launch command serves the model under
    in_process_why = ""  # why a lane with engine_kwargs cannot use a server (said when one is given)

    def served(self, args) -> str:
        return args.served_name or self.default_served or args.model

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """This lane's own options: from the class and at most the environment, nothing else
        (a process that runs the lane many times reuses the parser: _runner.reused_parser)."""

    def label(self, args) -> str:
        """The lane id this invocation stands for (one script can serve several lanes)."""
        return self.name

    def server_command(self, args) -> list[str]:
        return ["python", "-m", "sglang.launch_server", "--model-path", args.model, "--port", str(args.port)]

    def server_env(self, args) -> dict:
        return {}

    def server_cwd(self, args) -> str | None:
        """The folder --launch starts the server in (None: the current one)."""
        return None

    def validate(self, args) -> None:
        """Reject contradictory options before anything runs (raise LaneError: one line, exit 2)."""

    def plan(self, args) -> list[str]:
        """Extra `key: value` lines for --dry-run (workload, placement, working folder)."""
        return []

    def media(self, args) -> str:
        """The dry-run's `media:` line: what differs between requests. The shared workload's words,
        unless a lane's requests carry something else (omni-speech: sentences; --long: one clip)."""
        from _workload import describe
        return describe(args)

    def describe(self, args) -> list[str]:
        """The requests this lane would send, one line each (for --dry-run)."""
        return []

    def prepare(self, args, workdir: str) -> None:
        """Generate media; runs once, before --launch starts the server, so a missing tool fails fast."""

    def calls(self, args, index: int) -> list[Call]:
        """The requests request `index` makes, built without the network (after prepare)."""
        raise NotImplementedError

    def engine_kwargs(self, args) -> dict | None:
        """Keyword arguments of an in-process `sglang.Engine` for lanes that need one; None: a server."""
        return None

    def send(self, args, base: str, index: int) -> Sample:
        raise NotImplementedError

    def check(self, args, samples: list[Sample]) -> tuple[bool, str, dict]:
        """(passed, one-line message, extra summary fields); by default every sample must be ok."""
        bad = [s for s in samples if not s.ok]
        if bad:
            return False, f"{len(bad)}/{len(samples)} answers wrong: {bad[0].detail}; got {bad[0].output[:120]!r}", {}
        return True, self.passed(args, samples), {}

    def passed(self, args, samples: list[Sample]) -> str:
        """The pass message of the default check."""
        return "ok"

    def close(self) -> None:
        pass
