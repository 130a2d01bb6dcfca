"""Site pages for `dossier check`: its output formats and exit codes, and one page per rule.

Everything comes from the rule registry and the check command itself, so a new
rule or option shows up on the site with no edit here. The command's `--help`
text is handed in by the caller: the site does not import the command line.
"""

from __future__ import annotations

from ..check import format_findings
from ..render import render
from ..rules import RULES, Finding
from ..rules.base import FAMILIES
from .markdown import frontmatter

# two findings that show every output format
_SAMPLE = [
    Finding("references/cards/sglang/16366.md", 42, 1, "G001",
            "line is not in the diff of python/sglang/srt/models/qwen2_5_vl.py"),
    Finding("references/cards/sglang/16366.md", 9, 1, "L001", "unknown lane 'vl-imge'"),
]


def output_page(check_help: str | None) -> str:
    samples = {fmt: format_findings(_SAMPLE, fmt) for fmt in ("text", "json", "github")}
    return render("site/check.md.j2", frontmatter=frontmatter, help=check_help, samples=samples)


def rules_index() -> str:
    families = []
    for prefix, family in FAMILIES.items():
        mine = sorted((r for r in RULES.values() if r.code.startswith(prefix)), key=lambda r: r.code)
        if mine:
            families.append((prefix, family, mine))
    return render("site/rules_index.md.j2", frontmatter=frontmatter, count=len(RULES), families=families)


def rule_page(code: str) -> str:
    return render("site/rule.md.j2", frontmatter=frontmatter, rule=RULES[code])


def pages(check_help: str | None = None) -> dict[str, str]:
    out = {"check/index.md": output_page(check_help), "check/rules/index.md": rules_index()}
    out.update({f"check/rules/{code}.md": rule_page(code) for code in sorted(RULES)})
    return out
