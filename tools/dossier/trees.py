"""`dossier tree`: list an upstream HEAD's paths and Python symbol names.

The listings let `dossier check` verify that a playbook entry names a file and
symbols that really exist upstream, with no clone at check time. Only facts go
in: paths, and def/class names (never code).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path


from .config import Config
from .errors import DossierError
from .fsio import write_atomic

TREES_DIR = "references/trees"

# Folders worth listing per repo; a repo not named here is listed whole.
TREE_ROOTS: dict[str, tuple[str, ...]] = {
    "sglang": ("python/sglang/srt/", "python/sglang/test/", "test/", "docs/", "benchmark/"),
    "sglang-omni": ("sglang_omni/", "tests/", "docs/", "benchmarks/", "examples/"),
}
# Sub-trees that are off-topic for Qwen VL / Omni / ASR (diffusion generation lives here).
TREE_SKIP = ("python/sglang/multimodal_gen/", "python/sglang/srt/multimodal_gen/")
# Non-source assets: listing them would only bloat the file.
ASSET_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".ico", ".mp4", ".wav", ".mp3",
                  ".flac", ".pdf", ".pt", ".bin", ".safetensors", ".npy", ".npz", ".parquet", ".jsonl",
                  ".ttf", ".woff", ".woff2", ".zip", ".gz", ".whl", ".so")

# The runtime files the Qwen VLM / Omni / ASR skill names, beyond the family globs.
SEED_RUNTIME_FILES: dict[str, tuple[str, ...]] = {
    "sglang": (
        "python/sglang/srt/models/qwen2_5_vl.py",
        "python/sglang/srt/models/qwen3_vl.py",
        "python/sglang/srt/models/qwen3_vl_moe.py",
        "python/sglang/srt/models/qwen3_omni_moe.py",
        "python/sglang/srt/models/qwen3_asr.py",
        "python/sglang/srt/multimodal/processors/qwen_vl.py",
        "python/sglang/srt/multimodal/processors/qwen_audio.py",
        "python/sglang/srt/multimodal/processors/qwen3_asr.py",
        "python/sglang/srt/multimodal/processors/base_processor.py",
        "python/sglang/srt/managers/mm_utils.py",
        "python/sglang/srt/disaggregation/encode_server.py",
        "python/sglang/srt/entrypoints/openai/serving_transcription.py",
        "python/sglang/srt/entrypoints/openai/streaming_asr.py",
        "python/sglang/srt/layers/rotary_embedding/mrope_rope_index.py",
        "python/sglang/srt/layers/attention/vision.py",
        "python/sglang/srt/multimodal/vit_cuda_graph_runner.py",
        "python/sglang/srt/server_args.py",
    ),
}


def listing_paths(root: Path, repo: str) -> tuple[Path, Path]:
    base = root / TREES_DIR
    return base / f"{repo}.txt", base / f"{repo}.symbols.json"


# Top-level entry points users run (`python -m sglang.launch_server`, `sglang.bench_serving`).
TREE_ENTRY_POINTS = {"sglang": re.compile(r"python/sglang/[\w]+\.py")}


def keep_path(repo: str, path: str) -> bool:
    roots = TREE_ROOTS.get(repo)
    entry = TREE_ENTRY_POINTS.get(repo)
    if roots and not path.startswith(roots) and not (entry and entry.fullmatch(path)):
        return False
    if path.startswith(TREE_SKIP) or "/multimodal_gen/" in path:
        return False
    return not path.lower().endswith(ASSET_SUFFIXES)


def python_symbols(source: bytes) -> list[str]:
    """Top-level and class-level def/class names, as `name` or `Class.name`."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        if isinstance(node, ast.ClassDef):
            names.extend(f"{node.name}.{child.name}" for child in node.body
                         if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    return names


def symbol_targets(config: Config, repo: str, paths: list[str]) -> list[str]:
    """Files whose symbols are listed: family globs, the seed's runtime files, playbook files."""
    from . import playbook

    wanted = set(SEED_RUNTIME_FILES.get(repo, ()))
    wanted.update(p for p in paths if config.families_for(repo, [p]))
    try:
        entries = playbook.load(config.root).entries
    except DossierError:
        entries = []
    for entry in entries:
        for look in entry.get("look") or []:
            if isinstance(look, dict) and look.get("repo") == repo and look.get("file"):
                wanted.add(str(look["file"]))
    present = set(paths)
    return sorted(p for p in wanted if p in present and p.endswith(".py"))


def list_tree(config: Config, repo: str, clone: str, ref: str = "HEAD") -> tuple[Path, Path, int]:
    """Write references/trees/<repo>.txt and <repo>.symbols.json; return paths and size."""
    config.repo(repo)
    from .sources.git import History, open_clone  # GitPython is slow to import; only this command needs it

    history = History(open_clone(clone), ref)
    commit = history._resolve_ref()
    all_paths = history.tree_paths(commit)
    paths = sorted(p for p in all_paths if keep_path(repo, p))
    if not paths:
        raise DossierError(f"{repo} at {ref}: no paths under {', '.join(TREE_ROOTS.get(repo, ('/',)))}")
    label = "pinned" if ref == config.repo(repo).pinned else ref
    header = (f"# {repo} tree at {commit} ({label}); listed by `dossier tree`\n"
              f"# folders: {', '.join(TREE_ROOTS.get(repo, ('(all)',)))}{'; top-level python/sglang/*.py' if repo in TREE_ENTRY_POINTS else ''}; assets and multimodal_gen skipped\n")
    text = header + "\n".join(paths) + "\n"
    symbols = {}
    for path in symbol_targets(config, repo, all_paths):
        blob = history.file_at(commit, path)
        if blob is not None:
            symbols[path] = python_symbols(blob)
    doc = {"repo": repo, "commit": commit, "files": symbols}
    if repo == "sglang":
        sources = {p: history.file_at(commit, p) for p in all_paths
                   if p == "python/sglang/srt/server_args.py" or
                   (p.startswith("python/sglang/srt/arg_groups/") and p.endswith(".py"))}
        env_src = history.file_at(commit, "python/sglang/srt/environ.py") or b""
        doc["flags"], doc["env"] = _flags_and_env({p: b.decode("utf-8", "replace") for p, b in sources.items() if b},
                                                  env_src.decode("utf-8", "replace"))
    txt_path, sym_path = listing_paths(config.root, repo)
    write_atomic(txt_path, text)
    write_atomic(sym_path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    _write_contract(config.root, repo, commit, history, all_paths)
    return txt_path, sym_path, len(text.encode())


def contract_path(root: Path, repo: str) -> Path:
    """references/trees/<repo>.contract.json: the request contract at the pin (dossier.upstream_facts)."""
    return root / TREES_DIR / f"{repo}.contract.json"


def _write_contract(root: Path, repo: str, commit: str, history, paths: list[str]) -> None:
    from .upstream_facts import contract

    def read(path: str) -> str | None:
        blob = history.file_at(commit, path)
        return blob.decode("utf-8", "replace") if blob is not None else None

    facts = contract(repo, read, paths)
    if facts is not None:
        doc = {"repo": repo, "commit": commit, **facts}
        write_atomic(contract_path(root, repo), json.dumps(doc, indent=1, sort_keys=True) + "\n")


def load_paths(root: Path) -> dict[str, set[str]]:
    """Per repo with a listing: every path listed at the pinned SHA (references/trees/<repo>.txt)."""
    out: dict[str, set[str]] = {}
    base = root / TREES_DIR
    for path in sorted(base.glob("*.txt")) if base.is_dir() else []:
        lines = path.read_text(encoding="utf-8").splitlines()
        out[path.stem] = {l for l in lines if l and not l.startswith("#")}
    return out


def absent_at_pin(listed: dict[str, set[str]], repo: str, path: str) -> bool:
    """Whether the pin's listing says `path` is not there (a path outside the listed folders is unknown: False)."""
    paths = listed.get(repo)
    return paths is not None and keep_path(repo, path) and path not in paths


def load_symbols(root: Path) -> dict[str, dict[str, set[str]]]:
    """Per repo, per file: every listed symbol name, both `Class.name` and the bare `name`."""
    out: dict[str, dict[str, set[str]]] = {}
    base = root / TREES_DIR
    for path in sorted(base.glob("*.symbols.json")) if base.is_dir() else []:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        repo = doc.get("repo") or path.name[: -len(".symbols.json")]
        bucket = out.setdefault(repo, {})
        for file, names in (doc.get("files") or {}).items():
            bucket.setdefault(file, set()).update(expand_names(names))
    return out


def expand_names(names) -> set[str]:
    out = set()
    for name in names or []:
        name = str(name)
        out.add(name)
        out.add(name.rsplit(".", 1)[-1])
    return out


# --- a released wheel: what a user who pip-installs sglang actually has ------------------------

_ENV = re.compile(r"\b(SGLANG_[A-Z0-9_]+)\b")
_FIELD = re.compile(r"^\s{4}([a-z][a-z0-9_]*)\s*:\s*(?:A\[|[A-Za-z])", re.M)
_QUOTED_FLAG = re.compile(r"[\"'](--[a-z0-9][a-z0-9-]*)[\"']")


def _flags_and_env(sources: dict[str, str], env_src: str) -> tuple[list[str], list[str]]:
    """CLI flags of ServerArgs (`--field-name` of each field, plus quoted `--flags`) and SGLANG_ env names."""
    flags = set()
    for src in sources.values():
        flags |= {"--" + f.replace("_", "-") for f in _FIELD.findall(src)}
        flags |= set(_QUOTED_FLAG.findall(src))
    return sorted(flags), sorted(set(_ENV.findall(env_src)))


def pinned_names(root: Path) -> tuple[set[str], set[str]]:
    """sglang's flags and env vars at the pinned SHA (from references/trees/sglang.symbols.json)."""
    _, sym = listing_paths(root, "sglang")
    if not sym.exists():
        return set(), set()
    doc = json.loads(sym.read_text(encoding="utf-8"))
    return set(doc.get("flags", [])), set(doc.get("env", []))


def missing_in_release(release: dict, text: str, pinned: tuple[set[str], set[str]] | None = None) -> list[str]:
    """Flags (`--x`), env vars and paths of the release's repo named in `text` that the release lacks.

    sglang: `--flags`, `SGLANG_*` and `python/sglang/srt/...py`; with `pinned`, only names
    sglang has at the pinned SHA count as sglang's (a lane's own `--output` is not an sglang
    flag). sglang-omni: `SGLANG_OMNI_*` and `sglang_omni/...py` (its flags are lane options too
    often to tell apart in prose).
    """
    flags, env, paths = _release_sets(release)
    if release.get("repo") == "sglang-omni":
        out = [e for e in _OMNI_ENV.findall(text) if e not in env]
        return out + [p for p in _OMNI_PATH.findall(text) if p not in paths]
    pflags, penv = pinned or (None, None)
    out = [f for f in _FLAG.findall(text) if f not in flags and (pflags is None or f in pflags)]
    out += [e for e in _ENV.findall(text) if e not in env and (penv is None or e in penv)
            and not e.startswith("SGLANG_OMNI_")]
    out += [p for p in _SRT_PATH.findall(text) if p not in paths]
    return out


_FLAG = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]+)")
_SRT_PATH = re.compile(r"python/sglang/srt/[\w/.-]+\.py")
_OMNI_ENV = re.compile(r"\b(SGLANG_OMNI_[A-Z0-9_]+)\b")
_OMNI_PATH = re.compile(r"(?<![\w/])sglang_omni/[\w/.-]+\.py")
# id(listing) -> (listing, its flags, env vars and paths as sets): `check` asks
# missing_in_release about every knob and SKILL.md line (~1,000 calls) of the same
# two listings, which are never changed once loaded; building the sets (thousands of
# paths) on each call was most of its time. The listing itself is kept so that its id
# cannot be reused by another dict while the entry lives. A listing whose sets cannot
# be built (a missing key) fails on every call, as before.
_SETS: dict[int, tuple[dict, tuple[set[str], set[str], set[str]]]] = {}


def _release_sets(release: dict) -> tuple[set[str], set[str], set[str]]:
    hit = _SETS.get(id(release))
    if hit is None or hit[0] is not release:
        if len(_SETS) >= 8:  # listings of earlier knowledge bases (tests build many)
            _SETS.clear()
        hit = _SETS[id(release)] = (release, (set(release["flags"]), set(release["env"]), set(release["paths"])))
    return hit[1]
