"""Stored sessions and their scores: result folders, scoring stage, summaries, provenance, diff,
compare, merge, rescore, resume.
"""
