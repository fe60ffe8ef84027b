"""Checking ``set_apn_settings``' argument the way tau2's pydantic ``APNSettings(**dict)`` does.

tau2 builds its APN record from whatever object the model sends; pydantic (2.12, the version
tau2 17e07b1 pins) either converts the values or raises a ValidationError, whose text becomes the
tool's error. This module reproduces that for the cases a model can produce from JSON: unknown
keys, a bad ``apn_name``, and booleans, strings and integers in pydantic's lax mode. Long input
values are shown whole (pydantic shortens very long ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.domains.tau2_telecom.common import ToolError
from engine.domains.tau2_telecom.device import DEFAULT_APN

_URL = "https://errors.pydantic.dev/2.12/v/"
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}
_KIND = {
    "apn_name": "enum", "reset_at_reboot": "bool", "mms_apn": "str?", "mmsc_url": "str?",
    "mms_proxy": "str?", "mms_port": "int?",
}  # fmt: skip


class _Bad(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    if isinstance(value, float) and value in (0.0, 1.0):
        return bool(value)
    if isinstance(value, str):
        word = value.lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise _Bad("bool_parsing", "Input should be a valid boolean, unable to interpret input")
    if isinstance(value, int):
        raise _Bad("bool_parsing", "Input should be a valid boolean, unable to interpret input")
    raise _Bad("bool_type", "Input should be a valid boolean")


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise _Bad("int_from_float", "Input should be a valid integer, got a number with a fractional part")
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise _Bad(
                "int_parsing", "Input should be a valid integer, unable to parse string as an integer"
            ) from None
    raise _Bad("int_type", "Input should be a valid integer")


def _convert(kind: str, value: Any) -> Any:
    if kind.endswith("?") and value is None:
        return None
    if kind == "enum":
        if isinstance(value, str) and value in ("internet", "broken"):
            return value
        raise _Bad("enum", "Input should be 'internet' or 'broken'")
    if kind == "bool":
        return _bool(value)
    if kind == "int?":
        return _int(value)
    if isinstance(value, str):
        return value
    raise _Bad("string_type", "Input should be a valid string")


def _line(field: str, bad: _Bad, value: Any) -> str:
    text = repr(value)
    if len(text) > 50:  # pydantic shortens a long input to its first 25 and last 24 characters
        text = f"{text[:25]}...{text[-24:]}"
    shown = f"input_value={text}, input_type={type(value).__name__}"
    more = f"For further information visit {_URL}{bad.kind}"
    return f"{field}\n  {bad.message} [type={bad.kind}, {shown}]\n    {more}"


def build_apn(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A full APN record from ``settings`` (absent fields take tau2's defaults).

    Raises ToolError ``validation_error`` with pydantic's ValidationError text when a value does
    not convert or a key is not an APN field.
    """
    record = dict(DEFAULT_APN)
    problems: list[str] = []
    for field, kind in _KIND.items():
        if field in settings:
            try:
                record[field] = _convert(kind, settings[field])
            except _Bad as bad:
                problems.append(_line(field, bad, settings[field]))
    for key, value in settings.items():
        if key not in _KIND:
            problems.append(_line(str(key), _Bad("extra_forbidden", "Extra inputs are not permitted"), value))
    if problems:
        count = len(problems)
        head = f"{count} validation error{'s' if count > 1 else ''} for APNSettings"
        raise ToolError("validation_error", "\n".join([head, *problems]))
    return record
