"""A run refuses a spec whose gold replay fails: the checks ``evalctl validate`` makes
(``engine.spec.gold_replay.gold_problems``: the expected-DB hash, gold calls that fail, such as an
authentication with a last name the DB does not hold, the gold's own signals; not validate's write
audit), made on the scenarios a run selected before any session starts, from the one gold replay
per scenario the run makes anyway. Such a spec's verdicts would mean
nothing: its replay-side sessions follow a gold path the spec itself does not reach.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.core.model import Scenario
from engine.spec.gold_replay import gold_problems
from engine.util.errors import UsageError

#: Scenarios named in the refusal line before ``and N more``.
SHOWN = 5


def gold_mismatches(scenarios: Iterable[Scenario]) -> list[tuple[str, str]]:
    """``(scenario name, why)`` per scenario with a gold trace whose replay fails, in order;
    ``why`` is the first problem ``gold_problems`` names. Scenarios without a gold trace are not
    checked."""
    out: list[tuple[str, str]] = []
    for scenario in scenarios:
        problems = gold_problems(scenario)
        if problems:
            out.append((scenario.name, problems[0]))
    return out


def refuse_gold_mismatch(scenarios: Iterable[Scenario]) -> None:
    """Raise UsageError (exit 2, one line) naming the scenarios whose gold replay fails, with the
    first one's reason and the way out (``--allow-gold-mismatch``); nothing when all pass."""
    refuse_mismatches(gold_mismatches(scenarios))


def refuse_mismatches(bad: list[tuple[str, str]]) -> None:
    """:func:`refuse_gold_mismatch` for the ``(scenario name, why)`` pairs ``bad`` (found by
    :func:`gold_mismatches`, or kept by the run's scenario index, ``engine.spec.index``)."""
    if not bad:
        return
    names = ", ".join(name for name, _ in bad[:SHOWN])
    more = f" and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
    raise UsageError(
        f"the gold replay fails in {len(bad)} scenario(s): {names}{more} (first: {bad[0][1]}); "
        "`evalctl validate` lists why; --allow-gold-mismatch runs them anyway"
    )
