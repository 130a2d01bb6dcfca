"""Check rules, grouped by family; importing this package registers them all.

Each module of this package holds rules of a single family (prose, P, has two:
phrases and similarity); any module added here is picked up, so a new rule needs
no edit elsewhere.
"""

import importlib
import pkgutil

from .base import RULES, Finding, Rule, rule  # noqa: F401 - the package's public names

__all__ = ["RULES", "Finding", "Rule", "rule"]

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _mod != "base":
        importlib.import_module(f"{__name__}.{_mod}")
