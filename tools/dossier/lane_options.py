"""Each lane script's command line as its own argparse parser defines it (options, choices).

Read in one subprocess that imports every lane script without running it and builds its
parser with the lanes' shared `_runner.build_parser`, so the options a card or a playbook
entry passes are checked against the lane as it is today. Cached on disk by the content of
the lane folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .cache import DiskCache, content_key

LANES_DIR = "playbook/lanes"
_TIMEOUT = 60

# Imports each lane (run_name other than __main__, so main() does not run), finds the Lane
# subclass the script defines, and dumps its parser's options.
_PROBE = r"""
import argparse, json, os, runpy, sys
folder = sys.argv[1]
sys.path.insert(0, folder)
import _lane, _runner
out = {}
for name in sorted(os.listdir(folder)):
    if not name.endswith(".py") or name.startswith("_"):
        continue
    try:
        ns = runpy.run_path(os.path.join(folder, name), run_name="lane_probe")
        lanes = [v for v in ns.values() if isinstance(v, type) and issubclass(v, _lane.Lane)
                 and v is not _lane.Lane and v.__module__ == "lane_probe"]
        # the most derived class the script defines is the one its main() runs
        lane = [c for c in lanes if not any(o is not c and issubclass(o, c) for o in lanes)][-1]()
        parser = _runner.build_parser(lane)
    except Exception as exc:  # a broken lane is L011's business; say why and go on
        out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    opts = {}
    for action in parser._actions:
        for flag in action.option_strings:
            opts[flag] = {"takes_value": action.nargs != 0,
                          "nargs": action.nargs if isinstance(action.nargs, int) else None,
                          "choices": [str(c) for c in action.choices] if action.choices else None}
    out[name] = {"options": opts}
print(json.dumps(out))
"""


def lane_options(root: Path) -> dict[str, dict]:
    """`{script file name: {"options": {flag: {takes_value, nargs, choices}}}}` (or `{"error": ...}`)."""
    folder = Path(root) / LANES_DIR
    files = sorted(folder.glob("*.py")) if folder.is_dir() else []
    if not files:
        return {}
    cache = DiskCache(root, "lane-options")
    key = content_key(sys.version, *files)
    hit = cache.get(key)
    if hit is not None:
        return hit
    try:
        res = subprocess.run([sys.executable, "-c", _PROBE, str(folder)], capture_output=True, text=True,
                             timeout=_TIMEOUT, cwd=root, stdin=subprocess.DEVNULL)
        found = json.loads(res.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        return {}
    cache.put(key, found)
    cache.save(keep={key})
    return found
