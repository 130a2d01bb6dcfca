"""The playbook: symptom -> files -> cards -> lanes, stored as YAML under playbook/."""

from __future__ import annotations

from pathlib import Path

import yaml

from .errors import DossierError
from .fsio import read_text


def playbook_files(root: Path) -> list[Path]:
    base = root / "playbook"
    files = []
    if (base / "symptoms.yaml").exists():
        files.append(base / "symptoms.yaml")
    if (base / "symptoms").is_dir():
        files.extend(sorted((base / "symptoms").glob("*.yaml")))
    return files


def load_entries(root: Path) -> list[dict]:
    entries: list[dict] = []
    for path in playbook_files(root):
        try:
            data = yaml.safe_load(read_text(path))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise DossierError(f"{path}:{(mark.line + 1) if mark else 1}: invalid YAML") from None
        for entry in (data or {}).get("entries", []) if isinstance(data, dict) else []:
            if isinstance(entry, dict):
                entry.setdefault("_file", str(path.relative_to(root)))
                entries.append(entry)
    return entries
