"""A stand-in GitHub REST API on 127.0.0.1 for tests: real PyGithub, no network.

Routes are queues of canned responses: each request pops the first one until
one is left, which then answers every later request (so "502, then 200" is
`[resp(502), resp(200, ...)]`). Lists paginate at 30 with Link headers, as
GitHub does.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PAGE = 30


@dataclass
class Canned:
    status: int
    body: object = None
    headers: dict = field(default_factory=dict)


def resp(status: int, body: object = None, **headers) -> Canned:
    return Canned(status, body, {k.replace("_", "-"): str(v) for k, v in headers.items()})


class StandIn:
    def __init__(self):
        self.routes: dict[str, list[Canned]] = {}
        self.lists: dict[str, list] = {}
        self.requests: list[tuple[str, str, dict]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def route(self, path: str, *answers: Canned) -> None:
        self.routes[path] = list(answers)

    def paged(self, path: str, items: list) -> None:
        self.lists[path] = items

    def hits(self, path: str) -> int:
        return sum(1 for _, p, _ in self.requests if urlparse(p).path == path)

    # --- realistic payloads ---------------------------------------------------

    def add_pull(self, upstream: str, number: int, files: list[dict], **fields) -> dict:
        pull = pull_payload(self.url, upstream, number, len(files), **fields)
        self.route(f"/repos/{upstream}/pulls/{number}", Canned(200, pull))
        self.paged(f"/repos/{upstream}/pulls/{number}/files", files)
        return pull

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                standin.requests.append(("GET", self.path, dict(self.headers)))
                parsed = urlparse(self.path)
                queue = standin.routes.get(parsed.path)
                if queue:
                    answer = queue.pop(0) if len(queue) > 1 else queue[0]
                    if answer.status == 200 and parsed.path in standin.lists:
                        return self._page(parsed, standin.lists[parsed.path])
                    return self._send(answer.status, answer.body, answer.headers)
                if parsed.path in standin.lists:
                    return self._page(parsed, standin.lists[parsed.path])
                self._send(404, {"message": "Not Found",
                                 "documentation_url": "https://docs.github.com/rest"})

            def _page(self, parsed, items):
                page = int(parse_qs(parsed.query).get("page", ["1"])[0])
                last = max(1, -(-len(items) // PAGE))
                links = []
                base = f"{standin.url}{parsed.path}?per_page={PAGE}&page="
                if page < last:
                    links += [f'<{base}{page + 1}>; rel="next"', f'<{base}{last}>; rel="last"']
                if page > 1:
                    links += [f'<{base}{page - 1}>; rel="prev"', f'<{base}1>; rel="first"']
                headers = {"Link": ", ".join(links)} if links else {}
                self._send(200, items[(page - 1) * PAGE: page * PAGE], headers)

            def _send(self, status, body, headers=None):
                data = json.dumps(body if body is not None else {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-RateLimit-Limit", "5000")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def pull_payload(api: str, upstream: str, number: int, changed_files: int, *, title="Speed up the thing",
                 state="closed", merged=True, login="octo", labels=("performance",),
                 head_sha="a" * 40, base_sha="b" * 40, merge_commit_sha="c" * 40,
                 created="2026-01-01T10:00:00Z", merged_at="2026-01-03T23:30:00Z") -> dict:
    repo_url = f"{api}/repos/{upstream}"
    return {
        "url": f"{repo_url}/pulls/{number}",
        "html_url": f"https://github.com/{upstream}/pull/{number}",
        "number": number,
        "state": state,
        "title": title,
        "user": {"login": login, "id": 1, "type": "User"},
        "body": "Why and how.",
        "labels": [{"id": i, "name": n, "color": "ededed"} for i, n in enumerate(labels)],
        "created_at": created,
        "updated_at": merged_at or created,
        "closed_at": merged_at if state == "closed" else None,
        "merged_at": merged_at if merged else None,
        "merge_commit_sha": merge_commit_sha,
        "head": {"label": "fork:feature", "ref": "feature", "sha": head_sha},
        "base": {"label": "sgl-project:main", "ref": "main", "sha": base_sha},
        "merged": merged,
        "draft": False,
        "changed_files": changed_files,
        "additions": 0,
        "deletions": 0,
        "commits": 1,
    }


# --- GitHub file entries from a real git diff -------------------------------------

_DIFF_HEAD = re.compile(r"^diff --git a/(.*) b/(.*)$")


def github_files(diff: str) -> list[dict]:
    """Split `git diff` output into GitHub /pulls/{n}/files entries, as GitHub does.

    GitHub drops the git headers, keeps the hunks as `patch` (no trailing
    newline), and omits `patch` for binary files. Give it `git diff --full-index`
    output so each entry carries its blob SHA.
    """
    entries = []
    for block in re.split(r"(?m)^(?=diff --git )", diff):
        if not block.strip():
            continue
        lines = block.rstrip("\n").split("\n")
        old, new = _DIFF_HEAD.match(lines[0]).groups()
        status = "modified"
        if any(l.startswith("new file mode") for l in lines[:4]):
            status = "added"
        elif any(l.startswith("deleted file mode") for l in lines[:4]):
            status = "removed"
        elif any(l.startswith("rename from") for l in lines[:5]):
            status = "renamed"
        first_hunk = next((i for i, l in enumerate(lines) if l.startswith("@@")), None)
        patch = "\n".join(lines[first_hunk:]) if first_hunk is not None else None
        body = lines[first_hunk:] if first_hunk is not None else []
        adds = sum(1 for l in body if l.startswith("+"))
        dels = sum(1 for l in body if l.startswith("-"))
        index = next((l.split()[1] for l in lines[:6] if l.startswith("index ")), "0" * 40 + ".." + "d" * 40)
        old_sha, new_sha = index.split("..")
        entry = {"sha": old_sha if status == "removed" else new_sha, "filename": new, "status": status, "additions": adds,
                 "deletions": dels, "changes": adds + dels,
                 "blob_url": "https://github.com/x", "raw_url": "https://github.com/x",
                 "contents_url": "https://api.github.com/x"}
        if patch is not None:
            entry["patch"] = patch
        if status == "renamed":
            entry["previous_filename"] = old
        entries.append(entry)
    return entries
