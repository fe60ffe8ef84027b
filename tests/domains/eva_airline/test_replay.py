"""Gold-trace replay on the real eva data: 50/50 hashes, recorded responses, the carry-over knob,
and data roots whose traces act differently."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli import main as evalctl
from engine.core.dbhash import db_hash, normalize_db
from engine.core.gold import GoldTrace
from engine.core.model import ToolTable
from engine.core.toolruntime import ToolRuntime
from engine.domains.registry import plugins
from engine.spec.gold_replay import replay_gold, replay_trace
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.errors import SpecError
from tests.conftest import SPEC_DIR

GOLD_FILE = Path("eva-2.1.0/data/airline_dataset.json")
RESTORE_TOOLS = ("add_baggage_allowance", "add_meal_request")
NAME_FIELDS = frozenset({"first_name", "last_name", "email"})


@pytest.fixture(scope="module")
def domain(data_root: Path) -> LoadedDomain:
    return load_domain(SPEC_DIR, data_root, plugins=plugins())


def _scenario_names() -> list[str]:
    """Scenario names from the spec files (read at collection time, before any data is loaded)."""
    return sorted(_names_by_eva_id().values())


def _names_by_eva_id() -> dict[str, str]:
    docs = [yaml.safe_load(p.read_text()) for p in (SPEC_DIR / "scenarios").glob("*.yaml")]
    return {str(d["eva_id"]): d["name"] for d in docs}


def _with_options(table: ToolTable, tool: str, **options: Any) -> ToolTable:
    return ToolTable(
        tuple(
            dataclasses.replace(t, options={**t.options, **options}) if t.name == tool else t
            for t in table.tools
        )
    )


@pytest.mark.parametrize("name", _scenario_names())
def test_gold_replay_lands_on_expected_hash(domain: LoadedDomain, name: str) -> None:
    scenario = domain.scenario(name)
    outcome = replay_gold(scenario)
    assert outcome.ok, "\n".join(str(line) for line in outcome.lines)
    assert outcome.actual_hash == outcome.expected_hash
    assert outcome.tool_calls > 0


def test_all_fifty_and_242_tool_calls(domain: LoadedDomain) -> None:
    outcomes = [replay_gold(s) for s in domain.scenarios]
    assert len(outcomes) == 50 and all(o.ok for o in outcomes)
    assert sum(o.tool_calls for o in outcomes) == 242


def _lower_names(value: Any, mask: bool) -> Any:
    if isinstance(value, dict):
        return {
            k: ("<name>" if mask else str(v).lower())
            if k in NAME_FIELDS and isinstance(v, str)
            else _lower_names(v, mask)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_lower_names(v, mask) for v in value]
    return value


def _response_pairs(domain: LoadedDomain) -> list[tuple[str, str, Any, Any]]:
    """(eva_id, tool, ours, recorded) per tool call; ours serialised after the whole run."""
    rules = domain.domain.hash_rules
    pairs = []
    for scenario in domain.scenarios:
        run = replay_trace(scenario.tools, scenario.initial_db, scenario.gold_trace)
        ours = json.loads(json.dumps([result for _, result in run.responses]))  # at the end of the run
        recorded = [step.result for step in scenario.gold_trace.tool_calls()]
        assert len(recorded) == len(ours)
        for (event, _), mine, theirs in zip(run.responses, ours, recorded, strict=True):
            a = normalize_db({"r": mine}, rules)["r"]
            b = normalize_db({"r": theirs}, rules)["r"]
            pairs.append((scenario.record_id, event.tool, a, b))
    return pairs


def test_responses_are_recorded_as_sent(domain: LoadedDomain) -> None:
    """A result is what the agent was sent: serialised at call time and at the end of the replay
    they are the same (eva's search returned the DB's live segments, so a later rebook changed an
    earlier result by a seat; copy-on-write writes end that). Against eva's recorded responses:
    205 equal; 3 more with the renamed personas masked (eva 2.1.0 first names differ from the
    0.1.3 DB); the 7 transfer stubs; the rest are search results eva recorded after its own later
    rebooks, off by one seat."""
    rules = domain.domain.hash_rules
    at_call: list[Any] = []
    for scenario in domain.scenarios:
        runtime = ToolRuntime(scenario.tools, scenario.fresh_db())
        for call in scenario.gold_trace.tool_calls():
            at_call.append(json.loads(json.dumps(runtime.call(call.tool, dict(call.arguments)).result)))
    pairs = _response_pairs(domain)
    assert len(pairs) == 242 and [normalize_db({"r": r}, rules)["r"] for r in at_call] == [
        p[2] for p in pairs
    ]
    same = [p for p in pairs if _lower_names(p[2], False) == _lower_names(p[3], False)]
    differ = [p for p in pairs if _lower_names(p[2], False) != _lower_names(p[3], False)]
    stubs = [p for p in differ if p[1] == "transfer_to_agent"]
    assert len(stubs) == 7
    assert all(p[3] == {"status": "transfer_initiated"} and p[2]["status"] == "success" for p in stubs)
    renamed = [p for p in differ if p[1] == "get_reservation"]
    assert sorted(p[0] for p in renamed) == ["1.2.2", "2.2.5", "4.1.2"]
    assert all(_lower_names(p[2], True) == _lower_names(p[3], True) for p in renamed)
    seats = [p for p in differ if p[1] not in ("transfer_to_agent", "get_reservation")]
    assert {p[1] for p in seats} == {"search_rebooking_options"}
    assert len(same) == 205 and len(seats) == 242 - 205 - 7 - 3


def _restores_dropped(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The trace without baggage/meal calls on a journey an earlier rebook created (and their
    responses); returns (events, number of calls dropped)."""
    rebooked: set[str] = set()
    out: list[dict[str, Any]] = []
    dropped, skip_response = 0, False
    for event in events:
        kind = event.get("event_type")
        if kind == "tool_response" and skip_response:
            skip_response = False
            continue
        if kind == "tool_call":
            params = event.get("params") or {}
            if event["tool_name"] == "rebook_flight":
                rebooked.add(params.get("new_journey_id"))
            elif event["tool_name"] in RESTORE_TOOLS and params.get("journey_id") in rebooked:
                dropped, skip_response = dropped + 1, True
                continue
        out.append(event)
    return out, dropped


def _data_root_copy(
    data_root: Path, tmp: Path, edit: Callable[[dict[str, Any]], bool]
) -> tuple[Path, list[str]]:
    """Copy the data root to ``tmp`` and apply ``edit`` to each 2.1.0 record; returns the root
    and the eva ids whose trace ``edit`` changed."""
    root = tmp / "data"
    shutil.copytree(data_root, root)
    path = root / GOLD_FILE
    records = json.loads(path.read_text())
    changed = [r["id"] for r in records if edit(r)]
    path.write_text(json.dumps(records))
    return root, changed


def _drop_restores(record: dict[str, Any]) -> bool:
    trace = record["ground_truth"]["expected_trace"]
    trace["trace"], dropped = _restores_dropped(trace["trace"])
    return dropped > 0


@pytest.fixture(scope="module")
def no_restore_root(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    return _data_root_copy(data_root, tmp_path_factory.mktemp("no_restore"), _drop_restores)


def test_carry_over_passes_without_post_rebook_restores(no_restore_root: tuple[Path, list[str]]) -> None:
    root, affected = no_restore_root
    assert len(affected) == 19
    loaded = load_domain(SPEC_DIR, root, plugins=plugins())
    assert loaded.domain.tools.get("rebook_flight").options["carry_over_fields"] == [
        "bags_checked",
        "meal_request",
    ]
    outcomes = [replay_gold(s) for s in loaded.scenarios]
    assert [o.scenario_name for o in outcomes if not o.ok] == []


def test_upstream_reset_fails_without_restores(no_restore_root: tuple[Path, list[str]]) -> None:
    """``carry_over_fields: []`` is eva's reset: only the 2 scenarios whose old booking had no bags
    and no meal still land on the expected DB."""
    root, affected = no_restore_root
    loaded = load_domain(SPEC_DIR, root, plugins=plugins())
    table = _with_options(loaded.domain.tools, "rebook_flight", carry_over_fields=[])
    rules = loaded.domain.hash_rules
    failing = []
    for s in loaded.scenarios:
        run = replay_trace(table, s.initial_db, s.gold_trace)
        if db_hash(run.db, rules) != db_hash(s.expected_db or {}, rules):
            failing.append(s.record_id)
    assert len(failing) == 17 and set(failing) <= set(affected)
    assert sorted(set(affected) - set(failing)) == ["2.1.1", "2.4.1"]


def test_upstream_reset_still_passes_the_shipped_gold(domain: LoadedDomain) -> None:
    table = _with_options(domain.domain.tools, "rebook_flight", carry_over_fields=[])
    rules = domain.domain.hash_rules
    for s in domain.scenarios:
        run = replay_trace(table, s.initial_db, s.gold_trace)
        assert db_hash(run.db, rules) == db_hash(s.expected_db or {}, rules), s.name


def test_carry_over_copies_bags_and_meal_to_new_segments(domain: LoadedDomain) -> None:
    scenario = next(s for s in domain.scenarios if s.record_id == "1.1.3")
    calls = scenario.gold_trace.tool_calls()
    upto = GoldTrace(calls[: next(i for i, e in enumerate(calls) if e.tool == "rebook_flight") + 1])
    new_id = upto.steps[-1].arguments["new_journey_id"]
    for options, bags in (({}, 1), ({"carry_over_fields": []}, 0)):
        table = _with_options(domain.domain.tools, "rebook_flight", **options)
        run = replay_trace(table, scenario.initial_db, upto)
        booking = next(
            b for r in run.db["reservations"].values() for b in r["bookings"] if b["journey_id"] == new_id
        )
        assert [s["bags_checked"] for s in booking["segments"]] == [bags] * len(booking["segments"])
        assert all(s["seat"] is None for s in booking["segments"])


def _act_differently(record: dict[str, Any]) -> bool:
    """Two scenarios act differently: 1.1.2 picks an aisle seat, 5.1.1 never processes its refund."""
    events = record["ground_truth"]["expected_trace"]["trace"]
    if record["id"] == "1.1.2":
        for event in events:
            if event.get("event_type") == "tool_call" and event["tool_name"] == "assign_seat":
                event["params"]["seat_preference"] = "aisle"
        return True
    if record["id"] == "5.1.1":
        record["ground_truth"]["expected_trace"]["trace"] = [
            e for e in events if e.get("tool_name") != "process_refund"
        ]
        return True
    if record["id"] == "1.2.1":  # changes words only: the end state is the same
        for event in events:
            if event.get("event_type") == "agent_utterance":
                event["utterance"] = event["utterance"].upper()
        return True
    return False


def test_validate_names_exactly_the_scenarios_that_end_differently(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, changed = _data_root_copy(data_root, tmp_path, _act_differently)
    assert sorted(changed) == ["1.1.2", "1.2.1", "5.1.1"]
    code = evalctl(["validate", str(SPEC_DIR), "--data-root", str(root)])
    out = capsys.readouterr().out
    assert code == 1
    failed = sorted(
        line.split("[")[-1].rstrip("]") for line in out.splitlines() if "gold replay failed" in line
    )
    names = _names_by_eva_id()
    assert failed == sorted([names["1.1.2"], names["5.1.1"]])
    assert "segments[0].seat: expected '21A', got '21C'" in out
    assert "refunds.REF-8JVSDF-001: expected" in out


def test_validate_without_replay_skips_it(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = _data_root_copy(data_root, tmp_path, _act_differently)
    assert evalctl(["validate", str(SPEC_DIR), "--data-root", str(root), "--no-replay"]) == 0


def _rename_refund_tool(record: dict[str, Any]) -> bool:
    if record["id"] != "5.1.1":
        return False
    for event in record["ground_truth"]["expected_trace"]["trace"]:
        if event.get("tool_name") == "process_refund":
            event["tool_name"] = "issue_refund"
    return True


def test_validate_names_a_gold_tool_the_table_lacks(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, changed = _data_root_copy(data_root, tmp_path, _rename_refund_tool)
    assert changed == ["5.1.1"]
    assert evalctl(["validate", str(SPEC_DIR), "--data-root", str(root)]) == 1
    out = capsys.readouterr().out
    assert "  the gold trace calls tools the tool table lacks: issue_refund" in out
    assert "refunds.REF-8JVSDF-001: expected" in out


def _spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, target)
    return target


def test_carry_over_field_typo_is_a_spec_problem(tmp_path: Path, data_root: Path) -> None:
    # the gold traces restore bags and meals themselves, so gold replay cannot catch this typo
    spec = _spec_copy(tmp_path)
    tools = spec / "tools.yaml"
    text = tools.read_text(encoding="utf-8")
    tools.write_text(
        text.replace("[bags_checked, meal_request]", "[bag_checked, meal_request]"), encoding="utf-8"
    )
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root, plugins=plugins())
    (problem,) = info.value.problems
    assert problem.json_path == "$.tools[rebook_flight].options.carry_over_fields[0]"
    assert "'bag_checked' is not one of ['seat', 'bags_checked', 'meal_request']" in problem.message
