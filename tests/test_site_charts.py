"""The site's charts (matplotlib at build time) and its card navigation in bands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs_hooks"))


def _record(**over) -> dict:
    rec = json.loads((ROOT / "references/measurements/sglang/16366.json").read_text())
    rec.update(over)
    return rec


def test_a_record_is_charted_with_its_spread_and_peak_memory():
    pytest.importorskip("matplotlib")
    from dossier.site.charts import chart_path, record_svg

    svg = record_svg(_record())
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for text in ("time ratio, with p10-p90 spread", "peak memory", "32 frames 1280x704", "before", "after"):
        assert text in svg, text  # svg.fonttype none: labels stay text
    assert record_svg(_record()) == svg  # the same record draws the same bytes: builds are reproducible
    no_memory = _record(cases=[{k: v for k, v in c.items() if not k.startswith("peak")} for c in _record()["cases"]])
    assert "peak memory" not in record_svg(no_memory)
    assert record_svg(_record(cases=[{"name": "x"}])) is None
    assert chart_path("seed:qwen3-asr") == "charts/seed-qwen3-asr.svg" and chart_path("sglang#1") == "charts/sglang-1.svg"


def test_without_matplotlib_there_is_no_chart(monkeypatch):
    from dossier.site import charts

    monkeypatch.setattr(charts, "available", lambda: False)
    assert charts.record_svg(_record()) is None


def test_cards_navigation_comes_in_bands():
    import dossier_site

    pages = {f"cards/sglang/{n}.md": "" for n in range(1, 101)} | {"cards/index.md": "", "cards/sglang-omni/5.md": ""}
    nav = dossier_site._nav(pages)
    cards = next(item["Cards"] for item in nav if "Cards" in item)
    sglang = next(item["sglang"] for item in cards if isinstance(item, dict) and "sglang" in item)
    assert [list(band) for band in sglang] == [["#100-#61"], ["#60-#21"], ["#20-#1"]]
    assert all(len(list(band.values())[0]) <= dossier_site.CARDS_PER_BAND for band in sglang)
    assert {"sglang-omni": ["cards/sglang-omni/5.md"]} in cards  # a small repo stays one list
