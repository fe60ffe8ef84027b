"""The caller-fidelity check registry: what a registered check is, and the lookup by name.

A check is one function ``(FidelityInputs) -> list[Finding] | None`` registered under its name
with the :func:`fidelity_check` decorator, as signals are (``engine.core.signals``): an empty list
means the caller held, None that there was nothing to check. The built-in checks and
:func:`engine.scoring.fidelity.check_fidelity`, which runs them, live in ``engine.scoring``; an
installed package adds its own through the ``evalctl.fidelity`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.model import Scenario, SessionResult
from engine.core.records.fidelity import Finding


@dataclass(frozen=True)
class FidelityInputs:
    """What a check sees: the scenario (its ``user`` record holds the persona's facts), the
    session, and ``caller_lines`` / ``agent_lines``: the spoken turns as ``(transcript event index,
    text)`` in order (a caller turn's index in ``caller_lines`` is its ``Finding.turn``);
    ``goal_met`` the session reached the expected DB (None: the scenario has none)."""

    scenario: Scenario
    result: SessionResult
    caller_lines: tuple[tuple[int, str], ...]
    agent_lines: tuple[tuple[int, str], ...]
    goal_met: bool | None = None


FidelityFunc = Callable[[FidelityInputs], "list[Finding] | None"]


@dataclass(frozen=True)
class FidelityCheckDef:
    """A registered check: ``name`` (``lower_case``), ``func``, ``order`` (display order), ``doc``."""

    name: str
    func: FidelityFunc
    order: int = 1000
    doc: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"fidelity check {self.name!r}: expected lower_case_with_underscores")

    def __call__(self, inputs: FidelityInputs) -> list[Finding] | None:
        return self.func(inputs)


def fidelity_check(name: str, *, order: int = 1000) -> Callable[[FidelityFunc], FidelityCheckDef]:
    """Decorator: the function becomes the :class:`FidelityCheckDef` ``name``. Registering it is
    the registry's job, never a side effect of importing its module."""

    def wrap(func: FidelityFunc) -> FidelityCheckDef:
        doc = (func.__doc__ or "").strip().splitlines()
        return FidelityCheckDef(name, func, order, doc[0] if doc else "")

    return wrap


class FidelityRegistry(Mapping[str, FidelityCheckDef]):
    """Checks by name, iterated in display order. Raises ValueError for a name registered twice."""

    def __init__(self, defs: Iterable[FidelityCheckDef] = ()) -> None:
        self._defs: dict[str, FidelityCheckDef] = {}
        for d in defs:
            self.add(d)

    def add(self, definition: Any) -> None:
        if not isinstance(definition, FidelityCheckDef):
            raise TypeError(f"{definition!r} is not a FidelityCheckDef (decorate it with @fidelity_check)")
        if definition.name in self._defs:
            raise ValueError(f"fidelity check {definition.name!r} is registered twice")
        self._defs[definition.name] = definition
        self._defs = dict(sorted(self._defs.items(), key=lambda kv: (kv[1].order, kv[0])))

    def __getitem__(self, name: str) -> FidelityCheckDef:
        return self._defs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._defs)

    def __len__(self) -> int:
        return len(self._defs)
