"""Where evidence comes from: a local git clone (git.py) or the GitHub API (github.py).

Both feed the same lock builder in dossier.evidence, so a lock does not depend on its source.
"""
