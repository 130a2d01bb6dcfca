"""Evidence fidelity: excerpts are exact quotations (G001 on per-hunk locks), reviewed
files sit in role subsections (S009), test claims name real tests (G009/G010),
Validation agrees with `lanes:` and with the PR's hardware (L013/L014), and stock
Validation openers are caught (P008)."""

from __future__ import annotations

import json

import pytest

from dossier.check import run_check
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.evidence import SCHEMA, defined_names, file_lines, hunk_lines, line_hash, lock_digest
from dossier.fetch import fetch_git

FILLER = "".join(f"CONST_{i} = {i}\n" for i in range(12))
BEFORE = ("import torch\n\n\nclass Vision:\n    def forward(self, x):\n        y = x + 1\n        z = y * 2\n"
          "        return z\n\n\n" + FILLER + "\n\ndef helper(v):\n    total = 0\n    for i in v:\n"
          "        total += i\n    return total\n")
AFTER = ("import torch\n\n\nclass Vision:\n    def forward(self, x):\n        x = x.to(\"cuda\", non_blocking=True)\n"
         "        y = x + 1\n        if y is None:\n            return x\n        z = y * 2\n        return z\n\n\n"
         + FILLER + "\n\ndef helper(v):\n    total = 0\n    for i in v:\n        total += int(i)\n    return total\n")
TEST_FILE = ("import unittest\n\n\nclass TestVision(unittest.TestCase):\n    def test_forward_copies_once(self):\n"
             "        pass\n\n\ndef test_helper_sums():\n    pass\n")
MODEL = "python/sglang/srt/models/qwen3_vl.py"
TEST = "test/registered/vlm/test_vision_copy.py"

# The diff (git's hunks of MODEL):
# @@ -3,7 +3,10 @@ import torch
#
#  class Vision:
#      def forward(self, x):
# +        x = x.to("cuda", non_blocking=True)
#          y = x + 1
# +        if y is None:
# +            return x
#          z = y * 2
#          return z
#
# @@ -25,5 +28,5 @@ CONST_11 = 11
#  def helper(v):
#      total = 0
#      for i in v:
# -        total += i
# +        total += int(i)
#      return total

CARD = f"""---
repo: sglang
pr: 7
title: "[VLM] one copy in the vision forward"
state: merged
merged: 2026-01-02
url: https://github.com/sgl-project/sglang/pull/7
stats: {{files: 2, additions: 14, deletions: 1}}
families: [qwen3-vl]
kind: perf
symptoms: []
lanes: [vl-single-image]
thread: read
---

# [VLM] one copy in the vision forward

## Motivation

Screenshots reached the vision tower one host tensor at a time, and each forward
call of `Vision` paid its own blocking transfer before the patch embedding ran,
which a profile of an eight-image request showed as a staircase of small copies.

## Key implementation

`Vision.forward` in `{MODEL}` moves its input with one `non_blocking` copy and
returns early when the shifted tensor is missing; `helper` casts each item with
`int` before summing, so string counts from the processor add up.

## Key code excerpts

### `{MODEL}` `@@ -3,7 +3,10 @@`

```diff
     def forward(self, x):
+        x = x.to("cuda", non_blocking=True)
         y = x + 1
...
         z = y * 2
         return z
```

## Reviewed files

### Runtime

- `{MODEL}`

### Tests

- `{TEST}`

## Validation

`{TEST}::TestVision::test_forward_copies_once` drives `Vision.forward` once per
image. Run the `vl-single-image` lane before and after with `--requests 50` and
compare TTFT p50; the nsys timeline should show one copy per request.
"""


@pytest.fixture
def kb7(upstream, kb):
    upstream.write(MODEL, BEFORE)
    upstream.commit("init")
    upstream.write(MODEL, AFTER)
    upstream.write(TEST, TEST_FILE)
    upstream.commit("[VLM] one copy in the vision forward (#7)")
    card = kb / "references/cards/sglang/7.md"
    card.parent.mkdir(parents=True)
    card.write_text(CARD)
    fetch_git(load_config(kb), "sglang", [7], str(upstream.path))
    return kb


def _findings(kb, select, sources=None):
    return run_check(KnowledgeBase(load_config(kb), sources=sources or {}), select=select)


def _edit(kb, old, new):
    path = kb / "references/cards/sglang/7.md"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _replace_excerpt(kb, body, heading_hunk="`@@ -3,7 +3,10 @@`"):
    path = kb / "references/cards/sglang/7.md"
    text = path.read_text()
    start = text.index(f"### `{MODEL}`")
    end = text.index("## Reviewed files")
    block = f"### `{MODEL}` {heading_hunk}\n\n```diff\n{body}\n```\n\n"
    path.write_text(text[:start] + block + text[end:])


def test_lock_orders_hashes_per_hunk_and_keeps_indentation(kb7):
    lock = json.loads((kb7 / "references/evidence/sglang/7.json").read_text())
    assert lock["schema"] == SCHEMA == 3
    model = next(f for f in lock["files"] if f["path"] == MODEL)
    assert "lines" not in model and all(isinstance(h["lines"], str) for h in model["hunks"])  # one string a hunk
    assert [len(hunk_lines(h)) for h in model["hunks"]] == [10, 6]
    first = hunk_lines(model["hunks"][0])
    assert first[3] == line_hash("+", '        x = x.to("cuda", non_blocking=True)')
    assert first[3] != line_hash("+", 'x = x.to("cuda", non_blocking=True)')  # indentation counts
    assert file_lines(model) == first + hunk_lines(model["hunks"][1])
    assert lock["stats"]["diff_lines"] == 16 + len(hunk_lines(next(f for f in lock["files"] if f["path"] == TEST)["hunks"][0]))
    assert lock["test_symbols"] == {TEST: ["TestVision", "TestVision::test_forward_copies_once", "test_helper_sums"]}
    assert lock["lock_sha256"] == lock_digest(lock)
    assert "non_blocking" not in (kb7 / "references/evidence/sglang/7.json").read_text()  # no code text


def test_good_card_passes_every_card_rule(kb7):
    assert _findings(kb7, ["S", "G", "P", "L"]) == []


EXACT = [
    # one run
    '     def forward(self, x):\n+        x = x.to("cuda", non_blocking=True)\n         y = x + 1',
    # uniform dedent of the whole block (4 spaces) keeps a quotation
    ' def forward(self, x):\n+    x = x.to("cuda", non_blocking=True)\n     y = x + 1',
    # runs in two hunks, with an elision mark between them
    '+        if y is None:\n+            return x\n...\n-        total += i\n+        total += int(i)',
    # a hunk header inside the block starts a run in that hunk
    '+        x = x.to("cuda", non_blocking=True)\n@@ -25,5 +28,5 @@\n-        total += i',
    # an empty line is an empty context line
    '         return z\n\n@@ -25,5 +28,5 @@\n def helper(v):',
]


@pytest.mark.parametrize("body", EXACT)
def test_exact_quotations_pass(kb7, body):
    _replace_excerpt(kb7, body)
    assert _findings(kb7, ["G001"]) == []


EDITED = [
    # swapped lines
    ('+        x = x.to("cuda", non_blocking=True)\n     def forward(self, x):', "does not follow"),
    # a dropped middle line
    ('+        x = x.to("cuda", non_blocking=True)\n+        if y is None:', "mark the skip with a '...' line"),
    # a context line shown as added
    ('     def forward(self, x):\n+        y = x + 1', "sign differs"),
    # a re-indented line
    ('     def forward(self, x):\n+    x = x.to("cuda", non_blocking=True)', "indentation differs"),
    # lines from two hunks with no mark between them
    ('         return z\n def helper(v):', "does not follow"),
    # runs out of the diff's order
    ('-        total += i\n...\n+        if y is None:', "out of diff order"),
    # a run confined by the heading's hunk that lives in another hunk
    ('-        total += i', "not in the diff of @@ -3,7 +3,10 @@"),
    # a line that is nowhere in the diff
    ('+        x = x.cuda()', "not in the diff"),
]


@pytest.mark.parametrize("body, fragment", EDITED)
def test_edited_quotations_fire(kb7, body, fragment):
    confined = "of @@" in fragment
    _replace_excerpt(kb7, body, heading_hunk="`@@ -3,7 +3,10 @@`" if confined else "")
    found = _findings(kb7, ["G001"])
    assert [f.code for f in found] == ["G001"], found
    assert fragment in found[0].message
    card_lines = (kb7 / "references/cards/sglang/7.md").read_text().splitlines()
    assert card_lines[found[0].line - 1].strip() in body  # points at the offending line


def test_excerpt_heading_without_hunk_may_quote_any_hunk(kb7):
    _replace_excerpt(kb7, '-        total += i\n+        total += int(i)', heading_hunk="")
    assert _findings(kb7, ["G001"]) == []


def test_schema_1_lock_must_be_refetched(kb7):
    path = kb7 / "references/evidence/sglang/7.json"
    lock = json.loads(path.read_text())
    lock["schema"] = 1
    lock["lock_sha256"] = lock_digest(lock)
    path.write_text(json.dumps(lock))
    found = _findings(kb7, ["G001"])
    assert [f.code for f in found] == ["G001"] and "schema 1" in found[0].message
    assert found[0].path.endswith("references/evidence/sglang/7.json")


@pytest.mark.parametrize("old, new, fragment", [
    (f"### Runtime\n\n- `{MODEL}`", f"- runtime: `{MODEL}`\n\n### Runtime\n\n- `{MODEL}`", "outside a role subsection"),
    (f"- `{MODEL}`", f"- `{MODEL}`\n- the model file above", "backticked path"),
    ("### Tests", "### Benchmarks", "not a role"),
])
def test_reviewed_files_shape_fires(kb7, old, new, fragment):
    _edit(kb7, old, new)
    found = _findings(kb7, ["S009"])
    assert [f.code for f in found] == ["S009"] and fragment in found[0].message


def test_test_file_without_function_fires(kb7):
    _edit(kb7, f"`{TEST}::TestVision::test_forward_copies_once`", f"`{TEST}`")
    found = _findings(kb7, ["G009"])
    assert [f.code for f in found] == ["G009"] and TEST in found[0].message


@pytest.mark.parametrize("ref, fires", [
    ("TestVision::test_forward_copies_once", False),
    ("test_forward_copies_once", False),  # a method of some class
    ("test_helper_sums", False),
    ("TestVision::test_helper_sums", True),  # top-level, not a method
    ("TestVision::test_imaginary", True),
])
def test_named_test_must_exist_at_merge_commit(kb7, ref, fires):
    _edit(kb7, "TestVision::test_forward_copies_once", ref)
    found = _findings(kb7, ["G010"])
    assert bool(found) == fires, found


def test_cited_test_outside_the_diff_needs_a_record_or_a_clone(kb7, upstream):
    other = "test/registered/vlm/test_other.py"
    _edit(kb7, "image. Run", f"image; `{other}::test_other_path` is another. Run")
    found = _findings(kb7, ["G010"])
    assert [f.code for f in found] == ["G010"] and "records no names" in found[0].message
    # with a clone, the file is read at the merge commit: it does not exist there
    found = _findings(kb7, ["G010"], sources={"sglang": str(upstream.path)})
    assert [f.code for f in found] == ["G010"] and "does not exist" in found[0].message
    # re-fetching records the names the cited file defines (here: none, it is absent)
    fetch_git(load_config(kb7), "sglang", [7], str(upstream.path))
    lock = json.loads((kb7 / "references/evidence/sglang/7.json").read_text())
    assert lock["test_symbols"][other] == []


def test_defined_names_are_names_only():
    assert defined_names("class A:\n    def b(self):\n        def inner():\n            pass\n\nasync def c():\n    pass\n") == [
        "A", "A::b", "c"]


@pytest.mark.parametrize("old, new, fragment", [
    ("lanes: [vl-single-image]", "lanes: [vl-single-image, vl-video]", "never names it"),
    ("Run the `vl-single-image` lane", "The `vl-single-image` lane cannot run at this commit, so run the `vl-video` lane",
     "cannot run here"),
    ("compare TTFT p50;", "compare TTFT p50, then run `vl-multi-image` the same way;", "does not list it"),
])
def test_lanes_must_agree_with_validation(kb7, old, new, fragment):
    _edit(kb7, old, new)
    found = _findings(kb7, ["L013"])
    assert found and all(f.code == "L013" for f in found) and any(fragment in f.message for f in found), found


def test_hardware_pr_validates_on_its_hardware(kb7):
    _edit(kb7, "kind: perf", "kind: hardware\nhardware: npu")
    found = _findings(kb7, ["L014"])
    messages = " | ".join(f.message for f in found)
    assert "never says how to run it on npu" in messages and "GPU rerun" in messages
    _edit(kb7, "Run the `vl-single-image` lane before and after",
          "On an Ascend host, launch with `--device npu` and run the `vl-single-image` lane before and after")
    assert _findings(kb7, ["L014"]) == []


def test_hardware_is_inferred_or_must_be_declared(kb7):
    _edit(kb7, "kind: perf", "kind: hardware")
    found = _findings(kb7, ["L014"])
    assert [f.code for f in found] == ["L014"] and "hardware:" in found[0].message
    _edit(kb7, "kind: hardware", "kind: hardware\nhardware: cuda")  # an NVIDIA generation: GPU lanes are its hardware
    assert _findings(kb7, ["L014"]) == []


@pytest.mark.parametrize("opener", [
    "No test was added.", "The diff adds no test, so", "the PR ships no test;", "There is no new test in this diff.",
])
def test_stock_validation_openers_fire(kb7, opener):
    _edit(kb7, f"`{TEST}::TestVision", f"{opener} `{TEST}::TestVision")
    assert [f.code for f in _findings(kb7, ["P008"])] == ["P008"]


def test_lock_digest_is_sorted_key_ascii_json_of_the_lock_without_its_hash():
    """For a schema 1 or 2 lock (here one without `schema`), lock_digest's prebuilt encoder writes
    what `json.dumps(body, sort_keys=True)` writes, so digests already in locks stay valid:
    non-ASCII text, escapes, NaN, nested and odd values."""
    import hashlib

    lock = {"pr": 7, "title": "Qwen3-VL: ü “quotes” \"q\" \\ \t\n\x00 \u2028", "lock_sha256": "x",
            "files": [{"path": "a.py", "hunks": [{"header": "@@ -1 +1 @@", "section": "", "lines": ["+ab", " c"]}],
                       "symbols": []}],
            "stats": {"ratio": float("nan"), "big": 10 ** 30, "neg": -1.5e-300}, "z": None, "a": [True, False, {}]}
    body = {k: v for k, v in lock.items() if k != "lock_sha256"}
    assert lock_digest(lock) == hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def test_excerpt_runs_split_at_elisions_hunks_and_skip_markers():
    """split_runs tests a line's sign first; every other kind of line keeps its old meaning."""
    from dossier.quotes import split_runs

    block = ["+a", " ...", "\t...", "...", "-b", "@@ -1,2 +1,2 @@ def f():", " c", "", "@not a hunk",
             "\\ No newline at end of file", "+...", "x", "  ... ", " d"]
    runs, problems = split_runs(list(enumerate(block, start=10)), "@@ -9 +9 @@")
    assert [(r.hunk, [(l.number, l.sign, l.body) for l in r.lines]) for r in runs] == [
        ("@@ -9 +9 @@", [(10, "+", "a")]),
        (None, [(14, "-", "b")]),
        ("@@ -1,2 +1,2 @@", [(16, " ", "c"), (17, " ", ""), (20, "+", "...")]),
        (None, [(23, " ", "d")]),
    ]
    assert [(p.number, p.message[:30]) for p in problems] == [(18, "excerpt line must start with '"),
                                                              (21, "excerpt line must start with '")]
