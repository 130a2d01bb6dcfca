"""Site pages for `dossier check`: its output formats and exit codes, and one page per rule.

Everything comes from the rule registry and the check command itself, so a new
rule or option shows up on the site with no edit here.
"""

from __future__ import annotations

import click
import yaml

from .check import format_findings
from .rules import RULES, Finding
from .rules.base import FAMILIES

_SAMPLE = [
    Finding("references/cards/sglang/16366.md", 42, 1, "G001",
            "line is not in the diff of python/sglang/srt/models/qwen2_5_vl.py"),
    Finding("references/cards/sglang/16366.md", 9, 1, "L001", "unknown lane 'vl-imge'"),
]


def _page(title: str, lines: list[str]) -> str:
    return "---\n" + yaml.safe_dump({"title": title}) + "---\n\n" + "\n".join(lines) + "\n"


def _check_help() -> str:
    from .cli import main

    command = main.commands["check"]
    with click.Context(command, info_name="dossier check") as ctx:
        return command.get_help(ctx)


def output_page() -> str:
    lines = [
        "# `dossier check`", "",
        "A linter for the knowledge base in the style of ruff: cards, evidence locks, the playbook, "
        "lanes, generated files and `SKILL.md`. It needs no network and no clone.", "",
        "```text", _check_help(), "```", "",
        "## Output formats", "",
        "### `--format text` (default)", "",
        "One finding per line, `path:line:col: CODE message`, then a count:", "",
        "```text", format_findings(_SAMPLE, "text"), "```", "",
        "### `--format json`", "",
        "A JSON list of findings with `path`, `line`, `col`, `code` and `message`:", "",
        "```json", format_findings(_SAMPLE, "json"), "```", "",
        "### `--format github`", "",
        "GitHub Actions workflow commands; each finding becomes an annotation on the changed line:", "",
        "```text", format_findings(_SAMPLE, "github"), "```", "",
        "## Exit codes", "",
        "| Code | Meaning |", "|---:|---|",
        "| 0 | Clean: no findings (or `--exit-zero`). |",
        "| 1 | Findings were reported. |",
        "| 2 | Tool error: bad input or environment, reported as one `dossier: error:` line. |", "",
        "## Choosing rules", "",
        "`--select` and `--ignore` take codes or prefixes (`G`, `P00`, `S004`), repeated or comma-separated. "
        "A card may suppress one rule in its frontmatter with a written reason of at least 15 characters:", "",
        "```yaml", "noqa:", "  P006: the shared sentence names the same upstream flag on purpose", "```", "",
        "Every rule: [rule index](rules/index.md).",
    ]
    return _page("dossier check", lines)


def rules_index() -> str:
    lines = ["# Check rules", "", f"{len(RULES)} rules. Explain one in a terminal with `dossier rule CODE`.", ""]
    for prefix, family in FAMILIES.items():
        mine = sorted((r for r in RULES.values() if r.code.startswith(prefix)), key=lambda r: r.code)
        if not mine:
            continue
        lines += [f"## {family.capitalize()} ({prefix})", "", "| Code | Name | Summary |", "|---|---|---|"]
        lines += [f"| [{r.code}]({r.code}.md) | `{r.name}` | {r.summary.replace('|', '/')} |" for r in mine]
        lines.append("")
    return _page("Check rules", lines)


def rule_page(code: str) -> str:
    r = RULES[code]
    lines = [f"# {r.code} `{r.name}`", "",
             "| Code | Name | Family | Runs |", "|---|---|---|---|",
             f"| `{r.code}` | `{r.name}` | {r.family} | once per {'card' if r.scope == 'card' else 'check'} |", "",
             f"**{r.summary}**", ""]
    if r.doc:
        lines += [r.doc, ""]
    lines += ["## Select or ignore it", "", "```bash",
              f"dossier check --select {r.code}", f"dossier check --ignore {r.code}", "```", "",
              "[All rules](index.md) · [Output formats and exit codes](../index.md)"]
    return _page(f"{r.code} {r.name}", lines)


def pages() -> dict[str, str]:
    out = {"check/index.md": output_page(), "check/rules/index.md": rules_index()}
    out.update({f"check/rules/{code}.md": rule_page(code) for code in sorted(RULES)})
    return out
