"""Typed records of what a run writes and reads back: ``metrics.json`` (:mod:`.metrics`),
``summary.json`` (:mod:`.summary`) and ``run.json`` (:mod:`.run`).

Each record is a frozen dataclass with ``to_json()`` (the file's body, keys in the order written)
and ``from_json(body)`` (strict, see :mod:`.fields`). Writers build the record and write
``to_json()``; readers parse the file through ``from_json``, never with ``.get(key, default)``.
"""
