"""Scoring a model's answer: word error rate and whole-word matches."""

from __future__ import annotations

import re


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER with jiwer when installed (normalised text); else a small edit distance over words."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    try:
        import jiwer

        return float(jiwer.wer(ref, hyp)) if ref else float(bool(hyp))
    except ImportError:
        r, h = ref.split(), hyp.split()
        prev = list(range(len(h) + 1))
        for i, rw in enumerate(r, 1):
            cur = [i]
            for j, hw in enumerate(h, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (rw != hw)))
            prev = cur
        return prev[-1] / max(len(r), 1)


def names(text: str, word: str) -> bool:
    """Whether `text` contains `word` as a whole word (case-insensitive)."""
    return re.search(rf"\b{re.escape(word)}\b", text.lower()) is not None
