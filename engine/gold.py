"""Gold traces: the reference conversation of a scenario, with name placeholders resolved.

eva 2.1.0 ships ``ground_truth.expected_trace.trace`` with the caller's identity as placeholders
(README of the 2.1.0 data): ``<FIRST_NAME>``, ``<LAST_NAME>`` take ``culture_overrides[lang]``;
``<FIRST_NAME_ROMANIZED>``, ``<LAST_NAME_ROMANIZED>`` take ``romanized_culture_overrides[lang]``
(falling back to ``culture_overrides[lang]``) lower-cased; ``<PHONE>`` takes
``culture_overrides[lang].phone``; ``<COMPANION_FIRST_NAME>`` the companion's first name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DEFAULT_TRACE_POINTER = "/ground_truth/expected_trace/trace"
_PLACEHOLDER = re.compile(r"<([A-Z_]+)>")


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """Follow an RFC 6901 JSON Pointer (``''`` is the whole document).

    Raises KeyError (with the pointer) when a step is missing or not indexable.
    """
    if pointer == "":
        return doc
    node = doc
    for raw in pointer.lstrip("/").split("/"):
        step = raw.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(step)] if isinstance(node, list) else node[step]
        except (KeyError, IndexError, ValueError, TypeError):
            raise KeyError(pointer) from None
    return node


def placeholder_values(record: Mapping[str, Any], language: str = "en") -> dict[str, str]:
    """Placeholder name (without brackets) -> value for ``language``; empty when the record has none."""
    plain = dict((record.get("culture_overrides") or {}).get(language) or {})
    roman = {**plain, **((record.get("romanized_culture_overrides") or {}).get(language) or {})}
    values: dict[str, str] = {}
    for key, src in (("FIRST_NAME", "first_name"), ("LAST_NAME", "last_name"), ("PHONE", "phone")):
        if isinstance(plain.get(src), str):
            values[key] = plain[src]
    for key, src in (("FIRST_NAME_ROMANIZED", "first_name"), ("LAST_NAME_ROMANIZED", "last_name")):
        if isinstance(roman.get(src), str):
            values[key] = roman[src].lower()
    companion = plain.get("companion")
    if isinstance(companion, Mapping) and isinstance(companion.get("first_name"), str):
        values["COMPANION_FIRST_NAME"] = companion["first_name"]
    return values


def _substitute(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, Mapping):
        return {k: _substitute(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_substitute(v, values) for v in value]
    return value


def resolve_placeholders(value: Any, record: Mapping[str, Any], language: str = "en") -> Any:
    """A copy of ``value`` (str, dict, list, nested) with known placeholders replaced for
    ``language`` from ``record``'s culture overrides. Unknown placeholders are left as they are."""
    return _substitute(value, placeholder_values(record, language))


def gold_trace(
    record: Mapping[str, Any], language: str = "en", pointer: str = DEFAULT_TRACE_POINTER
) -> tuple[dict[str, Any], ...]:
    """The record's gold trace events (``{event_type, ...}``), placeholders resolved for ``language``.

    Raises KeyError when the record has nothing at ``pointer``.
    """
    events = resolve_pointer(record, pointer)
    if not isinstance(events, list):
        raise KeyError(pointer)
    return tuple(resolve_placeholders(events, record, language))
