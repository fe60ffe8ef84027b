"""The data model and its services: scenarios, gold traces, records, the tool runtime and argument
rules, the wire protocol, DB hashes and diffs, the data root, prompt rendering. The plugin surface
domains build on.
"""
