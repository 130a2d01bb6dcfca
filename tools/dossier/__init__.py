"""dossier: diff-grounded PR cards, evidence locks and validation lanes."""

__version__ = "0.1.0"
