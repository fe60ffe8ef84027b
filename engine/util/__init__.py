"""Small helpers every layer may use: errors, atomic file writes, bounded text, safe paths and YAML,
the template sandbox, canonical JSON. Imports nothing else of the engine.
"""
