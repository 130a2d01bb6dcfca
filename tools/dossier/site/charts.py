"""Charts of a measurement record, drawn with matplotlib when the site is built (the `site` extra).

One SVG per record: after-vs-before time ratio per case, with the spread the record measured
(p10-p90 of before and after), and peak memory before and after where the record has it.
Without matplotlib the site is built without charts.
"""

from __future__ import annotations

import io
import re

SAME = 1.0


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def chart_path(subject: str) -> str:
    """Docs-relative path of a record's chart: charts/sglang-16366.svg, charts/seed-qwen3-asr.svg."""
    return "charts/" + re.sub(r"[^A-Za-z0-9.-]+", "-", subject).strip("-") + ".svg"


def _spread(case: dict) -> tuple[float, float] | None:
    """The ratio's range from the before/after spreads: slowest before over fastest after, and back."""
    b, a = case.get("before_spread_ms"), case.get("after_spread_ms")
    if not (isinstance(b, list) and isinstance(a, list) and len(b) == 2 and len(a) == 2 and min(a) > 0):
        return None
    return min(b) / max(a), max(b) / min(a)


def record_svg(record: dict) -> str | None:
    """The record's chart as SVG text, or None when it has no timed case or matplotlib is missing."""
    cases = [c for c in record.get("cases", []) if isinstance(c.get("speedup"), (int, float)) and c["speedup"] > 0]
    if not cases or not available():
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    memory = [c for c in cases if c.get("peak_mib_before") and c.get("peak_mib_after") is not None]
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": record.get("subject", "dossier"),
                         "font.size": 9})
    panels = 2 if memory else 1
    height = 0.9 + 0.38 * len(cases)
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, height), squeeze=False)
    names = [str(c.get("name", "?")) for c in cases]
    ys = list(range(len(cases)))[::-1]

    ax = axes[0][0]
    ratios = [c["speedup"] for c in cases]
    colours = ["#2e7d32" if r >= SAME else "#c62828" for r in ratios]
    ax.barh(ys, [r - SAME for r in ratios], left=SAME, color=colours, height=0.6)
    for y, case in zip(ys, cases):
        spread = _spread(case)
        if spread:
            ax.plot(spread, [y, y], color="#212121", linewidth=1.2)
            ax.plot(spread, [y, y], "|", color="#212121", markersize=8)
    ax.axvline(SAME, color="#616161", linewidth=0.8)
    wide = max(ratios + [SAME]) / min(ratios + [SAME]) > 4  # a log axis only when the ratios span that much
    if wide:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_yticks(ys, names)
    ax.set_xlabel("after vs before: right of 1x faster, left slower" + (" (log)" if wide else ""))
    ax.set_title("time ratio, with p10-p90 spread", fontsize=9)

    if memory:
        ax = axes[0][1]
        by_name = {str(c.get("name")): c for c in memory}
        before = [by_name[n]["peak_mib_before"] if n in by_name else 0 for n in names]
        after = [by_name[n]["peak_mib_after"] if n in by_name else 0 for n in names]
        ax.barh([y + 0.18 for y in ys], before, height=0.35, color="#9e9e9e", label="before")
        ax.barh([y - 0.18 for y in ys], after, height=0.35, color="#3949ab", label="after")
        ax.set_yticks(ys, [""] * len(ys))
        ax.set_xlabel("peak GPU memory (MiB)")
        ax.set_title("peak memory", fontsize=9)
        ax.legend(fontsize=8, loc="best", frameon=True)
    fig.tight_layout()
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return out.getvalue()
