"""Tokens and cost per role and per scenario, from the usage every ``metrics.json`` records.

Each session records ``usage`` by role (``agent``, ``user``, ``judge``): the model as the side
named it, prompt and completion tokens as the server counted them, and model requests. This
module sums them over a run (every complete result on disk, so a resumed run counts each
(scenario, trial) once) and, given a price file (``--prices FILE``), prices them:

    # model -> price per million tokens (input = prompt tokens, output = completion tokens)
    gpt-4.1: {input: 2.00, output: 8.00}
    gpt-4.1-mini: {input: 0.40, output: 1.60}

A usage names its model as the side reports it: ``openai:gpt-4.1`` for the built-in OpenAI sides,
the bare model name for the judge. A price key matches the whole name, or the part after the
first ``:`` (so ``gpt-4.1`` prices ``openai:gpt-4.1``). Usage with tokens whose model has no price
is left out of the cost and reported as unpriced; usage without tokens (the replay sides) costs 0.
Costs are in the price file's currency (the docs assume US dollars).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.records.metrics import MetricsRecord
from engine.core.validation import schema_problems
from engine.util.errors import SpecError
from engine.util.untrusted import bounded_count, one_line
from engine.util.yamlload import YamlSyntaxError, load_yaml

#: Roles in the order reports show them (others follow, sorted).
ROLES = ("agent", "user", "judge")


@dataclass(frozen=True)
class Price:
    """Price per million ``input`` (prompt) and ``output`` (completion) tokens."""

    input: float
    output: float

    def of(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    """The prices of a price file by model name; ``source`` the file as given."""

    prices: Mapping[str, Price]
    source: str = ""

    def lookup(self, model: str | None) -> Price | None:
        """The price of ``model``: its whole name, else the part after the first ``:``."""
        if model is None:
            return None
        if model in self.prices:
            return self.prices[model]
        prefix, sep, bare = model.partition(":")
        return self.prices.get(bare) if sep and prefix else None


def load_prices(path: str | Path) -> PriceTable:
    """Read a price file (YAML, ``schemas/prices.schema.json``). Raises SpecError with every
    problem as ``file:LINE: $.path: message`` (unreadable file, bad YAML, a model without both
    prices, a negative or non-numeric price)."""
    try:
        doc = load_yaml(path)
    except YamlSyntaxError as err:
        raise SpecError([err.problem]) from None
    problems = schema_problems(doc, "prices")
    if problems:
        raise SpecError(problems)
    prices = {str(model): Price(float(p["input"]), float(p["output"])) for model, p in doc.data.items()}
    return PriceTable(prices, doc.file)


@dataclass
class RoleCost:
    """One role over a set of results: tokens and requests summed, the models seen (first-seen
    order), ``cost`` of the priced usage (None without a price table) and the ``unpriced`` models
    whose tokens are not in it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    models: list[str] = field(default_factory=list)
    cost: float | None = None
    unpriced: list[str] = field(default_factory=list)
    #: Requests whose tokens are unknown (``engine.core.records.common.Usage.unreported``).
    unreported: int = 0

    def tokens_text(self) -> str:
        """``PROMPT+COMPLETION``; ``unknown`` when no request's tokens were reported, and
        ``PROMPT+COMPLETION (N of M requests unknown)`` when some were not."""
        if self.unreported and self.unreported >= self.calls:
            return "unknown"
        text = f"{self.prompt_tokens}+{self.completion_tokens}"
        return text + (f" ({self.unreported} of {self.calls} requests unknown)" if self.unreported else "")

    def token_cells(self) -> tuple[str, str]:
        """The prompt and completion token counts as table cells (``1,234``): ``unknown`` when no
        request's tokens were reported; a count with ``(N of M requests unknown)`` when some were not."""
        if self.unreported and self.unreported >= self.calls:
            return "unknown", "unknown"
        note = f" ({self.unreported} of {self.calls} requests unknown)" if self.unreported else ""
        return f"{self.prompt_tokens:,}{note}", f"{self.completion_tokens:,}{note}"

    def to_json(self) -> dict[str, Any]:
        body = {
            "models": list(self.models),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "calls": self.calls,
            "cost": self.cost,
            "unpriced": list(self.unpriced),
        }
        if self.unreported:
            body["unreported"] = self.unreported
        return body


@dataclass(frozen=True)
class ScenarioCost:
    """One (scenario, trial): tokens and cost by role, and the total cost (None without prices)."""

    scenario: str
    trial: int
    roles: Mapping[str, RoleCost]
    cost: float | None
    unpriced: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "trial": self.trial,
            "cost": self.cost,
            "unpriced": list(self.unpriced),
            "roles": {role: c.to_json() for role, c in self.roles.items()},
        }


@dataclass(frozen=True)
class RunCost:
    """A run's tokens and cost per role and per (scenario, trial); ``priced`` says whether a price
    table was given (``source`` its file); ``cost`` the total of the priced usage."""

    roles: Mapping[str, RoleCost]
    scenarios: tuple[ScenarioCost, ...]
    priced: bool
    source: str
    cost: float | None
    unpriced: tuple[str, ...]

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.roles.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "prices": self.source if self.priced else None,
            "cost": self.cost,
            "unpriced": list(self.unpriced),
            "roles": {role: c.to_json() for role, c in self.roles.items()},
            "scenarios": [s.to_json() for s in self.scenarios],
        }


def _role_order(roles: Sequence[str]) -> list[str]:
    return [r for r in ROLES if r in roles] + sorted(r for r in roles if r not in ROLES)


def _add(
    acc: RoleCost, model: str | None, prompt: int, completion: int, calls: int, prices: PriceTable | None
) -> None:
    acc.prompt_tokens += prompt
    acc.completion_tokens += completion
    acc.calls += calls
    if model and model not in acc.models:
        acc.models.append(model)
    if prices is None:
        return
    acc.cost = acc.cost or 0.0
    if not prompt and not completion:
        return
    price = prices.lookup(model)
    if price is None:
        name = model or "(no model named)"
        if name not in acc.unpriced:
            acc.unpriced.append(name)
    else:
        acc.cost += price.of(prompt, completion)


def run_costs(metrics: Sequence[MetricsRecord], prices: PriceTable | None = None) -> RunCost:
    """Tokens (and with ``prices`` the cost) per role over ``metrics`` and per (scenario, trial),
    in name then trial order, the attempts a result superseded included (``superseded_usage``: a
    session a resume ran again, a verdict judged again: paid for all the same). Token counts are a
    side's numbers: each is bounded (see ``engine.util.untrusted.bounded_count``) and model names are cut
    to one line of 200 characters."""
    totals: dict[str, RoleCost] = {}
    rows: list[ScenarioCost] = []
    for m in sorted(metrics, key=lambda r: (r.scenario_name, r.trial)):
        mine: dict[str, RoleCost] = {}
        spent = [*m.usage.items(), *((e.role, e.usage) for e in m.superseded_usage)]
        order = _role_order(list(dict.fromkeys(role for role, _ in spent)))
        for role, u in sorted(spent, key=lambda pair: order.index(pair[0])):
            model = one_line(u.model, 200) if u.model else None
            counts = (
                bounded_count(u.prompt_tokens),
                bounded_count(u.completion_tokens),
                bounded_count(u.calls),
            )
            for acc in (mine.setdefault(role, RoleCost()), totals.setdefault(role, RoleCost())):
                _add(acc, model, *counts, prices)
                acc.unreported += bounded_count(u.unreported)
        unpriced = tuple(dict.fromkeys(x for c in mine.values() for x in c.unpriced))
        cost = None if prices is None else sum(c.cost or 0.0 for c in mine.values())
        rows.append(ScenarioCost(m.scenario_name, m.trial, mine, cost, unpriced))
    ordered = {role: totals[role] for role in _role_order(list(totals))}
    unpriced = tuple(dict.fromkeys(x for c in ordered.values() for x in c.unpriced))
    total = None if prices is None else sum(c.cost or 0.0 for c in ordered.values())
    return RunCost(ordered, tuple(rows), prices is not None, prices.source if prices else "", total, unpriced)


def money(value: float | None) -> str:
    """A cost as text: ``$0.0123`` (4 decimals under 1, else 2), ``n/a`` for None."""
    if value is None:
        return "n/a"
    return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"
