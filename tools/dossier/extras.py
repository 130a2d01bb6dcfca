"""Optional dependencies: one line naming the extra to install when a command needs one that is missing."""

from __future__ import annotations

import importlib.util

from .errors import DossierError

# extra -> (module to import, the distribution's name people know it by)
EXTRAS = {"github": ("github", "PyGithub"), "lanes": ("jiwer", "jiwer")}


def install_hint(extra: str) -> str:
    return (f"install the {extra} extra: pip install 'sglang-qwen-dossier[{extra}]' "
            f"(or scripts/install-skill --extras {extra})")


def require(extra: str, what: str) -> None:
    """Raise one DossierError line when `extra`'s package is missing; `what` names the command needing it."""
    module, dist = EXTRAS[extra]
    if importlib.util.find_spec(module) is None:
        raise DossierError(f"{what} needs {dist}, which is not installed; {install_hint(extra)}")
