"""Text normalisation for `dossier find`: tokens, a light stemmer, stop words, synonyms.

Users describe the same problem in different words ("OOM", "memory blow up"), so
text on both sides, query and index, goes through one synonym table
(synonyms.yaml beside this module) that adds a canonical `~token` for every
variant it finds.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ..errors import DossierError
from ..yamlio import read_yaml

SYNONYMS_FILE = Path(__file__).with_name("synonyms.yaml")

STOPWORDS = frozenset(
    "a an the and or of to in on for with when is are was were be been it its this that these those my our we i "
    "you they it's as at by from into than then so but not no do does did can could should would will just very "
    "much more most some any all every each only also there here what which who how why whose about after "
    "before while even still same too".split()
)


def stem(tok: str) -> str:
    if len(tok) <= 3 or tok.isdigit():
        return tok
    if tok.endswith("ies") and len(tok) > 4:
        tok = tok[:-3] + "y"
    elif tok.endswith(("ches", "shes", "xes", "sses")):
        tok = tok[:-2]
    elif tok.endswith("s") and not tok.endswith(("ss", "us", "is")):
        tok = tok[:-1]
    if tok.endswith("ing") and len(tok) > 5:
        tok = tok[:-3]
    elif tok.endswith("ed") and len(tok) > 4:
        tok = tok[:-2]
    if tok.endswith("e") and len(tok) > 3:
        tok = tok[:-1]
    return tok


def raw_tokens(text: str) -> list[str]:
    out = []
    for word in re.findall(r"[A-Za-z0-9]+", str(text)):
        # camelCase and acronyms split ("Qwen3VLForCausal" -> qwen3 vl for causal); the whole
        # word stays too, so "ViT" still reads as "vit".
        parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+|[0-9]+", word)
        out.extend(stem(p.lower()) for p in parts)
        if len(parts) > 1:
            out.append(stem(word.lower()))
    return out


def load_synonyms(path: Path = SYNONYMS_FILE) -> dict[str, tuple[str, ...]]:
    """canonical token -> its variants, from the shipped YAML; a malformed table is one clear error."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise DossierError(f"{path}: expected a mapping of canonical token -> list of variants")
    table = {}
    for canon, variants in data.items():
        if not isinstance(canon, str) or not isinstance(variants, list) or \
                not all(isinstance(v, str) and v.strip() for v in variants):
            raise DossierError(f"{path}: {canon!r} must map to a list of non-empty strings")
        table[canon] = tuple(variants)
    return table


@lru_cache(maxsize=1)
def _phrases() -> tuple[dict[tuple[str, ...], set[str]], int]:
    table: dict[tuple[str, ...], set[str]] = {}
    for canon, variants in load_synonyms().items():
        for v in (canon, *variants):
            table.setdefault(tuple(raw_tokens(v)), set()).add(canon)
    return table, max((len(k) for k in table), default=0)


def tokenize(text: str) -> list[str]:
    """Stemmed tokens without stop words, plus a `~canon` token for every synonym matched."""
    phrases, longest = _phrases()
    raw = raw_tokens(text)
    out = [t for t in raw if t not in STOPWORDS]
    for i in range(len(raw)):
        for n in range(1, min(longest, len(raw) - i) + 1):
            canon = phrases.get(tuple(raw[i:i + n]))
            if canon:
                out.extend(f"~{c}" for c in canon)
    return out
