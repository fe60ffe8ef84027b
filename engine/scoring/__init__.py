"""Scoring: the six signals of the scoring model, the composite verdict, summaries."""
