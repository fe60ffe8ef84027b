"""The signal registry: definitions, order, refusals, and a registered signal's place in the record
and the summary (the same through entry points, end to end: tests/unit/plugins/test_registries.py)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from engine.core.records.fields import RecordError
from engine.core.records.metrics import SIGNALS, MetricsRecord
from engine.core.signals import SignalDef, SignalRegistry, signal
from engine.domains.registry import plugins
from engine.results.scoring_stage import signal_error
from engine.scoring.registry import build_registry
from engine.scoring.signals import BUILTIN, BUILTIN_REGISTRY, SignalInputs, SignalOutcome, compute_signals
from engine.scoring.summary import build_summary
from engine.scoring.summary_rows import summary_row
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.eva_fixtures import session
from tests.record_helpers import metrics_row

#: The built-in signal of audio sessions (after the six; voice runs only)
VOICE = "speech_matches_text"


@pytest.fixture(scope="module")
def sc() -> Any:
    return load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario("mock__shipped_refusal")


@signal("short_call", fields=("agent_turns",), order=100)
def short_call(inp: SignalInputs) -> SignalOutcome:
    """At most three agent turns."""
    return SignalOutcome(inp.result.agent_turns <= 3, {"agent_turns": inp.result.agent_turns})


@signal("checked_items", fields=("verdicts",), unit="items", verdicts="verdicts", order=5)
def checked_items(inp: SignalInputs) -> SignalOutcome:
    """Two items, one held."""
    return SignalOutcome(0.5, {"verdicts": [{"passed": True}, {"passed": False}]})


def test_the_decorator_makes_a_definition_and_registers_nothing() -> None:
    assert isinstance(short_call, SignalDef) and short_call.doc == "At most three agent turns."
    assert "short_call" not in BUILTIN_REGISTRY
    assert tuple(d.name for d in BUILTIN) == (*SIGNALS, VOICE)


def test_the_registry_orders_by_display_order_then_name() -> None:
    registry = SignalRegistry([*BUILTIN, short_call, checked_items])
    assert list(registry) == ["checked_items", *SIGNALS, VOICE, "short_call"]
    reported = signal("reported_only", role="diagnostic")(lambda inp: SignalOutcome(None))
    registry.add(reported)
    assert "reported_only" in registry and "reported_only" not in registry.gating_names()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Bad-Name"}, "lower_case_with_underscores"),
        ({"role": "sometimes"}, "is not one of gating, diagnostic"),
        ({"unit": "items"}, "unit and verdicts go together"),
        ({"unit": "items", "verdicts": "checks", "fields": ("checks",)}, "the verdicts field is named"),
        ({"fields": ("value",)}, "reserved in extra_signals"),
    ],
)
def test_an_inconsistent_definition_is_refused(kwargs: dict[str, Any], message: str) -> None:
    body = {"name": "x_ok", "func": short_call.func, "fields": (), **kwargs}
    with pytest.raises(ValueError, match=message):
        SignalDef(**body)


def test_a_built_in_name_or_a_duplicate_is_refused() -> None:
    clash = replace(short_call, name="clean_exit")
    registry, refused = build_registry([short_call, clash, short_call])
    assert list(registry) == [*SIGNALS, VOICE, "short_call"]
    assert refused == [
        "clean_exit: signal 'clean_exit' is registered twice",
        "short_call: signal 'short_call' is registered twice",
    ]


def test_a_signal_returning_undeclared_fields_is_recorded_not_applicable_with_its_error(sc: Any) -> None:
    wrong = signal("wrong_fields", fields=("a",))(lambda inp: SignalOutcome(True, {"b": 1}))
    values, fields = compute_signals(SignalInputs(sc, _session(sc)), SignalRegistry([*BUILTIN, wrong]))
    assert values["wrong_fields"] is None
    assert fields["extra_signals"]["wrong_fields"]["error"] == (
        "signal wrong_fields: fields ['b'] are not its declared ['a']"
    )


def _raises(inp: SignalInputs) -> SignalOutcome:
    raise RuntimeError("evil signal exploded")


@pytest.mark.parametrize(
    ("func", "error"),
    [
        (lambda inp: SignalOutcome("yes", {"n": 1}), "value 'yes' is neither bool"),
        (lambda inp: SignalOutcome({"not": "a verdict"}, {"n": 1}), "value {'not': 'a verdict'} is neither"),
        (lambda inp: "not an outcome", "returned str, not a SignalOutcome"),
        (_raises, "raised RuntimeError: evil signal exploded"),
        (lambda inp: SignalOutcome(5.0, {"n": 1}), "value 5.0 is neither bool, a finite rate in 0-1"),
        (lambda inp: SignalOutcome(float("nan"), {"n": 1}), "value nan is neither"),
        (lambda inp: SignalOutcome(True, {"n": float("nan")}), "fields are not JSON plain data"),
        (lambda inp: SignalOutcome(True, {"n": object()}), "fields are not JSON plain data"),
    ],
    ids=["yes", "dict", "not_outcome", "raises", "rate_5", "nan", "nan_field", "object_field"],
)
def test_a_plugin_signal_failure_or_garbage_is_not_applicable_noted_and_the_summary_holds(
    sc: Any, func: Any, error: str
) -> None:
    """Repro 13-15: a third-party signal's garbage never crashes scoring or the summary, never
    counts as a pass or a failure, and leaves the other signals' verdicts alone."""
    evil = signal("evil_garbage", fields=("n",), order=101)(func)
    inputs = SignalInputs(sc, _session(sc))
    clean_values, _ = compute_signals(inputs, SignalRegistry([*BUILTIN, short_call]))
    values, fields = compute_signals(inputs, SignalRegistry([*BUILTIN, short_call, evil]))
    assert values.pop("evil_garbage") is None
    assert values == clean_values
    entry = fields["extra_signals"]["evil_garbage"]
    assert entry["value"] is None and error in entry["error"] and "n" not in entry
    base = metrics_row("mock__x")
    record = MetricsRecord.from_json(
        replace(base, signals=replace(base.signals, extra=fields["extra_signals"])).to_json()
    )
    rate = build_summary([record], {"trials": 1}).signals["evil_garbage"]
    assert (rate.passed, rate.total) == (0, 0)


@pytest.mark.parametrize("value", ["yes", float("nan"), 5.0])
def test_a_stored_garbage_plugin_value_is_not_applicable_in_the_summary(value: Any) -> None:
    """A record written before values were checked: no TypeError, no failure counted."""
    base = metrics_row("mock__x")
    extra = {"evil_garbage": {"value": value, "role": "gating"}}
    record = replace(base, signals=replace(base.signals, extra=extra))
    rate = build_summary([record], {"trials": 1}).signals["evil_garbage"]
    assert (rate.passed, rate.total) == (0, 0)


def test_a_gating_plugin_signal_that_errors_makes_the_result_an_engine_error_naming_it() -> None:
    gating = SimpleNamespace(success_signals=("clean_exit", "evil_raise"))
    informational = SimpleNamespace(success_signals=("clean_exit",))
    note = "signal evil_raise: raised X"
    fields = {"extra_signals": {"evil_raise": {"value": None, "role": "gating", "error": note}}}
    cause = signal_error(gating, fields)  # type: ignore[arg-type]
    assert cause is not None and cause.source == "engine" and "evil_raise" in cause.message
    assert signal_error(informational, fields) is None  # type: ignore[arg-type]


def _session(sc: Any) -> Any:
    return session(sc, sc.fresh_db(), agent_turns=4)


def test_other_signals_land_under_extra_signals_and_in_the_summary(sc: Any) -> None:
    values, fields = compute_signals(
        SignalInputs(sc, _session(sc)), SignalRegistry([*BUILTIN, short_call, checked_items])
    )
    assert list(values)[:8] == ["checked_items", *SIGNALS, "short_call"]
    assert fields["extra_signals"] == {
        "checked_items": {
            "value": 0.5,
            "role": "gating",
            "unit": "items",
            "verdicts": [{"passed": True}, {"passed": False}],
        },
        "short_call": {"value": False, "role": "gating", "agent_turns": 4},
    }
    assert not {"short_call", "checked_items", "agent_turns"} & set(fields)
    base = metrics_row("mock__x")
    extra = fields["extra_signals"]
    record = replace(base, signals=replace(base.signals, extra=extra))
    body = record.to_json()
    assert list(body).index("extra_signals") == list(body).index("clean_exit") + 1 + len(
        base.diagnostic_names
    )
    again = MetricsRecord.from_json(body)
    assert again == record and again.signal_names == (*SIGNALS, "checked_items", "short_call")
    assert again.signals.value("short_call") is False
    assert summary_row(again).assertions["checked_items"] == (1, 2)
    summary = build_summary([again], {"trials": 1})
    assert summary.signals["checked_items"].unit == "items"
    assert (summary.signals["checked_items"].passed, summary.signals["checked_items"].total) == (1, 2)
    assert summary.signals["short_call"].role == "informational"
    # a record without other signals is written as before: no extra_signals key
    assert "extra_signals" not in base.to_json()


def test_a_damaged_extra_signals_entry_is_a_record_error() -> None:
    body = metrics_row("mock__x").to_json()
    for bad, message in (
        ({"x_ok": {"role": "gating"}}, "no value"),
        ({"x_ok": {"value": True, "role": "boss"}}, "is not gating or diagnostic"),
        ({"clean_exit": {"value": True, "role": "gating"}}, "written at the top level"),
        ({"x_ok": {"value": 1.0, "role": "gating", "unit": "items"}}, "no verdicts"),
    ):
        with pytest.raises(RecordError, match=message):
            MetricsRecord.from_json({**body, "extra_signals": bad})
