"""The fast paths `dossier check` takes must answer exactly what the slow ones did."""

from __future__ import annotations

import random
import re

import pytest

from dossier import _prose
from dossier.cards import FENCE, is_fence
from dossier.rules.base import Caseless
from dossier.rules.phrases import _PLACEHOLDER_FAST, _fast_placeholder


def _strings(alphabet: str, count: int = 20000, longest: int = 14, seed: int = 7):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(count)]


def test_fence_test_equals_the_fence_regex():
    lines = ["```", "  ```python", "~~~", "\t~~~ x", "`` `", "x```", "\u00a0```", "\u2003~~~", "```\r", "~~", ""]
    lines += _strings(" \t`~ax\u00a0\r")
    for line in lines:
        assert is_fence(line) == bool(FENCE.match(line)), repr(line)


def test_shape_words_equal_blanking_every_sentence():
    def slow(text):
        return _prose._BLANKABLE.sub(" x ", text).lower().split()

    samples = ["Ends here.", "Ends here. Next", "path a/b.py ok", "see foo_ bar", "v1.2 and 3x", "e.g. this", "a.-b",
               "`code` span", "#12 done", "\u0663 arabic digit", "x./ y", "trailing _"]
    for text in samples + _strings("ab_./-`1 #\t.\u00e9\u0663x"):
        assert _prose._shape_words(text) == slow(text), repr(text)


@pytest.mark.parametrize("source", [r"\bshould\s+(?:\w+\s+){0,3}?drop\w*", r"(?<![a-z])npu|ascend", r"TODO|<fill[^>]*>",
                                    r"\d\s*(?:ms\b|GiB\b|%)"])
def test_caseless_finds_what_the_pattern_finds(source):
    pattern, fast = re.compile(source, re.IGNORECASE), Caseless(source)
    texts = ["It should DROP", "Ascend NPU", "todo: x", "<FILL in>", "12 MS", "3 gib", "ſhould drop", "\u212a"]
    texts += _strings("shouldrpaNPUcend TODO<>fil12mgib%\u017f\u212a")
    for text in texts:
        slow, quick = pattern.search(text), fast.search(text)
        assert fast.found(text) == (slow is not None), repr(text)
        assert (quick.group(0) if quick else None) == (slow.group(0) if slow else None), repr(text)


def test_caseless_refuses_what_lower_casing_would_change():
    with pytest.raises(ValueError):
        Caseless(r"\S+")


def test_placeholder_first_test_equals_its_regex():
    texts = ["todo", "a\n...\nb", "  ...  ", "x...y", "<!-- dossier: fill", "<!--dossier:", "<!-- other", "fill me later",
             "fill in later", "fill it later", "<fill", "lorem ipsum", "write me", "tbd", "xxx"]
    for text in texts + _strings("todbx.\n <!-fil:ers"):
        assert _fast_placeholder(text) == bool(_PLACEHOLDER_FAST.search(text)), repr(text)


def test_near_copies_pick_the_first_card_that_shares_half():
    shared = {f"s{i}" for i in range(6)}
    sections = {
        "sglang/1": {"Motivation": shared | {"a1", "a2"}},
        "sglang/2": {"Motivation": shared | {"b1", "b2", "b3", "b4", "b5", "b6", "b7"}},
        "sglang/3": {"Motivation": {"s0", "c1", "c2", "c3"}},  # one shared shingle: never a copy
        "sglang/4": {"Motivation": shared},
    }
    found = _prose.near_copies(sections)
    assert found[("sglang/1", "Motivation")] == "sglang/2"
    assert found[("sglang/4", "Motivation")] == "sglang/1"
    assert ("sglang/3", "Motivation") not in found
