"""How a result without a verdict is worded for a reader: who failed (its ``error_cause.source``,
an :class:`~engine.core.records.common.ErrorSource` value) and what helps. Every place that words
an ``error`` verdict (the run summary, ``diff``, ``report``, the HTML report, JUnit, ``load``)
uses these, so a caller simulator that broke its instructions is never called infrastructure and
is never told that a resume fixes it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from engine.core.records.common import ErrorCause, ErrorSource
from engine.core.records.summary import FailedResult

#: Who failed, per source: the caller simulator, the judge, infrastructure (a model endpoint or
#: the transport between sides), or evalctl itself. Never the agent under test.
ORIGIN: dict[str, str] = {
    ErrorSource.USER_SIMULATOR: "the caller simulator",
    ErrorSource.JUDGE: "the judge",
    ErrorSource.AGENT_MODEL: "infrastructure (the agent's model endpoint)",
    ErrorSource.TRANSPORT: "infrastructure (the transport)",
    ErrorSource.ENGINE: "the engine itself (an engine error)",
}

#: What helps, per source.
HINT: dict[str, str] = {
    ErrorSource.USER_SIMULATOR: (
        "fix or change the caller model or prompt (--user / --user-args); "
        "a resume only runs the same caller again"
    ),
    ErrorSource.JUDGE: "fix the judge endpoint or model, then `evalctl rescore` the run",
    ErrorSource.AGENT_MODEL: "resume the run (--resume) once the endpoint answers",
    ErrorSource.TRANSPORT: "resume the run (--resume) once the sides can be reached",
    ErrorSource.ENGINE: "resume the run (--resume); report the error if it comes back",
}

#: Short names for counts: ``caller simulator 2, infrastructure 1``.
SHORT: dict[str, str] = {
    ErrorSource.USER_SIMULATOR: "caller simulator",
    ErrorSource.JUDGE: "judge",
    ErrorSource.AGENT_MODEL: "infrastructure",
    ErrorSource.TRANSPORT: "infrastructure",
    ErrorSource.ENGINE: "engine",
}


def origin(source: str | None) -> str:
    """Who failed, in words, for an ``ErrorSource`` value; ``"an unknown source"`` for None or a
    value this version does not know."""
    return ORIGIN.get(source or "", "an unknown source")


def hint(source: str | None) -> str:
    """What helps for an ``ErrorSource`` value (a resume for an unknown one)."""
    return HINT.get(source or "", "resume the run (--resume)")


def short(source: str | None) -> str:
    """The one- or two-word name of a source (``caller simulator``, ``infrastructure``, ...)."""
    return SHORT.get(source or "", "unknown")


def cause_text(cause: ErrorCause) -> str:
    """One error cause for a reader: ``the caller simulator failed (user_simulator): MESSAGE``."""
    return f"{origin(cause.source)} failed ({cause.source}): {cause.message}"


def sources_text(sources: Iterable[str | None]) -> str:
    """Who failed among several error results, by count: ``the caller simulator failed`` when all
    share one source, else ``caller simulator 2, infrastructure 1`` (most first); ``""`` for none."""
    listed = list(sources)
    counts = Counter(short(s) for s in listed)
    if len(counts) > 1:
        return ", ".join(f"{name} {n}" for name, n in counts.most_common())
    if not counts:
        return ""
    return f"{'infrastructure' if 'infrastructure' in counts else origin(listed[0])} failed"


def hints_text(sources: Iterable[str | None]) -> str:
    """The hints that fit these sources, each once, joined by ``; `` (``""`` for none)."""
    return "; ".join(dict.fromkeys(hint(s) for s in sources))


def error_sources(failed: Iterable[FailedResult]) -> list[str]:
    """The ``error_cause.source`` of each result without a verdict among a summary's ``failed``."""
    return [f.error_cause.source for f in failed if f.error_cause is not None]


def errors_line(count: int, failed: Iterable[FailedResult]) -> str:
    """``N result(s) without a verdict (the caller simulator failed)``: the count and who failed."""
    who = sources_text(error_sources(failed))
    return f"{count} result(s) without a verdict ({who or 'no verdict'}; not the agent's failure)"
