"""Strict readers for the JSON bodies of the records: a missing key, an unknown key or a value of
the wrong type is a :class:`RecordError` naming the key, never a default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class RecordError(ValueError):
    """A JSON body is not the record it should be: says which key and why."""


def get(body: Mapping[str, Any], key: str, *types: type | None) -> Any:
    """``body[key]``, checked against ``types`` (None allows null; bool is never an int)."""
    if key not in body:
        raise RecordError(f"no {key}")
    value = body[key]
    if value is None and None in types:
        return value
    kinds = tuple(t for t in types if t is not None)
    if isinstance(value, bool) and bool not in kinds:
        raise RecordError(f"{key}: {value!r} is not {' or '.join(t.__name__ for t in kinds)}")
    if not isinstance(value, kinds):
        raise RecordError(f"{key}: {type(value).__name__} is not {' or '.join(t.__name__ for t in kinds)}")
    return value


def strings(body: Mapping[str, Any], key: str) -> tuple[str, ...]:
    items = get(body, key, list)
    if not all(isinstance(s, str) for s in items):
        raise RecordError(f"{key}: not a list of strings")
    return tuple(items)


def objects(body: Mapping[str, Any], key: str) -> tuple[dict[str, Any], ...]:
    items = get(body, key, list)
    if not all(isinstance(v, dict) for v in items):
        raise RecordError(f"{key}: not a list of objects")
    return tuple(items)


def exact_keys(
    body: Mapping[str, Any], required: tuple[str, ...], what: str, optional: tuple[str, ...] = ()
) -> None:
    """Raise RecordError when ``body`` lacks a required key or has one not in either tuple."""
    missing = [k for k in required if k not in body]
    if missing:
        raise RecordError(f"{what}: no {', '.join(missing)}")
    unknown = [k for k in body if k not in required and k not in optional]
    if unknown:
        raise RecordError(f"{what}: unknown key(s) {', '.join(unknown)}")


def schema_version(body: Mapping[str, Any], family: str, current: int, unversioned: int | None) -> int:
    """The version ``N`` of a record body's ``"schema": "evalctl.<family>/N"`` (1..``current``).

    A body without ``schema`` is ``unversioned`` (the version written before the record carried
    one; None: a ``schema`` is required). Raises RecordError for another schema string, a version
    of a newer evalctl or one never written."""
    name = f"evalctl.{family}"
    if "schema" not in body:
        if unversioned is None:
            raise RecordError(f"not an evalctl {family} record: no schema")
        return unversioned
    schema = body["schema"]
    prefix, _, number = schema.partition("/") if isinstance(schema, str) else ("", "", "")
    if prefix != name or not number.isdigit() or number.startswith("0"):
        raise RecordError(f"not an evalctl {family} record: schema {schema!r} is not {name}/N")
    version = int(number)
    if version > current:
        raise RecordError(
            f"schema {schema} is of a newer evalctl (this one reads {name}/1 to /{current}); upgrade evalctl"
        )
    return version
