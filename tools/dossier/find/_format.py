"""The text form of `dossier find` results: files to open first, then each ranked document."""

from __future__ import annotations


def format_text(found: dict) -> str:
    if not found["results"]:
        return f"Nothing matches {found['query']!r}; try other words for the symptom (a file, a flag, a model)."
    lines = ["Files to open first:"]
    for i, f in enumerate(found["top_files"][:5], 1):
        lines.append(f"  {i}. {f['path']}" + (f"  [{f['repo']}]" if f["repo"] != "sglang" else ""))
    lines.append("")
    for i, r in enumerate(found["results"], 1):
        lines.append(f"{i:>2}. {r['kind']:<5} {r['id']}")
        lines.append(f"      {r.get('symptom') or r.get('title')}")
        if r["files"]:
            syms = r.get("symbols", {})
            shown = [f + (f" ({', '.join(syms[f][:3])})" if syms.get(f) else "") for f in r["files"][:3]]
            lines.append("      open:  " + "; ".join(shown))
        if r["cards"]:
            lines.append("      cards: " + ", ".join(r["cards"][:6]))
        if r["lanes"]:
            lines.append("      lanes: " + ", ".join(r["lanes"]))
        if r.get("today") and r["today"]["state"] != "live":
            t = r["today"]
            by = f"; superseded by {', '.join(t['superseded_by'])}" if t["superseded_by"] else ""
            lines.append(f"      today: {t['state']} at the pinned SHA{by}")
        if r.get("measured"):
            m = r["measured"]
            lines.append(f"      measured: {m['speedup']} on {m['device']} ({m['measured']}, playbook/repros)")
    return "\n".join(lines)
