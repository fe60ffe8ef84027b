"""The value conversions tau2's pydantic models apply, done by hand.

tau2 builds some records through a model constructor, which converts values (an ``int`` field
turns ``150.0`` into ``150``, a ``float`` field turns ``163`` into ``163.0``), and assigns others to
a model attribute, which converts nothing. Handlers call these helpers exactly where tau2 goes
through a constructor, so the numbers in the DB and in the shown text have tau2's types.

:func:`validated` checks a nested argument object (a flight, passenger or payment) the way the
model constructor does, with an error text in pydantic 2's layout. No gold action exercises that
error, so its exact text is not pinned against tau2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.domains.tau2_common.results import ToolFailure

PYDANTIC_DOCS = "https://errors.pydantic.dev/2.12/v/"


def as_int(value: Any) -> Any:
    """A pydantic ``int`` field's value: a whole float becomes an int; anything else unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def as_float(value: Any) -> Any:
    """A pydantic ``float`` field's value: an int (not a bool) becomes a float."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _shown(value: Any) -> str:
    """pydantic's ``input_value`` text: the repr, cut to 25 + '...' + 24 characters when long."""
    text = repr(value)
    return text if len(text) <= 50 else f"{text[:25]}...{text[-24:]}"


def _check(kind: str, value: Any) -> tuple[Any, tuple[str, str] | None]:
    """Convert one field value; returns (value, None) or (value, (error type, error text))."""
    if kind == "str":
        return (
            (value, None)
            if isinstance(value, str)
            else (value, ("string_type", "Input should be a valid string"))
        )
    if isinstance(value, bool):
        return int(value), None
    if isinstance(value, int):
        return value, None
    if isinstance(value, float):
        if value.is_integer():
            return int(value), None
        return value, (
            "int_from_float",
            "Input should be a valid integer, got a number with a fractional part",
        )
    if isinstance(value, str):
        try:
            return int(value.strip()), None
        except ValueError:
            return value, (
                "int_parsing",
                "Input should be a valid integer, unable to parse string as an integer",
            )
    return value, ("int_type", "Input should be a valid integer")


def validated(
    model_name: str, value: Mapping[str, Any], fields: tuple[tuple[str, str], ...]
) -> dict[str, Any]:
    """The record tau2's ``Model(**value)`` builds: only the declared ``fields`` (``(name, "str" |
    "int")`` in model order), converted; undeclared keys are dropped as pydantic ignores them.

    Raises ToolFailure(``invalid_argument``) with pydantic's multi-line error text listing every
    missing or unconvertible field.
    """
    out: dict[str, Any] = {}
    errors: list[str] = []
    for name, kind in fields:
        if name not in value:
            errors.append(
                f"{name}\n  Field required [type=missing, input_value={_shown(dict(value))}, input_type=dict]"
                f"\n    For further information visit {PYDANTIC_DOCS}missing"
            )
            continue
        converted, problem = _check(kind, value[name])
        if problem is not None:
            etype, text = problem
            shown, kind_name = _shown(value[name]), type(value[name]).__name__
            errors.append(
                f"{name}\n  {text} [type={etype}, input_value={shown}, input_type={kind_name}]"
                f"\n    For further information visit {PYDANTIC_DOCS}{etype}"
            )
            continue
        out[name] = converted
    if errors:
        plural = "s" if len(errors) > 1 else ""
        raise ToolFailure(
            "invalid_argument",
            f"{len(errors)} validation error{plural} for {model_name}\n" + "\n".join(errors),
        )
    return out
