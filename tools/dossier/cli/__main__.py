"""`python -m dossier.cli`: the same as the `dossier` console script (scripts/bench.py runs it so)."""

from . import run

run()
