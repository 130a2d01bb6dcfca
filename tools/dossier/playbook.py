"""The playbook: symptom -> files -> cards -> lanes, stored as YAML under playbook/.

Entries are read by `yamlio`, which keeps the line of every key and list item, so
check rules can point at the exact line of a bad card id, lane or file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .errors import DossierError
from .yamlio import YamlError, line_of, read_yaml

# Sub-lanes in display order: id -> title. One YAML file per sub-lane under playbook/symptoms/.
SUBLANES: dict[str, str] = {
    "image": "Single and multi-image",
    "video": "Video: raw file/URL and processor output",
    "long-video": "Long video, chunked prefill and the multimodal cache",
    "encoder-parallel": "Encoder DP, pipeline parallel and EPD disaggregation",
    "vit": "ViT attention backends and ViT CUDA graphs",
    "mrope": "mRoPE and position ids",
    "deepstack": "DeepStack and speculative decoding",
    "omni-thinker": "Qwen3-Omni audio, video and audio-in-video",
    "asr-offline": "Qwen3-ASR offline transcription",
    "asr-streaming": "Qwen3-ASR HTTP and websocket streaming",
    "omni-speech": "sglang-omni speech: first audio, code2wav, encoder batching, CUDA graphs",
    "amd": "AMD (ROCm, AITER)",
    "npu": "Ascend NPU",
    "cpu": "CPU (Intel AMX)",
}
REQUIRED = ("id", "symptom", "sublane", "measure")
LIST_FIELDS = ("look", "cards", "knobs", "lanes", "aliases", "prs")


@dataclass
class Problem:
    """Something wrong with a playbook file, with the line it sits on."""

    path: str
    line: int
    message: str
    unreadable: bool = False  # the file (or an entry) could not be read into its shape at all


@dataclass
class Playbook:
    entries: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def playbook_files(root: Path) -> list[Path]:
    base = root / "playbook"
    files = []
    if (base / "symptoms.yaml").exists():
        files.append(base / "symptoms.yaml")
    if (base / "symptoms").is_dir():
        files.extend(sorted((base / "symptoms").glob("*.yaml")))
    return files


def load(root: Path) -> Playbook:
    """Every entry of every playbook file, plus the problems found while reading them.

    Not cached here: `KnowledgeBase.playbook` reads it once per run for every user.
    """
    book = Playbook()
    seen: dict[str, str] = {}
    for path in playbook_files(root):
        rel = str(path.relative_to(root))
        try:
            data = read_yaml(path, rel, root)
        except YamlError as exc:
            book.problems.append(Problem(rel, exc.line, f"invalid YAML: {exc.problem}", True))
            continue
        except DossierError as exc:
            book.problems.append(Problem(rel, 1, str(exc).split(": ", 1)[-1], True))
            continue
        if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
            book.problems.append(Problem(rel, 1, "a playbook file is a mapping with an `entries:` list", True))
            continue
        for i, entry in enumerate(data["entries"]):
            if not isinstance(entry, dict):
                book.problems.append(Problem(rel, line_of(data, "entries", i), "an entry must be a mapping", True))
                continue
            entry["_file"] = rel
            book.problems.extend(_validate(rel, entry, seen))
            book.entries.append(entry)
    return book


def _validate(rel: str, entry: dict, seen: dict[str, str]) -> list[Problem]:
    out = []
    here = line_of(entry)
    for key in REQUIRED:
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            out.append(Problem(rel, line_of(entry, key) if key in entry else here, f"entry lacks `{key}` (a non-empty string)"))
    for key in LIST_FIELDS:
        if key in entry and not isinstance(entry[key], list):
            out.append(Problem(rel, line_of(entry, key), f"`{key}` must be a list"))
    eid = entry.get("id")
    if isinstance(eid, str):
        if not _kebab(eid):
            out.append(Problem(rel, line_of(entry, "id"), f"id '{eid}' is not kebab-case"))
        if eid in seen:
            out.append(Problem(rel, line_of(entry, "id"), f"duplicate id '{eid}' (first in {seen[eid]})"))
        else:
            seen[eid] = rel
    sub = entry.get("sublane")
    if isinstance(sub, str) and sub not in SUBLANES:
        out.append(Problem(rel, line_of(entry, "sublane"), f"unknown sublane '{sub}' (known: {', '.join(SUBLANES)})"))
    for i, look in enumerate(entry.get("look") or [] if isinstance(entry.get("look"), list) else []):
        if not isinstance(look, dict) or not look.get("repo") or not look.get("file"):
            out.append(Problem(rel, line_of(entry, "look", i), "each `look` item needs `repo` and `file`"))
        elif "symbols" in look and not isinstance(look["symbols"], list):
            out.append(Problem(rel, line_of(look, "symbols"), "`symbols` must be a list"))
    for i, pr in enumerate(entry.get("prs") or [] if isinstance(entry.get("prs"), list) else []):
        if not isinstance(pr, dict) or not pr.get("repo") or not isinstance(pr.get("pr"), int):
            out.append(Problem(rel, line_of(entry, "prs", i), "each `prs` item needs `repo` and an integer `pr`"))
    return out


def _kebab(text: str) -> bool:
    import re

    return bool(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", text))


def clean(entry: dict) -> dict:
    """Plain dicts and lists without private keys (`_file`), for rendering and JSON."""
    if isinstance(entry, dict):
        return {k: clean(v) for k, v in entry.items() if not k.startswith("_")}
    if isinstance(entry, list):
        return [clean(v) for v in entry]
    return entry


def with_defaults(entry: dict) -> dict:
    """Fill optional fields so the template can stay strict about typos."""
    for key in LIST_FIELDS:
        if not isinstance(entry.get(key), list):
            entry[key] = []
    for key in REQUIRED:
        entry.setdefault(key, "")
    entry["look"] = [{"symbols": [], "why": "", **l} for l in entry["look"] if isinstance(l, dict)]
    entry["prs"] = [{"note": "", **p} for p in entry["prs"] if isinstance(p, dict)]
    return entry
