"""The round-4 fast paths of L013, L032, L033 and P rules give what the plain code they replace gives.

Each test runs the fast path and the path it skips (or the plain code it stands for) on
inputs chosen to tell them apart, so a fast path that drifts from the original fails here.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from dossier import lane_options as lo
from dossier.cards import parse_card
from dossier.rules import RULES, links

LANES = ("vl-single-image", "vl-multi-image", "vl-video", "vl-video-processor", "omni-speech", "asr-offline",
         "asr-http-stream")
# More heads than _MAX_ANCHORS: _lane_hits falls back to the regex pass.
MANY_HEADS = tuple(f"{w}-lane" for w in ("a", "b", "c", "d", "e", "f", "g", "h")) + ("vl-video",)
PIECES = ["vl-video", "vl-", "-processor", "omni-speech", "asr-", "offline", "x", "-", "_", " ", "\n", ".", "(",
          "`", "é", "a-lane", "h-lane", "vl-single-image", "ab", "  \n", "\t", "Run", "cannot", "."]


def _random_texts(seed: int, count: int = 2000):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 16)))


def _plain_hits(lanes, text):
    ahead = links._lane_ahead(lanes)
    return [m for m in ahead.finditer(text) if not (m.start() and links._NAME_CHAR.match(text, m.start() - 1))]


@pytest.mark.parametrize("lanes", [LANES, MANY_HEADS, ("vl-video", "vl-video-processor", "vl")])
def test_lane_hits_by_heads_agree_with_the_regex_pass(lanes):
    # LANES and the third set search for their few heads; MANY_HEADS takes the regex pass.
    assert (links._lane_anchors(lanes) is None) == (lanes == MANY_HEADS)
    for text in _random_texts(11):
        got = [(m.span(), m.group(1)) for m in links._lane_hits(lanes, text)]
        assert got == [(m.span(), m.group(1)) for m in _plain_hits(lanes, text)], text


def _plain_paragraphs(card):
    """_validation_paragraphs as a loop over the lines."""
    out, buf, start = [], [], None
    for number, text in card.sections["Validation"].body:
        text = text.strip()
        if text:
            start = start or number
            buf.append(text)
        elif buf:
            out.append((start, " ".join(buf)))
            buf, start = [], None
    if buf:
        out.append((start, " ".join(buf)))
    return out


def _card(validation: str, lanes=()):
    lanes_yaml = "[" + ", ".join(lanes) + "]"
    return parse_card(Path("cards/sglang/1.md"), f"---\npr: 1\nlanes: {lanes_yaml}\n---\n\n## Validation\n{validation}")


def test_validation_paragraphs_agree_with_the_line_loop():
    bodies = ["", "\n", "one\n\n two \n\t\nthree\n", "  a\n b\u2003\n\u2028\nc\x0c", "\n\n\nx", "x\n \n \ny\n\n"]
    bodies += list(_random_texts(12, 1000))
    for body in bodies:
        card = _card(body)
        assert links._validation_paragraphs(card) == _plain_paragraphs(card), body


def test_l013_findings_agree_with_the_plain_paragraph_search(monkeypatch):
    ctx = SimpleNamespace(lanes={lane: {} for lane in LANES}, rel=lambda p: str(p))
    rng = random.Random(13)
    for body in _random_texts(14, 800):
        card = _card(body, rng.sample(LANES, rng.randint(0, 2)))
        got = sorted(RULES["L013"].func(ctx, card))
        with monkeypatch.context() as m:
            m.setattr(links, "_validation_paragraphs", _plain_paragraphs)
            m.setattr(links, "_lane_anchors", lambda lanes: None)
            assert got == sorted(RULES["L013"].func(ctx, card)), body


def _plain_blank_fences(text):
    return re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1[^\n]*$", lambda m: " " * len(m.group(0)), text)


def test_lane_command_literal_checks_skip_only_texts_without_a_command():
    registry = {"vl-video": {"script": "playbook/lanes/vl_video.py"}}
    texts = ["the `vl-video` lane with `--x 1`", "the `vl-video`\nlane\twith `--x` and `--y`",
             "```\nthe `vl-video` lane with `--x`\n```", "`python playbook/lanes/vl_video.py --a`",
             "```bash\npython playbook/lanes/vl_video.py --a\n```", "~~~\n~~~ lane with `--z`"]
    rng = random.Random(15)
    pieces = ["`vl-video`", " lane", "s", " with ", "`--x`", "`--y 2`", " and ", "```", "~~~", "\n", " ",
              "python playbook/lanes/vl_video.py", "`", "--z"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    for text in texts:
        assert lo._blank_fences(text) == _plain_blank_fences(text), text
        prose = _plain_blank_fences(text)
        # What the literal checks return early for has no match to find.
        if "`--" not in text or "lane" not in text or "with" not in text:
            assert lo._PROSE_RUN.search(prose) is None, text
        if "playbook/lanes/" not in text:
            assert lo.lane_invocations(text) == [] and lo._SCRIPT.search(text) is None
    assert [s for _, s, _ in lo.lane_invocations(texts[3])] == ["vl_video.py"]
    assert [w for _, _, w in lo.lane_mentions(texts[1], registry)] == [["--x"], ["--y"]]


def test_l033_places_a_finding_on_its_line_and_column():
    # The line and column of an offset into the section's text, as the old line-start list gave them.
    card = _card("\nrun it:\n  `python playbook/lanes/vl_video.py --nope`\n\nmore\n")
    ctx = SimpleNamespace(lane_options={"vl_video.py": {"options": {}}}, lane_command_verdicts={}, lanes={},
                          rel=lambda p: str(p), pinned_names=None, release=None)
    (f,) = RULES["L033"].func(ctx, card)
    text = card.body_text("Validation") + "\n"
    offset = text.index("playbook/lanes/")
    starts, pos = [], 0
    for number, line in card.sections["Validation"].body:
        starts.append((pos, number))
        pos += len(line) + 1
    start, number = max(s for s in starts if s[0] <= offset)
    assert (f.line, f.col) == (number, offset - start + 1) == (9, 11)


def test_p001_skips_only_cards_whose_elision_lines_are_all_fenced(monkeypatch):
    from dossier.rules import phrases

    ctx = SimpleNamespace(rel=lambda p: str(p))
    rng = random.Random(16)
    pieces = ["...", "  ...", "... ", "```", "~~~", "  ```py", "\n", "\n", "x", "todo", " ", "İ", "`a`", "\t..."]
    texts = ["---\npr: 1\n---\n```\n...\n```\n", "---\npr: 1\n---\n```\n...\n```\n...\n", "...\n~~~\n...", "  ```\n..."]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 14))) for _ in range(3000)]
    for text in texts:
        card = parse_card(Path("cards/sglang/1.md"), text)
        got = list(RULES["P001"].func(ctx, card))
        with monkeypatch.context() as m:
            m.setattr(phrases, "_unfenced_elision", lambda text: True)  # never skip: the old path decides
            assert got == list(RULES["P001"].func(ctx, card)), text
        # and the skip agrees with the lines of the unfenced text it stands for
        assert phrases._unfenced_elision(text) == phrases._elision_line(phrases._unfenced(text)), text
