"""evalctl engine: specs, rendering, tool table, conversation runtime, scoring, artifacts, diff."""

__version__ = "0.1.0"
