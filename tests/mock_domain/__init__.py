"""A tiny mock domain (spec dir + its own data root) and helpers for the scoring tests."""
