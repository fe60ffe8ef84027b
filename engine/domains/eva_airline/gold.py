"""eva_airline gold traces (eva 2.1.0 ``ground_truth.expected_trace.trace``): the ``eva_trace``
format is the engine's ``events`` format with the caller's identity as placeholders, resolved per
language from the record (README of the 2.1.0 data): ``<FIRST_NAME>``, ``<LAST_NAME>`` take
``culture_overrides[lang]``; ``<FIRST_NAME_ROMANIZED>``, ``<LAST_NAME_ROMANIZED>`` take
``romanized_culture_overrides[lang]`` (falling back to ``culture_overrides[lang]``) lower-cased;
``<PHONE>`` takes ``culture_overrides[lang].phone``; ``<COMPANION_FIRST_NAME>`` the companion's first
name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.core.gold import GoldTrace, events_trace

_PLACEHOLDER = re.compile(r"<([A-Z_]+)>")


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


def localise(value: Any, record: Mapping[str, Any], language: str) -> Any:
    """The plugin's ``localise``: ``value`` (a record, an initial or expected DB of eva 2.1.0) with
    its placeholders resolved for ``language`` from ``record``, as eva 2.1.0 resolves a record's
    goal, persona and scenario DB before a session (``eva.utils.culture``); ``value`` itself when
    ``record`` has no culture values (eva 0.1.3's records: names written out)."""
    if not record.get("culture_overrides"):
        return value
    return resolve_placeholders(value, record, language)


def _spoken_names(raw: Any, record: Mapping[str, Any], language: str) -> Any:
    """eva 2.1.0's gold utterances name the English caller (``Last name Rodriguez.``): for another
    language, the English first and last names said in them become that culture's."""
    cultures = record.get("culture_overrides") or {}
    english, other = cultures.get("en") or {}, cultures.get(language) or {}
    pairs = [(english.get(k), other.get(k)) for k in ("first_name", "last_name")]
    swaps = {a: b for a, b in pairs if isinstance(a, str) and isinstance(b, str) and a and a != b}
    if language == "en" or not swaps or not isinstance(raw, list):
        return raw
    word = re.compile(r"\b(" + "|".join(re.escape(a) for a in swaps) + r")\b")
    out = []
    for event in raw:
        if isinstance(event, Mapping) and isinstance(event.get("utterance"), str):
            event = {**event, "utterance": word.sub(lambda m: swaps[m.group(1)], event["utterance"])}
        out.append(event)
    return out


def eva_trace(raw: Any, record: Mapping[str, Any], language: str = "en") -> GoldTrace:
    """The ``eva_trace`` adapter: placeholders resolved for ``language``, then the events read.

    Raises ValueError when the record has person values for other languages only (the trace would
    keep ``<LAST_NAME>`` and the like), TypeError for a trace that is not a list of events.
    """
    known = record.get("culture_overrides") or {}
    if known and language not in known:
        have = ", ".join(sorted(known))
        raise ValueError(f"language {language!r} has no person values in the gold dataset ({have})")
    resolved = _spoken_names(resolve_placeholders(raw, record, language), record, language)
    trace = events_trace(resolved, record, language)
    return GoldTrace(trace.steps, "eva_trace")
