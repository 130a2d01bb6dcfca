"""What the knowledge base knows of its GPU lanes: the registry, the lane scripts' options,
and the `--dry-run` verdicts of the lanes and of the cards' lane commands.

A mixin of `KnowledgeBase` (it reads `root`, `cards` and `playbook` from it): the lane
queries share one subprocess (dossier.lane_interpreter), which `check` starts early on a
cold run and stops at the end.
"""

from __future__ import annotations

from functools import cached_property


class LaneQueries:
    @cached_property
    def lane_registry(self):
        """playbook/lanes.yaml as read: (line, entry) pairs, or the problem that stopped it."""
        from .lanes import read_registry

        return read_registry(self.root)

    @cached_property
    def lanes(self) -> dict[str, dict]:
        """Registered lanes by id; an unusable registry yields none (rule L010 reports it)."""
        if self.lane_registry.problem:
            return {}
        return {l["id"]: l for _, l in self.lane_registry.entries if isinstance(l, dict) and "id" in l}

    def lane_verdicts(self, lanes: list[dict]) -> dict[str, tuple[bool, str]]:
        """Each lane's `--dry-run` verdict (cached on disk by the content of its inputs)."""
        from .lanes import dry_run_all

        return dry_run_all(self.root, lanes, self.lane_interpreter)

    def send_lane_verdicts_ahead(self, lanes: list[dict]) -> bool:
        """Send the dry-runs `lane_verdicts(lanes)` will ask for to the lane subprocess now,
        when any is not cached (see `start_lane_interpreter_if_cold`). Whether it sent them."""
        from .lanes import send_dry_runs_ahead

        return send_dry_runs_ahead(self.root, lanes, self.lane_interpreter)

    @cached_property
    def lane_interpreter(self):
        """The one subprocess that probes the lane scripts for this knowledge base (started on
        first use; stopped when this object goes or on `close_lane_interpreter`)."""
        from .lane_interpreter import LaneInterpreter

        return LaneInterpreter(self.root)

    def start_lane_interpreter_if_cold(self) -> None:
        """When the lane scripts' options are not cached (a cold run, or the lanes changed),
        start the lane subprocess and send it the options probe now: its imports and the
        probe then run on the other core while the cards load."""
        from .lane_options import probe_ahead

        probe_ahead(self.root, self.lane_interpreter)

    def close_lane_interpreter(self) -> None:
        if "lane_interpreter" in self.__dict__:
            self.lane_interpreter.close()

    @cached_property
    def lane_options(self) -> dict[str, dict]:
        """Each lane script's options as its own parser defines them (dossier.lane_options)."""
        from .lane_options import lane_options

        return lane_options(self.root, self.lane_interpreter)

    @cached_property
    def lane_command_verdicts(self) -> dict[str, str | None]:
        """The `--dry-run` verdict of every lane command the cards' Validation and the playbook's
        `measure` give (dossier.lane_options), computed in one batch."""
        from .lane_options import command_verdicts, lane_invocations

        texts = [c.sections["Validation"].text for c in self.cards if "Validation" in c.sections]
        texts += [f"`{e['measure']}`" for e in self.playbook.entries if isinstance(e.get("measure"), str)]
        commands = [(script, args) for t in texts for _, script, args in lane_invocations(t)
                    if script in self.lane_options and "options" in self.lane_options[script]]
        return command_verdicts(self.root, commands, self.lane_interpreter)
