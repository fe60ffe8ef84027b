"""A quick yes for tool arguments that are valid, before the full JSON Schema validator runs.

Validating every call with ``jsonschema`` costs tens of µs, most of it walking its keyword
machinery for arguments that are fine. :func:`compile_object` turns a tool's parameter schema into
a plain Python predicate that answers True only when the arguments are valid under the same JSON
Schema rules (Draft 2020-12, the subset tool tables use: ``type``, ``enum`` of strings,
``pattern``, ``minLength``/``maxLength``, the four numeric bounds, ``items``, nested
``properties``/``required``, annotations). False means "not sure": the caller runs the full
validator, which makes the error messages, so they never change. A schema using anything else
compiles to None (always the full validator).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"description", "title", "examples", "default", "$comment", "deprecated", "readOnly", "writeOnly"}
)
_KEYWORDS = frozenset(
    {
        "type", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "items", "properties", "required",
    }
)  # fmt: skip


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


def _is_integer(v: Any) -> bool:  # JSON Schema: a number with no fractional part (1.0 included)
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _type_check(declared: Any) -> Check | None:
    names = (declared,) if isinstance(declared, str) else declared
    if not isinstance(names, list | tuple) or not names or any(n not in _TYPES for n in names):
        return None
    tests = [_TYPES[n] for n in names]
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(t(v) for t in tests)


def _bound(keyword: str, limit: Any) -> Check | None:
    if not _is_number(limit):
        return None
    compare: dict[str, Check] = {
        "minimum": lambda v: v >= limit,
        "maximum": lambda v: v <= limit,
        "exclusiveMinimum": lambda v: v > limit,
        "exclusiveMaximum": lambda v: v < limit,
    }
    test = compare[keyword]
    return lambda v: not _is_number(v) or test(v)


def _length(size: int, at_least: bool) -> Check:
    if at_least:
        return lambda v: not isinstance(v, str) or len(v) >= size
    return lambda v: not isinstance(v, str) or len(v) <= size


def compile_value(schema: Any) -> Check | None:
    """A predicate that is True only for values valid under ``schema``; None when ``schema`` uses
    what this module does not decide."""
    if not isinstance(schema, Mapping) or not set(schema) <= _KEYWORDS | _ANNOTATIONS:
        return None
    tests: list[Check] = []
    if "type" in schema:
        typed = _type_check(schema["type"])
        if typed is None:
            return None
        tests.append(typed)
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or not all(type(x) is str for x in values):
            return None
        allowed = frozenset(values)
        tests.append(lambda v: isinstance(v, str) and v in allowed)
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            return None
        search = re.compile(schema["pattern"]).search
        if schema.get("type") == "string":  # the type test is first: v is a string here
            tests.append(lambda v: search(v) is not None)
        else:
            tests.append(lambda v: not isinstance(v, str) or search(v) is not None)
    for keyword, too_short in (("minLength", True), ("maxLength", False)):
        if keyword in schema:
            size = schema[keyword]
            if not isinstance(size, int) or isinstance(size, bool):
                return None
            tests.append(_length(size, at_least=too_short))
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if keyword in schema:
            bound = _bound(keyword, schema[keyword])
            if bound is None:
                return None
            tests.append(bound)
    if "items" in schema:
        item = compile_value(schema["items"])
        if item is None:
            return None
        tests.append(lambda v: not isinstance(v, list) or all(item(x) for x in v))
    if "properties" in schema or "required" in schema:
        fields = compile_fields(schema)
        if fields is None:
            return None
        tests.append(lambda v: not isinstance(v, dict) or fields(v))
    return _all_of(tests)


def _all_of(tests: list[Check]) -> Check:
    """One predicate for all ``tests`` (no generator per call: this runs on every tool call)."""
    if not tests:
        return lambda v: True
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        a, b = tests
        return lambda v: a(v) and b(v)
    if len(tests) == 3:
        a, b, c = tests
        return lambda v: a(v) and b(v) and c(v)
    return lambda v: all(t(v) for t in tests)


def compile_fields(schema: Mapping[str, Any]) -> Check | None:
    """The ``properties`` + ``required`` part of an object schema, for a dict."""
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, Mapping) or not isinstance(required, list):
        return None
    if not all(isinstance(r, str) for r in required):
        return None
    checks: dict[str, Check] = {}
    for name, sub in props.items():
        made = compile_value(sub)
        if made is None:
            return None
        checks[name] = made
    needed = frozenset(required)

    def fields(v: dict[Any, Any]) -> bool:
        if not needed <= v.keys():
            return False
        for name, value in v.items():
            check = checks.get(name)
            if check is not None and not check(value):
                return False
        return True

    return fields


def compile_object(schema: Mapping[str, Any]) -> Check | None:
    """For a tool's whole parameter schema (an object schema, ``additionalProperties`` already
    dropped): a predicate on the argument dict, or None."""
    return compile_value(schema)
