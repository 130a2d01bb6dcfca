"""The release layer: what a user who pip-installs each repo's newest release actually has.

`dossier tree REPO --wheel WHEEL` reads a released wheel (or an unpacked one) as files,
never importing or installing it, and writes `references/trees/<repo>-release.json`:
its version, its paths in the repository's layout, the def/class names of the files
the base names, the CLI flags, env vars and (sglang-omni) config fields, and per card
whether the lines its PR added stand in the release's files (present / partly / absent,
or n/a when none of its files ships in the wheel). Only facts go in, never code.
The listing is stamped with each card's lock digest, so a new card makes it stale (B003).
"""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path

from .config import Config
from .errors import DossierError
from .evidence import file_lines, line_hash, load_lock
from .fsio import write_atomic
from .upstream_args import typer_options

TREES_DIR = "references/trees"
PRESENT = 0.8  # the share of a card's added lines that must stand for `present`
# Where a wheel's files live in the repository: sglang ships python/sglang/ as sglang/.
LAYOUT = {"sglang": ("sglang/", "python/sglang/"), "sglang-omni": ("sglang_omni/", "sglang_omni/")}
_DIST = re.compile(r"^(sglang|sglang_omni)-(\d+(?:\.\d+)+(?:(?:\.post|rc|a|b)\d+)?)")
_FIELD = re.compile(r"^\s{4}([a-z][a-z0-9_]*)\s*:\s*(?:A\[|[A-Za-z])", re.M)
_QUOTED_FLAG = re.compile(r"[\"'](--[a-z0-9][a-z0-9-]*)[\"']")
_ENV = re.compile(r"\b((?:SGLANG|SGLANG_OMNI)_[A-Z0-9_]+)\b")


def listing_path(root: Path, repo: str) -> Path:
    return Path(root) / TREES_DIR / f"{repo}-release.json"


class Wheel:
    """A wheel file or an unpacked wheel directory, read as text files by their wheel names."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.is_dir():
            self.names = sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.is_file())
            dist = next((n.split("/")[0] for n in self.names if n.split("/")[0].endswith(".dist-info")), "")
            self._zip = None
        else:
            try:
                self._zip = zipfile.ZipFile(self.path)
            except (OSError, zipfile.BadZipFile) as exc:
                raise DossierError(f"{path}: cannot read the wheel: {exc}") from None
            self.names = [n for n in self._zip.namelist() if not n.endswith("/")]
            dist = self.path.name
        m = _DIST.match(dist)
        if not m:
            raise DossierError(f"{path}: not an sglang or sglang-omni wheel (expected sglang[_omni]-<version>-...)")
        self.repo = "sglang" if m.group(1) == "sglang" else "sglang-omni"
        self.version = m.group(2)

    def read(self, name: str) -> str | None:
        """A member's text, or None without it. One that unpacks past _MAX_MEMBER is refused
        here, as it is read: a zip bomb's member is gigabytes, while a large member nothing
        reads (sglang 0.5.23's wheel holds a 24 MB compiled extension) is no reason to refuse."""
        try:
            size = self._zip.getinfo(name).file_size if self._zip else (self.path / name).stat().st_size
            if size > _MAX_MEMBER:
                raise DossierError(f"{self.path}: {name} unpacks to {size:,} bytes; refusing it")
            data = self._zip.read(name) if self._zip else (self.path / name).read_bytes()
        except (KeyError, OSError):
            return None
        return data.decode("utf-8", "replace")

    def repo_paths(self) -> dict[str, str]:
        """Repository path -> wheel name, for the package's files."""
        src, dst = LAYOUT[self.repo]
        from .trees import keep_path

        out = {dst + n[len(src):]: n for n in self.names if n.startswith(src) and "__pycache__" not in n}
        return {p: n for p, n in out.items() if keep_path(self.repo, p)}  # the folders the pin's listing keeps


def _symbols(source: str) -> list[str]:
    from .trees import python_symbols

    return python_symbols(source.encode())


def _identifiers(source: str) -> list[str]:
    """Every name, attribute, argument and keyword a Python file uses: what a radar claim may cite."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
    return sorted(out)


def _config_fields(sources: dict[str, str]) -> list[str]:
    """`Class.field` for every annotated class attribute of the config modules (pydantic models, dataclasses)."""
    out = set()
    for src in sources.values():
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                out.update(f"{node.name}.{st.target.id}" for st in node.body
                           if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name))
    return sorted(out)


def card_states(config: Config, repo: str, files: dict[str, str], wheel: Wheel) -> tuple[dict, dict]:
    """Per card: whether its added lines stand in the release's files; and each card's lock digest."""
    from .evidence import lock_digest
    from .trace import _TRIVIAL
    from .trees import keep_path

    src, dst = LAYOUT[repo]
    hashes: dict[str, set[str]] = {}
    anywhere: set[str] | None = None  # every line of every shipped Python file, built once when needed
    states, digests = {}, {}
    for card in sorted((config.cards_dir / repo).glob("*.md")):
        lock_path = config.lock_path(repo, int(card.stem)) if card.stem.isdigit() else None
        if not lock_path or not lock_path.exists():
            continue
        lock = load_lock(lock_path)
        added = present = elsewhere = 0
        for f in lock["files"]:
            if not f["path"].startswith(dst) or f.get("binary") or not keep_path(repo, f["path"]):
                continue  # tests, docs, CI: not in the wheel, not counted
            lines = [h for h in file_lines(f) if h.startswith("+") and h not in _TRIVIAL]
            if not lines:
                continue
            if f["path"] not in hashes:
                text = wheel.read(files[f["path"]]) if f["path"] in files else None
                hashes[f["path"]] = {line_hash("+", l) for l in (text or "").splitlines()}
            added += len(lines)
            here = [h in hashes[f["path"]] for h in lines]
            present += sum(here)
            if not all(here):
                anywhere = anywhere if anywhere is not None else _all_hashes(wheel, files)
                elsewhere += sum(1 for h, ok in zip(lines, here) if not ok and h in anywhere)
        if added == 0:
            state = "n/a"
        elif present / added >= PRESENT:
            state = "present"
        elif (present + elsewhere) / added >= PRESENT:
            state = "moved"  # the lines stand in the release, in other files
        else:
            state = "absent" if present + elsewhere == 0 else "partly"
        states[card.stem] = {"state": state, "added": added, "present": present}
        if elsewhere:
            states[card.stem]["elsewhere"] = elsewhere
        digests[card.stem] = lock_digest(lock)[:16]
    return states, digests


def _all_hashes(wheel: Wheel, files: dict[str, str]) -> set[str]:
    out: set[str] = set()
    for path, name in files.items():
        if path.endswith(".py"):
            out.update(line_hash("+", l) for l in (wheel.read(name) or "").splitlines())
    return out


# The package file each wheel must hold, and the largest member we read (server_args.py is
# ~200 KB; a zip bomb's member is gigabytes).
_MARKER = {"sglang": "sglang/srt/server_args.py", "sglang-omni": "sglang_omni/"}
_MAX_MEMBER = 16 * 1024 * 1024


def _check_wheel(wheel: Wheel, listing: Path) -> None:
    """Refuse, before anything is overwritten, a wheel that is empty, not the package or of another
    version than its file name says (a zip bomb's member is refused when read, see Wheel.read)."""
    from email.parser import HeaderParser

    where = f"{wheel.path}"
    marker = _MARKER[wheel.repo]
    if not any(n == marker or (marker.endswith("/") and n.startswith(marker) and n.endswith(".py"))
               for n in wheel.names):
        raise DossierError(f"{where}: not a {wheel.repo} wheel ({len(wheel.names)} files, no {marker}); "
                           f"{listing} left as it is")
    meta = next((n for n in wheel.names if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
    if meta is None:
        return
    headers = HeaderParser().parsestr(wheel.read(meta) or "")
    name = (headers.get("Name") or "").lower().replace("_", "-")
    version = headers.get("Version")
    if (name and name != wheel.repo) or (version and version != wheel.version):
        raise DossierError(f"{where}: METADATA names {headers.get('Name')} {headers.get('Version')}, "
                           f"not {wheel.repo} {wheel.version}; {listing} left as it is")


def list_release(config: Config, wheel_path: str, repo: str | None = None) -> tuple[Path, dict]:
    """Write references/trees/<repo>-release.json from a released wheel (read as files; nothing runs)."""
    from .trees import symbol_targets

    wheel = Wheel(wheel_path)
    if repo and repo != wheel.repo:
        raise DossierError(f"{wheel_path}: a {wheel.repo} wheel, not {repo}")
    repo = wheel.repo
    _check_wheel(wheel, listing_path(config.root, repo).relative_to(config.root))
    config.repo(repo)
    files = wheel.repo_paths()
    paths = sorted(files)
    named = set(symbol_targets(config, repo, paths)) | set(_radar_files(config, repo))
    symbols = {p: _symbols(wheel.read(files[p]) or "") for p in sorted(named) if p in files and p.endswith(".py")}
    radar_files = sorted(p for p in _radar_files(config, repo) if p in files and p.endswith(".py"))
    if repo == "sglang":
        arg_src = {n: wheel.read(n) or "" for n in wheel.names
                   if n == "sglang/srt/server_args.py" or (n.startswith("sglang/srt/arg_groups/") and n.endswith(".py"))}
        env_src = wheel.read("sglang/srt/environ.py") or ""
        flags = {"--" + f.replace("_", "-") for s in arg_src.values() for f in _FIELD.findall(s)}
        fields: list[str] = []
    else:
        arg_src = {n: wheel.read(n) or "" for n in wheel.names if n.startswith("sglang_omni/cli/") and n.endswith(".py")}
        env_src = "\n".join(wheel.read(n) or "" for n in wheel.names if n.startswith("sglang_omni/") and n.endswith(".py"))
        # `sgl-omni serve` is typer: most of its options are spelt from parameter names, not quoted
        flags = set(typer_options(wheel.read("sglang_omni/cli/serve.py"), "serve", "sglang_omni/cli/serve.py"))
        cfg = {n: wheel.read(n) or "" for n in wheel.names if n.endswith(".py") and
               (n.startswith("sglang_omni/config/") or re.fullmatch(r"sglang_omni/models/[^/]+/config\.py", n))}
        fields = _config_fields(cfg)
    for s in arg_src.values():
        flags |= set(_QUOTED_FLAG.findall(s))
    states, digests = card_states(config, repo, files, wheel)
    doc = {"repo": repo, "version": wheel.version, "wheel": wheel.path.name, "paths": paths,
           "flags": sorted(flags), "env": sorted(set(_ENV.findall(env_src))), "symbols": symbols,
           "identifiers": {p: _identifiers(wheel.read(files[p]) or "") for p in radar_files},
           "cards": states, "locks": digests}
    if fields:
        doc["config_fields"] = fields
    out = listing_path(config.root, repo)
    write_atomic(out, json.dumps(doc, indent=0, sort_keys=True) + "\n")
    return out, doc


def _radar_files(config: Config, repo: str) -> list[str]:
    """Files the radar names, in its release claims or its files (their identifiers are listed so R006 can verify a claim)."""
    from .radar import load as load_radar

    radar = load_radar(config.root)
    out = []
    for item in radar.items if radar else []:
        if item.data.get("repo") != repo:
            continue
        rel = item.data.get("release")
        if isinstance(rel, dict) and rel.get("file"):
            out.append(str(rel["file"]))
        out += [str(f) for f in item.data.get("files") or [] if isinstance(f, str)]  # where a claim would point
    return out


def load(root: Path, repo: str) -> dict | None:
    path = listing_path(root, repo)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DossierError(f"{path.relative_to(root)}: broken JSON at line {exc.lineno}") from None


def for_card(releases: dict[str, dict | None], card_id: str) -> dict | None:
    """{"version", "state", "added", "present"} of a card in its repo's release listing, or None."""
    repo, _, pr = card_id.partition("/")
    rel = releases.get(repo)
    entry = (rel or {}).get("cards", {}).get(pr)
    return {"version": rel["version"], **entry} if entry else None


def phrase(rel: dict | None) -> str:
    """'in 0.5.23: present' for find, pages and the playbook."""
    if not rel:
        return ""
    if rel["state"] == "partly":
        return f"in {rel['version']}: partly ({rel['present'] + rel.get('elsewhere', 0)}/{rel['added']} lines)"
    return f"in {rel['version']}: " + ("present, in other files" if rel["state"] == "moved" else rel["state"])
