"""`dossier tree`: list an upstream HEAD's paths and Python symbol names.

The listings let `dossier check` verify that a playbook entry names a file and
symbols that really exist upstream, with no clone at check time. Only facts go
in: paths, and def/class names (never code).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import click

from .config import Config, load_config
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


def keep_path(repo: str, path: str) -> bool:
    roots = TREE_ROOTS.get(repo)
    if roots and not path.startswith(roots):
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
        entries = playbook.load_entries(config.root)
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
              f"# folders: {', '.join(TREE_ROOTS.get(repo, ('(all)',)))}; assets and multimodal_gen skipped\n")
    text = header + "\n".join(paths) + "\n"
    symbols = {}
    for path in symbol_targets(config, repo, all_paths):
        blob = history.file_at(commit, path)
        if blob is not None:
            symbols[path] = python_symbols(blob)
    doc = {"repo": repo, "commit": commit, "files": symbols}
    txt_path, sym_path = listing_paths(config.root, repo)
    write_atomic(txt_path, text)
    write_atomic(sym_path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return txt_path, sym_path, len(text.encode())


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


@click.command("tree")
@click.argument("repo")
@click.option("--clone", envvar="DOSSIER_CLONE", required=True, help="Local git clone (or bare git dir).")
@click.option("--ref", default=None, help="Ref to list (default: the repo's pinned SHA, else HEAD).")
@click.option("--root", type=click.Path(file_okay=False), envvar="DOSSIER_ROOT", help="Knowledge-base root.")
def command(repo, clone, ref, root):
    """Write references/trees/REPO.txt (paths) and REPO.symbols.json (def/class names)."""
    config = load_config(Path(root) if root else None)
    txt, sym, size = list_tree(config, repo, clone, ref or config.repo(repo).pinned or "HEAD")
    click.echo(f"wrote {txt.relative_to(config.root)} ({size // 1024} KiB) and {sym.relative_to(config.root)}")
