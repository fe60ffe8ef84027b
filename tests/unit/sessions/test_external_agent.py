"""An external agent written with nothing but ``websockets`` + ``json`` from docs/protocol.md,
and external sides that misbehave: each ends its own session, the run goes on. On the mock shop: two
scenarios played well, the third's four trials each misbehave another way."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import websockets

from engine.core.gold import GoldStep
from engine.domains.registry import plugins
from engine.run.runner import run
from engine.spec.loader import load_domain
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options, session_between

SHOP = (MOCK_SPEC_DIR, MOCK_DATA_ROOT)
GOOD = ("mock__cancel_order", "mock__late_delivery_credit")
ODD = "mock__shipped_refusal"
#: How the agent misbehaves in each trial of ODD.
BEHAVIOUR = {1: "garbage", 2: "disconnect", 3: "silent", 4: "v2"}


def turns_of(trace: list[GoldStep]) -> list[tuple[list[tuple[str, dict]], str]]:
    """The agent's turns of a gold trace: (tool calls, line) after each user line."""
    turns: list[tuple[list[tuple[str, dict]], str]] = []
    for step in trace:
        if step.kind == "user":
            turns.append(([], ""))
        elif step.kind == "tool_call":
            turns[-1][0].append((step.tool, dict(step.arguments)))
        elif step.kind == "agent":
            turns[-1] = (turns[-1][0], (turns[-1][1] + " " + step.text).strip())
    return turns


class ExternalAgent:
    """Plays ``scripts[scenario name]`` (see :func:`turns_of`) or misbehaves as ``BEHAVIOUR`` says."""

    def __init__(self, scripts: dict[str, list]):
        self.scripts = scripts
        self.results: list[dict[str, Any]] = []

    async def handler(self, ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.session(ws)

    async def session(self, ws: Any) -> None:
        start = json.loads(await ws.recv())
        assert start["type"] == "session.start" and start["role"] == "agent"
        name = start["scenario"]["name"]
        behaviour = BEHAVIOUR[start["scenario"]["trial"]] if name == ODD else "good"
        version = 2 if behaviour == "v2" else 1
        await ws.send(
            json.dumps({"v": version, "type": "session.ready", "id": "a0", "reply_to": start["id"]})
        )
        script = self.scripts.get(name, [])
        n = 0
        async for frame in ws:
            msg = json.loads(frame)
            if msg["type"] != "turn.request":
                return
            if behaviour == "garbage":
                await ws.send("}{ this is not json")
                continue
            if behaviour == "silent":
                continue  # never answers
            calls, line = script[msg["turn"]] if msg["turn"] < len(script) else ([], "")
            last = msg["turn"] >= len(script) - 1
            if last and not any(c == "transfer_to_agent" for c, _ in calls):
                calls = [*calls, ("end_conversation", {})]
            for tool, params in calls:
                n += 1
                call = {
                    "v": 1,
                    "type": "tool.call",
                    "id": f"a{n}",
                    "reply_to": msg["id"],
                    "call_id": f"call_{n}",
                }
                await ws.send(json.dumps({**call, "name": tool, "arguments": json.dumps(params)}))
                if behaviour == "disconnect":
                    await ws.close()
                    return
                result = json.loads(await ws.recv())
                assert result["type"] == "tool.result" and result["reply_to"] == f"a{n}"
                self.results.append(result)
            n += 1
            await ws.send(
                json.dumps(
                    {
                        "v": 1,
                        "type": "turn.response",
                        "id": f"a{n}",
                        "reply_to": msg["id"],
                        "text": line,
                        "usage": {"model": "external-test", "prompt_tokens": 3, "completion_tokens": 2},
                    }
                )
            )


async def test_external_agent_and_misbehaving_sides(tmp_path: Path) -> None:
    loaded = load_domain(*SHOP, plugins=plugins())
    scripts = {name: turns_of(list(loaded.scenario(name).gold_trace)) for name in GOOD}
    agent = ExternalAgent(scripts)
    async with websockets.serve(agent.handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        opts = run_options(
            *SHOP,
            scenarios=(*GOOD, ODD),
            trials=len(BEHAVIOUR),
            agent=f"ws://127.0.0.1:{port}",
            output_dir=tmp_path,
            turn_timeout_s=0.5,
            progress=False,
        )
        report = await run(opts)
    outcome = {(r.scenario_name, r.trial): (r, m) for r, m in report.results()}
    runs = [(name, k) for name in (*GOOD, ODD) for k in BEHAVIOUR]
    assert sorted(outcome) == sorted(runs)  # every session ran to a result
    for name in GOOD:
        for k in BEHAVIOUR:
            good = outcome[name, k]
            assert good[0].stop_reason == "exit" and good[1].signals.db_state_match is True, good[0].error
            assert good[0].agent_backend == f"ws://127.0.0.1:{port}" and good[0].user_backend == "replay"
            assert good[0].usage["agent"]["model"] == "external-test"
            assert good[0].usage["agent"]["prompt_tokens"] > 0
    garbage = outcome[ODD, 1][0]
    assert garbage.stop_reason == "error" and "bad_json" in garbage.error
    gone = outcome[ODD, 2][0]
    # before (issue #25): stop reason `error`; a closed connection is the agent's, and says so
    assert gone.stop_reason == "agent_disconnected" and "disconnected" in gone.error
    assert gone.error_source is None
    silent = outcome[ODD, 3][0]
    assert silent.stop_reason == "timeout" and "sent nothing for 0.5 s" in silent.error
    v2 = outcome[ODD, 4][0]
    assert v2.stop_reason == "error" and "unsupported_version" in v2.error
    assert agent.results and all(r["result"]["status"] == "success" for r in agent.results)
    assert report.summary is not None
    assert report.summary.stop_reasons == {
        "agent_disconnected": 1,
        "error": 2,
        "exit": 2 * len(BEHAVIOUR),
        "timeout": 1,
    }


async def test_an_unreachable_user_side_is_an_error_an_unreachable_agent_its_failure() -> None:
    from engine.session.backends.replay import ReplayFactory

    scenario = load_domain(*SHOP, plugins=plugins()).scenario("mock__cancel_order")
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    uri = f"ws://127.0.0.1:{port}"
    both = await session_between(scenario, uri, uri)
    # both unreachable: the user side's failure (infrastructure) is reported, not the agent's
    # (before issue #25 the agent's came first, and was infrastructure's too)
    assert (both.stop_reason, both.error_source) == ("error", "transport")
    assert f"cannot connect to the user side at {uri}" in (both.error or "")
    assert both.final_db == scenario.fresh_db()
    agent = await session_between(scenario, uri, ReplayFactory({scenario.name: scenario}))
    assert (agent.stop_reason, agent.error_source) == ("agent_disconnected", None)
    assert f"cannot connect to the agent side at {uri}" in (agent.error or "")


async def test_the_minimal_agent_in_docs_protocol_md_runs() -> None:
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    code = text.split("## A minimal agent", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(code.replace("asyncio.run(main())", ""), namespace)  # the doc's own code, minus its main()
    scenario = load_domain(*SHOP, plugins=plugins()).scenario("mock__cancel_order")
    async with websockets.serve(namespace["session"], "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        from engine.session.backends.replay import ReplayFactory

        result = await session_between(
            scenario, f"ws://127.0.0.1:{port}", ReplayFactory({scenario.name: scenario})
        )
    assert result.stop_reason == "exit", result.error
    assert [c["name"] for c in result.tool_calls] == ["end_conversation"]


async def test_external_user_side_and_a_side_of_the_wrong_role(tmp_path: Path) -> None:
    from engine.session.backends.replay import ReplayFactory
    from engine.session.sides import builtin_side

    loaded = load_domain(*SHOP, plugins=plugins())
    factory = ReplayFactory({s.name: s for s in loaded.scenarios})
    async with builtin_side(factory, role="user") as user_uri:
        ok = await run(
            run_options(*SHOP, scenarios=GOOD, user=user_uri, output_dir=tmp_path / "a", quiet=True)
        )
        wrong = await run(
            run_options(*SHOP, scenarios=GOOD[:1], agent=user_uri, output_dir=tmp_path / "b", quiet=True)
        )
    assert sorted(r.stop_reason for r, _ in ok.results()) == ["exit", "exit"]
    assert all(r.user_backend == "replay" for r, _ in ok.results())
    [(bad, _)] = list(wrong.results())
    # a side given as the agent answers for itself (before issue #25: stop reason `error`)
    assert bad.stop_reason == "agent_error" and "this server is a user side, not agent" in (bad.error or "")
    assert bad.error_source is None
