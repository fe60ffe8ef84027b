"""``rtvi+ws://HOST:PORT``: an RTVI bot, as NVIDIA NeMo Voice-Agent's eval bots are, as the agent.

The bot holds its own prompt, tools and DB; the adapter drives it over RTVI as NeMo's evaluation
bridge does (wire: :mod:`engine.session.backends.rtvi_wire`):

1. ``client-ready`` -> ``bot-ready``; ``client-message`` ``reset``;
2. ``update_system_prompt`` (``prompt``: the rendered agent prompt, ``tools``: the JSON text
   ``{bot tool name: {}}`` of the scenario's tools through the spec's ``rtvi.yaml`` map,
   ``add_suffix: false``, ``tool_domain``);
3. ``apply_initialization`` (``domain``, ``shared_state_init``: JSON text of ``{"db": the
   scenario's initial DB, "scenario": its name, "current_date": ...}``, ``actions: []``);
4. per agent turn ``send-text`` (``content``: the caller's words, ``run_immediately: true``,
   ``audio_response: false``), then the bot's pipecat RTVI events are read until the turn is done:
   each LLM response (``bot-llm-started`` .. ``bot-llm-stopped``) is one model step, its
   ``bot-llm-text`` its words and its ``llm-function-call-in-progress`` messages its tool calls
   (``arguments`` an object: sent to the engine as its JSON; a string: sent raw). A step without
   a tool call ends the turn. A call whose arguments the bot could not parse is reported by a
   ``server-message`` ``{"type": "function-call-unparsed", "index": its position among the
   response's calls, "tool_call_id", "function_name", "arguments": raw text}`` (pipecat
   itself drops such a call: without that message the engine never sees it). An RTVI ``error``
   (fatal or not) or ``error-response`` the bot sends meanwhile ends the session at once: the
   agent's FAIL (``agent_error``) with the bot's words;
5. after the first turn and each turn with a tool call ``get_scenario_summary``: the bot's
   ``db_hash`` goes back with the turn (``turn.response.agent_state``) and is recorded beside the
   engine's.

The calls the bot ran itself are returned step by step, so the engine runs each on its own DB:
``db_state_match`` is the engine's, and the bot's results are not used. The bot serves one client
at a time: sessions of one process take turns on each URL, and a connection the bot refuses
(close code 1013, another client is connected) is tried again after 0.05 s, doubling up to 2 s,
for at most ``CONNECT_BUDGET_S`` seconds. The scheme is blamed like an external side: whatever
the bot does or fails to do is the agent's FAIL (``agent_error`` / ``agent_disconnected``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from engine.core.model import Scenario
from engine.session.backends import BackendError, BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage
from engine.session.backends.rtvi_wire import ToolMap, decode_frame, encode_frame, envelope, load_tool_map
from engine.util.untrusted import one_line

#: Close code of a bot that already has a client (pipecat's single-client transport).
TRY_AGAIN_LATER = 1013
#: Seconds spent retrying a refused connection before the session fails.
CONNECT_BUDGET_S = 120.0
#: Seconds to wait for one control-message answer (bot-ready, a client-message response).
CONTROL_TIMEOUT_S = 10.0
#: The server-message type of a call whose arguments the bot could not parse (raw text kept).
UNPARSED = "function-call-unparsed"
#: The RTVI events by which a bot shows it took a ``send-text`` in (pipecat's RTVIObserver).
HEARD = frozenset({"user-input", "user-llm-text"})
#: The RTVI messages by which a bot says it failed (pipecat's ``RTVIErrorMessage``, fatal or not,
#: and ``RTVIErrorResponse``): during a turn, the agent's FAIL at once with the bot's words.
BOT_ERRORS = frozenset({"error", "error-response"})
#: Largest frame read from the bot (pipecat's own cap is 1 MB).
MAX_FRAME_BYTES = 16 * 1024 * 1024

_locks: dict[tuple[int, str], asyncio.Lock] = {}


def _lock(uri: str) -> asyncio.Lock:
    """One lock per (event loop, bot URL): this process's sessions take turns on a bot."""
    key = (id(asyncio.get_running_loop()), uri)
    found = _locks.get(key)
    if found is None:
        found = _locks[key] = asyncio.Lock()
    return found


@dataclass
class _Step:
    """One LLM response of the bot: its words, its calls, how many it started and reported."""

    text: list[str] = field(default_factory=list)
    calls: list[ToolCallRequest] = field(default_factory=list)
    started: int = 0
    reported: int = 0
    #: Calls whose arguments the bot could not parse, with their position among the step's calls.
    unparsed: list[tuple[int, ToolCallRequest]] = field(default_factory=list)

    def all_calls(self) -> list[ToolCallRequest]:
        """The step's calls in the model's order: the unparsed ones put back at their index."""
        calls = list(self.calls)
        for at, call in sorted(self.unparsed, key=lambda u: u[0]):
            calls.insert(min(at, len(calls)), call)
        return calls


@dataclass
class RtviBackend:
    """One session with the bot at ``uri`` (``ws://HOST:PORT``) for ``scenario``."""

    uri: str
    scenario: Scenario
    info: SessionInfo
    tool_map: ToolMap
    name: str
    _ws: ClientConnection | None = None
    _held: asyncio.Lock | None = None
    _pending: list[_Step] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    state: dict[str, Any] | None = None

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        """Round 0 sends the caller's words and reads the bot's whole turn; each round returns the
        next model step of it (its words and tool calls). Raises BackendError when the bot cannot
        be reached, closes the connection or breaks RTVI."""
        if turn.round == 0:
            if self._ws is None:
                await self._open()
            said = messages[-1].get("content") if messages and messages[-1].get("role") == "user" else None
            if said is None and turn.index == 0:  # the agent opens the call: its kickoff, if any
                said = self.scenario.kickoff
            self._pending = await self._turn(str(said or ""))
            if self.state is None or any(step.all_calls() for step in self._pending):
                self.state = await self._summary()  # its DB changes through tool calls only
        if not self._pending:
            return BackendReply(usage=Usage(), state=self.state)
        step = self._pending.pop(0)
        return BackendReply(
            text=" ".join(t for t in step.text if t),
            tool_calls=step.all_calls(),
            usage=Usage(calls=1),
            state=self.state,
        )

    async def aclose(self) -> None:
        """End the session: close the connection, let the next session of this process in."""
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await ws.close()
        held, self._held = self._held, None
        if held is not None and held.locked():
            held.release()

    # -- connection and set-up ---------------------------------------------------------------

    async def _open(self) -> None:
        self._held = _lock(self.uri)
        await self._held.acquire()
        deadline = time.monotonic() + CONNECT_BUDGET_S
        delay = 0.05
        while True:
            try:
                self._ws = await connect(
                    self.uri, max_size=MAX_FRAME_BYTES, compression=None, open_timeout=10
                )
                await self._send("client-ready", {"version": "1.1.0", "about": {"library": "evalctl"}})
                await self._await_type("bot-ready")
                break
            except ConnectionClosed as err:
                code = err.rcvd.code if err.rcvd is not None else None
                if code != TRY_AGAIN_LATER or time.monotonic() + delay > deadline:
                    raise BackendError(
                        f"{self.name}: the bot closed the connection ({_closed(err)})"
                    ) from None
            except (OSError, InvalidHandshake, TimeoutError) as err:
                raise BackendError(f"{self.name}: cannot connect ({type(err).__name__}: {err})") from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
        await self._request("reset", {})
        names: dict[str, dict[str, Any]] = {
            self.tool_map.bot_name(t["function"]["name"]): {} for t in self.info.tools if "function" in t
        }
        await self._request(
            "update_system_prompt",
            {
                "prompt": self.info.system_prompt,
                "tools": json.dumps(names),
                "add_suffix": False,
                "tool_domain": self.tool_map.tool_domain,
            },
        )
        init = {
            "db": self.scenario.initial_db,
            "scenario": self.scenario.name,
            "current_date": self.scenario.current_date,
        }
        answer = await self._request(
            "apply_initialization",
            {
                "domain": self.tool_map.tool_domain,
                "shared_state_init": json.dumps(init, default=str),
                "actions": [],
            },
        )
        if not isinstance(answer, Mapping) or answer.get("success") is not True:
            errors = answer.get("errors") if isinstance(answer, Mapping) else answer
            raise BackendError(f"{self.name}: apply_initialization failed: {str(errors)[:300]}")

    async def _send(self, message_type: str, data: Any) -> str:
        assert self._ws is not None
        msg_id = f"evalctl-{next(self._ids)}"
        await self._ws.send(encode_frame(envelope(message_type, msg_id, data)))
        return msg_id

    async def _recv(self, timeout: float | None) -> dict[str, Any]:
        """The bot's next RTVI message (other frames skipped)."""
        assert self._ws is not None
        while True:
            try:
                async with asyncio.timeout(timeout):
                    raw = await self._ws.recv()
            except ConnectionClosed as err:
                raise BackendError(f"{self.name}: the bot closed the connection ({_closed(err)})") from None
            except TimeoutError:
                raise BackendError(
                    f"{self.name}: no answer from the bot in {timeout} s", timeout=True
                ) from None
            try:
                msg = decode_frame(raw)
            except ValueError as err:
                raise BackendError(f"{self.name}: {err}") from None
            if msg is not None:
                return msg

    async def _await_type(self, message_type: str) -> dict[str, Any]:
        while True:
            msg = await self._recv(CONTROL_TIMEOUT_S)
            if msg["type"] == message_type:
                return msg

    async def _request(self, name: str, args: Mapping[str, Any]) -> Any:
        """One ``client-message`` and the ``d`` of its ``server-response``. Raises BackendError
        on an ``error-response``."""
        msg_id = await self._send("client-message", {"t": name, "d": dict(args)})
        while True:
            msg = await self._recv(CONTROL_TIMEOUT_S)
            if msg.get("id") != msg_id and msg["type"] != "error":
                continue
            data = msg.get("data")
            if msg["type"] == "error-response":
                error = data.get("error") if isinstance(data, Mapping) else data
                raise BackendError(f"{self.name}: {name} refused: {str(error)[:300]}")
            if msg["type"] == "error":  # the bot failed meanwhile: no answer will come
                shown = _bot_error("error", data if isinstance(data, Mapping) else {})
                raise BackendError(f"{self.name}: the bot reported {shown} during {name}")
            if msg["type"] == "server-response":
                return data.get("d") if isinstance(data, Mapping) else None

    async def _summary(self) -> dict[str, Any]:
        answer = await self._request("get_scenario_summary", {"include_db": False})
        found = answer.get("db_hash") if isinstance(answer, Mapping) else None
        return {"db_hash": found if isinstance(found, str) and len(found) <= 200 else None}

    # -- one turn ----------------------------------------------------------------------------

    async def _turn(self, text: str) -> list[_Step]:
        """Send the caller's words; the bot's model steps until one without a tool call. pipecat
        reports a step's calls as ``llm-function-call-started`` inside it and their arguments
        (``llm-function-call-in-progress``) as they run, after ``bot-llm-stopped``: a step is
        complete when every started call has its arguments. What the bot sends before it shows it
        took the words in (``user-input`` or ``user-llm-text``, :data:`HEARD`) is dropped: an
        extra LLM run of the previous turn (pipecat may re-prompt once more after parallel calls)
        must not be read as this turn's answer."""
        options = {"run_immediately": True, "audio_response": False}
        await self._send("send-text", {"content": text, "options": options})
        steps: list[_Step] = []
        step: _Step | None = None
        heard = False
        while True:
            msg = await self._recv(None)  # the session's turn timeout bounds the wait
            kind, data = msg["type"], msg.get("data")
            data = data if isinstance(data, Mapping) else {}
            if kind in BOT_ERRORS:  # fatal or not, the bot says it failed: the turn is lost
                raise BackendError(f"{self.name}: the bot reported {_bot_error(kind, data)}")
            if not heard:  # what comes before the bot took these words in is the last turn's tail
                heard = kind in HEARD
                continue
            last = step or (steps[-1] if steps else None)
            if kind == "bot-llm-started":
                step = _Step()
            elif kind == "bot-llm-text" and step is not None:
                step.text.append(str(data.get("text", "")))
            elif kind == "llm-function-call-started" and last is not None:
                last.started += 1
            elif kind == "llm-function-call-in-progress" and last is not None:
                last.calls.append(self._call(data, data.get("arguments")))
                last.reported += 1
            elif kind == "server-message" and data.get("type") == UNPARSED and last is not None:
                index = data.get("index")
                at = index if isinstance(index, int) and index >= 0 else len(last.calls) + len(last.unparsed)
                last.unparsed.append((at, self._call(data, str(data.get("arguments", "")))))
            elif kind == "bot-llm-stopped" and step is not None:
                steps.append(step)
                step = None
            if (
                step is None
                and steps
                and steps[-1].reported >= steps[-1].started
                and not steps[-1].all_calls()
            ):
                return steps

    def _call(self, data: Mapping[str, Any], arguments: Any) -> ToolCallRequest:
        call_id = str(data.get("tool_call_id") or f"rtvi-{next(self._ids)}")
        name = self.tool_map.engine_name(str(data.get("function_name") or ""))
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        return ToolCallRequest(call_id, name, raw)


def _bot_error(kind: str, data: Mapping[str, Any]) -> str:
    """How an RTVI ``error`` / ``error-response`` reads in a message: ``an error (fatal): TEXT``
    (the bot's own words, at most 300 characters)."""
    fatal = " (fatal)" if data.get("fatal") is True else ""
    what = "an error-response" if kind == "error-response" else f"an error{fatal}"
    return f"{what}: {one_line(str(data.get('error') or data.get('message') or 'no message'), 300)}"


def _closed(err: ConnectionClosed) -> str:
    if err.rcvd is None:
        return "no close frame"
    return f"code {err.rcvd.code}" + (f": {err.rcvd.reason}" if err.rcvd.reason else "")


@dataclass(frozen=True)
class RtviFactory:
    """Makes the :class:`RtviBackend` of each session of the bot at ``uri`` (``name`` the spec)."""

    uri: str
    name: str
    scenarios: Mapping[str, Scenario]

    def __call__(self, info: SessionInfo) -> RtviBackend:
        scenario = self.scenarios.get(str(info.scenario.get("name", "")))
        if scenario is None:
            raise LookupError(f"no scenario named {info.scenario.get('name')!r}")
        return RtviBackend(self.uri, scenario, info, tool_map(scenario), self.name)


_MAPS: dict[tuple[str, ...], ToolMap] = {}


def tool_map(scenario: Scenario) -> ToolMap:
    """The scenario's domain's tool-name map (read once per spec folder and process). Raises
    UsageError for a broken ``rtvi.yaml``."""
    domain = scenario.domain
    key = (domain.name, str(domain.spec_dir), *map(str, domain.parent_dirs))
    found = _MAPS.get(key)
    if found is None:
        found = _MAPS[key] = load_tool_map(domain)
    return found
