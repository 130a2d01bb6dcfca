"""The per-card prose rules (P001-P005, P008-P010) answer exactly what their plain versions did.

Each rule now rules most cards out with substring scans or a cheaper pattern before its
own test. Here every rule runs on thousands of generated cards, built from the phrases
the rules look for (wrapped, in code spans, fenced, cased oddly, with non-ASCII text),
next to its plain version: the code the rule ran before, kept below or reached by
turning the rule's shortcut off. The tests also check that both the shortcut and the
full test were taken often, and that the plain versions found things to compare.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import pytest

from dossier import cards as cards_module
from dossier.cards import is_fence, parse_card
from dossier.rules import RULES, phrases, predictions, thread
from dossier.rules.base import Finding
from dossier.rules.phrases import (_CMD, _CODE_SPAN, _PLACEHOLDER, _PLACEHOLDER_FAST, _STOP, _TEST_REF, _WORD,
                                   MIN_WORDS, _any_lane)
from dossier.rules.predictions import _NUMBER, _PREDICTION, _RECORD, _SAYS_UNMEASURED
from dossier.cards import SENTENCE_END

PHRASES = [
    # P001
    "TODO", "tbd", "FIXME", "xxx", "lorem ipsum", "Lorem ipſum", "write me", "fill me later", "fill in later",
    "<fill this>", "<!-- dossier: why -->", "<!--", "dossier: x -->", "...", "  ...  ", "x...y", "\t...",
    # P008
    "This PR improves performance.", "this change optimizes", "this patch adds support for", "fixes the bug",
    "improves the performance significantly;", "as its title says", "see the diff for details", "refer to the PR",
    "some fixes.", "several optimizations;", "should run faster.", "for better performance;", "run the usual tests",
    "verify that everything works", "No new tests were added", "the diff adds no unit tests",
    "there are no tests in this PR", "without a dedicated test in the diff", "no`x`test", "no test", "fixes", "works",
    # P010
    "no PR description", "had an empty description", "without a description", "description was empty",
    "read from the diff", "not found in the search corpus", "corpus has no thread", "No PR thread could be found",
    "thread was not read", "thread is missing", "issues corpus", "the corpus", "the corpus WER", "thread", "corpus",
    # P009
    "TTFT should drop", "should roughly double", "should be a bit faster", "roughly double", "expected a big gain",
    "expect the speedup", "will be faster", "should go", "down", "should drop out", "should fall back", "should drop",
    "by 10 ms", "(not measured)", "references/measurements/x", "It", "Then", "(see", "`x` should grow", "about twice",
    # P005 and P004
    "`python -m x`", "`pytest tests/test_x.py`", "tests/test_a.py", "vl-single-image", "vl-single-image-x",
    "unittest", "src/pkg/mod.py", "pkg/mod.py", "mod.py", "load_model", "Loader", "docs/a.md",
    # words and odd characters
    "the", "a", "motivation", "copy", "GPU", "x", "a1", "_ab", "12ab", "`code span`", "`", "``", "Qwen2.5-VL.",
    "e.g.", "İ", "\u212a", "é", "—", "ſhould drop", "\t", "\u00a0", "\r", ".", "!", "?", "of", "batch",
]
PLAIN = "the copy of each image moves to the GPU once per batch and prefill waits on it".split()
LINES = ["", "```", "```python", "  ~~~", "### Sub", "#x", "<!-- note -->", "- item"]
SECTIONS = ("Motivation", "Key implementation", "Validation", "Risk", "Key code excerpts", "Reviewed files")


def _line(rng: random.Random) -> str:
    if rng.random() < 0.12:
        return rng.choice(LINES)
    words = [rng.choice(PHRASES if rng.random() < 0.3 else PLAIN) for _ in range(rng.randint(1, 9))]
    return "".join(w + rng.choice((" ", " ", " ", "", "  ")) for w in words).rstrip(" ") if words else ""


def _card_text(rng: random.Random) -> str:
    title = " ".join(rng.choice(PHRASES) for _ in range(rng.randint(0, 4))).replace('"', "")
    lanes = rng.choice(("[]", "[vl-single-image]", "[asr-offline, vl-video]", "[3]"))
    front = f'---\nrepo: sglang\npr: 1\ntitle: "{title}"\nlanes: {lanes}\nthread: read\n---\n\n# T\n'
    parts = [front]
    for name in rng.sample(SECTIONS, rng.randint(2, len(SECTIONS))):
        parts.append(f"\n## {name}\n\n")
        if name == "Key code excerpts":
            parts.append("### `pkg/mod.py` `@@ -1,2 +1,3 @@`\n\n```diff\n+x\n...\n TODO\n```\n")
        parts.extend(_line(rng) + "\n" for _ in range(rng.randint(0, 14)))
    return "".join(parts)


LOCKS = [
    {"files": [{"path": "src/pkg/mod.py", "symbols": ["load_model", "Loader"]}, {"path": "docs/a.md"}]},
    {"files": [{"path": "other/x.py", "old_path": "pkg/mod.py", "symbols": []}]},
    {"files": [{"path": "z/y.py", "symbols": ["ab"]}]},
    {"files": [{"path": "src/pkg/mod.py", "symbols": [1]}]},  # malformed from here on: the error is the finding
    {"files": [{"path": "src/pkg/mod.py"}, {"old_path": "a/b.py"}]},
    {"files": [{"path": "src/pkg/mod.py", "old_path": 3}]},
    {"files": "src/pkg/mod.py"},
    {"files": [{"path": "src/pkg/mod.py", "symbols": None}]},
]


class Ctx:
    lanes = {"vl-single-image": {}, "asr-offline": {}}

    def __init__(self, lock):
        self.lock = lock

    def rel(self, path):
        return str(path)

    def card_lock(self, card):
        return self.lock


def _run(func, ctx, card):
    try:
        return list(func(ctx, card))
    except Exception as exc:  # noqa: BLE001 - a rule's error is what `check` reports for it
        return f"{type(exc).__name__}: {exc}"


# The rules as they were, for comparison.

def _old_prose(sec) -> str:
    out, fenced = [], False
    for _, t in sec.body:
        if is_fence(t):
            fenced = not fenced
            continue
        if not fenced and not t.startswith("#"):
            out.append(t)
    text = "\n".join(out)
    return (cards_module._COMMENT.sub(" ", text) if "<!--" in text else text).strip()


def old_p001(ctx, card):
    if not _PLACEHOLDER_FAST.search(card.text.lower()):
        return
    fenced, prose = False, []
    for number, line in enumerate(card.text.split("\n"), start=1):
        if is_fence(line):
            fenced = not fenced
            continue
        if not fenced:
            prose.append((number, line))
    if not _PLACEHOLDER.found("\n".join(line for _, line in prose)):
        return
    for number, line in prose:
        m = _PLACEHOLDER.pattern.search(line)
        if m:
            yield Finding(ctx.rel(card.path), number, m.start() + 1, "P001",
                          f"placeholder left in card: {m.group(0).strip()!r}")


def _content_words(text):
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]


def old_p002(ctx, card):
    sec = card.sections.get("Motivation")
    if sec is None or card.meta is None:
        return
    title_words = set(_content_words(str(card.meta.get("title", ""))))
    if len({w for w in _content_words(_old_prose(sec)) if w not in title_words}) < 12:
        yield Finding(ctx.rel(card.path), sec.line, 1, "P002", "motivation restates the title; say why the PR existed")


def old_p003(ctx, card):
    for name, minimum in MIN_WORDS.items():
        sec = card.sections.get(name)
        if sec is None or not sec.text:
            continue
        words = len(_WORD.findall(_CODE_SPAN.sub(" x ", _old_prose(sec))))
        if words < minimum:
            yield Finding(ctx.rel(card.path), sec.line, 1, "P003", f"'{name}' has {words} words (min {minimum})")


def old_p004(ctx, card):
    sec = card.sections.get("Key implementation")
    lock = ctx.card_lock(card)
    if sec is None or lock is None or not sec.text:
        return
    vocab = phrases._diff_vocabulary(lock)
    text = sec.text.lower()
    tokens = set(re.findall(r"[a-z0-9_./-]+", text))
    if not (tokens & vocab or any(v in text for v in vocab if "/" in v)):
        yield Finding(ctx.rel(card.path), sec.line, 1, "P004",
                      "implementation names nothing from the diff (no touched file or symbol)")


def old_p005(ctx, card):
    sec = card.sections.get("Validation")
    if sec is None or not sec.text:
        return
    text = sec.text
    lanes = set(ctx.lanes) | set((card.meta or {}).get("lanes") or [])
    if all(isinstance(l, str) for l in lanes):
        if _any_lane(frozenset(lanes)).search(text):
            return
    elif any(re.search(rf"(?<![\w-]){re.escape(l)}(?![\w-])", text) for l in lanes):
        return
    if _TEST_REF.search(text) or _CMD.found(text):
        return
    yield Finding(ctx.rel(card.path), sec.line, 1, "P005", "validation names no lane, test or command")


def old_unsupported_predictions(prose):
    out = []
    for piece in SENTENCE_END.split(prose):
        sentence = " ".join(piece.split())
        if _PREDICTION.found(sentence) and not (_NUMBER.found(sentence) or _SAYS_UNMEASURED.found(sentence)
                                                or _RECORD.found(sentence)):
            out.append(sentence)
    return out


@pytest.fixture(scope="module")
def generated():
    rng = random.Random(20260807)
    return [parse_card(Path(f"references/cards/sglang/{i}.md"), _card_text(rng)) for i in range(2500)]


@pytest.mark.parametrize("code, old", [("P001", old_p001), ("P002", old_p002), ("P003", old_p003),
                                       ("P004", old_p004), ("P005", old_p005)])
def test_prose_rules_answer_as_before(generated, code, old):
    found = 0
    for i, card in enumerate(generated):
        ctx = Ctx(LOCKS[i % len(LOCKS)])
        want = _run(old, ctx, card)
        assert _run(RULES[code].func, ctx, card) == want, card.text
        found += bool(want)
    assert 100 < found < len(generated) - 100  # both outcomes, many times


@pytest.mark.parametrize("code, module, shortcut", [("P008", phrases, "_no_stock_phrase"),
                                                    ("P010", thread, "_no_thread_status")])
def test_shortcut_rules_answer_as_without_their_shortcut(generated, monkeypatch, code, module, shortcut):
    taken = Counter(getattr(module, shortcut)(card) for card in generated)
    assert taken[True] > 300 and taken[False] > 300
    quick = [_run(RULES[code].func, Ctx(None), card) for card in generated]
    monkeypatch.setattr(module, shortcut, lambda card: False)
    plain = [_run(RULES[code].func, Ctx(None), card) for card in generated]
    assert quick == plain
    assert sum(map(bool, plain)) > 100


def test_predictions_answer_as_before(generated):
    texts = [sec.prose() for card in generated for name, sec in card.sections.items() if name in MIN_WORDS]
    rng = random.Random(5)
    texts += [" ".join(rng.choice(PHRASES) for _ in range(rng.randint(1, 12))) for _ in range(5000)]
    taken = Counter(predictions._may_predict(t) for t in texts)
    assert taken[True] > 1000 and taken[False] > 1000
    found = 0
    for text in texts:
        want = old_unsupported_predictions(text)
        assert predictions.unsupported_predictions(text) == want, text
        found += bool(want)
    assert found > 300


def test_section_prose_and_bodies_equal_their_lines(generated):
    for card in generated:
        for name, sec in card.sections.items():
            assert sec.prose() == _old_prose(sec)
            assert card.body_text(name).strip() == sec.text
        lines = [t for name in thread._JUDGED if name in card.sections for _, t in card.sections[name].body]
        assert card.bodies_text(thread._JUDGED) == "\n".join(lines)
        assert card.bodies_lower(thread._JUDGED) == "\n".join(lines).lower()
        assert card.text_lower == card.text.lower()
    assert card.body_text("No such section") is None


def _strings(alphabet: str, count: int = 20000, longest: int = 16, seed: int = 11):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(count)]


def test_unfenced_and_elision_equal_the_line_loop_and_the_regex():
    for text in _strings("`~ \n\t.a\u00a0\r") + ["", "\n", "```", "a\n```\n", "```\nb\n```\nc", "  ~~~x\n...\n"]:
        fenced, kept = False, []
        for line in text.split("\n"):
            if is_fence(line):
                fenced = not fenced
            elif not fenced:
                kept.append(line)
        assert phrases._unfenced(text) == "\n".join(kept), repr(text)
        assert phrases._elision_line(text) == bool(phrases._FAST_ELISION.search(text)), repr(text)


def test_word_count_pattern_equals_counting_words():
    rng = random.Random(3)
    texts = _strings("ab_1 `.\n", longest=40) + [" ".join(rng.choice(PHRASES) for _ in range(30)) for _ in range(3000)]
    for text in texts:
        words = len(_WORD.findall(_CODE_SPAN.sub(" x ", text)))
        for n in (1, 2, 3, 15, 25):
            assert bool(phrases._AT_LEAST.get(n, re.compile(
                rf"(?:(?:{phrases._NOT_A_WORD})*{phrases._A_WORD}){{{n}}}")).match(text)) == (words >= n), (text, n)
