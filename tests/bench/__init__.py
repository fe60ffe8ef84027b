"""`make bench`: benchmarks that print figures and ratios (never asserted in unit tests)."""
