"""One exception type for user-facing failures: the CLI prints one line, exits 2."""


class DossierError(Exception):
    """A problem with the user's input or environment, reported as one line."""
