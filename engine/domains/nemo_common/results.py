"""Tool-result helpers shared by the NeMo domain handlers (the handler contract's two shapes)."""

from __future__ import annotations

import copy
import math
from typing import Any


def ok(**fields: Any) -> dict[str, Any]:
    """``{"status": "success", **fields}``, with every field deep-copied so a result never hands
    out a live DB object."""
    return {"status": "success", **{k: copy.deepcopy(v) for k, v in fields.items()}}


def error(kind: str, message: str) -> dict[str, Any]:
    """``{"status": "error", "error_type": kind, "message": message}``."""
    return {"status": "error", "error_type": kind, "message": message}


def number(value: Any) -> float | None:
    """``value`` as a finite float: an int or float (not a bool), or a numeric string such as
    ``"9.99"``; None for anything else (``"abc"``, ``True``, NaN, infinity)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return result if math.isfinite(result) else None


def text(value: Any) -> str:
    """``value`` stripped when it is a string, else ``""`` (blank or missing text is refused by
    the handlers)."""
    return value.strip() if isinstance(value, str) else ""
