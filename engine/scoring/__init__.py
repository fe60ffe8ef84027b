"""Scoring: the registered success signals (the six built in), the composite verdict, summaries."""
