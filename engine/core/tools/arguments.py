"""Tool-call arguments: parse, coerce like pydantic's lax mode, validate with jsonschema, report.

The upstream tools validate with pydantic v2 in lax mode: ``"1"`` is accepted for an integer,
numbers may come as strings, booleans as ``"true"``/``"no"``/``1``, strings are never coerced,
enums are case-sensitive and unknown arguments are ignored. :class:`ArgumentChecker` mirrors that
on top of the tool's JSON Schema (merged with the per-field :class:`FieldRule` constraints) and
turns the first failure into eva's ``{status: "error", error_type, message}``.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from engine.core.tools.context import error
from engine.core.tools.fastcheck import compile_object

_TRUE = frozenset({"true", "t", "yes", "y", "on", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "off", "0"})
_TYPE_MESSAGES = {
    "string": "Input should be a valid string",
    "integer": "Input should be a valid integer",
    "number": "Input should be a valid number",
    "boolean": "Input should be a valid boolean",
    "array": "Input should be a valid list",
    "object": "Input should be a valid dictionary",
}


@dataclass(frozen=True)
class FieldRule:
    """How one argument is checked and how a bad value is reported (a domain plugin's
    ``field_rules``; eva_airline's mirror eva 0.1.3's models).

    ``constraints`` are JSON Schema keywords merged into the tool's parameter schema for
    validation (a keyword the tool table already sets wins); ``error_type`` is the result's
    ``error_type`` (None: ``invalid_parameter``); ``description`` / ``examples`` give the
    "must be ..." part of the message, used only when the tool requires the field (eva's optional
    fields lose their description); otherwise the validator's own message is shown. ``upper``
    upper-cases a valid string value before the handler sees it (and so in the action record);
    ``ignore_case`` says the handler compares the value without regard to case (a last name), so
    ``evalctl diff`` treats ``'rodriguez'`` and ``'Rodriguez'`` as the same call.
    """

    error_type: str | None = None
    description: str | None = None
    examples: tuple[str, ...] = ()
    constraints: Mapping[str, Any] = field(default_factory=dict)
    upper: bool = False
    ignore_case: bool = False


def parse_arguments(
    raw: str | Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(arguments, None)`` or ``(None, error result)`` for a model's raw arguments.

    ``None`` and ``""`` mean no arguments; a string must be a JSON object.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
    if not isinstance(raw, str):
        return None, error(
            "invalid_arguments", f"Tool arguments must be a JSON object, got {type(raw).__name__}"
        )
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        return None, error("invalid_arguments", f"Tool arguments are not valid JSON: {json_problem(exc)}")
    except _NonFinite as exc:
        return None, error("invalid_arguments", f"Tool arguments hold a non-finite number: {exc}")
    except ValueError:  # Python's int conversion limit: no JSON DB or reply needs such a number
        return None, error(
            "invalid_arguments", f"Tool arguments hold an integer of more than {_INT_DIGITS} digits"
        )
    except RecursionError:
        return None, error("invalid_arguments", "Tool arguments are nested too deeply")
    if not isinstance(value, dict):
        return None, error(
            "invalid_arguments", f"Tool arguments must be a JSON object, got {type(value).__name__}"
        )
    if _SURROGATE_ESCAPE.search(raw) and not _is_text(value):
        return None, error(
            "invalid_arguments", "Tool arguments hold a lone UTF-16 surrogate escape (e.g. \\ud800)"
        )
    return value, None


#: What Python's JSON decoder says, in words a model (and a person reading a diff) can act on.
_JSON_PROBLEMS = {
    "Unterminated string starting at": "a string that starts at character {at} is never closed",
    "Expecting value": "a value is missing at character {at}",
    "Extra data": "there is more text after the JSON object, from character {at}",
    "Expecting property name enclosed in double quotes": "a key in double quotes is expected at "
    "character {at}",
    "Expecting ',' delimiter": "a ',' is expected at character {at}",
    "Expecting ':' delimiter": "a ':' is expected at character {at}",
    "Invalid control character at": "a raw control character (a newline, a tab) is inside a string "
    "at character {at}",
}


def json_problem(exc: json.JSONDecodeError) -> str:
    """One sentence for a JSON decoding error: what is wrong and where (1-based character of the
    text, and its length), e.g. ``a string that starts at character 31 is never closed (text of 40
    characters)``, not the decoder's ``Unterminated string starting at at position 30``."""
    at = exc.pos + 1
    template = _JSON_PROBLEMS.get(exc.msg)
    what = template.format(at=at) if template else f"{exc.msg.removesuffix(' at').lower()} at character {at}"
    return f"{what} (text of {len(exc.doc)} characters)"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

#: The most digits Python turns into an int (``sys.get_int_max_str_digits()``, 4300 by default).
_INT_DIGITS = sys.get_int_max_str_digits() or 4300


class _NonFinite(ValueError):
    """A number of a call's JSON arguments that is not finite (docs/argument_rules.md)."""


def _no_constant(name: str) -> float:
    """``NaN``, ``Infinity`` and ``-Infinity``: Python's json accepts them, JSON does not."""
    raise _NonFinite(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    """A JSON float; one beyond the float range (``1e400``, which Python reads as infinity) is
    refused."""
    number = float(text)
    if not math.isfinite(number):
        raise _NonFinite(f"{shown(text, 40)} is beyond the float range")
    return number


def _is_text(value: Any) -> bool:
    """False when a string in ``value`` holds a lone surrogate: it cannot be encoded as UTF-8, so
    it could not be echoed to the model, stored in the DB or written to the results."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(value: Any, limit: int = 100) -> str:
    """``str(value)`` cut to ``limit`` characters (with the full length noted), for messages that
    echo a model's input: a 10 MB argument must not come back as a 10 MB error."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def _non_finite(value: Any) -> bool:
    """True when a float anywhere in ``value`` (lists and objects included) is NaN or infinite."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(_non_finite(v) for v in value)
    if isinstance(value, Mapping):
        return any(_non_finite(v) for v in value.values())
    return False


def _types(schema: Mapping[str, Any]) -> tuple[str, ...]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return (declared,)
    return tuple(declared or ())


_ASCII_SPACE = " \t\n\r\f\v"
_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")


def lax_int(text: str) -> int | str:
    """An integer from text as pydantic's lax mode reads it (docs/argument_rules.md): ASCII
    whitespace around it, a sign, ASCII digits with single underscores between them, and a
    fraction of zeros only (``"1.00"`` is 1; ``"1."``, ``"1e3"``, ``"١٢"`` and ``"0x10"`` are not).
    Returns ``text`` unchanged when it is no integer (the schema check then reports it)."""
    core = text.strip(_ASCII_SPACE)
    if not _INT_TEXT.fullmatch(core):
        return text
    return int(core.split(".")[0].replace("_", ""))


def _plain_float(text: str) -> float | None:
    """A float from text with no whitespace and no underscores (ASCII only), else None."""
    if not text.isascii() or "_" in text or any(ch in _ASCII_SPACE for ch in text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def lax_float(text: str) -> float | str:
    """A number from text as pydantic's lax mode reads it (pydantic-core 2.x float-from-str):
    first the text without surrounding ASCII whitespace, in plain float syntax (exponents, ``.5``,
    ``5.``, no underscores); failing that, the untouched text with every underscore removed, when
    it neither starts nor ends with one and holds no two in a row (so ``"1_000.5"`` and even
    ``"0_."`` are numbers, ``" 1_0 "`` and ``"1.5_"`` are not). Deliberate divergence: ``inf`` /
    ``nan`` / ``1e999`` stay text and fail the check, where pydantic gives a non-finite float that
    no JSON DB can hold. Returns ``text`` when it is no number."""
    number = _plain_float(text.strip(_ASCII_SPACE))
    strippable = "_" in text and "__" not in text and not text.startswith("_") and not text.endswith("_")
    if number is None and strippable:
        number = _plain_float(text.replace("_", ""))
    if number is None or not math.isfinite(number):
        return text
    return number


_STRICT_END = re.compile(r"(?<!\\)\\Z")


def strict_end(pattern: str) -> str:
    """``pattern`` with an unescaped ``$`` made ``\\Z``: Python's ``$`` also matches before a final
    newline, so ``^PAX\\d+$`` accepted ``"PAX001\\n"``; pydantic's (Rust) ``$`` does not."""
    return re.sub(r"(?<!\\)\$", r"\\Z", pattern)


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    """Lax-mode conversion of one value towards its schema type; unconvertible values pass through.

    Recurses into arrays (each item by ``items``) and objects (each declared property by
    ``properties``; keys the schema does not declare are kept as they are), so
    ``{"items": [{"unit_price": "9.99"}]}`` becomes ``9.99`` at any depth. The depth is bounded by
    the schema's own nesting."""
    types = _types(schema)
    if value is None or not types:
        return value
    if "integer" in types and (isinstance(value, bool) or not isinstance(value, int)):
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**63:
            return int(value)  # pydantic converts a whole float inside the 64-bit range only
        if isinstance(value, str):
            return lax_int(value)
    elif "number" in types and not isinstance(value, float):
        if isinstance(value, int):  # bool included, as pydantic's lax mode
            return float(value)
        if isinstance(value, str):
            return lax_float(value)
    elif "boolean" in types and not isinstance(value, bool):
        if isinstance(value, str) and value.lower() in _TRUE | _FALSE:  # no strip: " false" is refused
            return value.lower() in _TRUE
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
    elif "array" in types and isinstance(value, list | tuple):
        items = schema.get("items")
        return [_coerce(v, items) if isinstance(items, Mapping) else v for v in value]
    elif "object" in types and isinstance(value, Mapping):
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return value
        return {k: _coerce(v, props[k]) if isinstance(props.get(k), Mapping) else v for k, v in value.items()}
    return value


def _pydantic_message(err: ValidationError) -> str:
    """The message pydantic would give for this jsonschema failure (best effort)."""
    # A validation error always carries these (the stubs also allow jsonschema's unset sentinel).
    kind: Any = err.validator
    expected: Any = err.validator_value
    instance: Any = err.instance
    if kind == "type":
        wanted = expected if isinstance(expected, str) else next(iter(expected), "")
        text = _TYPE_MESSAGES.get(wanted, err.message)
        if isinstance(instance, str) and wanted == "integer":
            text += ", unable to parse string as an integer"
        elif isinstance(instance, str) and wanted == "number":
            text += ", unable to parse string as a number"
        elif isinstance(instance, str | int | float) and wanted == "boolean":
            text += ", unable to interpret input"
        elif isinstance(instance, float) and wanted == "integer":
            text += ", got a number with a fractional part"
        return text
    if kind == "enum":
        quoted = [f"'{v}'" for v in expected]
        listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"
        return f"Input should be {listed}"
    if kind == "pattern":  # shown as declared: strict_end's \Z was a $
        declared = _STRICT_END.sub("$", expected)
        return f"String should match pattern '{declared}'"
    if kind == "format":
        return f"Input should be a valid {expected}" + (" (YYYY-MM-DD)" if expected == "date" else "")
    bounds = {
        "minimum": "greater than or equal to",
        "exclusiveMinimum": "greater than",
        "maximum": "less than or equal to",
        "exclusiveMaximum": "less than",
    }
    if kind in bounds:
        return f"Input should be {bounds[kind]} {expected}"
    return err.message


def _merge_constraints(target: dict[str, Any], constraints: Mapping[str, Any]) -> None:
    """Add ``constraints`` to a property schema; keywords it already sets win (nested dicts merge)."""
    for key, value in constraints.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge_constraints(target[key], value)
        else:
            target.setdefault(key, copy.deepcopy(value))


def _integer_float_message(value: float) -> str:
    if not value.is_integer():
        return "Input should be a valid integer, got a number with a fractional part"
    return "Unable to parse input as an integer, too large"


def _strict_patterns(schema: Any) -> None:
    """Every ``pattern`` in a schema (nested ones too) through :func:`strict_end`, in place."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                schema[key] = strict_end(value)
            else:
                _strict_patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            _strict_patterns(item)


class ArgumentChecker:
    """Validates one tool's arguments: ``check(args) -> (clean args, None) | (None, error)``.

    ``parameters`` is the tool's JSON Schema (object); ``rules`` the per-field rules. Unknown
    arguments are dropped; errors are ordered by the schema's property order, and the first one on
    a field with an ``error_type`` wins, else the first one gives ``invalid_parameter``.
    """

    def __init__(self, parameters: Mapping[str, Any], rules: Mapping[str, FieldRule]):
        schema = copy.deepcopy(dict(parameters)) or {"type": "object", "properties": {}}
        properties = schema.setdefault("properties", {})
        for name, prop in properties.items():
            rule = rules.get(name)
            if rule is not None:
                _merge_constraints(prop, rule.constraints)
        schema.pop("additionalProperties", None)
        _strict_patterns(schema)
        self.properties: dict[str, Any] = properties
        self.required: frozenset[str] = frozenset(schema.get("required", ()))
        self.order: dict[str, int] = {name: i for i, name in enumerate(properties)}
        self.rules = rules
        Draft202012Validator.check_schema(schema)
        # `format` is checked (a `format: date` argument refuses "sometime next spring"); formats
        # jsonschema can check without extra packages: date, email, ipv4, ipv6, uuid, regex
        self.validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        # a quick yes for valid arguments (None: the schema needs the full validator every time)
        self.quick_yes = compile_object(schema)
        self.upper = tuple(n for n, r in rules.items() if r.upper)
        self.text_only = frozenset(n for n, p in properties.items() if _types(p) == ("string",))

    def _clean(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Known arguments coerced (a string for a string-only field is never coerced)."""
        props, text_only = self.properties, self.text_only
        return {
            k: v if k in text_only and type(v) is str else _coerce(v, props[k])
            for k, v in args.items()
            if k in props and not (v is None and k not in self.required)
        }

    def _accepted(self, clean: dict[str, Any]) -> dict[str, Any]:
        for name in self.upper:
            if isinstance(clean.get(name), str):
                clean[name] = clean[name].upper()
        return clean

    def _number_failures(
        self, args: Mapping[str, Any], clean: dict[str, Any]
    ) -> list[tuple[int, str, Any, str]]:
        failures: list[tuple[int, str, Any, str]] = [
            (self.order.get(k, len(self.order)), k, args.get(k), "Input should be a finite number")
            for k, v in clean.items()
            if _non_finite(v)  # NaN/Infinity (JSON extensions) must never reach the DB
        ]
        failures += [  # JSON Schema counts 1e20 as an integer; pydantic refuses it beyond 64 bits
            (
                self.order.get(k, len(self.order)),
                k,
                args.get(k),
                _integer_float_message(v),
            )
            for k, v in clean.items()
            if isinstance(v, float) and "integer" in _types(self.properties[k])
        ]
        return failures

    def check(self, args: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        clean = self._clean(args)
        # only text: no number can be non-finite or fractional
        texts = all(type(v) is str for v in clean.values())
        failures = [] if texts else self._number_failures(args, clean)
        if not failures and self.quick_yes is not None and self.quick_yes(clean):
            return self._accepted(clean), None  # valid: the full validator would find nothing
        for err in self.validator.iter_errors(clean):
            if err.validator == "required":
                for name in err.validator_value:
                    if name not in clean:
                        failures.append(
                            (self.order.get(name, len(self.order)), name, dict(args), "Field required")
                        )
                continue
            name = str(err.path[0]) if err.path else "parameter"
            raw = args.get(name) if len(err.path) == 1 else err.instance
            detail = _pydantic_message(err)
            if len(err.path) > 1:  # inside an array or object: say where (items[0].unit_price)
                inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in list(err.path)[1:])
                detail += f" (at {name}{inner})"
            failures.append((self.order.get(name, len(self.order)), name, raw, detail))
        if not failures:
            return self._accepted(clean), None
        failures.sort(key=lambda f: f[0])
        for _, name, raw, detail in failures:
            rule = self.rules.get(name)
            if rule is None or rule.error_type is None:
                continue
            message = f"Invalid {name} '{shown(raw)}'"
            if rule.description and name in self.required:
                message += f": must be {rule.description}"
                if rule.examples:
                    message += f" (e.g. {', '.join(rule.examples)})"
            else:
                message += f": {detail}"
            return None, error(rule.error_type, message)
        _, name, _, detail = failures[0]
        return None, error("invalid_parameter", f"Invalid or missing parameter '{name}': {detail}")
