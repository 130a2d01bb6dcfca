"""GitHub source: PR metadata and per-file patches through PyGithub.

GitHub serves a PR's diff as one patch per file with the git headers cut off.
We put the headers back (`diff --git`, `---`/`+++`, `/dev/null`, renames) so
`build_lock` sees the text git would print and the lock's hunks, symbols and
line hashes match a lock built from a clone. What GitHub leaves out (binary
files, patches too large to show, lists past 3000 files) is written into the
lock as such, never silently short.

The token comes from GITHUB_TOKEN and goes only into the request header.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

import github
import requests
from github.GithubException import (
    BadCredentialsException,
    GithubException,
    RateLimitExceededException,
    UnknownObjectException,
)
from github.GithubRetry import GithubRetry

from ..config import Config
from ..errors import DossierError
from ..evidence import build_lock
from ..cache import DiskCache, content_key
from ..fetch import FetchResult, store_lock

DEFAULT_API = "https://api.github.com"
MAX_LISTED_FILES = 3000  # GitHub's cap on GET /pulls/{n}/files
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
DEFAULT_MAX_AGE_S = 600  # mutable metadata (state, labels) older than this is fetched again
MAX_RATE_LIMIT_WAIT_S = 90  # wait out a secondary limit (60 s) or a reset this close; report a later one


# --- client ----------------------------------------------------------------


class _Retry(GithubRetry):
    """GithubRetry whose sleeps can be scaled down (tests) and are capped."""

    def __init__(self, scale: float = 1.0, **kwargs):
        self.scale = scale
        super().__init__(**kwargs)

    def new(self, **kwargs):
        kwargs["scale"] = self.scale
        return super().new(**kwargs)

    def sleep(self, response=None) -> None:
        wait = self.get_retry_after(response) if response is not None else None
        if wait is None:
            wait = self.get_backoff_time()
        time.sleep(min(wait, self.backoff_max) * self.scale)


def backoff_scale() -> float:
    """Multiplier on every retry sleep; DOSSIER_GITHUB_BACKOFF=0.001 keeps tests quick."""
    raw = os.environ.get("DOSSIER_GITHUB_BACKOFF", "1")
    try:
        return max(float(raw), 0.0)
    except ValueError:
        raise DossierError(f"DOSSIER_GITHUB_BACKOFF must be a number, got {raw!r}") from None


def api_root(api_url: str | None) -> str:
    """The API root, checked: http(s) with a host, and no credentials in it.

    A `user:secret@` URL would be written into the lock's `source.api_url` (a committed
    file) and into error lines, so it is refused; the token belongs in GITHUB_TOKEN.
    """
    from urllib.parse import urlsplit

    raw = (api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API).strip().rstrip("/")
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise DossierError("the GitHub API URL is not a URL (expected https://host[/path])") from None
    if parts.username is not None or parts.password is not None:
        shown = parts._replace(netloc=parts.hostname or "").geturl()
        raise DossierError(f"the GitHub API URL carries credentials ({shown} with user:password@); "
                           "remove them and set GITHUB_TOKEN instead")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DossierError(f"the GitHub API URL must be http(s)://host[/path], got {raw!r}")
    return raw


def client(api_url: str | None = None, retries: int = 5) -> github.Github:
    """A PyGithub client: token from GITHUB_TOKEN if set, retries on 5xx and secondary limits."""
    scale = backoff_scale()
    token = os.environ.get("GITHUB_TOKEN", "").strip()
    retry = _Retry(
        scale=scale,
        total=retries,
        backoff_factor=1.0,
        secondary_rate_wait=60,
        max_rate_limit_wait=MAX_RATE_LIMIT_WAIT_S,
        status_forcelist=[429, *range(500, 600)],
    )
    return github.Github(
        base_url=api_root(api_url),
        auth=github.Auth.Token(token) if token else None,
        retry=retry,
        per_page=100,
        timeout=30,
        seconds_between_requests=0.25 * scale or None,
        seconds_between_writes=None,
    )


def _reset_line(headers: dict | None) -> str:
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    reset = headers.get("x-ratelimit-reset", "")
    if not str(reset).isdigit():
        return "GitHub API rate limit exhausted; set GITHUB_TOKEN for a larger quota"
    at = datetime.fromtimestamp(int(reset), timezone.utc)
    minutes = max(0, round((at - datetime.now(timezone.utc)).total_seconds() / 60))
    return f"GitHub API rate limit exhausted; it resets at {at:%Y-%m-%d %H:%M} UTC (in {minutes} min)"


def describe(exc: Exception, what: str, api_url: str) -> str:
    """One line for a failed call about `what` (e.g. 'sgl-project/sglang#12').

    Raises DossierError for failures that doom every later call (bad token,
    exhausted quota, unreachable API); returns the line for per-item failures.
    """
    if isinstance(exc, BadCredentialsException) or getattr(exc, "status", None) == 401:
        raise DossierError("GitHub rejected GITHUB_TOKEN (401 Bad credentials); fix or unset it") from None
    if isinstance(exc, RateLimitExceededException):
        raise DossierError(_reset_line(exc.headers)) from None
    if isinstance(exc, UnknownObjectException) or getattr(exc, "status", None) == 404:
        hint = "" if os.environ.get("GITHUB_TOKEN") else " (set GITHUB_TOKEN if it is private)"
        return f"{what} not found: no such PR or issue, or a private repository{hint}"
    if isinstance(exc, GithubException):
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        return f"GitHub answered {exc.status} for {what}: {message or 'no message'}"
    if isinstance(exc, requests.exceptions.RetryError):
        return f"GitHub kept failing for {what} after retries (server errors or rate limits)"
    if isinstance(exc, requests.exceptions.RequestException):
        raise DossierError(f"cannot reach GitHub API at {api_url}: {type(exc).__name__}") from None
    raise exc


# --- payloads ---------------------------------------------------------------


def _date(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).date().isoformat() if value else None


def pull_state(pull) -> str:
    return "merged" if pull.merged else pull.state


def pull_record(pull) -> dict:
    """The PR fields a lock needs, as plain JSON (what the metadata cache stores)."""
    return {
        "number": pull.number,
        "title": pull.title,
        "state": pull_state(pull),
        "author": pull.user.login if pull.user else None,
        "created": _date(pull.created_at),
        "merged": _date(pull.merged_at),
        "closed": _date(pull.closed_at),
        "labels": sorted(label.name for label in pull.labels),
        "head_sha": pull.head.sha,
        "base_sha": pull.base.sha,
        "merge_commit_sha": pull.merge_commit_sha,
        "changed_files": pull.changed_files,
    }


def file_record(f) -> dict:
    """One entry of GET /pulls/{n}/files, as plain JSON (what the diff cache stores)."""
    rec = {k: getattr(f, k) for k in ("filename", "status", "additions", "deletions", "changes", "sha")}
    rec["previous_filename"] = f.previous_filename
    rec["patch"] = f.patch
    return rec


# --- diff reconstruction -------------------------------------------------------


def _file_diff(f: dict) -> tuple[str, dict | None]:
    """Git-style diff text for one GitHub file entry, and a note when GitHub held text back."""
    new, status, patch = f["filename"], f["status"], f.get("patch")
    old = f.get("previous_filename") or new
    src = "/dev/null" if status == "added" else f"a/{old}"
    dst = "/dev/null" if status == "removed" else f"b/{new}"
    head = [f"diff --git a/{old} b/{new}"]
    if status == "added":
        head.append("new file mode 100644")
    elif status == "removed":
        head.append("deleted file mode 100644")
    note = None
    if status == "renamed":
        if not patch and not f.get("changes"):
            head.append("similarity index 100%")
        head += [f"rename from {old}", f"rename to {new}"]
    if patch:
        body = patch if patch.endswith("\n") else patch + "\n"
        return "\n".join(head + [f"--- {src}", f"+++ {dst}"]) + "\n" + body, None
    if f.get("changes"):
        # Text GitHub would not show (too large): keep its counts, mark the gap.
        note = {"path": new, "patch": "truncated", "additions": f.get("additions", 0),
                "deletions": f.get("deletions", 0)}
    elif status == "changed":
        # A mode-only change; GitHub does not say which modes.
        note = {"path": new, "status": "mode-changed", "mode_change": True}
    elif status != "renamed" and f.get("sha") != EMPTY_BLOB:
        # Not a pure rename, not an empty file: GitHub shows no text for binaries.
        head.append(f"Binary files {src} and {dst} differ")
        note = {"path": new, "patch": "omitted-binary"}
    return "\n".join(head) + "\n", note


def diff_from_files(files: list[dict]) -> tuple[str, list[dict]]:
    """A unified diff rebuilt from GitHub's per-file patches, plus notes on what is missing."""
    parts, notes = [], []
    for f in files:
        text, note = _file_diff(f)
        parts.append(text)
        if note:
            notes.append(note)
    return "".join(parts), notes


def github_lock(config: Config, repo: str, record: dict, files: list[dict], api_url: str) -> dict:
    reg = config.repo(repo)
    diff, notes = diff_from_files(files)
    meta = {"pr": record["number"], "title": record["title"], "state": record["state"],
            "author": record["author"], "created": record["created"], "merged": record["merged"],
            "closed": record["closed"], "file_notes": notes}
    source = {"kind": "github", "head_sha": record["head_sha"], "base_sha": record["base_sha"],
              "merge_commit_sha": record["merge_commit_sha"], "labels": record["labels"]}
    if api_url != DEFAULT_API:
        source["api_url"] = api_url
    listed, changed = len(files), record.get("changed_files") or len(files)
    if listed < changed:
        # GitHub lists at most 3000 files; the lock says how many it could not see.
        source.update({"files_truncated": True, "files_listed": listed, "files_changed": changed})
    return build_lock(meta, diff, source, repo, reg.pr_url(record["number"]))


# --- cache ----------------------------------------------------------------


class Cache:
    """GitHub responses kept between runs, in the one on-disk cache (`dossier.cache`).

    Diffs are immutable, keyed by the PR's head and base SHAs; mutable metadata
    (state, labels) is keyed by the PR and fetched again once older than `max_age_s`.
    Keys are `content_key`s that include the API root, so GHE or a stand-in server
    never answers for github.com.
    """

    def __init__(self, disk: DiskCache, api_url: str, max_age_s: float):
        self.disk, self.api_url, self.max_age_s = disk, api_url, max_age_s

    @classmethod
    def for_config(cls, config: Config, api_url: str, max_age_s: float | None) -> "Cache":
        folder = Path(os.environ["DOSSIER_CACHE"]) if os.environ.get("DOSSIER_CACHE") else None
        if max_age_s is None:
            raw = os.environ.get("DOSSIER_GITHUB_MAX_AGE", str(DEFAULT_MAX_AGE_S))
            try:
                max_age_s = float(raw)
            except ValueError:
                raise DossierError(f"DOSSIER_GITHUB_MAX_AGE must be seconds, got {raw!r}") from None
        return cls(DiskCache(config.root, "github", folder), api_url, max_age_s)

    def get_meta(self, upstream: str, pr: int) -> dict | None:
        data = self.disk.get(content_key("meta", self.api_url, upstream, pr))
        if not isinstance(data, dict) or time.time() - data.get("fetched_at", 0) > self.max_age_s:
            return None
        return data.get("record")

    def put_meta(self, upstream: str, pr: int, record: dict) -> None:
        self.disk.put(content_key("meta", self.api_url, upstream, pr), {"fetched_at": time.time(), "record": record})

    def get_files(self, upstream: str, head_sha: str, base_sha: str) -> list[dict] | None:
        return self.disk.get(content_key("diff", self.api_url, upstream, head_sha, base_sha))

    def put_files(self, upstream: str, head_sha: str, base_sha: str, files: list[dict]) -> None:
        self.disk.put(content_key("diff", self.api_url, upstream, head_sha, base_sha), files)

    def save(self) -> None:
        self.disk.save()


# --- fetch ------------------------------------------------------------------


def _fetch_one(gh: github.Github, cache: Cache, upstream: str, pr: int) -> tuple[dict, list[dict]]:
    record, pull = cache.get_meta(upstream, pr), None
    if record is None:
        pull = gh.withLazy(True).get_repo(upstream).get_pull(pr)
        record = pull_record(pull)
        cache.put_meta(upstream, pr, record)
    files = cache.get_files(upstream, record["head_sha"], record["base_sha"])
    if files is None:
        pull = pull or gh.withLazy(True).get_repo(upstream).get_pull(pr)
        files = [file_record(f) for f in pull.get_files()]
        cache.put_files(upstream, record["head_sha"], record["base_sha"], files)
    return record, files


def fetch_github(config: Config, repo: str, numbers: list[int], api_url: str | None = None,
                 max_age_s: float | None = None) -> list[FetchResult]:
    """Write a lock per PR; a PR that fails gets an error line, the others go on."""
    upstream = config.repo(repo).upstream
    root = api_root(api_url)
    gh = client(root)
    cache = Cache.for_config(config, root, max_age_s)
    results = []
    try:
        for pr in numbers:
            try:
                record, files = _fetch_one(gh, cache, upstream, pr)
            except (GithubException, requests.exceptions.RequestException) as exc:
                results.append(FetchResult(pr, error=describe(exc, f"{upstream}#{pr}", root)))
                continue
            except (TypeError, KeyError, AttributeError, ValueError) as exc:  # a 200 that is no pull request
                results.append(FetchResult(pr, error=f"GitHub API at {root} answered {upstream}#{pr} with something "
                                                     f"that is not a pull request (not JSON, or the wrong shape: "
                                                     f"{type(exc).__name__})"))
                continue
            results.append(store_lock(config, repo, pr, github_lock(config, repo, record, files, root)))
    finally:
        cache.save()  # what was fetched is kept even when a later PR fails hard
    return results
