"""What every command shares: the group that turns errors into one line, and --root."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path

import click

from ..config import Config, load_config, parse_pr_number
from ..errors import DossierError


# Set by a command once its work is done and its output written (check): the console script
# then leaves through os._exit instead of tearing the heap down object by object, which
# at 700 cards (15 MB of parsed locks, every card) takes 0.1-0.3 s of a process that is
# ending anyway. Nothing is lost: that command holds no open file, thread or child then.
_quick_exit = False


def exit_quickly(code: int):
    """End a finished command with `code`; through `run`, without the interpreter's teardown."""
    global _quick_exit
    _quick_exit = True
    sys.exit(code)


def leave(group: click.Group) -> None:
    """Run `group` as the program; leave as `exit_quickly` asked, else as click does."""
    try:
        group()
    except SystemExit as done:
        if not _quick_exit or not isinstance(done.code, int):
            raise
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a reader that went away (`| head`), a closed stream
                pass
        os._exit(done.code)


class Group(click.Group):
    """Turn DossierError into one line on stderr and exit status 2; Ctrl-C into one line and 130.

    Any other exception is a bug in the tool: one line naming it, exit 2, and the traceback
    only with DOSSIER_DEBUG=1, so no input ever shows a user a traceback.
    """

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except DossierError as exc:
            click.echo(f"dossier: error: {exc}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("dossier: interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see the docstring
            if os.environ.get("DOSSIER_DEBUG"):
                raise
            where = traceback.extract_tb(exc.__traceback__)[-1]
            click.echo(f"dossier: error: internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
                       f"(at {Path(where.filename).name}:{where.lineno}; DOSSIER_DEBUG=1 shows the traceback)", err=True)
            sys.exit(2)


# The one declaration of --root: every command that reads the knowledge base takes it.
root_option = click.option(
    "--root", type=click.Path(file_okay=False), envvar="DOSSIER_ROOT", show_envvar=True,
    help="Knowledge-base root (the folder with dossier.toml). Default: the installed skill's "
         "folder for find/lanes/radar/trace/repro, else the working directory or a parent.")


class LazyGroup(Group):
    """A group whose commands are `name: ".module:attr"` in this package, imported on first use."""

    def __init__(self, *args, lazy_commands: dict[str, str] | None = None, **kwargs):
        self._lazy = dict(lazy_commands or {})
        super().__init__(*args, **kwargs)

    @property
    def commands(self) -> dict:
        for name in list(self._lazy):
            self._load(name)
        return self._commands

    @commands.setter
    def commands(self, value) -> None:
        self._commands = value

    def _load(self, name: str) -> None:
        module, attr = self._lazy.pop(name).split(":")
        self._commands[name] = getattr(importlib.import_module(module, __package__), attr)

    def get_command(self, ctx, name):
        if name in self._lazy:
            self._load(name)
        return self._commands.get(name)

    def list_commands(self, ctx):
        return sorted(set(self._commands) | set(self._lazy))


def working(label: str):
    """A rich spinner with elapsed time on stderr while a long step runs; nothing when stderr is not a terminal."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), transient=True,
                        console=__import__("rich.console", fromlist=["Console"]).Console(stderr=True))

    @contextlib.contextmanager
    def run():
        with progress:
            progress.add_task(label, total=None)
            yield progress
    return run()


def show(text: str) -> None:
    """Print result text on a terminal: colour, and each line cut at the window's width instead of wrapping
    mid-identifier. Plain output (a pipe, a file) goes through click.echo unchanged."""
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    for line in text.splitlines():
        styled = Text(line, no_wrap=True, overflow="ellipsis")
        stripped = line.lstrip()
        if line and not line.startswith(" ") and line.endswith(":"):
            styled.stylize("bold")
        elif stripped[:1].isdigit():
            styled.stylize("bold cyan")
        elif stripped.startswith(("open:", "cards:", "lanes:", "today:", "measured:")):
            styled.stylize("dim", 0, len(line) - len(stripped) + stripped.index(":") + 1)
        console.print(styled)


def config_at(root, *, reading: bool = False) -> Config:
    """The knowledge base a command works on; `reading` commands prefer the installed skill."""
    return load_config(Path(root) if root else None, prefer_installed=reading)


def pr_numbers(values) -> list[int]:
    return [parse_pr_number(v) for v in values]


def read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise DossierError(f"{path}: {exc.strerror}") from None


def exit_for(failed: int, total: int) -> None:
    """Exit 1 when some items failed, 2 when all did; return when none did."""
    if failed:
        sys.exit(1 if failed < total else 2)


def repo_paths(items, config, option: str) -> dict[str, str]:
    """`REPO=PATH` option values (`--source`, `--clone`) as {repo: path}; one error line otherwise."""
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not path or name not in config.repos:
            raise DossierError(f"{option} takes REPO=PATH with REPO one of {', '.join(config.repos)}, got {item!r}")
        out[name] = path
    return out
