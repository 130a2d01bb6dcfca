"""What every command shares: the group that turns errors into one line, and --root."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

import click

from ..config import Config, load_config, parse_pr_number
from ..errors import DossierError


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
root_option = click.option("--root", type=click.Path(file_okay=False), envvar="DOSSIER_ROOT",
                           help="Knowledge-base root (folder with dossier.toml).")


def config_at(root) -> Config:
    return load_config(Path(root) if root else None)


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
