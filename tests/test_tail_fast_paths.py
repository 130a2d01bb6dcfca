"""The fast paths of the L, M, B and K rules give what the plain code they replace gives.

Each test runs the fast path and the fallback (or the plain regex it stands for) on inputs
chosen to tell them apart, so a fast path that drifts from the original fails here.
"""

from __future__ import annotations

import re

import pytest

from dossier import measurements as ms
from dossier.measurement_blocks import card_blocks
from dossier.build import inputs_digest
from dossier.config import load_config
from dossier.kb import KnowledgeBase
from dossier.rules import links, scripts
from dossier.trees import missing_in_release

from test_measurements import _record, mkb  # noqa: F401 - mkb is a fixture

LANE_TEXTS = [
    "vl-video", "xvl-video", "-vl-video", "vl-video-processor", "vl-videos", "vl-video_x", "(vl-video).",
    "run vl-video, then vl-video-processor and asr-offline", "évl-video and vl-video", "vl-vl-video",
    "`vl-video`/asr-offline", "a.b and xa.b and a.b.c", "", "asr-offline-asr-offline asr-offline",
]


@pytest.mark.parametrize("lanes", [("vl-video", "vl-video-processor", "asr-offline"),
                                   ("vl-video", "a.b", "asr-offline")])
def test_lane_finder_agrees_with_the_lane_pattern(lanes):
    find = links._lane_finder(lanes)
    # kebab-case ids take the fast path; an id with a dot falls back to the pattern itself
    assert (find.__name__ == "find") == all(links._NAME.fullmatch(lane) for lane in lanes)
    pattern = links._lane_pattern(lanes)
    for text in LANE_TEXTS:
        assert find(text) == set(pattern.findall(text)), text


VALIDATIONS = [
    "Run vl-video. It cannot run asr-offline! Then (vl-video-processor) and `asr-offline`? Yes.",
    "vl-video.  Asr-offline predates the lane. Not vl-videos, xvl-video or vl-video_x; before the lane vl-video.",
    "First paragraph, no lane.\n\n- vl-video runs here\n- asr-offline does not apply\n\n```\nrun vl-video\n```",
    "e.g. asr-offline. A vl-video.B vl-video! (vl-video) n/a for asr-offline",
    "", "nothing here at all. None.",
]


@pytest.mark.parametrize("lanes", [("vl-video", "vl-video-processor", "asr-offline"),
                                   ("vl-video", "a.b", "asr-offline"), ()])
def test_lane_mentions_agree_with_the_sentence_by_sentence_search(lanes):
    from pathlib import Path
    from types import SimpleNamespace

    from dossier.cards import parse_card

    ctx = SimpleNamespace(lanes={lane: {} for lane in lanes})
    find = links._lane_finder(lanes)
    for body in VALIDATIONS:
        card = parse_card(Path("cards/sglang/1.md"), f"---\npr: 1\n---\n\n## Validation\n\n{body}\n")
        expected: dict = {}
        for line, sentence in links._validation_sentences(card):
            for lane in find(sentence):
                expected.setdefault(lane, []).append((line, links._NEGATED.found(sentence)))
        assert links._lane_mentions(ctx, card) == expected, body


@pytest.mark.parametrize("text", [
    "A first. Second one! Third? (fourth) `fifth`", "e.g. the lane runs Qwen2.5-VL.", "x.. Y", "end.", "",
    "a.\tB and c.  D", "no stop here", "one.\n\ntwo", "one\n- two", "Done.  \n  Next",
])
def test_sentence_split_agrees_with_the_regex(text):
    assert links._split_sentences(text) == links._SENTENCE_END.split(text)


@pytest.mark.parametrize("text", [
    "tests/a.py", "xtests/a.py", "/tests/a.py", ".tests/a.py", "-benchmarks/x.py", "(scripts/x.py)",
    "atests/x/tests/b.py tests/c.py", "tests/x.py tests/y.py", "python/sglang/srt/x.py", "examples/a/b.pyc",
    "testss/x.py", "mytest/x.py test/y.py", "étests/a.py", "playbook/lanes/run.py::t", "sglang_omni/a/b.py",
    "python/sglang/srt/a.py", "python/x.py", "xpython/sglang/a.py", "tests/python/sglang/a.py", "tests/a.pyc/b.py.x",
    "scripts/ tests/a.py", "tests//a.py", "/tests/x.py tests/", "tests/a.py/tests/b.py", "tests/.py", "a/tests/b.py",
])
def test_script_paths_agree_with_the_path_regex(text):
    expected = [(m.start(1), (m.group(1),)) for m in scripts._PATH.finditer(text)]
    assert scripts.script_paths(text) == expected


def test_script_paths_agree_with_the_path_regex_on_random_text():
    import random

    rng = random.Random(7)
    pieces = list(scripts._FOLDERS) + ["/", ".py", ".pyc", "x", "_", "-", ".", " ", "\n", "(", "`", "é", "sglang", "py"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        expected = [(m.start(1), (m.group(1),)) for m in scripts._PATH.finditer(text)]
        assert scripts.script_paths(text) == expected, text


def test_release_names_are_built_once_per_listing_and_follow_a_new_one():
    release = {"repo": "sglang", "flags": ["--aa"], "env": ["SGLANG_X"], "paths": ["python/sglang/srt/a.py"]}
    text = "--aa --bb SGLANG_X SGLANG_Y python/sglang/srt/a.py python/sglang/srt/b.py"
    assert missing_in_release(release, text) == ["--bb", "SGLANG_Y", "python/sglang/srt/b.py"]
    assert missing_in_release(release, text) == ["--bb", "SGLANG_Y", "python/sglang/srt/b.py"]
    other = {**release, "flags": ["--aa", "--bb"]}
    assert missing_in_release(other, text) == ["SGLANG_Y", "python/sglang/srt/b.py"]
    for _ in range(2):  # a listing that cannot be read fails on every call, not only the first
        with pytest.raises(KeyError):
            missing_in_release({"repo": "sglang", "env": [], "paths": []}, "nothing named")


def test_loaded_cards_give_the_blocks_and_digest_that_reading_them_gives(mkb):  # noqa: F811
    _record(mkb)
    cards = mkb / "references/cards/sglang"
    # Over the card size cap, so the knowledge base cannot load it and card_blocks reads it
    # itself; its block has no record, so it is to be removed.
    (cards / "43.md").write_text("---\n---\n" + "y\n" * 150_000 + f"\n## Measured on H200\n\n{ms.BLOCK_START} x -->\n"
                                 f"old\n{ms.BLOCK_END}\n")
    (cards / "44.md").write_bytes(b"---\n\xff\n---\n")  # not UTF-8: skipped either way
    ctx = KnowledgeBase(load_config(mkb))
    loaded, unreadable = ctx.all_loaded
    assert {p.name for p, _ in unreadable} == {"43.md", "44.md"}
    known = [(c.path, c.text) for c in loaded] + [(p, None) for p, _ in unreadable]
    blocks = card_blocks(mkb, known, ctx.measurement_records)
    assert blocks == card_blocks(mkb) and list(blocks) == list(card_blocks(mkb))
    assert {p.name for p in blocks} == {"42.md", "43.md"}
    assert inputs_digest(ctx, {c.path: c.text for c in loaded}) == inputs_digest(ctx)
    # A lock as lock_for read it hashes as its file does (CRLF and non-ASCII kept; valid or not).
    lock = mkb / "references/evidence/sglang/42.json"
    lock.parent.mkdir(parents=True)
    lock.write_bytes('{"pr": 42, "title": "é"}\r\n'.encode())
    ctx.lock_for("sglang", 42)
    assert list(ctx.lock_texts) == [lock]
    assert inputs_digest(ctx, {c.path: c.text for c in loaded} | ctx.lock_texts) == inputs_digest(ctx)


@pytest.mark.parametrize("glob", ["python/sglang/srt/models/qwen3_vl.py", "test/**/test_*vl*.py", "docs/*.md",
                                  "*.py", "**/x.py", "?ests/a.py", "x.py", "models/qwen3_vl.py", "sglang/*"])
def test_glob_line_match_agrees_with_the_anchored_search(glob):
    from dossier.config import glob_regex

    pattern = glob_regex(glob).pattern.lstrip("^").rstrip("$")
    for listing in ["python/sglang/srt/models/qwen3_vl.py\ntest/a/test_qwen3_vl_x.py\ndocs/a.md",
                    "python/sglang/test/x.py\nxdocs/a.md\npython/sglang/srt/models/qwen3_vl.pyc", "x.py", "",
                    "a/x.py\nsglang/a/b\ntests/a.py\nsrc/models/qwen3_vl.py",
                    "a/models/qwen3_vl.py\nmodels/qwen3_vl.py\nbx.py\nx.py"]:
        expected = re.search(f"^{pattern}$", listing, re.MULTILINE) is not None
        assert links._a_line_matches(glob, pattern, listing) == expected, (glob, listing)
        joined, lines = links._listing(listing.split("\n"))
        assert lines is not None and links._a_sorted_line_matches(glob, lines) == expected, (glob, listing)


def test_sorted_lines_agree_with_the_listing_search_on_random_paths():
    import random

    from dossier.config import glob_regex

    rng = random.Random(11)
    parts = ["a", "b", "ab", "x.py", "a.py", "", "/", ".", "*", "?", "é"]
    for _ in range(2000):
        paths = {"".join(rng.choice(parts) for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(0, 6))}
        glob = "".join(rng.choice(parts + ["**"]) for _ in range(rng.randint(0, 4)))
        listing, lines = links._listing(paths)
        assert listing == "\n".join(sorted(paths)) and lines is not None
        pattern = glob_regex(glob).pattern.lstrip("^").rstrip("$")
        expected = re.search(f"^{pattern}$", listing, re.MULTILINE) is not None
        assert links._a_sorted_line_matches(glob, lines) == expected, (glob, sorted(paths))


def test_a_file_name_with_a_line_break_leaves_the_listing_search_to_l030():
    listing, lines = links._listing({"a.py", "b\nc.py"})
    assert listing == "a.py\nb\nc.py" and lines is None
    assert links._listing(set()) == ("", [""])
