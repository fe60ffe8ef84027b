"""``livekit:FILE.py:FACTORY``: a user's LiveKit Agents ``Agent`` as an evalctl agent, text mode,
run in-process in a LiveKit ``AgentSession`` with no room (the ``livekit`` extra:
livekit-agents 1.8.9; imported only when a session of this scheme starts).

The factory is ``make_agent(session: InprocSession) -> livekit.agents.Agent``: the user's agent
(their instructions, their LLM: e.g. ``livekit.plugins.openai.LLM``) for one session, given the
scenario's system prompt and tool schemas. The adapter then

- gives the agent the scenario's tools as proxies (:func:`proxy_tools`: raw function tools with
  the scenario's schemas; the agent's own function tools are replaced, as the engine runs the
  tools on the scenario DB);
- drives it as LiveKit's testing helpers do, one ``AgentSession.run(user_input=LINE)`` per caller
  line (text input, no audio), in a session with the text-mode options of
  :func:`text_session_options` (no voice activity detection, turn detector, interruptions, preemptive
  generation or user-away timer: there is no audio, and the adapter commits each line itself);
- wraps the agent's ``llm_node`` (the user's LLM call, below LiveKit's tool execution): each LLM
  response is one model step; its tool calls go to the engine as the model sent them (the raw
  argument text, never repaired: LiveKit would repair it with ``json_repair`` or refuse it, and
  answers an unknown tool itself), and their results go back into the chat context for the
  next LLM response of the turn, recorded in the agent's history as function call / output
  items. ``end_conversation`` / ``transfer_to_agent`` end the call when the engine runs them;
- reads the model's token use from the chunks the LLM yields (``ChatChunk.usage``, the
  ``CompletionUsage`` LiveKit's own ``LLMMetrics`` are made from; the openai plugin asks for it with
  ``include_usage``): the prompt and completion tokens recorded as the ``openai:`` backend records
  them (none reported: the step's tokens are unknown, ``unreported``, never 0).

What the agent says outside an LLM step of a caller line reaches evalctl as the agent's words,
first in its next step: its ``on_enter`` (``session.say(...)``, ``session.generate_reply(...)``:
the session starts as LiveKit's own testing starts one, ``AgentSession.start(capture_run=True)``,
and that run is awaited before the first caller line), and any ``session.say(...)`` (LiveKit's
``speech_created`` event; its words once the speech is done).

What the user's code raises (even ``SystemExit``), a factory that returns no ``Agent`` and an agent
with no LLM are the agent's FAIL (``agent_error``), in one line; so is an error LiveKit logs with a
traceback while it runs the agent's code (its ``on_enter``, its own ``vad=``, which LiveKit runs in
text mode too): :func:`_AgentErrors` takes the record off the console and fails the session.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from engine.session.backends import (
    BackendError,
    BackendReply,
    SessionInfo,
    ToolCallRequest,
    TurnInfo,
    Usage,
    token_count,
)
from engine.session.backends.bridge import InprocSession, ToolBridge, own_failure
from engine.session.backends.failure_text import exception_line
from engine.session.backends.python_agent import resolve
from engine.util.errors import UsageError


def _require_livekit() -> None:
    try:
        import livekit.agents  # noqa: F401
    except ImportError:
        raise UsageError("backend livekit: needs livekit-agents (pip install 'evalctl[livekit]')") from None


#: The bridge of the session whose code is running (set in the session's tasks).
_CURRENT: contextvars.ContextVar[ToolBridge | None] = contextvars.ContextVar("evalctl_livekit", default=None)


class _AgentErrors(logging.Filter):
    """On LiveKit's ``livekit.agents`` logger: a record with a traceback logged in an evalctl
    session's task (LiveKit's ``log_exceptions``: "Error in _vad_task", ...) fails that session
    with the exception (one line in the result) and is not printed. Records of other code pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        bridge = _CURRENT.get()
        error = record.exc_info[1] if record.exc_info else None
        if bridge is None or error is None:
            return True
        bridge.fail(error)
        return False


def _route_livekit_errors() -> None:
    logger = logging.getLogger("livekit.agents")
    if not any(isinstance(f, _AgentErrors) for f in logger.filters):
        logger.addFilter(_AgentErrors())


def text_session_options() -> dict[str, Any]:
    """The ``AgentSession`` keyword arguments of a text-mode session (a new dict each call).

    LiveKit's defaults are for a voice call: a VAD and a turn detector made for every session
    (the detector's stream and its audio buffer are most of a session's start-up), interruptions
    (one more waiter a reply), preemptive generation and a 15 s user-away timer. Text mode has no
    audio and the adapter commits each caller line itself, so all are off. An agent's own
    settings (``Agent(vad=..., turn_handling=...)``) still take precedence over these."""
    return {
        "vad": None,
        "turn_handling": {
            "turn_detection": "manual",
            "interruption": {"enabled": False},
            "preemptive_generation": {"enabled": False},
        },
        "user_away_timeout": None,
    }


def proxy_tools(session: InprocSession) -> list[Any]:
    """The scenario's tools as LiveKit raw function tools (the scenario's own schemas). Their
    bodies never run: the adapter sends every call to the engine."""
    from livekit.agents.llm import function_tool

    tools = []
    for schema in session.tools:
        fn = schema.get("function", {})
        raw = {
            "name": fn.get("name", ""),
            "description": fn.get("description", ""),
            "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
        }

        async def proxy(raw_arguments: dict[str, object]) -> str:
            raise RuntimeError("evalctl runs this tool on the engine")

        tools.append(function_tool(proxy, raw_schema=raw))
    return tools


async def _chunks(made: Any) -> AsyncIterator[Any]:
    """What an ``llm_node`` produced (an async iterable, or a coroutine returning one, a string,
    a chunk or None) as one stream."""
    if inspect.isawaitable(made):
        made = await made
    if made is None:
        return
    if isinstance(made, str) or not hasattr(made, "__aiter__"):
        yield made
        return
    async for item in made:
        yield item


class LiveKitAgent:
    """The backend of one session of a ``livekit:`` agent."""

    def __init__(self, factory: Callable[..., Any], info: SessionInfo, name: str):
        self.name = name
        self.bridge = ToolBridge()
        self._factory = factory
        self._info = info
        self._session: Any = None
        self._agent: Any = None
        self._run: Any = None
        self._watch: asyncio.Future[None] | None = None
        self._ids = 0
        self._opening = False  # on_enter runs
        self._held: list[str] = []  # words said outside a step, said first in the next one
        self._held_usage: Usage | None = None  # the held steps' tokens
        self._held_unknown = False  # a held step reported no tokens: the next step's are unknown

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        return await self.bridge.respond(messages, turn, self._begin)

    async def _begin(self, text: str) -> None:
        _CURRENT.set(self.bridge)  # the session's tasks made from here on inherit it
        if self._session is None:
            await self._start()
        if self._run is not None and not self._run.done():
            await asyncio.gather(self._finished(self._run), return_exceptions=True)
        try:
            self._run = self._session.run(user_input=text)
        except Exception as exc:  # livekit refuses the agent as it is: the agent's FAIL
            raise BackendError(f"{self.name}: the agent cannot answer ({exception_line(exc)})") from None
        self._watch = asyncio.ensure_future(self._finished(self._run))

    async def _finished(self, run: Any) -> None:
        try:
            await run
        except BaseException as exc:  # the run failed in the user's agent: its FAIL
            if not own_failure(exc):
                raise
            self.bridge.fail(exc)

    async def _start(self) -> None:
        from livekit.agents import Agent, AgentSession
        from livekit.agents.utils import is_given

        session = InprocSession(
            self._info.system_prompt, list(self._info.tools), dict(self._info.scenario), self._info.role
        )
        try:
            agent = self._factory(session)
            if not isinstance(agent, Agent):
                raise TypeError(f"the factory returned {type(agent).__name__}, not a livekit Agent")
            if not is_given(agent.llm) or agent.llm is None:  # evalctl's AgentSession has none
                raise TypeError("the agent has no LLM (give its Agent an llm=...)")
            await agent.update_tools(proxy_tools(session))
        except BaseException as exc:  # the user's code, even SystemExit: its FAIL
            if not own_failure(exc):
                raise
            raise BackendError(f"{self.name}: the factory failed: {exception_line(exc)}") from exc
        original = agent.llm_node
        setattr(agent, "llm_node", self._node(agent, original))  # noqa: B010 (a method of the instance)
        setattr(agent, "on_enter", self._on_enter(agent.on_enter))  # noqa: B010
        self._agent = agent
        _route_livekit_errors()
        self._session = AgentSession(**text_session_options())
        self._session.on("speech_created", self._speech_created)
        self._opening = True
        try:
            opening = await self._session.start(agent, capture_run=True)
            if opening is not None:  # on_enter and what it said, as LiveKit's testing awaits it
                await asyncio.gather(self._finished(opening), return_exceptions=True)
        finally:
            self._opening = False

    def _speech_created(self, event: Any) -> None:
        """A ``session.say(...)`` (no LLM step of ours): its words are held for the next step."""
        if event.source == "say":
            event.speech_handle.add_done_callback(self._said)

    def _said(self, handle: Any) -> None:
        for item in handle.chat_items:
            if getattr(item, "role", None) == "assistant" and (item.text_content or "").strip():
                self._held.append(item.text_content)

    def _on_enter(self, original: Callable[[], Any]) -> Callable[[], Any]:
        bridge = self.bridge

        async def on_enter() -> None:
            try:
                await original()
            except BaseException as exc:  # the user's code, even SystemExit: its FAIL
                if not own_failure(exc):
                    raise
                bridge.fail(exc)

        return on_enter

    def _step(self, text: str, calls: list[ToolCallRequest], usage: Usage | None) -> None:
        """Hand one model step to the bridge, the words held until then (``say``, and the LLM's
        words while ``on_enter`` runs) first, a blank line between. A held step's tokens are
        added to the next step's (its request is not counted apart); unknown stays unknown: a held
        step that reported none makes the next step's tokens unknown, never an undercount."""
        if self._opening and not calls:
            if text.strip():
                self._held.append(text)
            if usage is None:
                self._held_unknown = True
            else:
                self._held_usage = usage if self._held_usage is None else self._sum(self._held_usage, usage)
            return
        words = [*self._held, text] if text else self._held
        self._held = []
        if self._held_unknown:
            usage = None  # part of what this step stands for was never counted
        elif self._held_usage is not None and usage is not None:
            usage = self._sum(self._held_usage, usage)
        self._held_usage, self._held_unknown = None, False
        self.bridge.step("\n\n".join(words), calls, usage)

    @staticmethod
    def _sum(a: Usage, b: Usage) -> Usage:
        return Usage(a.prompt_tokens + b.prompt_tokens, a.completion_tokens + b.completion_tokens)

    def _node(self, agent: Any, original: Callable[..., Any]) -> Callable[..., Any]:
        from livekit.agents import llm

        bridge = self.bridge

        async def llm_node(chat_ctx: Any, tools: list[Any], model_settings: Any) -> AsyncIterator[Any]:
            added: list[Any] = []
            while True:
                text: list[str] = []
                calls: list[ToolCallRequest] = []
                usage: Usage | None = None
                try:
                    async for item in _chunks(original(chat_ctx, tools, model_settings)):
                        if isinstance(item, str):
                            text.append(item)
                            yield item
                        elif isinstance(item, llm.ChatChunk):
                            if item.usage is not None:  # the LLM's usage chunk (CompletionUsage)
                                usage = Usage(
                                    token_count(item.usage.prompt_tokens),
                                    token_count(item.usage.completion_tokens),
                                )
                            delta = item.delta
                            for part in delta.tool_calls if delta else []:
                                calls.append(
                                    ToolCallRequest(
                                        part.call_id or self._call_id(), part.name, part.arguments
                                    )
                                )
                            if delta is not None and delta.content:
                                text.append(delta.content)
                                yield delta.content
                except BaseException as exc:  # the user's LLM call, even SystemExit: its FAIL
                    if not own_failure(exc):
                        raise
                    bridge.fail(exc)
                    return
                self._step("".join(text), calls, usage)
                if not calls:
                    break
                results = [await bridge.result(c.call_id) for c in calls]
                for call, result in zip(calls, results, strict=True):
                    items = [
                        llm.FunctionCall(call_id=call.call_id, name=call.name, arguments=call.arguments),
                        llm.FunctionCallOutput(
                            call_id=call.call_id, name=call.name, output=result, is_error=False
                        ),
                    ]
                    chat_ctx.items.extend(items)
                    added.extend(items)
            if added:  # the turn's calls and results stay in the agent's history
                history = agent.chat_ctx.copy()
                history.items.extend(added)
                await agent.update_chat_ctx(history)

        return llm_node

    def _call_id(self) -> str:
        self._ids += 1
        return f"livekit-{self._ids}"

    async def aclose(self) -> None:
        """Close the AgentSession (the session ended)."""
        if self._session is not None:
            await self._session.aclose()


@dataclass(frozen=True)
class LiveKitFactory:
    """Makes a :class:`LiveKitAgent` per session from the user's ``make_agent``."""

    factory: Callable[..., Any]
    name: str

    @classmethod
    def load(cls, target: str, name: str) -> LiveKitFactory:
        """The factory of ``livekit:TARGET`` (``FILE.py:FACTORY``, ``MODULE:FACTORY`` or
        ``@NAME``). Raises UsageError when livekit-agents is not installed or the target does not
        load."""
        _require_livekit()
        return cls(resolve(target, "livekit"), name)

    def __call__(self, info: SessionInfo) -> LiveKitAgent:
        return LiveKitAgent(self.factory, info, self.name)
