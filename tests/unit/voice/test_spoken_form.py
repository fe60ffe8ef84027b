"""Spoken-form checks (engine.session.voice.spoken) that need no domain: spelled runs, agent lines, count
diagnostics in the summary. eva_airline's rules and diagnostics on its gold conversations, hand-made
lines and a replay run: tests/domains/eva_airline/test_spoken_eva.py."""

from __future__ import annotations

import json

import pytest
import scipy.stats

from engine.core.records.fields import RecordError
from engine.core.records.metrics import Breakdown, MetricsRecord
from engine.core.records.summary import SummaryRecord
from engine.scoring.summary import build_summary, render_summary_text
from engine.session.voice.spoken import agent_lines, spelled_runs
from tests.record_helpers import metrics_row


def test_spelled_runs() -> None:
    assert spelled_runs("Z, K, three, F, F, W. Thanks!") == ["ZK3FFW"]
    assert spelled_runs("flight seven oh three, gate B 12") == ["703", "B12"]
    assert spelled_runs("M E A L dash N five") == ["MEAL-N5"]
    assert spelled_runs("a quiet line") == []


def test_summary_reports_count_diagnostics() -> None:
    def row(name: str, count: int | None) -> MetricsRecord:
        return metrics_row(
            name,
            success_signals=("clean_exit",),
            success_breakdown=Breakdown(("clean_exit",), (), (), ("authenticated", "leaked_tool_text")),
            signals={"diagnostics": {"authenticated": count != 1, "leaked_tool_text": count}},
        )

    summary = build_summary([row("a", 0), row("b", 2), row("c", 1), row("d", None)], {"trials": 1})
    s = summary.signals["leaked_tool_text"]
    assert (s.passed, s.total, s.sum, s.max, s.kind) == (1, 3, 3, 2.0, "count")
    text = render_summary_text(summary)
    assert "  leaked_tool_text: 3 found in 2/3 scenarios, 33.3% clean [95% CI 6.1-79.2%] [diagnostic]" in text
    body = summary.to_json()
    assert body["signals"]["leaked_tool_text"] == {
        "passed": 1,
        "total": 3,
        "rate": 1 / 3,
        "unit": "scenarios",
        "role": "diagnostic",
        "errors_left_out": 0,
        "ci": {"low": pytest.approx(0.0614919447), "high": pytest.approx(0.7923403992), "method": "wilson"},
        "kind": "count",
        "sum": 3,
        "max": 2.0,
    }
    # a boolean diagnostic keeps the seven keys of a rate
    wilson = scipy.stats.binomtest(3, 4).proportion_ci(0.95, method="wilson")
    assert body["signals"]["authenticated"] == {
        "passed": 3,
        "total": 4,
        "rate": 0.75,
        "unit": "scenarios",
        "role": "diagnostic",
        "errors_left_out": 0,
        "ci": {"low": wilson.low, "high": wilson.high, "method": "wilson"},
    }
    assert SummaryRecord.from_json(json.loads(json.dumps(body))) == summary
    half = {k: v for k, v in body["signals"]["leaked_tool_text"].items() if k != "max"}
    with pytest.raises(RecordError, match="no max"):
        SummaryRecord.from_json({**body, "signals": {**body["signals"], "leaked_tool_text": half}})


def test_agent_lines_are_the_agents_spoken_lines() -> None:
    transcript = [
        {"role": "user", "type": "utterance", "content": "ZK3FFW get_reservation("},
        {"role": "agent", "type": "utterance", "content": "Let me check."},
        {"role": "agent", "type": "tool_call", "content": {"name": "get_order"}},
        {"role": "agent", "type": "utterance", "content": "   "},
        {"role": "agent", "type": "utterance", "content": "Found it."},
    ]
    assert agent_lines(transcript) == ["Let me check.", "Found it."]
