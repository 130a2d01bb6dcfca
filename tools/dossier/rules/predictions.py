"""Predictions carry their evidence (P009): a Validation sentence that forecasts an effect cites a number.

"TTFT p50 should drop", "roughly double the throughput", "expect a speedup": a reader takes
these as facts. Each such sentence either carries the measured number it rests on (a
thread's benchmark with its unit, a record under references/measurements/) or says that
the effect is not measured.
"""

from __future__ import annotations

import re

from ..cards import SENTENCE_END
from .base import Caseless, Finding, rule

_CHANGE = (r"(?:drop(?! out)|fall(?! back)|go down|decrease|decline|shrink|halve|rise|go up|increase|grow|improve|double"
           r"|speed up|slow down)")
# The alternatives of _PREDICTION, each opening at a word boundary.
_SHOULD_CHANGE = r"should\s+(?:\w+\s+){0,3}?" + _CHANGE + r"\w*"
_SHOULD_COMPARE = (r"should\s+(?:be|get|come out|stay|run|finish)\s+(?:\w+\s+){0,2}?(?:faster|slower|lower|higher|smaller"
                   r"|larger|shorter|longer|cheaper|better|worse)\b")
_MULTIPLE = r"(?:roughly|about|around|nearly|almost)\s+(?:double|twice|halve|half|triple)\b"
_EXPECT = r"expect(?:ed|s)?\s+(?:a|an|the)?\s*(?:\w+\s+)?(?:drop|gain|speed-?up|improvement|increase|decrease|reduction|win)\b"
_WILL = r"will\s+(?:be\s+)?(?:faster|slower|lower|higher)\b"
_PREDICTION = Caseless("|".join(rf"\b{a}" for a in (_SHOULD_CHANGE, _SHOULD_COMPARE, _MULTIPLE, _EXPECT, _WILL)))
# A measured number: digits with a unit of time, rate, size or ratio.
_NUMBER = Caseless(r"\d(?:[\d,.]*\d)?\s*(?:%|x\b|×|ms\b|µs\b|us\b|s\b|seconds?\b|req/s|tok/s|tokens/s|qps\b|QPS\b"
                     r"|GB\b|GiB\b|MB\b|MiB\b|KB\b|samples/s|fps\b|TFLOP)")
_SAYS_UNMEASURED = Caseless(r"\b(?:not measured|unmeasured|no (?:measured )?number|not been measured|nobody measured"
                              r"|no (?:benchmark|measurement)s?\b|not benchmarked|untimed)")
_RECORD = Caseless(r"references/measurements/|Measured on H200|measured table")


def _loose(alternative: str) -> re.Pattern:
    """An alternative of _PREDICTION for lower-cased prose as it stands: no leading \\b (so
    the regex engine scans for its first word), each space any run of whitespace."""
    return re.compile(alternative.lower().replace(" ", r"\s+"))


_LOOSE = tuple(map(_loose, (_SHOULD_CHANGE, _SHOULD_COMPARE, _EXPECT, _WILL)))
_LOOSE_MULTIPLE = _loose(_MULTIPLE)  # opens with no one word: asked only when a multiple is there
_MULTIPLES = ("double", "twice", "half", "halve", "triple")


def _may_predict(prose: str) -> bool:
    """False only where no sentence of `prose` matches _PREDICTION.

    On ASCII prose a sentence is matched lower-cased, as its words joined by single spaces
    and cut after a `.`, `!` or `?` (so a lookahead at its end sees the same character in
    the prose): where it matches, the loose alternatives match in the lower-cased prose.
    """
    if not prose.isascii():
        return True
    low = prose.lower()
    return (any(rx.search(low) for rx in _LOOSE)
            or (any(w in low for w in _MULTIPLES) and _LOOSE_MULTIPLE.search(low) is not None))


def unsupported_predictions(prose: str) -> list[str]:
    """The sentences of `prose` that predict an effect with no number and no 'not measured'."""
    out = []
    if not _may_predict(prose):
        return out  # most Validation sections: no sentence to split
    for piece in SENTENCE_END.split(prose):
        sentence = " ".join(piece.split())
        if not _PREDICTION.found(sentence):
            continue
        if _NUMBER.found(sentence) or _SAYS_UNMEASURED.found(sentence) or _RECORD.found(sentence):
            continue
        out.append(sentence)
    return out


@rule("P009", "prediction-without-evidence")
def prediction_without_evidence(ctx, card):
    """A Validation sentence predicts an effect without a measured number or a "not measured".

    Write the number the prediction rests on, with its unit and where it was measured (the
    thread's benchmark and hardware, or a record under `references/measurements/`), or say
    plainly that the effect is not measured. "TTFT p50 should drop" alone is a guess.
    """
    section = card.sections.get("Validation")
    if section is None:
        return
    prose = section.prose()
    for sentence in unsupported_predictions(prose):
        first = sentence.split()[0] if sentence.split() else ""
        line = next((n for n, t in section.body if first and first in t and sentence[:30].split()[-1] in t),
                    section.line)
        yield Finding(ctx.rel(card.path), line, 1, "P009",
                      f"prediction without a measured number or 'not measured': \"{sentence[:90]}\"")
