"""Values computed from the dataset record (``{derive: <name>}``), record fields, template
variables, scenarios generated with a ``where`` filter and a derived name, and an agent-first call
with a kickoff, on a tiny test domain written into a temporary folder (no real data involved).

The dataset holds records of two "modules"; the domain keeps those of one. Each record carries its
counter's stock as a compact string the plugin parses into the initial DB, a ``tools`` list (the
agent's subset) and a reference sale; the agent opens the call.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from engine.core.render import render_agent_prompt
from engine.session.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage
from engine.session.backends.replay import ReplayFactory
from engine.spec.loader import load_domain
from engine.spec.validate import validate_specs
from engine.util.errors import SpecError
from tests.runtime_helpers import session_between

PLUGIN_CODE = """
from engine.core.gold import events_trace
from engine.core.plugin import DomainPlugin
from engine.core.tools.context import error


def sell(db, args, ctx):
    left = db["stock"].get(args["item"], 0)
    if left < args["count"]:
        return error("out_of_stock", "not enough left")
    db["stock"][args["item"]] = left - args["count"]
    return {"status": "success", "left": left - args["count"]}


def stock(record):
    return {k: int(v) for k, v in (pair.split("=") for pair in record["stock"].split(","))}


def signals(record):
    return ["is_action_match", "clean_exit"] if record["strict"] else ["clean_exit"]


def gold(raw, record, language):
    sale = record["sale"]
    return events_trace([
        {"event_type": "agent_utterance", "utterance": "Counter, hello."},
        {"event_type": "user_utterance", "utterance": record["ask"]},
        {"event_type": "tool_call", "tool_name": "sell", "params": sale},
        {"event_type": "agent_utterance", "utterance": "Sold. Bye."},
    ])


PLUGIN = DomainPlugin(
    name="counter",
    handlers={"sell": sell},
    gold_adapters={"counter_gold": gold},
    derive={
        "stock": lambda record: {"stock": stock(record)},
        "expected": lambda record: {"stock": {**stock(record), record["sale"]["item"]: (
            stock(record)[record["sale"]["item"]] - record["sale"]["count"])}},
        "name": lambda record: "counter__" + record["key"].lower(),
        "signals": signals,
        "reference": lambda record: [{"action_type": "sell", **record["sale"]}],
        "prompt": lambda record: {"clerk": record["clerk"], "items": sorted(stock(record))},
    },
)
"""

DOMAIN = """
name: counter
description: A shop counter; the clerk opens the call and sells what the caller asks for.
max_duration: 60
user_speaks_first: false
kickoff: Ring ring
success_signals: [db_state_match, clean_exit]
dataset: {path: counter-1.0/records.json, key: key}
scenarios:
  name: {derive: name}
  description: /ask
  where: {pointer: /module, in: [counter]}
initial_db: {derive: stock}
expected_db: {derive: expected}
gold_trace: {pointer: '', format: counter_gold}
record_fields:
  tools: /tools
  success_signals: {derive: signals}
  reference_answer: {derive: reference}
  match_options: /match
user: {persona: /persona, goal: /ask}
policy: {role: You run a counter., instructions: Sell only what is in stock.}
tool_table: tools.yaml
templates: {agent: agent.md.j2, user: user.md.j2}
template_variables:
  agent: {derive: prompt}
"""

TOOLS = """
tools:
  - name: sell
    kind: write
    handler: sell
    action_type: sell
    writes: ["/stock/{item}"]
    description: Sell items.
    parameters:
      type: object
      properties: {item: {type: string}, count: {type: integer}}
      required: [item, count]
  - name: look
    kind: read
    handler: sell
    description: Never offered by these records.
    parameters: {type: object, properties: {}, required: []}
  - name: end_conversation
    kind: harness
    handler: end_conversation
    ends_call: exit
    description: Hang up.
    parameters: {type: object, properties: {}, required: []}
"""


def _record(key: str, module: str = "counter", **over: object) -> dict:
    return {
        "key": key,
        "module": module,
        "stock": "tea=3,jam=1",
        "tools": ["sell", "end_conversation"],
        "strict": True,
        "sale": {"item": "tea", "count": 2},
        "match": {"ignore_capitalization": True},
        "ask": "Two teas, please.",
        "persona": "Brief.",
        "clerk": "Ada",
        **over,
    }


RECORDS = [_record("C1"), _record("X9", module="other"), _record("C2", strict=False, clerk="Bo")]


@pytest.fixture
def counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict]:
    pkg = tmp_path / "site" / "counter_domain"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(PLUGIN_CODE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    module = importlib.import_module("counter_domain")
    monkeypatch.delitem(sys.modules, "counter_domain")
    spec = tmp_path / "specs" / "counter"
    spec.mkdir(parents=True)
    (spec / "domain.yaml").write_text(DOMAIN, encoding="utf-8")
    (spec / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    agent_template = "I am {{ clerk }}; we sell {{ items | join(', ') }}.\n"
    (spec / "agent.md.j2").write_text(agent_template, encoding="utf-8")
    (spec / "user.md.j2").write_text("{{ user.persona }} {{ user.goal }}\n", encoding="utf-8")
    data = tmp_path / "data" / "counter-1.0"
    data.mkdir(parents=True)
    (data / "records.json").write_text(json.dumps(RECORDS), encoding="utf-8")
    return spec, tmp_path / "data", {"counter": module.PLUGIN}


def test_values_come_from_the_record_through_the_plugin(counter) -> None:
    spec, data, plugins = counter
    loaded = load_domain(spec, data, plugins=plugins)
    assert loaded.names == ("counter__c1", "counter__c2")  # 'other' module left out, names derived
    c1, c2 = loaded.scenarios
    assert c1.initial_db == {"stock": {"tea": 3, "jam": 1}}
    assert c1.expected_db == {"stock": {"tea": 1, "jam": 1}}
    assert c1.tools.names == ("sell", "end_conversation")  # the record's subset of the table
    assert c1.success_signals == ("is_action_match", "clean_exit") and c2.success_signals == ("clean_exit",)
    assert c1.reference_answer == [{"action_type": "sell", "item": "tea", "count": 2}]
    assert c1.match_options == {"ignore_capitalization": True}
    assert (c1.user_speaks_first, c1.kickoff, c1.user.starting_utterance) == (False, "Ring ring", "")
    assert c1.description == "Two teas, please."
    assert render_agent_prompt(c2) == "I am Bo; we sell jam, tea.\n"
    report = validate_specs(spec, data, plugins=plugins)
    assert report.ok and [r.ok for r in report.replay] == [True, True], report.lines()


def test_a_scenario_file_still_wins_over_the_record(counter) -> None:
    spec, data, plugins = counter
    (spec / "scenarios").mkdir()
    (spec / "scenarios" / "c1.yaml").write_text(
        "name: counter__c1_loose\nid: C1\ndescription: Any sale.\nsuccess_signals: [clean_exit]\n"
        "kickoff: Hi there\n",
        encoding="utf-8",
    )
    loaded = load_domain(spec, data, plugins=plugins)
    c1 = loaded.scenario("counter__c1_loose")
    assert c1.success_signals == ("clean_exit",) and c1.kickoff == "Hi there"
    assert c1.tools.names == ("sell", "end_conversation")  # what the file leaves out: from the record


def _write(spec: Path, old: str, new: str) -> None:
    path = spec / "domain.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def _problems(spec: Path, data: Path, plugins: dict) -> str:
    with pytest.raises(SpecError) as err:
        load_domain(spec, data, plugins=plugins)
    return str(err.value)


def test_an_unknown_derive_name_is_reported_once_with_a_suggestion(counter) -> None:
    spec, data, plugins = counter
    _write(spec, "initial_db: {derive: stock}", "initial_db: {derive: stocks}")
    text = _problems(spec, data, plugins)
    assert text.count("unknown derive 'stocks'") == 1 and "(did you mean 'stock'?)" in text
    assert "domain.yaml:13: $.initial_db.derive" in text


def test_a_derive_that_fails_names_the_record(counter) -> None:
    spec, data, plugins = counter
    records = [*RECORDS, _record("C3", stock="tea:3")]
    (data / "counter-1.0" / "records.json").write_text(json.dumps(records), encoding="utf-8")
    text = _problems(spec, data, plugins)
    assert "derive 'stock' failed for record 'C3': ValueError" in text and "[counter__c3]" in text
    assert "C1" not in text


def test_record_values_are_checked_like_scenario_keys(counter) -> None:
    spec, data, plugins = counter
    records = [
        _record("C1", tools=["sell", "sel"]),
        _record("C2", match={"ignore_case": True}),
    ]
    (data / "counter-1.0" / "records.json").write_text(json.dumps(records), encoding="utf-8")
    _write(spec, "success_signals: {derive: signals}", "success_signals: /signals")
    records[0]["signals"] = ["is_action_match"]
    (data / "counter-1.0" / "records.json").write_text(json.dumps(records), encoding="utf-8")
    lines = _problems(spec, data, plugins).splitlines()
    assert any(
        "$.record_fields.success_signals: value from record 'C1': "
        "success_signals must include clean_exit" in line
        for line in lines
    ), lines
    assert any(
        "$.record_fields.match_options.ignore_case: value from record 'C2': unknown key 'ignore_case'" in line
        for line in lines
    ), lines
    records[0]["signals"] = ["clean_exit"]
    (data / "counter-1.0" / "records.json").write_text(json.dumps(records), encoding="utf-8")
    lines = _problems(spec, data, plugins).splitlines()
    assert any(
        "$.record_fields.tools[1]: value from record 'C1': tool 'sel' is not in the domain's tool table "
        "(did you mean 'sell'?) [counter__c1]" in line
        for line in lines
    ), lines


def test_template_variables_may_not_replace_the_engine_s(counter) -> None:
    spec, data, plugins = counter
    _write(spec, "agent: {derive: prompt}", "agent: {derive: signals}")  # a list, not a mapping
    assert "the agent template variables of record 'C1' are not a mapping of names" in _problems(
        spec, data, plugins
    )
    _write(spec, "agent: {derive: signals}", "agent: {pointer: /sale}")
    (data / "counter-1.0" / "records.json").write_text(
        json.dumps([_record("C1", sale={"item": "tea", "count": 2, "tools": []})]), encoding="utf-8"
    )
    text = _problems(spec, data, plugins)
    assert "the agent template variables may not replace the engine's: tools" in text


class _Recorder:
    """An agent that greets, sells two teas and hangs up, keeping the messages of each request."""

    name = "recorder"

    def __init__(self, seen: list[list[dict]]):
        self.seen = seen

    async def respond(self, messages, tools, turn: TurnInfo) -> BackendReply:
        self.seen.append([dict(m) for m in messages])
        if turn.round > 0:
            return BackendReply(usage=Usage(calls=1))
        if turn.index == 0:
            return BackendReply(text="Counter, hello.", usage=Usage(calls=1))
        calls = [
            ToolCallRequest("c1", "sell", '{"item": "tea", "count": "2"}'),
            ToolCallRequest("c2", "end_conversation", "{}"),
        ]
        return BackendReply(text="Sold. Bye.", tool_calls=calls, usage=Usage(calls=1))


async def test_the_agent_opens_with_the_kickoff_and_the_caller_answers(counter) -> None:
    spec, data, plugins = counter
    scenario = load_domain(spec, data, plugins=plugins).scenario("counter__c1")
    seen: list[list[dict]] = []

    def agent(info: SessionInfo) -> _Recorder:
        assert info.tools and [t["function"]["name"] for t in info.tools] == ["sell", "end_conversation"]
        return _Recorder(seen)

    result = await session_between(scenario, agent, ReplayFactory({scenario.name: scenario}))
    assert result.stop_reason == "exit", result.error
    assert seen[0][1:] == [{"role": "user", "content": "Ring ring"}]  # the kickoff is the first input
    assert seen[1][-1] == {"role": "user", "content": "Two teas, please."}  # the replay caller's line
    spoken = [(e["role"], e["content"]) for e in result.transcript if e["type"] == "utterance"]
    assert spoken[:2] == [("agent", "Counter, hello."), ("user", "Two teas, please.")]
    assert result.final_db == {"stock": {"tea": 1, "jam": 1}}


def test_without_an_expected_db_the_gold_is_checked_against_the_references(counter) -> None:
    spec, data, plugins = counter
    _write(spec, "expected_db: {derive: expected}\n", "")
    report = validate_specs(spec, data, plugins=plugins)
    assert report.ok and [r.ok for r in report.replay] == [True, True], report.lines()
    records = [_record("C1", sale={"item": "jam", "count": 2})]  # the gold sells more jam than there is
    (data / "counter-1.0" / "records.json").write_text(json.dumps(records), encoding="utf-8")
    report = validate_specs(spec, data, plugins=plugins)
    (outcome,) = report.replay
    assert not outcome.ok and outcome.expected_hash is None
    assert outcome.error == "gold call sell failed: out_of_stock: not enough left | " + (
        "the gold's own actions do not match its reference_answer (is_action_match)"
    )
    lines = "\n".join(report.lines())
    assert "its end state does not satisfy the scenario's references [counter__c1]" in lines
    _write(spec, "  reference_answer: {derive: reference}\n", "")
    (outcome,) = validate_specs(spec, data, plugins=plugins).replay
    assert outcome.error == "no expected DB, reference answer or DB assertions to replay against"
