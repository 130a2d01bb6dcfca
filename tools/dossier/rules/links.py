"""Link rules (L) for cards: lanes and playbook entries a card names must exist."""

from __future__ import annotations

import bisect
import functools
import itertools
import re

from ..yamlio import line_of
from .base import Caseless, Finding, rule


@rule("L001", "card-unknown-lane")
def card_unknown_lane(ctx, card):
    """The card names a lane that `playbook/lanes.yaml` does not register."""
    meta = card.meta or {}
    for lane in meta.get("lanes") or []:
        if lane not in ctx.lanes:
            yield Finding(ctx.rel(card.path), card.key_line("lanes"), 1, "L001", f"unknown lane '{lane}'")


@rule("L002", "card-unknown-symptom")
def card_unknown_symptom(ctx, card):
    """The card names a playbook symptom id that no playbook entry has."""
    meta = card.meta or {}
    for sid in meta.get("symptoms") or []:
        if sid not in ctx.playbook_ids:
            yield Finding(ctx.rel(card.path), card.key_line("symptoms"), 1, "L002", f"unknown playbook symptom '{sid}'")


_PLAIN_REASON = re.compile(r"\s*(?:-\s+)?reason:\s+([^'\"|>\s].*)$")


@rule("L020", "trace-exclusion", scope="project")
def trace_exclusion(ctx):
    """A trace exclusion is malformed, has no reason, repeats, or excludes a PR that has a card.

    `references/trace-exclusions.yaml` lists PRs that a family glob catches but that are
    off-lane (a lint sweep, a CI rename, another model's change). Each needs repo, pr and
    a reason of at least a few words, so nothing is dropped silently. A commit that
    landed on the first-parent history with no PR number (a rebase-merged series) is
    excluded by `commit:` (its SHA, 12 hex characters or more) instead of `pr:`.
    """
    from ..trace import EXCLUSIONS

    data, problem = ctx.exclusions_doc
    if problem:
        yield Finding(EXCLUSIONS, problem[0], 1, "L020", problem[1])
        return
    if data is None:
        return
    # In a plain (unquoted) YAML scalar, " #" starts a comment: "superseded by #1126" would
    # silently end the reason at "superseded by".
    text = (ctx.root / EXCLUSIONS).read_text(encoding="utf-8", errors="replace")
    for number, raw in enumerate(text.splitlines(), start=1):
        m = _PLAIN_REASON.match(raw)
        if m and " #" in m.group(1):
            yield Finding(EXCLUSIONS, number, raw.index(" #") + 2, "L020",
                          "the reason is cut short by a YAML comment (' #'); quote it")
    if not isinstance(data, list):
        yield Finding(EXCLUSIONS, 1, 1, "L020", "exclusions must be a list of {repo, pr, reason}")
        return
    seen = set()
    for index, entry in enumerate(data):
        line = line_of(data, index=index)
        if not isinstance(entry, dict) or "repo" not in entry or ("pr" in entry) == ("commit" in entry):
            yield Finding(EXCLUSIONS, line, 1, "L020", "exclusion needs repo and one of pr or commit")
            continue
        if "commit" in entry and not re.fullmatch(r"[0-9a-f]{12,40}", str(entry["commit"])):
            yield Finding(EXCLUSIONS, line, 1, "L020", "commit must be 12 to 40 hex characters")
            continue
        key = (str(entry["repo"]), entry.get("pr", str(entry.get("commit"))[:12]))
        if len(str(entry.get("reason") or "").split()) < 3:
            yield Finding(EXCLUSIONS, line, 1, "L020", f"{key[0]}#{key[1]} needs a reason of at least three words")
        if key in seen:
            yield Finding(EXCLUSIONS, line, 1, "L020", f"{key[0]}#{key[1]} is listed twice")
        seen.add(key)
        if f"{key[0]}/{key[1]}" in ctx.card_ids:
            yield Finding(EXCLUSIONS, line, 1, "L020", f"{key[0]}#{key[1]} has a card; it cannot also be excluded")


@rule("L030", "family-glob-matches-nothing", scope="project")
def family_glob_matches_nothing(ctx):
    """A family glob in dossier.toml matches no file that a tree listing or lock knows.

    Globs drift when upstream moves files; a glob that matches nothing silently drops
    PRs from `dossier trace`. Checked only for repos that have a tree listing under
    references/trees/.
    """
    from ..config import CONFIG_NAME, glob_regex

    if ctx.card_paths is not None:
        return
    known = ctx.known_files
    trees = ctx.root / "references" / "trees"
    lines = (ctx.root / CONFIG_NAME).read_text(encoding="utf-8").split("\n")
    listings: dict[str, tuple[str, list[str] | None] | None] = {}  # repo -> see _listing (None: no tree listing)
    for fam in ctx.config.families.values():
        for repo, globs in fam.globs.items():
            if repo not in listings:
                listings[repo] = _listing(known.get(repo, ())) if (trees / f"{repo}.txt").exists() else None
            if listings[repo] is None:
                continue
            listing, sorted_lines = listings[repo]
            for g in globs:
                if sorted_lines is not None and "$" not in g:
                    found = _a_sorted_line_matches(g, sorted_lines)
                else:
                    # One multiline regex scan over the whole listing instead of a match per path.
                    found = _a_line_matches(g, glob_regex(g).pattern.lstrip("^").rstrip("$"), listing)
                if not found:
                    line = next((i for i, l in enumerate(lines, 1) if f'"{g}"' in l), 1)
                    yield Finding(CONFIG_NAME, line, 1, "L030", f"{fam.name} glob {g!r} matches no known {repo} file")


def _listing(paths) -> tuple[str, list[str] | None]:
    """(the known files, one a line; those lines, sorted, when no file name holds a line break, else None)."""
    ordered = sorted(paths)
    listing = "\n".join(ordered)
    lines = listing.split("\n")
    return listing, (lines if len(lines) == max(len(ordered), 1) else None)


def _a_sorted_line_matches(glob: str, lines: list[str]) -> bool:
    """`_a_line_matches` over sorted lines: only the lines that start with the glob's literal head can match.

    They sit together in sorted order, found by bisection; a glob without a wildcard is one
    lookup and needs no regex. Not for a glob with a `$`, whose regex L030 cuts oddly.
    """
    from ..config import glob_regex

    head = glob
    for wildcard in ("*", "?"):
        head = head.partition(wildcard)[0]
    at = bisect.bisect_left(lines, head)
    if head == glob:
        return at < len(lines) and lines[at] == glob
    regex = glob_regex(glob)  # ^...$ on one line is the multiline search's ^...$ on it
    for line in itertools.islice(lines, at, None):
        if not line.startswith(head):
            return False
        if regex.match(line):
            return True
    return False


def _a_line_matches(glob: str, pattern: str, listing: str) -> bool:
    """`re.search(f"^{pattern}$", listing, re.MULTILINE)`: does a whole line match the glob's regex?

    A glob that starts with a literal character (all of dossier.toml's do) leaves out the `^`,
    so the regex starts with that literal, which the engine scans for quickly instead of
    trying `^` at every position; a match then counts only at a line start, and the next
    is looked for from one character past it.
    """
    if glob[:1] in ("", "*", "?"):
        return re.search(f"^{pattern}$", listing, re.MULTILINE) is not None
    unanchored = re.compile(f"{pattern}$", re.MULTILINE)
    pos = 0
    while (m := unanchored.search(listing, pos)) is not None:
        if m.start() == 0 or listing[m.start() - 1] == "\n":
            return True
        pos = m.start() + 1
    return False


@rule("L009", "symptom-not-cited-back", scope="project")
def symptom_not_cited_back(ctx):
    """A card names a playbook symptom whose entry does not list the card.

    The card's `symptoms:` and the entry's `cards:` must agree, or the playbook sends
    users past the PR that changed their path. `dossier link` adds the citations.
    """
    from ..link import missing_links

    for rel, number, entry, add in missing_links(ctx):
        yield Finding(rel, number, 1, "L009", f"entry '{entry}' does not cite {', '.join(add)}; run `dossier link`")


_NEGATED = Caseless(
    r"\b(?:cannot|can't|can not|could not|couldn't|does not apply|doesn't apply|not applicable|n/a|unavailable"
    r"|did not exist|does not exist|didn't exist|doesn't exist|predates?|before (?:the )?lane"
    r"|not (?:yet )?(?:run|runnable|exist|apply|available|usable|meaningful))\b",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])|\n\s*\n|\n\s*[-*]\s+")
# The same split where the text has no "\n" (a paragraph's lines joined by spaces), so only the
# first alternative can match: led by a character class, not a look-behind, the regex engine
# skips ahead to the next . ! or ? instead of trying every position.
_SENTENCE_STOP = re.compile(r"[.!?]\s+(?=[A-Z`(])")


def _split_sentences(text: str) -> list[str]:
    """`_SENTENCE_END.split(text)`."""
    if "\n" in text:
        return _SENTENCE_END.split(text)
    out, start = [], 0
    for m in _SENTENCE_STOP.finditer(text):
        out.append(text[start:m.start() + 1])  # the stop stays with its sentence, as the look-behind leaves it
        start = m.end()
    out.append(text[start:])
    return out


def _validation_paragraphs(card) -> list[tuple[int, str]]:
    """(first line, text) of each paragraph of Validation, fences included: its lines stripped, joined by spaces."""
    sec = card.sections.get("Validation")
    if sec is None:
        return []
    out, buf, start = [], [], None
    for number, text in sec.body:
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


def _validation_sentences(card) -> list[tuple[int, str]]:
    """(line, sentence) of the Validation section's prose and commands, fences included."""
    return [(start, s) for start, para in _validation_paragraphs(card) for s in _split_sentences(para) if s.strip()]


@functools.lru_cache(maxsize=4)
def _lane_pattern(lanes) -> re.Pattern:
    names = sorted(lanes, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])") if names else re.compile(r"(?!x)x")


_NAME_CHAR = re.compile(r"[\w-]")
_NAME = re.compile(r"[\w-]+")


@functools.lru_cache(maxsize=4)
def _lane_ahead(lanes) -> re.Pattern | None:
    r"""_lane_pattern led by the names, its look-behind left to the caller; None unless every id is made of [\w-].

    When every lane id is made of [\w-] (kebab-case ids are), a match is a whole run of
    such characters, so the pattern can start with the names themselves (which the regex
    engine scans for quickly) and the look-behind be checked by hand on each match: a
    match it rejects is a run no other match can start inside.
    """
    if not lanes or not all(isinstance(lane, str) and _NAME.fullmatch(lane) for lane in lanes):
        return None
    names = sorted(lanes, key=len, reverse=True)
    return re.compile("(" + "|".join(map(re.escape, names)) + r")(?![\w-])")


def _lane_hits(ahead: re.Pattern, text: str) -> list[re.Match]:
    """The matches of `ahead` (see _lane_ahead) that its look-behind would keep."""
    return [m for m in ahead.finditer(text) if not (m.start() and _NAME_CHAR.match(text, m.start() - 1))]


@functools.lru_cache(maxsize=4)
def _lane_finder(lanes):
    """text -> the set of lanes it names, `set(_lane_pattern(lanes).findall(text))`."""
    ahead = _lane_ahead(lanes)
    if ahead is None:
        pattern = _lane_pattern(lanes)
        return lambda text: set(pattern.findall(text))

    def find(text: str) -> set[str]:
        return {m.group(1) for m in _lane_hits(ahead, text)}

    return find


def _lane_mentions(ctx, card) -> dict[str, list[tuple[int, bool]]]:
    """Lane id -> [(line, negated)] for every sentence of Validation naming it."""
    lanes = tuple(ctx.lanes)
    ahead = _lane_ahead(lanes)
    found: dict[str, list[tuple[int, bool]]] = {}
    for line, para in _validation_paragraphs(card):
        if ahead is None or "\n" in para:
            sentences = [(s, _lane_finder(lanes)(s)) for s in _split_sentences(para) if s.strip()]
        else:
            sentences = _sentences_naming(ahead, para)
        for sentence, named in sentences:
            if named:
                negated = _NEGATED.found(sentence)
                for lane in named:
                    found.setdefault(lane, []).append((line, negated))
    return found


def _sentences_naming(ahead: re.Pattern, para: str) -> list[tuple[str, set[str]]]:
    r"""(sentence, lanes it names) for the sentences of a one-line paragraph that name a lane.

    The lanes are found in the paragraph at once, then placed in the sentences
    _split_sentences cuts: a lane id, made of [\w-], never spans a sentence stop, and the
    characters around a sentence (a stop, spaces) are no [\w-] either, so a sentence
    names what the paragraph's matches inside it name.
    """
    hits = _lane_hits(ahead, para)
    if not hits:
        return []
    starts, ends = [0], []  # of each sentence, as _split_sentences cuts them
    for m in _SENTENCE_STOP.finditer(para):
        ends.append(m.start() + 1)
        starts.append(m.end())
    ends.append(len(para))
    named: dict[int, set[str]] = {}
    for m in hits:
        named.setdefault(bisect.bisect_right(starts, m.start()) - 1, set()).add(m.group(1))
    return [(para[starts[i]:ends[i]], named[i]) for i in sorted(named)]


@rule("L013", "lanes-disagree-with-validation")
def lanes_disagree_with_validation(ctx, card):
    """The card's `lanes:` and its Validation section disagree.

    Every lane in `lanes:` is named in Validation, in a sentence that runs it; a lane
    Validation only mentions as one that cannot run (it predates the code, it does not
    exist at that commit, it does not apply) does not belong in `lanes:`; and a lane
    Validation tells the reader to run is listed in `lanes:`, so the playbook and
    `dossier find` send people to it.
    """
    meta = card.meta or {}
    listed = [l for l in meta.get("lanes") or [] if isinstance(l, str)]
    if card.meta is None or "Validation" not in card.sections:
        return
    mentions = _lane_mentions(ctx, card)
    line = card.key_line("lanes")
    for lane in listed:
        seen = mentions.get(lane)
        if not seen:
            yield Finding(ctx.rel(card.path), line, 1, "L013", f"lane '{lane}' is in lanes: but Validation never names it")
        elif all(neg for _, neg in seen):
            yield Finding(ctx.rel(card.path), seen[0][0], 1, "L013",
                          f"Validation says lane '{lane}' cannot run here; drop it from lanes:")
    for lane, seen in mentions.items():
        if lane not in listed and any(not neg for _, neg in seen):
            first = next(n for n, neg in seen if not neg)
            yield Finding(ctx.rel(card.path), first, 1, "L013", f"Validation runs lane '{lane}' but lanes: does not list it")


# In inference order: "to CPU" turns up in NPU and AMD titles, so cpu is tried last.
HARDWARE = {
    "npu": Caseless(r"(?<![a-z])npu|ascend"),
    "amd": Caseless(r"\bamd\b|rocm|\bhip\b|aiter|\bmi[23]\d\dx?\b"),
    "xpu": Caseless(r"\bxpu\b"),
    "cuda": Caseless(r"blackwell|hopper|\bsm_?(?:90|100|120)\b|\b[bh][12]00\b|nvidia"),
    "cpu": Caseless(r"\bcpu\b|\bamx\b|xeon|\bintel\b"),
}


def card_hardware(ctx, card) -> list[str]:
    """The hardware a `kind: hardware` card targets: `hardware:` in frontmatter, else inferred."""
    meta = card.meta or {}
    declared = meta.get("hardware")
    if declared:
        return [declared] if isinstance(declared, str) else list(declared)
    lock = ctx.card_lock(card) or {}
    text = " ".join([str(meta.get("title", ""))] + [f["path"] for f in lock.get("files", [])])
    return [hw for hw, pat in HARDWARE.items() if pat.found(text)][:1]


@rule("L014", "hardware-validated-on-gpu")
def hardware_validated_on_gpu(ctx, card):
    """A hardware-only PR is validated on GPU lanes instead of on its own hardware.

    For `kind: hardware` (hardware from `hardware: cpu|npu|amd|xpu`, else inferred from
    the title and paths; `cuda` marks an NVIDIA-generation change, which the GPU lanes do
    exercise), Validation must say how to run the change on that hardware
    (`--device cpu`, an Ascend/NPU command, a ROCm run), and any lane in `lanes:` must be
    named in a sentence about that hardware: a GPU rerun does not exercise CPU, NPU or
    AMD code paths.
    """
    meta = card.meta or {}
    if meta.get("kind") != "hardware" or "Validation" not in card.sections:
        return
    targets = card_hardware(ctx, card)
    rel = ctx.rel(card.path)
    if not targets:
        yield Finding(rel, card.key_line("kind"), 1, "L014",
                      "kind: hardware but no hardware can be told from title or paths; add `hardware: cpu|npu|amd|xpu`")
        return
    for hw in targets:
        if hw not in HARDWARE:
            yield Finding(rel, card.key_line("hardware"), 1, "L014", f"unknown hardware '{hw}' (one of {', '.join(HARDWARE)})")
            return
    if targets == ["cuda"]:
        return  # an NVIDIA-generation PR: the GPU lanes run on its hardware
    sentences = _validation_sentences(card)
    if not any(HARDWARE[hw].found(s) for _, s in sentences for hw in targets):
        yield Finding(rel, card.sections["Validation"].line, 1, "L014",
                      f"Validation of a {'/'.join(targets)} PR never says how to run it on {'/'.join(targets)}")
    for lane in meta.get("lanes") or []:
        on_hw = any(re.search(rf"(?<![\w-]){re.escape(str(lane))}(?![\w-])", s) and HARDWARE[hw].found(s)
                    for _, s in sentences for hw in targets)
        if not on_hw:
            yield Finding(rel, card.key_line("lanes"), 1, "L014",
                          f"lane '{lane}' is a GPU rerun; a {'/'.join(targets)} PR validates on {'/'.join(targets)} "
                          "(name the lane in a sentence that runs it there, or drop it)")
