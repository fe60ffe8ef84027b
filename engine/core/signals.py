"""The success-signal registry: what a registered signal is, and the lookup by name.

A signal is one function ``(inputs) -> outcome`` registered under its name with the
:func:`signal` decorator, which turns the function into a :class:`SignalDef` (the function plus
what the engine needs to know about it). The built-in signal functions, the one explicit list of
them and the entry-point loading live in ``engine.scoring``; this module holds only the types,
so that records, validation and the summary can ask about signals without importing scoring.

Where a signal's values land in ``metrics.json``: the six contract signals
(:data:`engine.core.records.metrics.SIGNALS`) write their fields as top-level keys (the reference
harness's names); every other signal writes ``extra_signals.<name>``, an object holding ``value``
(what the composite sees), ``role``, ``unit`` when it counts items, and the fields it returns
(``engine.core.records.metrics.SignalFields``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.records.metrics import SIGNALS

#: ``gating``: a spec may name the signal in ``success_signals`` (it is in the schema enum) and it
#: is reported ``informational`` where no scenario gates on it; ``diagnostic``: reported only,
#: never a gate.
SignalRole = Literal["gating", "diagnostic"]
ROLES: tuple[SignalRole, ...] = ("gating", "diagnostic")


@dataclass(frozen=True)
class SignalDef:
    """A registered signal.

    ``name``: the name in ``success_signals`` and ``success_breakdown`` (``[a-z][a-z0-9_]*``);
    ``func``: ``(engine.scoring.signals.SignalInputs) -> engine.scoring.signals.SignalOutcome``;
    ``fields``: the ``metrics.json`` keys the outcome's ``fields`` hold, in the order written
    (for a contract signal top-level keys, otherwise keys of ``extra_signals.<name>``; a key listed
    as ``optional`` may be left out); ``role``: see :data:`SignalRole`; ``unit``: None when the
    signal has one value per result (its rate counts results, in the run's unit), else the name of
    what its rate counts (``predicates``) with ``verdicts`` the field holding one ``{"passed":
    bool, ...}`` object per item (named ``verdicts`` outside the six); ``order``: display order
    (the six contract signals hold 10–60; the summary, the report and ``metrics.json`` list
    signals by it, then by name);
    ``doc``: one line for ``--help``-style listings; ``voice_only``: measured in audio sessions
    only (``evalctl run --voice``), where it gates every scenario; absent from text runs'
    results.
    """

    name: str
    func: Callable[[Any], Any]
    fields: tuple[str, ...]
    role: SignalRole = "gating"
    unit: str | None = None
    verdicts: str | None = None
    optional: tuple[str, ...] = ()
    order: int = 1000
    doc: str = ""
    voice_only: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", str(self.name))  # a StrEnum member prints as itself, not its class
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"signal name {self.name!r}: expected lower_case_with_underscores")
        if self.role not in ROLES:
            raise ValueError(f"signal {self.name}: role {self.role!r} is not one of {', '.join(ROLES)}")
        if (self.unit is None) != (self.verdicts is None):
            raise ValueError(f"signal {self.name}: unit and verdicts go together (a rate over items)")
        if self.verdicts is not None and self.verdicts not in self.fields:
            raise ValueError(f"signal {self.name}: verdicts field {self.verdicts!r} is not one of its fields")
        if self.name not in SIGNALS and self.verdicts not in (None, "verdicts"):
            raise ValueError(f"signal {self.name}: outside the six, the verdicts field is named 'verdicts'")
        reserved = {"value", "role", "unit", "error"} & set(self.fields)
        if self.name not in SIGNALS and reserved:
            raise ValueError(f"signal {self.name}: fields {sorted(reserved)} are reserved in extra_signals")

    def __call__(self, inputs: Any) -> Any:
        return self.func(inputs)


def signal(
    name: str,
    *,
    fields: tuple[str, ...] | None = None,
    role: SignalRole = "gating",
    unit: str | None = None,
    verdicts: str | None = None,
    optional: tuple[str, ...] = (),
    order: int = 1000,
    voice_only: bool = False,
) -> Callable[[Callable[[Any], Any]], SignalDef]:
    """Decorator: the function becomes the :class:`SignalDef` ``name`` (``fields`` default: none
    besides its value). Registering it is the registry's job (:meth:`SignalRegistry.add`), never
    a side effect of importing its module. Raises ValueError for an inconsistent definition."""

    def wrap(func: Callable[[Any], Any]) -> SignalDef:
        doc = (func.__doc__ or "").strip().splitlines()
        return SignalDef(
            name,
            func,
            tuple(fields or ()),
            role,
            unit,
            verdicts,
            optional,
            order,
            doc[0] if doc else "",
            voice_only,
        )

    return wrap


class SignalRegistry(Mapping[str, SignalDef]):
    """Signals by name, iterated in display order (``order``, then name). Raises ValueError when
    a name is registered twice."""

    def __init__(self, defs: Iterable[SignalDef] = ()) -> None:
        self._defs: dict[str, SignalDef] = {}
        for d in defs:
            self.add(d)

    def add(self, definition: SignalDef) -> None:
        if not isinstance(definition, SignalDef):
            raise TypeError(f"{definition!r} is not a SignalDef (decorate the function with @signal)")
        if definition.name in self._defs:
            raise ValueError(f"signal {definition.name!r} is registered twice")
        self._defs[definition.name] = definition
        self._defs = dict(sorted(self._defs.items(), key=lambda kv: (kv[1].order, kv[0])))

    def __getitem__(self, name: str) -> SignalDef:
        return self._defs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._defs)

    def __len__(self) -> int:
        return len(self._defs)

    def voice_gates(self) -> tuple[str, ...]:
        """The gating signals every audio session is scored on besides its spec's (``voice_only``)."""
        return tuple(n for n, d in self._defs.items() if d.voice_only and d.role == "gating")

    def gating_names(self) -> tuple[str, ...]:
        """The names a spec's ``success_signals`` may list (the schema enum), in display order; a
        ``voice_only`` signal is not one (every audio session is scored on it, no spec names it)."""
        return tuple(n for n, d in self._defs.items() if d.role == "gating" and not d.voice_only)
