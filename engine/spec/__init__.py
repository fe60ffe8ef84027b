"""Spec folders: loading and validating domain, tool-table and scenario YAML into frozen Scenarios, and
the gold replay that checks them.
"""
