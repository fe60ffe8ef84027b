"""DB-state predicates keyed by (domain, name).  (STUB: filled by the scoring work.)

Each predicate is a plain function ``(db, **arguments) -> value``; the scorer compares the value
with the spec's ``assert_value``. Scenario specs naming an unknown predicate fail validation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PREDICATES: dict[tuple[str, str], Callable[..., Any]] = {}
