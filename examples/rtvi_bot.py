"""An RTVI bot built on pipecat, as NVIDIA NeMo Voice-Agent's eval bots are, for ``--agent rtvi+ws://``.

It is a pipecat pipeline (pipecat-ai 1.14: ``pip install 'evalctl[pipecat]'``) that owns its tools
and its DB: ``SingleClientWebsocketServerTransport`` with ``ProtobufFrameSerializer`` (one client at
a time; a second one is closed with code 1013), an ``RTVIProcessor`` whose observer reports each
function call with its arguments, the ``client-message`` handlers the NeMo bots register (``reset``,
``update_system_prompt``, ``apply_initialization``, ``get_scenario_summary``) and an LLM service.
Its tools run on its own copy of the scenario DB (here with evalctl's own handlers, through the
spec's ``rtvi.yaml`` names), and ``get_scenario_summary`` returns that DB's hash.

The LLM is a stand-in you replace with yours: :class:`ScriptedLLM` asks a ``brain`` for each step.
``--brain gold`` (the default) plays each scenario's gold conversation, as ``--agent replay`` does;
``--brain MODULE:FUNCTION`` uses another (the tests' brains make mistakes). Run it, then evalctl against it::

    python examples/rtvi_bot.py --port 8765 --spec-dir specs/eva_airline &
    evalctl run specs/eva_airline --agent rtvi+ws://127.0.0.1:8765
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger
from pipecat.frames.frames import (
    FunctionCallFromLLM,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameDirection
from pipecat.processors.frameworks.rtvi import (
    RTVIFunctionCallReportLevel,
    RTVIObserverParams,
    RTVIProcessor,
)
from pipecat.processors.frameworks.rtvi.frames import RTVIServerMessageFrame
from pipecat.serializers.protobuf import ProtobufFrameSerializer
from pipecat.services.llm_service import FunctionCallParams, LLMService
from pipecat.transports.websocket.server import (
    SingleClientWebsocketServerParams,
    SingleClientWebsocketServerTransport,
)
from pipecat.workers.runner import WorkerRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # evalctl's handlers, from a checkout

from engine.core.dbhash import db_hash
from engine.core.model import Scenario
from engine.core.toolruntime import ToolRuntime
from engine.domains.registry import plugins
from engine.session.backends import ToolCallRequest, TurnInfo
from engine.session.backends.replay import ReplayFactory
from engine.session.backends.rtvi_wire import load_tool_map
from engine.spec.loader import load_domain


@dataclass
class Step:
    """One LLM response: words, then tool calls (raw JSON argument text, as a model writes it)."""

    text: str = ""
    calls: list[ToolCallRequest] = field(default_factory=list)


#: A brain: (scenario name, chat messages in OpenAI form, turn) -> the next step.
Brain = Callable[[str, list[dict[str, Any]], TurnInfo], Awaitable[Step]]


@dataclass
class BotState:
    """What the client-message handlers and the tools share (NeMo's ``shared_state``)."""

    scenarios: dict[str, Scenario]
    scenario: str = ""
    db: dict[str, Any] | None = None
    runtime: ToolRuntime | None = None
    tools: list[str] = field(default_factory=list)
    turn: int = -1
    round: int = 0


class ScriptedLLM(LLMService):
    """An LLM service whose every response is one :class:`Step` of ``brain``. Arguments that do
        not parse are not run (as pipecat's OpenAI service drops them) but reported to the client in a
        ``function-call-unparsed`` server message (with the call's ``index`` among the response's
    calls), and the model is told they failed."""

    def __init__(self, brain: Brain, state: BotState, rtvi: RTVIProcessor) -> None:
        super().__init__()
        self._brain, self._state, self._rtvi = brain, state, rtvi

    async def process_frame(self, frame: Any, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self._respond(frame.context)
        else:
            await self.push_frame(frame, direction)

    async def _respond(self, context: LLMContext) -> None:
        messages = [dict(m) for m in context.get_messages() if isinstance(m, dict)]
        state = self._state
        if messages and messages[-1].get("role") == "user":
            state.turn, state.round = state.turn + 1, 0
        else:
            state.round += 1
        step = await self._brain(state.scenario, messages, TurnInfo(max(state.turn, 0), state.round))
        await self.push_frame(LLMFullResponseStartFrame())
        if step.text:
            await self.push_frame(LLMTextFrame(step.text))
        calls: list[FunctionCallFromLLM] = []
        unparsed: list[tuple[int, ToolCallRequest]] = []
        for index, call in enumerate(step.calls):
            try:
                args = json.loads(call.arguments)
                if not isinstance(args, dict):
                    raise ValueError("not an object")
            except ValueError:
                unparsed.append((index, call))
                continue
            calls.append(FunctionCallFromLLM(call.name, call.call_id, args, context))
        for index, call in unparsed:  # in order with the words: pushed by the LLM, not the RTVI processor
            report = {"type": "function-call-unparsed", "index": index, "tool_call_id": call.call_id}
            report |= {"function_name": call.name, "arguments": call.arguments}
            await self.push_frame(RTVIServerMessageFrame(data=report))
        if unparsed:
            assistant_calls = [
                {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for _, c in unparsed
            ]
            context.add_message(
                {"role": "assistant", "content": step.text or None, "tool_calls": assistant_calls}
            )
            for _, c in unparsed:
                error = {
                    "status": "error",
                    "error_type": "invalid_arguments",
                    "message": "arguments are not JSON",
                }
                context.add_message({"role": "tool", "tool_call_id": c.call_id, "content": json.dumps(error)})
        if calls:
            await self.run_function_calls(calls)
        await self.push_frame(LLMFullResponseEndFrame())
        if unparsed and not calls:  # nothing runs, so nothing re-prompts the model: do it here
            await self._respond(context)


def gold_brain(scenarios: dict[str, Scenario]) -> Brain:
    """A brain that plays each scenario's gold conversation (evalctl's replay), in bot names."""
    replay = ReplayFactory(scenarios)
    backends: dict[str, Any] = {}

    async def brain(name: str, messages: list[dict[str, Any]], turn: TurnInfo) -> Step:
        if (turn.index == 0 and turn.round == 0) or name not in backends:
            from engine.session.backends import SessionInfo

            backends[name] = replay(SessionInfo("agent", {"name": name}, "", []))
        reply = await backends[name].respond(messages, [], turn)
        names = load_tool_map(scenarios[name].domain)
        calls = [ToolCallRequest(c.call_id, names.bot_name(c.name), c.arguments) for c in reply.tool_calls]
        return Step(reply.text, calls)

    return brain


def build_bot(state: BotState, brain: Brain, host: str, port: int) -> PipelineWorker:
    """The bot's pipeline, served at ``ws://host:port``."""
    transport = SingleClientWebsocketServerTransport(
        params=SingleClientWebsocketServerParams(serializer=ProtobufFrameSerializer()), host=host, port=port
    )
    rtvi = RTVIProcessor()
    llm = ScriptedLLM(brain, state, rtvi)
    context = LLMContext()
    pair = LLMContextAggregatorPair(context)
    engine_names: dict[str, str] = {}

    async def run_tool(params: FunctionCallParams) -> None:
        if state.runtime is None or params.function_name not in state.tools:
            result = {
                "status": "error",
                "error_type": "tool_not_found",
                "message": f"no tool {params.function_name}",
            }
        else:
            name = engine_names.get(params.function_name, params.function_name)
            result = state.runtime.call(name, dict(params.arguments)).result
        await params.result_callback(result)

    llm.register_function(None, run_tool)  # every name: unknown ones get tool_not_found

    @rtvi.event_handler("on_client_message")
    async def on_client_message(processor: RTVIProcessor, message: Any) -> None:
        args = message.data if isinstance(message.data, dict) else {}
        if message.type == "reset":
            context.set_messages([])
            answer: Any = True
        elif message.type == "update_system_prompt":
            context.set_messages([{"role": "system", "content": args.get("prompt", "")}])
            state.tools = list(json.loads(args.get("tools") or "{}"))
            state.db, state.runtime, state.turn, state.round = None, None, -1, 0
            answer = True
        elif message.type == "apply_initialization":
            init = json.loads(args.get("shared_state_init") or "{}")
            state.scenario = str(init.get("scenario", ""))
            scenario = state.scenarios.get(state.scenario)
            if scenario is None or not isinstance(init.get("db"), dict):
                answer = {"success": False, "errors": [f"unknown scenario {state.scenario!r} or no db"]}
            else:
                state.db = init["db"]
                state.runtime = ToolRuntime(scenario.tools, state.db)
                tool_map = load_tool_map(scenario.domain)
                engine_names.clear()
                engine_names.update({bot: engine for engine, bot in tool_map.to_bot.items()})
                answer = {"success": True, "errors": []}
        elif message.type == "get_scenario_summary":
            scenario = state.scenarios.get(state.scenario)
            digest = (
                db_hash(state.db, scenario.domain.hash_rules) if state.db is not None and scenario else None
            )
            answer = {"actions": list(state.runtime.actions) if state.runtime else [], "db_hash": digest}
        else:
            await processor.send_error_response(message, f"unknown client message {message.type!r}")
            return
        await processor.send_server_response(message, answer)

    # the worker puts the RTVI processor first and adds its observer (function calls reported in full)
    pipeline = Pipeline([transport.input(), pair.user(), llm, transport.output(), pair.assistant()])
    report = RTVIObserverParams(function_call_report_level={"*": RTVIFunctionCallReportLevel.FULL})
    return PipelineWorker(
        pipeline,
        params=PipelineParams(),
        rtvi_processor=rtvi,
        rtvi_observer_params=report,
        idle_timeout_secs=None,
    )


def main(argv: list[str] | None = None, brain: Callable[[dict[str, Scenario]], Brain] = gold_brain) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--spec-dir", default="specs/eva_airline")
    parser.add_argument("--data-root", default=None)
    parser.add_argument(
        "--brain", default="gold", help="gold, or MODULE:FUNCTION making a brain from the scenarios"
    )
    opts = parser.parse_args(argv)
    if opts.brain != "gold":
        module, _, function = opts.brain.partition(":")
        brain = getattr(importlib.import_module(module), function)
    loaded = load_domain(opts.spec_dir, opts.data_root, plugins=plugins())
    scenarios = {s.name: s for s in loaded.scenarios}
    state = BotState(scenarios)
    worker = build_bot(state, brain(scenarios), opts.host, opts.port)
    logger.remove()
    logger.add(sys.stderr, level="WARNING")

    async def serve() -> None:
        await WorkerRunner(handle_sigint=True).run(worker)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
