"""A throwaway knowledge base with one card, and `mkdocs build --strict` of a site (tests/test_site.py, test_browser.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from dossier.config import load_config
from dossier.fetch import lock_from_diff

ROOT = Path(__file__).resolve().parents[1]
SITE_FILES = ("mkdocs.yml", "docs", "docs_hooks")

DIFF = """\
diff --git a/python/sglang/srt/models/qwen2_5_vl.py b/python/sglang/srt/models/qwen2_5_vl.py
--- a/python/sglang/srt/models/qwen2_5_vl.py
+++ b/python/sglang/srt/models/qwen2_5_vl.py
@@ -10,3 +10,6 @@ class Qwen2_5_VisionTransformer:
     def forward(self, x):
-        return self.blocks(x)
+        return fused_window_attention(self.blocks, x)
+
+def fused_window_attention(blocks, x):
+    return blocks(x)
 
"""

CARD = """\
---
repo: sglang
pr: 101
title: "Fuse window attention in the Qwen2.5-VL vision tower"
state: merged
merged: 2026-01-02
url: https://github.com/sgl-project/sglang/pull/101
stats: {files: 1, additions: 4, deletions: 1}
families: [qwen2.5-vl]
kind: perf
symptoms: [slow-vit]
lanes: [vl-single-image]
---

# Fuse window attention in the Qwen2.5-VL vision tower

## Motivation

The vision tower spent most of its prefill time in per-window attention calls.

## Key implementation

`Qwen2_5_VisionTransformer.forward` now calls `fused_window_attention` (after #99, itself #101); see [the playbook](../../playbook.md),
[a sibling card](101.md) and [a missing file](../../nowhere.md).

## Key code excerpts

### `python/sglang/srt/models/qwen2_5_vl.py` `@@ -10,3 +10,6 @@`

```
-        return self.blocks(x)
+        return fused_window_attention(self.blocks, x)
+def fused_window_attention(blocks, x):
```

## Reviewed files

### Runtime

- `python/sglang/srt/models/qwen2_5_vl.py`

## Validation

Run the `vl-single-image` lane and compare time to first token.
"""

PLAYBOOK = {"entries": [{
    "id": "slow-vit", "symptom": "Image requests have a slow first token on Qwen2.5-VL",
    "sublane": "vision-encoder", "cards": ["sglang/101"], "lanes": ["vl-single-image"],
    "knobs": ["--mm-attention-backend fa3"], "measure": ["TTFT"],
}]}


def make_site_kb(root: Path) -> Path:
    """A knowledge base with one card, its lock, one playbook entry, and the site config."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "dossier.toml", root / "dossier.toml")
    (root / "playbook").mkdir(exist_ok=True)
    shutil.copy(ROOT / "playbook" / "lanes.yaml", root / "playbook" / "lanes.yaml")
    for name in SITE_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, root / name)
    config = load_config(root)
    lock_from_diff(config, "sglang", 101, DIFF.encode(), "Fuse window attention in the Qwen2.5-VL vision tower",
                   "merged", "2026-01-02")
    card = config.card_path("sglang", 101)
    card.parent.mkdir(parents=True)
    card.write_text(CARD, encoding="utf-8")
    (root / "playbook" / "symptoms.yaml").write_text(yaml.safe_dump(PLAYBOOK), encoding="utf-8")
    return root


def build_site(root: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
                          cwd=root, capture_output=True, text=True, env=env, timeout=300)


def add_broken_cards(root: Path) -> None:
    """Cards 7 (no frontmatter, a dead link) and 8 (unparsable YAML): each still gets a page."""
    cards = root / "references" / "cards" / "sglang"
    (cards / "7.md").write_text("# no frontmatter\n\nSee [x](../../missing.md).\n", encoding="utf-8")
    (cards / "8.md").write_text("---\nrepo: [unclosed\n---\n\n# broken yaml\n", encoding="utf-8")
