"""A domain spec in another language: ``evalctl run --language CODE`` picks the entry ``CODE`` of
the spec's ``languages:`` block, whose keys replace the spec's own (top-level keys, whole values:
a ``user:`` entry replaces the whole ``user`` block). The spec's own ``language`` needs no entry.

eva_airline's ``fr`` and ``fr-CA`` entries read eva 2.1.0's records and initial DBs, the way eva
2.1.0 runs those cultures; its plugin's ``localise`` resolves the names in them
(``engine.domains.eva_airline.gold``).
"""

from __future__ import annotations

from engine.util.errors import UsageError
from engine.util.yamlload import YamlDoc


def languages_of(doc: YamlDoc) -> list[str]:
    """The languages a domain spec runs in: its own ``language`` (default ``en``), then its
    ``languages:`` entries, in spec order."""
    own = str(doc.data.get("language", "en"))
    return [own, *(code for code in doc.data.get("languages") or {} if code != own)]


def in_language(doc: YamlDoc, language: str | None) -> YamlDoc:
    """``doc`` (a schema-valid domain spec) for ``language``: the ``languages[language]`` keys
    merged over it and ``language`` set, their lines pointing at the entry. ``None`` or the spec's
    own language: ``doc`` itself. Raises UsageError (one line) for a language the spec lacks."""
    own = str(doc.data.get("language", "en"))
    if language is None or language == own:
        return doc
    entries = doc.data.get("languages") or {}
    if language not in entries:
        known = ", ".join(languages_of(doc))
        raise UsageError(f"--language {language}: domain {doc.data.get('name')} runs in {known} only")
    entry = entries[language]
    data = {**doc.data, **entry, "language": language}
    lines = {p: n for p, n in doc.lines.items() if not p or p[0] not in entry}
    for path, line in doc.lines.items():  # the entry's own lines, re-rooted at the top level
        if len(path) > 2 and path[:2] == ("languages", language):
            lines[path[2:]] = line
    lines[("language",)] = doc.line(("languages", language))
    return YamlDoc(doc.file, data, lines, doc.problems)
