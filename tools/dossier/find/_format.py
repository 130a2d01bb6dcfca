"""The text form of `dossier find` results: files to open first, then each ranked document."""

from __future__ import annotations


def format_text(found: dict) -> str:
    if not found["results"]:
        return f"Nothing matches {found['query']!r}; try other words for the symptom (a file, a flag, a model)."
    lines = ["Files to open first:"]
    for i, f in enumerate(found["top_files"][:5], 1):
        was = f"  (was {f['was']}; now this)" if f.get("was") else ""
        lines.append(f"  {i}. {f['path']}" + (f"  [{f['repo']}]" if f["repo"] != "sglang" else "") + was)
    lines.append("")
    for i, r in enumerate(found["results"], 1):
        lines.append(f"{i:>2}. {r['kind']:<5} {r['id']}")
        lines.append(f"      {r.get('symptom') or r.get('title')}")
        if r["files"]:
            syms = r.get("symbols", {})
            was = r.get("was", {})
            shown = [(f"was {was[f]}; now " if f in was else "") + f + (f" ({', '.join(syms[f][:3])})" if syms.get(f) else "")
                     for f in r["files"][:3]]
            lines.append("      open:  " + "; ".join(shown))
        if r["cards"]:
            lines.append("      cards: " + ", ".join(r["cards"][:6]))
        if r["lanes"]:
            lines.append("      lanes: " + ", ".join(r["lanes"]))
        t = r.get("today")
        if t and (t["state"] != "live" or not t.get("release", "").endswith("present")):
            by = f"; superseded by {', '.join(t['superseded_by'])}" if t["superseded_by"] else ""
            rel = f"; {t['release']}" if t.get("release") else ""
            lines.append(f"      today: at the pin: {t.get('summary') or t['state'] + by}{rel}")
        if r.get("measured"):
            m = r["measured"]
            lines.append(f"      measured: {m['speedup']} on {m['device']} ({m['measured']}, {m.get('runs', 1)} run(s), "
                         "playbook/repros)")
            if m.get("modelled"):
                lines.append(f"      modelled (computed, not timed): {', '.join(m['modelled'])}")
            if m.get("noisy"):
                lines.append(f"      noisy (speedup moved >20% across runs): {', '.join(m['noisy'])}")
    return "\n".join(lines)
