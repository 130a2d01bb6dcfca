"""The round-4 fast paths of L032 and L033 give what the plain code they replace gives.

Each test runs the fast path and the path it skips (or the plain code it stands for) on
inputs chosen to tell them apart, so a fast path that drifts from the original fails here.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace

from dossier import lane_options as lo
from dossier.cards import parse_card
from dossier.rules import RULES


def _card(validation: str, lanes=()):
    lanes_yaml = "[" + ", ".join(lanes) + "]"
    return parse_card(Path("cards/sglang/1.md"), f"---\npr: 1\nlanes: {lanes_yaml}\n---\n\n## Validation\n{validation}")


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
