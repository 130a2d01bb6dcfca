"""Bad input and faults, one test per try (issue 21): nothing from outside runs on the site,
nothing broken is dropped silently, every bad input is one line and a non-zero exit."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from site_harness import CARD, build_site, make_site_kb

# ---- 1. the site shows text from outside as text ---------------------------------------------

XSS_TITLE = "<script>alert(1)</script><img src=x onerror=alert(1)>"
XSS_BODY = """
<script>alert(2)</script>

[click](javascript:alert(3)) [d](data:text/html;base64,PHNjcmlwdD4=) <a href="javascript:alert(4)">x</a>
![i](javascript:alert(5)) [y](#){onclick="alert(6)"} <img src=x onerror=alert(7)> <javascript:alert(9)>
[tab](java\tscript:alert(12)) [ok](https://example.org/fine)

<iframe src="https://example.org"></iframe>

## Heading {data-toc-label="<b onmouseover=alert(13)>x</b>"}

<!-- a comment the page does not show -->
"""


class _Live(HTMLParser):
    """Collects what a browser would run: scripts with our payload, handlers, script URLs, embeds."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        if tag in ("iframe", "object", "embed"):
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag} {name}={value}")
            if name in ("href", "src") and re.match(r"\s*(javascript|data|vbscript):", (value or "").replace("\t", ""), re.I):
                self.found.append(f"{tag} {name}={value}")

    def handle_data(self, data):
        if self._in_script and "alert(" in data:
            self.found.append(f"<script>{data[:40]}")

    def handle_endtag(self, tag):
        self._in_script = False


def live_html(page: str) -> list[str]:
    parser = _Live()
    parser.feed(page)
    return parser.found


def test_xss_payloads_in_titles_frontmatter_and_bodies_never_run(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    card = root / "references" / "cards" / "sglang" / "101.md"
    text = CARD.replace('title: "Fuse window attention in the Qwen2.5-VL vision tower"',
                        f"title: {json.dumps(XSS_TITLE)}\nnote: \"<script>alert(8)</script>\"\n"
                        'url: "javascript:alert(14)"')
    text = text.replace("url: https://github.com/sgl-project/sglang/pull/101\n", "")
    text = text.replace("# Fuse window attention", "# <img src=x onerror=alert(11)> Fuse window attention")
    card.write_text(text.replace("## Motivation\n", "## Motivation\n" + XSS_BODY), encoding="utf-8")
    lock = root / "references" / "evidence" / "sglang" / "101.json"
    data = json.loads(lock.read_text(encoding="utf-8"))
    data["title"] = "<script>alert(10)</script>"
    lock.write_text(json.dumps(data), encoding="utf-8")
    res = build_site(root, tmp_path / "site")
    assert res.returncode == 0, res.stderr[-3000:]
    pages = sorted((tmp_path / "site").rglob("*.html"))
    live = {str(p.relative_to(tmp_path / "site")): live_html(p.read_text(encoding="utf-8")) for p in pages}
    assert not {k: v for k, v in live.items() if v}, "live HTML from a card or title"
    page = (tmp_path / "site" / "cards" / "sglang" / "101.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, "the title is shown, as text"
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page, "a body <script> is shown, as text"
    assert '<a href="https://example.org/fine">ok</a>' in page, "safe links stay links"
    assert "a comment the page does not show" not in page
    index = (tmp_path / "site" / "search" / "search_index.json").read_text(encoding="utf-8")
    assert not re.search(r"<(script|img|iframe|b)\b", index), "the search index carries markup from the card"


def test_site_refuses_to_build_without_the_safe_html_extension(tmp_path):
    root = make_site_kb(tmp_path / "kb")
    conf = root / "mkdocs.yml"
    conf.write_text(conf.read_text(encoding="utf-8").replace("  - dossier.site.safe_html", ""), encoding="utf-8")
    res = build_site(root, tmp_path / "site")
    assert res.returncode != 0 and "dossier.site.safe_html" in res.stderr


# ---- 2. no symlinks out ----------------------------------------------------------------------

from click.testing import CliRunner  # noqa: E402

from dossier.cli import main  # noqa: E402

from test_check import GOOD as GOOD_CARD, findings, kb_card  # noqa: E402,F401 - the fixture: one good card and its lock

SECRET = "TOP-SECRET-TOKEN-do-not-publish"


def run_cli(*args: str):
    """(exit code, stdout+stderr) of one command, in-process."""
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.output


def one_error_line(code: int, output: str, *needles: str) -> None:
    """The shape every bad input must have: a non-zero exit, one `dossier: error:` line, no traceback."""
    assert code != 0, output
    assert "Traceback" not in output, output
    errors = [l for l in output.splitlines() if l.startswith("dossier: error:")]
    assert len(errors) == 1, output
    for needle in needles:
        assert needle in errors[0], output


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.md"
    path.parent.mkdir()
    path.write_text(f"---\nrepo: sglang\npr: 99994\n---\n\n# {SECRET}\n\n## Motivation\n\n{SECRET}\n", encoding="utf-8")
    return path


def test_check_refuses_a_symlinked_card(kb_card, secret):
    (kb_card / "references/cards/sglang/99994.md").symlink_to(secret)
    found = [f for f in findings(kb_card) if f.path == "references/cards/sglang/99994.md"]
    assert any(f.code == "S001" and "symbolic link" in f.message for f in found), found
    assert not any(SECRET in f.message for f in found)


def test_check_refuses_symlinked_lock_playbook_and_record(kb_card, secret):
    lock = kb_card / "references/evidence/sglang/42.json"
    target = secret.parent / "42.json"
    target.write_text(lock.read_text(encoding="utf-8"), encoding="utf-8")
    lock.unlink()
    lock.symlink_to(target)
    (kb_card / "playbook" / "symptoms.yaml").symlink_to(secret)
    record = kb_card / "references/measurements/sglang/42.json"
    record.parent.mkdir(parents=True)
    record.symlink_to(target)
    found = findings(kb_card)
    by_path = {f.path: f.message for f in found if "symbolic link" in f.message}
    assert {"references/cards/sglang/42.md", "playbook/symptoms.yaml",
            "references/measurements/sglang/42.json"} <= set(by_path), found
    assert "evidence/sglang/42.json: is a symbolic link" in by_path["references/cards/sglang/42.md"]


def test_check_refuses_a_card_folder_that_resolves_outside(kb_card, secret):
    (kb_card / "references/cards/sglang-omni").symlink_to(secret.parent, target_is_directory=True)
    secret.rename(secret.parent / "7.md")
    found = [f for f in findings(kb_card) if f.path.endswith("7.md")]
    assert any(f.code == "S001" and "outside the repository" in f.message for f in found), found


def test_the_site_never_reads_a_symlinked_card(tmp_path, secret):
    root = make_site_kb(tmp_path / "kb")
    (root / "references/cards/sglang/99994.md").symlink_to(secret)
    res = build_site(root, tmp_path / "site")
    assert res.returncode == 0, res.stderr[-3000:]
    for path in (tmp_path / "site").rglob("*"):
        if path.is_file() and path.suffix in (".html", ".json", ".js", ".xml"):
            assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path


def test_check_of_a_file_that_is_no_card_is_an_error(kb_card):
    code, out = run_cli("check", "/etc/passwd", "--root", str(kb_card))
    one_error_line(code, out, "/etc/passwd", "not a card")
    code, out = run_cli("check", str(kb_card / "playbook"), "--root", str(kb_card))
    one_error_line(code, out, "no cards")


# ---- 3. broken input stops build, link and find ----------------------------------------------

import shutil  # noqa: E402

from conftest import ROOT  # noqa: E402

PLAYBOOK = """entries:
  - id: vl-copies-slow
    symptom: "many small host to device copies before the vision tower"
    sublane: image
    look:
      - {repo: sglang, file: python/sglang/srt/models/qwen3_vl.py, symbols: []}
    cards: [sglang/42]
    lanes: [vl-single-image]
    measure: "TTFT p50"
"""


@pytest.fixture
def built(kb_card) -> Path:
    """kb_card with a playbook file and the shipped radar, built once: every generated file exists."""
    (kb_card / "playbook/symptoms").mkdir(parents=True, exist_ok=True)
    (kb_card / "playbook/symptoms/image.yaml").write_text(PLAYBOOK, encoding="utf-8")
    shutil.copy(ROOT / "references/radar.yaml", kb_card / "references/radar.yaml")
    code, out = run_cli("build", "--root", str(kb_card))
    assert code == 0, out
    assert (kb_card / "references/radar.md").is_file() and (kb_card / "references/playbook.md").is_file()
    return kb_card


def generated(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / "references").glob("*.md")}


BREAKAGES = {
    "card-frontmatter": ("references/cards/sglang/42.md", lambda t: t.replace("title: \"[VLM]", "title: [\"[VLM]", 1),
                         "S001"),
    "card-field-type": ("references/cards/sglang/42.md", lambda t: t.replace("families: [qwen3-vl]", "families: 3"),
                        "S002"),
    "card-symptoms-type": ("references/cards/sglang/42.md", lambda t: t.replace("symptoms: []", "symptoms: 5"), "S002"),
    "card-nested-list": ("references/cards/sglang/42.md",
                         lambda t: t.replace("lanes: [vl-single-image]", "lanes: [{a: 1}]"), "S002"),
    "lock-truncated": ("references/evidence/sglang/42.json", lambda t: t[: len(t) // 2], "S008"),
    "radar-unparsable": ("references/radar.yaml", lambda t: "items: [\n" + t, "R001"),
    "playbook-unparsable": ("playbook/symptoms/image.yaml", lambda t: t.replace("cards: [sglang/42]", "cards: [sglang/42"),
                            "L007"),
    "card-not-utf8": ("references/cards/sglang/42.md", lambda t: t.replace("Motivation", "Motivation \udcff"), "S001"),
}


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_broken_input_stops_build_and_writes_nothing(built, case):
    rel, breaker, code_expected = BREAKAGES[case]
    before = generated(built)
    path = built / rel
    path.write_bytes(breaker(path.read_text(encoding="utf-8")).encode("utf-8", "surrogateescape"))
    (built / "references/cards/sglang/42.md").touch()
    code, out = run_cli("build", "--root", str(built))
    one_error_line(code, out, rel, code_expected, "nothing written")
    assert generated(built) == before, "a generated file was rewritten from partial input"
    code, out = run_cli("link", "--check", "--root", str(built))
    one_error_line(code, out, rel)
    code, out = run_cli("link", "--root", str(built))
    one_error_line(code, out, rel)
    code, out = run_cli("find", "video", "copies", "--root", str(built))
    one_error_line(code, out, rel)


# ---- 4. strict YAML, size caps ---------------------------------------------------------------

from dossier.cards import MAX_CARD_BYTES, MAX_FRONTMATTER_BYTES  # noqa: E402
from dossier.yamlio import YamlError, parse_yaml  # noqa: E402

CARD42 = "references/cards/sglang/42.md"
BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n")


def card_findings(kb, code="S001"):
    return [(f.line, f.message) for f in findings(kb, select=[code]) if f.path == CARD42]


def edit_card(kb, old, new):
    path = kb / CARD42
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_duplicate_key_in_frontmatter_names_both_lines(kb_card):
    edit_card(kb_card, "kind: perf", "kind: bugfix\nkind: perf")
    [(line, msg)] = card_findings(kb_card)
    assert "duplicate key 'kind'" in msg and "line 11" in msg and "first on line 10" in msg, msg


@pytest.mark.parametrize("rel,text,code", [
    ("references/radar.yaml", "items:\n  - id: a\n    id: b\n", "R001"),
    ("playbook/symptoms/dup.yaml", "entries:\n  - id: a\n    symptom: x\n    symptom: y\n", "L007"),
])
def test_duplicate_keys_in_radar_and_playbook(kb_card, rel, text, code):
    (kb_card / rel).parent.mkdir(parents=True, exist_ok=True)
    (kb_card / rel).write_text(text, encoding="utf-8")
    found = [f for f in findings(kb_card, select=[code]) if f.path == rel]
    assert any("duplicate key" in f.message and "first on line" in f.message for f in found), found


def test_duplicate_key_in_the_lane_registry(kb_card):
    path = kb_card / "playbook/lanes.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("lanes:\n", "lanes: []\nlanes:\n", 1), encoding="utf-8")
    found = findings(kb_card, select=["L010"])
    assert any("duplicate key 'lanes'" in f.message for f in found), found


def test_alias_bomb_in_frontmatter_is_refused_at_the_alias(kb_card):
    edit_card(kb_card, "kind: perf", "kind: perf\n" + BOMB)
    [(line, msg)] = card_findings(kb_card)
    assert "anchors and aliases are not allowed" in msg and "(line 12)" in msg, msg
    code, out = run_cli("find", "vision", "copy", "--root", str(kb_card))
    one_error_line(code, out, CARD42, "aliases")


@pytest.mark.parametrize("text,where", [
    ("a: &x [1]\nb: *x\n", (3, 4)), ("a: &a [*a]\n", (2, 8)), ("base: {x: 1}\nc:\n  <<: {x: 2}\n", (4, 3)),
])
def test_aliases_and_merge_keys_are_refused_everywhere(text, where):
    with pytest.raises(YamlError) as exc:
        parse_yaml(text, "f.yaml", first_line=2)
    assert (exc.value.line, exc.value.col) == where
    assert "not allowed" in exc.value.problem


def test_a_nul_byte_is_reported_on_its_own_line(kb_card):
    edit_card(kb_card, "kind: perf", "kind: perf\x00")
    [(line, msg)] = card_findings(kb_card)
    assert "(line 10)" in msg and "#x0000" in msg, msg


def test_a_byte_order_mark_is_named_as_such(kb_card):
    path = kb_card / CARD42
    path.write_text("\ufeff" + path.read_text(encoding="utf-8"), encoding="utf-8")
    [(line, msg)] = card_findings(kb_card)
    assert "byte-order mark" in msg, msg


def test_card_and_frontmatter_size_caps(kb_card):
    edit_card(kb_card, "kind: perf", "kind: perf\nnote: " + "x" * MAX_FRONTMATTER_BYTES)
    [(line, msg)] = card_findings(kb_card)
    assert "the cap is" in msg, msg
    path = kb_card / CARD42
    path.write_text(GOOD_CARD + "\nfiller line of a pasted log\n" * (MAX_CARD_BYTES // 20), encoding="utf-8")
    [(line, msg)] = card_findings(kb_card)
    assert "a card is at most" in msg, msg
    code, out = run_cli("build", "--root", str(kb_card))
    one_error_line(code, out, CARD42, "at most")


# ---- 5. file modes follow the umask ----------------------------------------------------------

import os  # noqa: E402
import stat  # noqa: E402

from dossier.fsio import write_atomic, write_new  # noqa: E402


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_generated_files_follow_the_umask(kb_card, umask):
    umask(0o022)
    code, out = run_cli("build", "--root", str(kb_card))
    assert code == 0, out
    assert mode(kb_card / "references/pr-history.md") == 0o644
    umask(0o002)
    write_new(kb_card / "new.md", "x\n")
    write_atomic(kb_card / "other.md", "y\n")
    assert mode(kb_card / "new.md") == 0o664 and mode(kb_card / "other.md") == 0o664


def test_rewriting_a_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    path = tmp_path / "private.md"
    path.write_text("a\n")
    path.chmod(0o640)
    write_atomic(path, "b\n")
    assert mode(path) == 0o640 and path.read_text() == "b\n"


# ---- 6. locks and records that cannot be faked cheaply ---------------------------------------

import subprocess  # noqa: E402
import sys  # noqa: E402

from dossier.evidence import hunk_lines, line_hash, lock_digest, write_lock  # noqa: E402
from test_measurements import FAKE, mkb  # noqa: E402,F401 - the fixture: a stand-in repro and its card

OLD_LINE = '+        x = x.to("cuda", non_blocking=True)'
NEW_LINE = '+        x = x.to("cuda", non_blocking=False)'


def test_forged_line_hash_with_recomputed_lock_hash_fails_check_source(kb_card, upstream):
    edit_card(kb_card, OLD_LINE, NEW_LINE)
    path = kb_card / "references/evidence/sglang/42.json"
    lock = json.loads(path.read_text(encoding="utf-8"))
    old, new = line_hash("+", OLD_LINE[1:]), line_hash("+", NEW_LINE[1:])
    for f in lock["files"]:
        for hunk in f["hunks"]:
            hunk["lines"] = "".join(new if h == old else h for h in hunk_lines(hunk))
    lock["lock_sha256"] = lock_digest(lock)
    write_lock(path, lock)
    assert findings(kb_card, select=["G001", "G004"]) == [], "the forgery passes the offline rules"
    drift = findings(kb_card, select=["G005"], sources={"sglang": str(upstream.path)})
    assert [f.code for f in drift] == ["G005"] and "line hash" in drift[0].message, drift
    code, out = run_cli("check", "--select", "G005", "--source", f"sglang={upstream.path}", "--root", str(kb_card))
    assert code == 1 and "qwen3_vl.py: hunk 1" in out, out


def raw_record(kb: Path, tmp_path: Path) -> tuple[Path, dict]:
    raw = tmp_path / "raw.json"
    subprocess.run([sys.executable, str(kb / "playbook/repros/fake.py"), "--out", str(raw)], check=True)
    return raw, json.loads(raw.read_text(encoding="utf-8"))


def _case(**kw):
    return lambda r: r["cases"][0].update(**kw)


@pytest.mark.parametrize("mutate,needle", [
    (_case(before_ms=float("nan")), "NaN"),
    (_case(after_ms=float("inf")), "Infinity"),
    (_case(after_ms=-3.5), "finite positive"),
    (_case(before_ms="26.65"), "finite positive"),
    (_case(speedup=2.0), "disagrees with before_ms / after_ms"),
    (_case(speedup=0), "finite positive"),
    (_case(peak_mib_after=-1), "peak_mib_after"),
    (lambda r: r["device"].update(gpu="cpu"), "without a GPU"),
    (lambda r: r["device"].update(gpu="Intel Xeon"), "without a GPU"),
    (lambda r: r["device"].update(cuda="yes"), "not a CUDA version"),
    (lambda r: r.update(measured="30/11/2026"), "not an ISO date"),
    (lambda r: r.update(measured="2026-13-40"), "not an ISO date"),
])
def test_repro_record_refuses_a_garbled_record(mkb, tmp_path, mutate, needle):
    raw, rec = raw_record(mkb, tmp_path)
    mutate(rec)
    raw.write_text(json.dumps(rec), encoding="utf-8")  # json writes nan/inf as NaN/Infinity
    code, out = run_cli("repro", "record", str(raw), "--root", str(mkb))
    one_error_line(code, out, needle)
    assert not (mkb / "references/measurements/sglang/42.json").exists()


def test_a_good_record_is_still_filed(mkb, tmp_path):
    raw, _ = raw_record(mkb, tmp_path)
    code, out = run_cli("repro", "record", str(raw), "--root", str(mkb))
    assert code == 0, out


def test_m004_looks_only_at_measurement_values(mkb, tmp_path):
    raw, _ = raw_record(mkb, tmp_path)
    assert run_cli("repro", "record", str(raw), "--root", str(mkb))[0] == 0
    card = mkb / "references/cards/sglang/42.md"
    text = card.read_text(encoding="utf-8").replace("additions: 1,", "additions: 165,")
    card.write_text(text.replace("Text.", "The kernel reads `x[165]` and keeps 26.65 lines in flight.\n\n"
                                 "```\nbuf = alloc(165)\n```\n"), encoding="utf-8")
    found = [(f.line, f.message) for f in findings(mkb, select=["M004"])]
    assert [m.split(" ")[0] for _, m in found] == ["26.65"], found


# ---- 7. inputs normalised at the door --------------------------------------------------------

import zipfile  # noqa: E402

from site_harness import DIFF  # noqa: E402

TITLE = "Fuse window attention in the Qwen2.5-VL vision tower"


def fetch_diff(kb: Path, diff: bytes, tmp_path: Path, *extra: str, pr: str = "101"):
    path = tmp_path / "pr.diff"
    path.write_bytes(diff)
    return run_cli("fetch", "sglang", pr, "--diff", str(path), "--title", TITLE, "--merged", "2026-01-02",
                   *extra, "--root", str(kb))


def test_a_crlf_diff_is_read_as_lf(kb, tmp_path):
    code, out = fetch_diff(kb, DIFF.replace("\n", "\r\n").encode(), tmp_path)
    assert code == 0, out
    lock = json.loads((kb / "references/evidence/sglang/101.json").read_text(encoding="utf-8"))
    [f] = lock["files"]
    assert f["path"] == "python/sglang/srt/models/qwen2_5_vl.py" and f["status"] == "modified", f
    crlf_sha = lock["diff_sha256"]
    code, out = fetch_diff(kb, DIFF.encode(), tmp_path)
    assert code == 0 and out.startswith("unchanged"), out
    assert json.loads((kb / "references/evidence/sglang/101.json").read_text(encoding="utf-8"))["diff_sha256"] == crlf_sha


def test_fetch_diff_over_an_existing_different_lock_needs_force(kb, tmp_path):
    assert fetch_diff(kb, DIFF.encode(), tmp_path)[0] == 0
    lock = kb / "references/evidence/sglang/101.json"
    before = lock.read_bytes()
    other = DIFF.replace("return blocks(x)", "return blocks(x) * 2")
    code, out = fetch_diff(kb, other.encode(), tmp_path)
    one_error_line(code, out, "already exists", "--force")
    assert lock.read_bytes() == before
    code, out = fetch_diff(kb, other.encode(), tmp_path, "--force")
    assert code == 0 and out.startswith("wrote"), out


@pytest.mark.parametrize("url", ["http://user:s3cr3t-token@127.0.0.1:9/api", "https://:s3cr3t-token@api.example/",
                                 "http://s3cr3t-token@127.0.0.1:9"])
def test_credentials_in_the_api_url_are_refused_and_never_printed(kb, url, monkeypatch):
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    code, out = run_cli("fetch", "sglang", "101", "--source", "github", "--api-url", url, "--root", str(kb))
    one_error_line(code, out, "credentials")
    assert "s3cr3t" not in out
    assert not (kb / "references/evidence/sglang/101.json").exists()
    code, out = run_cli("radar", "--refresh", "--api-url", url, "--root", str(kb))
    assert code != 0 and "s3cr3t" not in out and "Traceback" not in out, out


@pytest.mark.parametrize("url", ["not a url", "ftp://host/x", "http://[::1"])
def test_a_bad_api_url_is_one_line(kb, url):
    code, out = run_cli("fetch", "sglang", "101", "--source", "github", "--api-url", url, "--root", str(kb))
    one_error_line(code, out, "URL")


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(name, text)
    return path


@pytest.mark.parametrize("members", [
    {},
    {"numpy/__init__.py": "", "numpy-9.9.9.dist-info/METADATA": "Name: numpy\nVersion: 9.9.9\n"},
    {"sglang/srt/server_args.py": "class ServerArgs:\n    x: A[str] = None\n",
     "sglang-9.9.8.dist-info/METADATA": "Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.8\n"},
    {"sglang/srt/server_args.py": "#" * (17 * 1024 * 1024)},
], ids=["empty", "foreign", "other-version", "zip-bomb"])
def test_an_empty_or_foreign_wheel_is_refused_before_anything_is_overwritten(kb, tmp_path, members):
    listing = kb / "references/trees/sglang-release.json"
    listing.parent.mkdir(parents=True, exist_ok=True)
    listing.write_text('{"repo": "sglang", "version": "0.5.23", "paths": ["python/sglang/srt/x.py"]}\n')
    before = listing.read_bytes()
    wheel = _zip(tmp_path / "sglang-9.9.9-py3-none-any.whl", members)
    code, out = run_cli("tree", "sglang", "--wheel", str(wheel), "--root", str(kb))
    one_error_line(code, out, str(wheel))
    assert listing.read_bytes() == before


def test_new_refuses_a_mislabelled_lock(kb, tmp_path):
    assert fetch_diff(kb, DIFF.encode(), tmp_path, pr="10323")[0] == 0
    (kb / "references/evidence/sglang/10323.json").rename(kb / "references/evidence/sglang/99999.json")
    code, out = run_cli("new", "sglang", "99999", "--root", str(kb))
    one_error_line(code, out, "sglang#10323", "not sglang#99999")
    assert not (kb / "references/cards/sglang/99999.md").exists()


# ---- 8. one line, never a traceback; signals -------------------------------------------------

import signal  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

from lane_harness import subprocess_env  # noqa: E402

DOSSIER = [sys.executable, "-c", "from dossier.cli import main; main()"]
LANE = [sys.executable, str(ROOT / "playbook/lanes/asr_offline.py"), "--lane-id", "asr-offline", "--requests", "1",
        "--warmup", "0"]


def tool_env() -> dict:
    return subprocess_env(PYTHONPATH=str(ROOT / "tools"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Reply(BaseHTTPRequestHandler):
    """GET /health is 200; every POST gets `self.server.reply` (bytes written raw, or an HTTP body)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        raw, body = self.server.reply
        if raw:
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def replying():
    """A loopback server whose POST reply a test sets: (raw?, bytes)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Reply)
    server.reply = (False, b"")
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def run_lane_once(*extra: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*LANE, *extra], capture_output=True, text=True, timeout=timeout, env=subprocess_env())


def lane_error_line(res: subprocess.CompletedProcess, *needles: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    [line] = res.stderr.strip().splitlines()
    assert "error:" in line and all(n in line for n in needles), line
    assert "latency" not in res.stdout.lower() and "FAIL" not in res.stdout, res.stdout


@pytest.mark.parametrize("url", ["not a url", "ftp://127.0.0.1:1", "http://[::1"])
def test_lane_with_a_server_url_that_is_no_url(url):
    lane_error_line(run_lane_once("--server-url", url), "--server-url")


def test_lane_with_an_unbalanced_server_cmd():
    lane_error_line(run_lane_once("--launch", "--server-cmd", "python -m 'sglang"), "--server-cmd")


@pytest.mark.parametrize("reply,needle", [
    ((True, b"\x00\x01garbage that is not HTTP\r\n\r\n"), "HTTP"),
    ((False, os.urandom(512).replace(b"data:", b"")), "not an event stream"),
    ((False, b'data: [1, 2]\n\ndata: [DONE]\n\n'), "not a JSON object"),
    ((False, b'data: {"choices": 5}\n\ndata: [DONE]\n\n'), "not what the lane expects"),
], ids=["not-http", "random-bytes", "sse-list", "sse-wrong-shape"])
def test_lane_given_replies_of_the_wrong_shape(replying, reply, needle):
    """A 200 of random bytes or events of the wrong shape is an error, never a measured FAIL."""
    replying.reply = reply
    url = f"http://127.0.0.1:{replying.server_address[1]}"
    res = subprocess.run([sys.executable, str(ROOT / "playbook/lanes/vl_image.py"), "--lane-id", "vl-single-image",
                          "--requests", "1", "--warmup", "0", "--server-url", url, "--timeout", "5"],
                         capture_output=True, text=True, timeout=60, env=subprocess_env())
    lane_error_line(res)
    assert needle in res.stderr, res.stderr


def test_a_non_json_github_reply_is_one_line(kb, monkeypatch):
    class Html(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = b"<html>a proxy's login page</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    monkeypatch.setenv("DOSSIER_GITHUB_BACKOFF", "0.001")
    monkeypatch.setenv("DOSSIER_CACHE", str(kb / "cache"))
    try:
        code, out = run_cli("fetch", "sglang", "5", "--source", "github", "--api-url",
                            f"http://127.0.0.1:{server.server_address[1]}", "--root", str(kb))
    finally:
        server.shutdown()
        server.server_close()
    one_error_line(code, out, "not a pull request")


def test_repro_run_with_a_missing_interpreter_is_one_line(mkb):
    code, out = run_cli("repro", "run", "--python", "/nonexistent/python", "--root", str(mkb))
    one_error_line(code, out, "/nonexistent/python")


def test_lanes_run_refuses_a_registry_script_outside_the_repository(kb, tmp_path):
    outside = tmp_path / "evil.py"
    outside.write_text("print('ran')\n")
    registry = kb / "playbook/lanes.yaml"
    registry.write_text("lanes:\n  - id: evil\n    title: T\n    script: ../evil.py\n", encoding="utf-8")
    code, out = run_cli("lanes", "run", "evil", "--root", str(kb))
    one_error_line(code, out, "outside the repository")
    assert "ran" not in out.replace("dossier: error:", "")


def test_an_unexpected_exception_is_one_line_not_a_traceback(kb, monkeypatch):
    import dossier.build

    def boom(ctx):
        raise RuntimeError("a bug\nwith two lines")

    monkeypatch.setattr(dossier.build, "build", boom)
    code, out = run_cli("build", "--root", str(kb))
    one_error_line(code, out, "internal error: RuntimeError: a bug", "DOSSIER_DEBUG")


def test_sigint_is_one_line_and_exit_130(kb):
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(8)  # accepts the connection, never answers
    try:
        proc = subprocess.Popen([*DOSSIER, "fetch", "sglang", "5", "--source", "github", "--api-url",
                                 f"http://127.0.0.1:{hang.getsockname()[1]}", "--root", str(kb)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=tool_env())
        time.sleep(2.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        hang.close()
    assert proc.returncode == 130, err
    assert err.strip() == "dossier: interrupted", err


def _pid_server(tmp_path: Path, healthy: bool) -> str:
    """A --server-cmd that records its pid, then is never healthy, or healthy and never answers a POST."""
    script = tmp_path / "server.py"
    script.write_text(f"""
import os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
open({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid()))
if not {healthy}:
    time.sleep(600)
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')
    def do_POST(self):
        time.sleep(600)
HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
""")
    return f"{sys.executable} {script} {{port}}"


def _wait_for(path: Path, seconds: float = 30) -> int:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, "the launched server never started"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig,healthy,via_dossier", [
    (signal.SIGTERM, False, False), (signal.SIGINT, True, False), (signal.SIGTERM, True, True),
], ids=["sigterm-while-waiting-for-health", "sigint-while-measuring", "sigterm-to-dossier-lanes-run"])
def test_a_signal_stops_the_launched_server(tmp_path, sig, healthy, via_dossier):
    lane_args = ["--launch", "--server-cmd", _pid_server(tmp_path, healthy), "--port", str(free_port()),
                 "--health-timeout", "120", "--log-dir", str(tmp_path / "logs"), "--timeout", "600"]
    argv = ([*DOSSIER, "lanes", "run", "asr-offline", "--root", str(ROOT), "--", "--requests", "1", "--warmup", "0",
             *lane_args] if via_dossier else [*LANE, *lane_args])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=tool_env())
    try:
        pid = _wait_for(tmp_path / "pid")
        time.sleep(1.0 if healthy else 0.3)  # measuring: the POST is in flight
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _gone(pid), "the launched server outlived the lane"
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err, err
