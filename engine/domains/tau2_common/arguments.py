"""tau2's argument rules: Python's call rules, no conversion (the plugins' ``argument_check``).

tau2 (17e07b1 and v0.2.0, ``Environment.get_response``) calls the toolkit method with the model's
arguments as keywords (``tools.use_tool(name, **arguments)``) and shows any exception as
``Error: <str(exc)>`` with the error flag set. So:

- an argument the method does not declare is refused with Python's TypeError text,
  ``AirlineTools.get_user_details() got an unexpected keyword argument 'x'`` (the first such key
  in the call's order), before anything runs;
- a required argument that is missing is refused with Python's text,
  ``RetailTools.get_order_details() missing 1 required positional argument: 'order_id'``;
- nothing is converted: ``"2"`` stays a string and ``2.0`` a float.

One deliberate divergence, documented in docs/domains/tau2_airline_retail.md: a top-level
argument whose JSON type is not the schema's (a string for an ``integer``, ``2.0`` for an
``integer``, a number for a ``string``, a list of numbers for a list of strings) is refused
before the tool runs, with ``Argument '<name>' of <Owner>.<tool>() should be <type>, not
<value>``. tau2 runs the tool with the raw value, which either raises somewhere inside (a text
that depends on how far the tool got, possibly after a partial write: ``update_reservation_baggages``
with ``nonfree_baggages="2"`` raises after appending nothing, with ``total_baggages="2"`` it stores
the string) or stores it raw. Items of a list of objects (flights, passengers, payments) are left
to the handler, which validates them as tau2's pydantic constructors do (``coerce.validated``).
``null`` for an optional argument is the argument's default, as tau2's signatures (all ``None``).
A ``$ref`` to the parameters' ``$defs`` (pydantic's enums and models) is resolved: telecom's
``set_network_mode_preference(mode=7)`` is the type refusal, where tau2 stores the int, searches
the network with it and raises (tests/domains/tau2_telecom/test_telecom_mutation_oracle.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from engine.core.model import ArgumentCheck, ToolSpec
from engine.core.tools.context import error

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _listed(names: list[str]) -> str:
    """Python's list of missing argument names: ``'a'``, ``'a' and 'b'``, ``'a', 'b', and 'c'``."""
    quoted = [f"'{n}'" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def call_problem(owner: str, tool: str, parameters: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """Python's TypeError text for ``Owner.tool(**args)`` against the signature the JSON Schema
    ``parameters`` was generated from (``properties`` in signature order, ``required`` = no
    default); None when the call binds."""
    props = parameters.get("properties") or {}
    for key in args:
        if key not in props:
            return f"{owner}.{tool}() got an unexpected keyword argument '{key}'"
    required = set(parameters.get("required") or ())
    missing = [p for p in props if p in required and p not in args]
    if not missing:
        return None
    noun = "argument" if len(missing) == 1 else "arguments"
    return f"{owner}.{tool}() missing {len(missing)} required positional {noun}: {_listed(missing)}"


def _resolved(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with a local ``$ref`` (``#/$defs/Name``, as pydantic writes an enum or a model)
    replaced by its definition; an unknown reference stays as it is (and then fits anything)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            return target
    return schema


def _is_object(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    """True when the schema is an object, or any of its ``anyOf`` branches is one (a pydantic model
    or a free dict: items left to the handler)."""
    schema = _resolved(schema, defs)
    if schema.get("type") == "object":
        return True
    return any(_is_object(s, defs) for s in schema.get("anyOf") or () if isinstance(s, Mapping))


def _fits(value: Any, schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None) -> bool:
    """True when ``value`` has the schema's JSON type without conversion (a bool is no number, a
    float no integer, a non-finite float nothing); list items are checked unless they are objects.
    ``defs`` are the parameters' ``$defs`` that a ``$ref`` names (an enum's type is its own: an
    integer is no ``NetworkModePreference``, whose type is string)."""
    defs = defs or {}
    schema = _resolved(schema, defs)
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types or [])
    if "anyOf" in schema:
        return any(_fits(value, s, defs) for s in schema["anyOf"] if isinstance(s, Mapping))
    if not names:
        return True
    for name in names:
        if name == "null" and value is None:
            return True
        kinds = _JSON_TYPES.get(name)
        if kinds is None or not isinstance(value, kinds):
            continue
        if name in ("integer", "number") and isinstance(value, bool):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue
        if name == "array":
            items = schema.get("items")
            item_schema: Mapping[str, Any] = items if isinstance(items, Mapping) else {}
            entries: list[Any] = value if isinstance(value, list) else []
            scalar = bool(item_schema) and not _is_object(item_schema, defs)
            if scalar and not all(_fits(v, item_schema, defs) for v in entries):
                continue
        return True
    return False


def _type_name(schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None) -> str:
    schema = _resolved(schema, defs or {})
    if "anyOf" in schema:  # e.g. NetworkModePreference or string: "string"
        names = [_type_name(s, defs) for s in schema["anyOf"] if isinstance(s, Mapping)]
        return " or ".join(dict.fromkeys(names))
    types = schema.get("type")
    if isinstance(types, str):
        if types == "array" and isinstance(schema.get("items"), Mapping):
            return f"a list of {_type_name(schema['items'], defs)}"
        return types
    return " or ".join(str(t) for t in types or ["any"])


def _repr(value: Any, limit: int = 100) -> str:
    """Python's repr of a value, clipped to ``limit`` characters (a model chooses what it sends)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tau2_arguments(owner: str | None, prefix: str = "Error: ") -> ArgumentCheck:
    """The argument check of a tau2 toolkit class ``owner`` (``AirlineTools``, ``RetailTools``);
    with ``owner`` None, the class the handler names as its ``tau2_owner`` attribute (telecom's
    two toolkits). A refusal is an ``invalid_arguments`` error whose message is ``prefix`` + the
    text (airline and retail keep tau2's ``Error: `` in the message, telecom adds it when shown).
    """

    def check(spec: ToolSpec, args: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        props = spec.parameters.get("properties") or {}
        required = set(spec.parameters.get("required") or ())
        given = {k: v for k, v in args.items() if not (v is None and k in props and k not in required)}
        name = owner or str(getattr(spec.run, "tau2_owner", "") or "Tools")
        problem = call_problem(name, spec.name, spec.parameters, given)
        if problem is not None:
            return None, error("invalid_arguments", prefix + problem)
        defs = spec.parameters.get("$defs") or {}
        for key, value in given.items():
            schema = props[key] if isinstance(props[key], Mapping) else {}
            if not _fits(value, schema, defs):
                kind = _type_name(schema, defs)
                text = f"Argument '{key}' of {name}.{spec.name}() should be {kind}, not {_repr(value)}"
                return None, error("invalid_arguments", prefix + text)
        return dict(given), None

    return check
