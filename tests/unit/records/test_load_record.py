"""``load.json`` (``evalctl.load/3``; ``/2`` and ``/1`` read too): the field names the writer produces are
pinned for this schema version (a change of fields needs a version bump), a written record reads
back equal, and the reader refuses what the writer would never write."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from engine.core.records.fields import RecordError
from engine.core.records.intervals import Interval
from engine.core.records.load import LOAD_SCHEMA, LoadRecord, LoadStep

STEP = LoadStep(
    callers=8,
    sessions=9,
    passed=4,
    failed=4,
    errors=1,
    not_applicable=0,
    unscored=0,
    rate=0.5,
    ci=Interval(0.2, 0.8, "bootstrap"),
    failure_share=0.5556,
    latency_ms={"p50": 150.2, "p90": 160.0, "p95": 161.0, "p99": 170.5},
    replies=30,
    errors_by_cause={"fail:agent_error": 4, "error:transport": 1},
    wall_s=1.5,
    cpu_s=0.3,
    overhead=0.2,
    run_dir="step-02-8",
    rate_scenarios=3,
    left_out=("mock__late_delivery_credit",),
)
RECORD = LoadRecord("specs/x", "ws://127.0.0.1:9000", "replay", 0.2, 0, (STEP,))

#: evalctl.load/3's fields, in the order written: a change here is a new schema version (version 1
#: had no ``rate_scenarios``, version 2 no ``left_out``).
FIELDS_V3 = ["schema", "spec_dir", "agent", "user", "fail_above", "stopped_at", "steps"]
STEP_FIELDS_V3 = [
    "callers",
    "sessions",
    "passed",
    "failed",
    "errors",
    "not_applicable",
    "unscored",
    "rate",
    "ci",
    "rate_scenarios",
    "failure_share",
    "latency_ms",
    "replies",
    "errors_by_cause",
    "wall_s",
    "cpu_s",
    "overhead",
    "run_dir",
    "left_out",
]


def test_the_fields_of_version_3_are_pinned() -> None:
    body = RECORD.to_json()
    assert LOAD_SCHEMA == "evalctl.load/3" and body["schema"] == LOAD_SCHEMA
    assert list(body) == FIELDS_V3
    assert list(body["steps"][0]) == STEP_FIELDS_V3
    assert list(body["steps"][0]["latency_ms"]) == ["p50", "p90", "p95", "p99"]


def test_a_written_record_reads_back_equal() -> None:
    body = json.loads(json.dumps(RECORD.to_json()))
    assert LoadRecord.from_json(body) == RECORD


def test_a_version_1_record_reads_without_the_interval_count() -> None:
    body = json.loads(json.dumps(RECORD.to_json()))
    body["schema"] = "evalctl.load/1"
    del body["steps"][0]["rate_scenarios"], body["steps"][0]["left_out"]
    assert LoadRecord.from_json(body).steps[0].rate_scenarios is None
    body["steps"][0]["rate_scenarios"] = 3  # not a key of version 1
    with pytest.raises(RecordError, match="rate_scenarios"):
        LoadRecord.from_json(body)


def test_a_version_2_record_reads_without_the_scenarios_left_out() -> None:
    body = json.loads(json.dumps(RECORD.to_json()))
    body["schema"] = "evalctl.load/2"
    del body["steps"][0]["left_out"]
    assert LoadRecord.from_json(body).steps[0].left_out == ()
    body["steps"][0]["left_out"] = []  # not a key of version 2
    with pytest.raises(RecordError, match="left_out"):
        LoadRecord.from_json(body)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.update(schema="evalctl.load/4"), "newer evalctl"),
        (lambda b: b["steps"][0].update(left_out=[1]), "left_out: not a list of strings"),
        (lambda b: b.update(schema="evalctl.summary/1"), "not an evalctl load record"),
        (lambda b: b.update(extra=1), "unknown key(s) extra"),
        (lambda b: b["steps"][0].pop("overhead"), "no overhead"),
        (lambda b: b["steps"][0].update(sessions="9"), "sessions: str is not int"),
        (lambda b: b.update(stopped_at=3), "not a step index"),
        (lambda b: b["steps"][0]["latency_ms"].pop("p99"), "no p99"),
    ],
)
def test_the_reader_refuses_what_is_not_written(
    change: Callable[[dict[str, Any]], object], message: str
) -> None:
    body = json.loads(json.dumps(RECORD.to_json()))
    change(body)
    with pytest.raises(RecordError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LoadRecord.from_json(body)
