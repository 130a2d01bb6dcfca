"""The dossier package's modules import one another without a circle.

A module that imports one above it (kb importing build to cache what build computes from
a KnowledgeBase) ties the layers together: neither can be read, tested or moved alone, and
the lazy import that hides the circle from Python at load time hides it from readers too.
Shared queries move down instead. The graph counts every import of a dossier module, at
the top of a file or inside a function, except those under `if TYPE_CHECKING:` (they never
run).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tools" / "dossier"


def _modules(package: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = (package.name, *path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                inside.update(id(n) for n in ast.walk(child))
    return inside


def _imports_every_submodule(path: Path, tree: ast.AST) -> bool:
    """A package `__init__` that imports each of its modules by name at load time, as
    `dossier.rules` registers its rules (`importlib.import_module` over `pkgutil.iter_modules`)."""
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return path.name == "__init__.py" and {"importlib.import_module", "pkgutil.iter_modules"} <= calls


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports. `from . import name` counts as importing
    the submodule `name` where there is one. Importing `a.b.c` also runs the `__init__` of
    `a.b`, which counts as imported, unless it is a package of the importer itself (loaded
    before any of its modules, so no circle of interest)."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_nodes(tree)
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules]
                targets = subs if subs and node.module is None else [module, *subs]
            graph[name].update(t for t in targets if t in modules and t != name)
        if _imports_every_submodule(path, tree):
            graph[name].update(m for m in modules if m.rsplit(".", 1)[0] == name and m != name)
    for name, targets in graph.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
        for target in list(targets):
            parts = target.split(".")
            graph[name].update(p for i in range(1, len(parts))
                               if (p := ".".join(parts[:i])) in modules and p not in own)
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle, as its modules sorted (graphlib names one when there is any), or []."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return sorted(set(exc.args[1]))
    return []


def test_the_package_has_no_import_circle():
    graph = import_graph(PACKAGE)
    assert "dossier.kb" in graph and graph["dossier.check"] >= {"dossier.kb"}  # the graph is read at all
    found = circle(graph)
    members = set(found)
    assert not found, "import circle: " + "; ".join(f"{a} -> {b}" for a in found for b in sorted(graph[a] & members))


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_lazy_import_upward_is_a_circle(tmp_path):
    root = _package(tmp_path, {
        "low.py": "def f():\n    from .high import g\n    return g\n",
        "high.py": "from .low import f\n",
        "other.py": "from . import low\n",
    })
    graph = import_graph(root)
    assert graph["pkg.other"] == {"pkg.low"}
    assert circle(graph) == ["pkg.high", "pkg.low"]


def test_type_only_imports_and_subpackages_are_no_circle(tmp_path):
    root = _package(tmp_path, {
        "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .high import g\n",
        "high.py": "from .low import f\nimport pkg.sub.leaf\n",
        "sub/__init__.py": "from .leaf import x\n",
        "sub/leaf.py": "from .. import low\nfrom . import helper\n",
        "sub/helper.py": "",
    })
    graph = import_graph(root)
    assert graph["pkg.low"] == set()
    assert graph["pkg.sub.leaf"] == {"pkg.low", "pkg.sub.helper"}
    assert graph["pkg.high"] == {"pkg.low", "pkg.sub", "pkg.sub.leaf"}
    assert circle(graph) == []
    (root / "sub" / "helper.py").write_text("import pkg.sub\n")  # helper -> sub -> leaf -> helper
    assert circle(import_graph(root)) == ["pkg.sub", "pkg.sub.helper", "pkg.sub.leaf"]


def test_importing_a_module_of_another_package_runs_that_package(tmp_path):
    root = _package(tmp_path, {
        "rules/__init__.py": "import importlib, pkgutil\nfor m in pkgutil.iter_modules(__path__):\n"
                             "    importlib.import_module(f'{__name__}.{m.name}')\n",
        "rules/base.py": "",
        "rules/uses_low.py": "def r():\n    from ..low import f\n",
        "low.py": "from .rules.base import Finding\n",  # runs rules/__init__, which imports uses_low
    })
    graph = import_graph(root)
    assert graph["pkg.rules"] == {"pkg.rules.base", "pkg.rules.uses_low"}
    assert graph["pkg.low"] == {"pkg.rules", "pkg.rules.base"}
    assert circle(graph) == ["pkg.low", "pkg.rules", "pkg.rules.uses_low"]
