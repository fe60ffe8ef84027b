"""One conversation between a user side and an agent side, refereed by the engine.

The engine connects to both sides, starts the session, and hands the turn back and forth
(the user opens when the scenario says so). Every tool call runs here: the agent's against the
scenario's DB, the user's (dual-side domains: device tools) against the user-side DB, each through
its own :class:`engine.core.toolruntime.ToolRuntime`; the domain's sync step runs after every
successful call of either side. The user side also has ``end_call``. Stop reasons:

- ``exit`` / ``transfer``: a tool ended the call (end_conversation, transfer_to_agent);
- ``user_hangup``: the user ended the call and the agent, given one closing turn, did not;
  ``user_stop`` / ``user_transfer`` / ``user_out_of_scope`` instead when the user said why
  (``turn.response.end_reason``: tau2's stop tokens, mapped by the built-in openai user side);
- ``timeout``: ``max_duration`` seconds of wall time, ``max_turns`` agent turns, or a side silent
  for ``turn_timeout_s`` seconds (also a side whose model request timed out);
- ``no_progress``: ``max_idle_turns`` turns in a row, both sides counted, that moved nothing: no
  tool call and nothing said, only a farewell, or the side's previous words again
  (``engine.session.stuck``: two sides trading goodbyes without ending the call);
- ``agent_error``: an external agent side sent an ``error`` frame (any code: its own model's
  failure is its own), or a built-in ``openai:`` agent's request was refused with HTTP 4xx;
- ``agent_disconnected``: an external agent side closed or dropped its connection, or could not
  be reached;
- ``error``: a side could not be reached, disconnected, broke the protocol or reported a failure,
  sent a reply too large to forward, or the session's byte budget (``max_session_bytes``) ran out.

Who is to blame (the agent: a FAIL; anything else: the verdict ``error``) is
``engine.session.sides.link.blame``'s rule.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from engine.core.model import USER_END_REASONS, Scenario, SessionResult
from engine.core.protocol import END_CALL_TOOL, ORJSON_OPTIONS
from engine.core.toolruntime import ToolRuntime
from engine.session.sides.link import MAX_FORWARD_BYTES, SideFailure, SideLink, Traffic, blame, forward_bytes
from engine.session.stuck import RefusedCalls, is_idle, refused_call
from engine.util.untrusted import bounded_count, one_line

MAX_SESSION_BYTES = 64 * 1024 * 1024
#: The agent's words forwarded to the user simulator in one turn are cut to this many characters,
#: with a visible marker (:func:`clip_for_user`; the transcript keeps them whole and records the
#: cut): an agent cannot push the user simulator's model request over its context length by
#: talking at length, and so turn its own failure into a ``user_simulator`` error.
MAX_USER_FORWARD_CHARS = 16_000


def clip_for_user(text: str, limit: int = MAX_USER_FORWARD_CHARS) -> str:
    """``text`` when at most ``limit`` characters, else its first ``limit`` and a marker saying how
    long the agent's turn was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... clipped by evalctl: the agent said {len(text)} characters]"


"""Default byte budget of one session (see SessionLimits.max_session_bytes)."""


@dataclass(frozen=True)
class SessionLimits:
    """Limits of one session. Seconds of wall time; ``max_turns`` counts agent turns (None = no
    limit); ``max_tool_rounds`` is passed to the sides (model steps with tool calls per turn);
    ``max_tool_calls_per_turn`` is enforced by the engine on any side (built-in or external): one
    more call in the same turn ends the session with stop reason ``timeout``; ``max_idle_turns``
    turns in a row (either side) that move nothing (``engine.session.stuck.is_idle``) end it with
    ``no_progress``: two sides trading goodbyes or empty turns would otherwise go on, each turn a
    paid request, until ``max_duration_s``."""

    max_duration_s: float
    turn_timeout_s: float = 300.0
    max_turns: int | None = None
    max_tool_rounds: int = 10
    connect_timeout_s: float = 10.0
    max_tool_calls_per_turn: int = 50
    max_idle_turns: int = 4
    #: Bytes of frames exchanged with both sides (utterances, tool calls and arguments, tool
    #: results); past it the session ends with stop reason ``error`` ("session byte budget").
    max_session_bytes: int = MAX_SESSION_BYTES
    #: 0 for a session's first run, k for its k-th regeneration (``evalctl run --regenerate``): sent
    #: to the sides as ``scenario.attempt`` (when above 0), for a user model's new seed.
    attempt: int = 0


@dataclass(frozen=True)
class SessionSetup:
    """What each side is told at session start: system prompts and OpenAI tool schemas."""

    agent_prompt: str
    user_prompt: str
    agent_tools: list[dict[str, Any]]
    user_tools: list[dict[str, Any]]


class _Stop(Exception):
    def __init__(self, reason: str, message: str | None = None, source: str | None = None):
        super().__init__(message or reason)
        self.reason = reason
        self.message = message
        self.source = source


#: Replaces the agent's link once connected (audio sessions: ``engine.session.voice.link.VoiceCall.wrap``).
LinkWrapper = Callable[[SideLink], SideLink]


class _Session:
    def __init__(
        self,
        scenario: Scenario,
        setup: SessionSetup,
        limits: SessionLimits,
        trial: int,
        wrap_agent: LinkWrapper | None = None,
        builtin: frozenset[str] = frozenset(),
    ):
        self.wrap_agent = wrap_agent
        self.builtin = builtin
        self.scenario = scenario
        self.setup = setup
        self.limits = limits
        self.trial = trial
        self.t0 = time.perf_counter()
        agent_db, user_db = scenario.session_dbs()
        self.runtime = ToolRuntime(scenario.tools, agent_db)
        self.user_runtime: ToolRuntime | None = None
        if scenario.user_tools is not None and user_db is not None:
            self.user_runtime = ToolRuntime(scenario.user_tools, user_db)
        plugin = scenario.domain.plugin
        self.result_text = plugin.result_text if plugin is not None else None
        if plugin is not None and plugin.sync is not None and user_db is not None:
            sync, agent_db = plugin.sync, self.runtime.db
            self.runtime.after_call = lambda: sync(agent_db, user_db)
            if self.user_runtime is not None:
                self.user_runtime.after_call = self.runtime.after_call
        self.result = SessionResult(
            scenario_name=scenario.name,
            trial=trial,
            stop_reason="error",
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        self.links: dict[str, SideLink] = {}
        #: Per-attempt sampling seeds by role, sent in session.start (``run_session``'s ``seeds``).
        self.seeds: dict[str, int] = {}
        self.ended: str | None = None  # exit / transfer / user_hangup, set by a tool
        self.engine_time_s = 0.0
        self.turns = {"agent": 0, "user": 0}
        #: The sides whose message the engine awaits, with when it began waiting (both while the
        #: sides start), and the seconds each side kept the engine waiting so far: who held the
        #: clock when ``max_duration`` ran out (:meth:`clock`).
        self.waiting: dict[str, float] = {}
        self.held = {"agent": 0.0, "user": 0.0}
        self.idle_turns = 0  # turns in a row that moved nothing (engine.session.stuck)
        self.clipped_turns: list[int] = []  # agent turns cut before the user side got them
        self.last_words: dict[str, str] = {}
        self.last_refused: dict[str, RefusedCalls] = {}  # each side's previous turn's refused calls
        self.traffic = Traffic(limits.max_session_bytes)

    def log(self, role: str, kind: str, content: Any) -> None:
        t = round(time.perf_counter() - self.t0, 3)
        self.result.transcript.append({"role": role, "type": kind, "content": content, "t": t})

    async def open(self, agent_uri: str, user_uri: str) -> None:
        timeout = self.limits.connect_timeout_s
        agent, user = await asyncio.gather(
            SideLink.open("agent", agent_uri, timeout, "agent" in self.builtin),
            SideLink.open("user", user_uri, timeout, "user" in self.builtin),
            return_exceptions=True,
        )
        for role, link in (("agent", agent), ("user", user)):
            if isinstance(link, SideLink):
                if role == "agent" and self.wrap_agent is not None:
                    link = self.wrap_agent(link)
                self.links[role] = link
                link.traffic = self.traffic
                link.builtin = role in self.builtin
        _raise_first((agent, user))
        _raise_first(await asyncio.gather(self._start("agent"), self._start("user"), return_exceptions=True))

    async def _start(self, role: str) -> None:
        link = self.links[role]
        s = self.scenario
        meta: dict[str, Any] = {
            "name": s.name,
            "domain": s.domain.name,
            "description": s.description,
            "record_id": s.record_id,
            "eva_id": s.record_id,
            "language": s.domain.language,
            "current_date": s.current_date,
            "trial": self.trial,
        }
        if self.limits.attempt > 0:
            meta["attempt"] = self.limits.attempt
        if role == "user":
            meta["starting_utterance"] = s.user.starting_utterance or None
        if role in self.seeds:
            meta["seed"] = self.seeds[role]
        start_id = await link.send(
            "session.start",
            session_id=f"{s.name}#{self.trial}",
            role=role,
            system_prompt=self.setup.agent_prompt if role == "agent" else self.setup.user_prompt,
            tools=self.setup.agent_tools if role == "agent" else self.setup.user_tools,
            scenario=meta,
            limits={
                "max_duration_s": self.limits.max_duration_s,
                "turn_timeout_s": self.limits.turn_timeout_s,
                "max_tool_rounds": self.limits.max_tool_rounds,
                "max_turns": self.limits.max_turns,
            },
        )
        ready = await self._await(link)
        self._expect(link, ready, "session.ready", start_id)
        backend = ready.get("backend")
        if backend:
            setattr(self.result, f"{role}_backend", one_line(backend, 200))
        endpoint = ready.get("endpoint")
        if isinstance(endpoint, str) and endpoint:
            link.endpoint = one_line(endpoint, 400)

    async def _await(self, link: SideLink) -> dict[str, Any]:
        """The side's next message, its wait counted to it (:attr:`held`)."""
        role = link.role
        self.waiting[role] = began = time.perf_counter()
        msg = await link.receive(self.limits.turn_timeout_s)  # cut short: the wait stays in waiting
        del self.waiting[role]
        self.held[role] += time.perf_counter() - began
        return msg

    def clock(self) -> tuple[bool, float, float]:
        """When ``max_duration`` runs out: whether the user side is being waited for, and the
        seconds the user and the agent side held the clock (waits in progress included)."""
        now = time.perf_counter()
        held = {role: spent + now - self.waiting.get(role, now) for role, spent in self.held.items()}
        return "user" in self.waiting, held["user"], held["agent"]

    def _expect(self, link: SideLink, msg: dict[str, Any], mtype: str, reply_to: str) -> None:
        if msg["type"] != mtype or msg.get("reply_to") != reply_to:
            raise _ProtocolBreak(link, f"expected {mtype} answering {reply_to}, got {msg['type']}", msg["id"])

    async def converse(self) -> str:
        """Alternate turns until the call ends; returns the stop reason."""
        speaker = "user" if self.scenario.user_speaks_first else "agent"
        utterance: str | None = None if speaker == "user" else self.scenario.kickoff
        while True:
            if (
                speaker == "agent"
                and self.limits.max_turns is not None
                and self.turns["agent"] >= self.limits.max_turns
            ):
                raise _Stop("timeout", f"max turns ({self.limits.max_turns} agent turns) reached")
            reply = await self.turn(speaker, utterance)
            if speaker == "agent" and self.ended not in ("exit", "transfer"):
                reply = {**reply, "text": self._bounded(reply["text"])}
            if self.ended in ("exit", "transfer"):
                return self.ended
            if speaker == "user" and (reply.get("end") or self.ended == "user_hangup"):
                self.ended = "user_hangup"
                reason = reply.get("end_reason") if reply.get("end") else None
                self.log("user", "hangup", {"reason": reason} if reason else None)
                await self.turn("agent", reply["text"] or None, closing=True)
                if self.ended in ("exit", "transfer"):
                    return self.ended
                return USER_END_REASONS.get(reason, "user_hangup") if reason else "user_hangup"
            # an audio session's caller answers what its recogniser heard (engine.session.voice.link)
            utterance = reply.get("heard", reply["text"]) if speaker == "agent" else reply["text"]
            speaker = "agent" if speaker == "user" else "user"

    def _bounded(self, text: str) -> str:
        """The agent's words of its latest turn as the user side gets them: cut to
        MAX_USER_FORWARD_CHARS (:func:`clip_for_user`), the cut recorded in the transcript
        (``clipped``: the turn, the characters said and forwarded)."""
        shown = clip_for_user(text)
        if shown != text:
            turn = self.turns["agent"] - 1
            self.clipped_turns.append(turn)
            cut = {"turn": turn, "chars": len(text), "forwarded": MAX_USER_FORWARD_CHARS}
            self.log("agent", "clipped", cut)
        return shown

    async def turn(self, role: str, utterance: str | None, closing: bool = False) -> dict[str, Any]:
        """One turn of ``role``: run its tool calls until it sends ``turn.response``. The user side
        refusing its model request (``backend_rejected``: HTTP 4xx, e.g. over the context length)
        after an agent turn over MAX_USER_FORWARD_CHARS is the agent's failure (stop reason
        ``error``, no error source): the agent made the user simulator's context that long."""
        try:
            return await self._turn(role, utterance, closing)
        except SideFailure as err:
            if role != "user" or err.what != "rejected" or not self.clipped_turns:
                raise
            turns = ", ".join(str(t) for t in self.clipped_turns)
            raise _Stop(
                "error",
                f"{err.message} (after agent turn(s) {turns} over the {MAX_USER_FORWARD_CHARS} characters "
                "forwarded per turn: the agent's failure)",
            ) from None

    async def _turn(self, role: str, utterance: str | None, closing: bool = False) -> dict[str, Any]:
        link = self.links[role]
        index = self.turns[role]
        self.turns[role] += 1
        turn_id = await link.send("turn.request", turn=index, utterance=utterance, closing=closing)
        calls = 0
        refused: list[tuple[str, str]] = []
        while True:
            msg = await self._await(link)
            if msg["type"] == "tool.call" and msg["reply_to"] == turn_id:
                calls += 1
                if calls > self.limits.max_tool_calls_per_turn:
                    raise _Stop(
                        "timeout",
                        f"{role} side made more than {self.limits.max_tool_calls_per_turn} tool calls "
                        f"in turn {index}",
                        blame(role, "conduct"),
                    )
                result = await self.tool_call(link, msg, index)
                if isinstance(result, dict) and result.get("status") == "error":
                    refused.append(refused_call(msg["name"], msg["arguments"]))
            elif msg["type"] == "turn.response" and msg["reply_to"] == turn_id:
                break
            else:
                raise _ProtocolBreak(link, f"unexpected {msg['type']} during turn {turn_id}", msg["id"])
        self._add_usage(role, msg.get("usage"))
        if role == "agent" and isinstance(msg.get("agent_state"), dict):
            self.log("agent", "agent_state", msg["agent_state"])  # the agent's own report: never scored
        self._finish_reasons(role, index, msg.get("usage"))
        text = msg["text"]
        if (size := forward_bytes(text)) > MAX_FORWARD_BYTES:  # blame the speaker, not the listener
            raise _Stop(
                "error",
                f"{role} side's reply is {size} bytes, over the {MAX_FORWARD_BYTES} bytes the engine "
                "forwards to the other side",
                blame(role, "conduct"),
            )
        if role == "agent" and text.strip():
            self.result.agent_turns += 1
        elif role == "user":
            self.result.user_turns += 1
        self.log(role, "utterance", text)
        idle = not msg.get("end") and is_idle(
            text, calls, self.last_words.get(role), tuple(refused), self.last_refused.get(role)
        )
        self.idle_turns = self.idle_turns + 1 if idle else 0
        self.last_words[role] = text
        self.last_refused[role] = tuple(refused)
        if self.idle_turns >= self.limits.max_idle_turns:
            raise _Stop(
                "no_progress",
                f"the conversation went nowhere: {self.idle_turns} turns in a row without a tool call "
                "that said nothing, only goodbye, or the same words again (or the same refused tool "
                "calls and words again), and nobody ended the call",
            )
        return msg

    async def tool_call(self, link: SideLink, msg: dict[str, Any], turn: int) -> dict[str, Any]:
        t0 = time.perf_counter()
        name, arguments = msg["name"], msg["arguments"]
        self.log(link.role, "tool_call", {"call_id": msg["call_id"], "name": name, "arguments": arguments})
        ended: str | None = None
        if self.ended in ("exit", "transfer") or (link.role == "user" and self.ended == "user_hangup"):
            result = {"status": "error", "error_type": "call_ended", "message": "The call has already ended."}
        elif link.role == "user":
            if name == END_CALL_TOOL:
                result, ended = {"status": "success", "message": "Call ended."}, "user_hangup"
            elif self.user_runtime is not None:
                result = as_sent(self.user_runtime.call(name, arguments).result)
                self.result.tool_calls.append(
                    {"name": name, "arguments": arguments, "result": result, "turn": turn, "side": "user"}
                )
            else:
                result = {
                    "status": "error",
                    "error_type": "tool_not_found",
                    "message": f"Tool '{name}' not found",
                }
        else:
            outcome = self.runtime.call(name, arguments)
            result, ended = as_sent(outcome.result), outcome.ended
            self.result.tool_calls.append(
                {"name": name, "arguments": arguments, "result": result, "turn": turn, "side": "agent"}
            )
        if ended:
            self.ended = ended
        self.log("tool", "tool_result", {"call_id": msg["call_id"], "name": name, "result": result})
        shown = {} if self.result_text is None else {"text": self.result_text(result)}
        self.engine_time_s += time.perf_counter() - t0
        await link.send(
            "tool.result", reply_to=msg["id"], call_id=msg["call_id"], result=result, ended=ended, **shown
        )
        return result

    def _finish_reasons(self, role: str, turn: int, usage: dict[str, Any] | None) -> None:
        """Record the turn's ``finish_reasons`` (one per model reply) in the transcript
        (``finish``: ``{"turn", "reasons", "cut_off"}``; ``cut_off`` when a reply stopped at the
        token limit, ``length``)."""
        reasons = usage.get("finish_reasons") if usage else None
        if not isinstance(reasons, list) or not reasons:
            return
        shown = [one_line(str(r), 40) for r in reasons[:1000]]
        self.log(role, "finish", {"turn": turn, "reasons": shown, "cut_off": "length" in shown})

    def _add_usage(self, role: str, usage: dict[str, Any] | None) -> None:
        if not usage:
            return
        entry = self.result.usage.setdefault(
            role, {"model": None, "prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
        )
        model = usage.get("model")
        entry["model"] = one_line(model, 200) if model else entry["model"]
        for key in ("prompt_tokens", "completion_tokens", "calls"):
            entry[key] += bounded_count(usage.get(key, 0))
        if usage.get("unreported"):  # requests whose tokens the side could not learn: unknown, not 0
            entry["unreported"] = entry.get("unreported", 0) + bounded_count(usage["unreported"])

    async def close(self, stop_reason: str, error: str | None) -> None:
        await asyncio.gather(*(link.close(stop_reason, error) for link in self.links.values()))


def _raise_first(outcomes: Any) -> None:
    """Raise the first exception among ``outcomes`` (the two sides' start, in agent, user order),
    an infrastructure failure before the agent's own: when both sides failed at once, the agent is
    not blamed for what the other side's failure may have caused."""
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    failed.sort(key=lambda o: not (isinstance(o, SideFailure) and o.source is not None))
    if failed:
        raise failed[0]


def as_sent(result: dict[str, Any]) -> dict[str, Any]:
    """The tool result as the side receives it, fixed at call time: a JSON round trip as the frame
    encodes it (``engine.core.protocol.encode``: orjson, the standard library for what orjson refuses),
    so ``tool_calls.json`` and ``transcript.jsonl`` record what the side was sent even if a
    handler handed out a live DB object that a later call changes."""
    try:
        return orjson.loads(orjson.dumps(result, default=str, option=ORJSON_OPTIONS))
    except TypeError:
        return json.loads(json.dumps(result, ensure_ascii=False, default=str))


class _ProtocolBreak(SideFailure):
    def __init__(self, link: SideLink, message: str, reply_to: str | None):
        super().__init__(
            "error",
            f"{link.role} side broke the protocol: {message}",
            blame(link.role, "broke", link.builtin),
        )
        self.link = link
        self.reply_to = reply_to


async def run_session(
    scenario: Scenario,
    setup: SessionSetup,
    agent_uri: str,
    user_uri: str,
    limits: SessionLimits,
    trial: int = 1,
    wrap_agent: LinkWrapper | None = None,
    builtin: frozenset[str] = frozenset(),
    seeds: Mapping[str, int] | None = None,
) -> SessionResult:
    """Run one conversation of ``scenario`` between the sides at ``agent_uri`` / ``user_uri``
    (``ws://host:port``). Never raises for a side's failure: it becomes the stop reason, with the
    message in ``SessionResult.error`` and, when it is infrastructure's (not the agent's),
    ``error_source`` (``builtin``: the roles the run serves itself, see
    ``engine.session.sides.link.blame``). Cancellation (Ctrl-C) is propagated after closing the sides.
    ``wrap_agent`` replaces the agent's link once connected (an audio session's link). ``seeds``
    (role -> integer): a per-attempt sampling seed sent to that side in ``session.start``'s
    ``scenario.seed`` (a built-in ``openai:`` side sends it as its requests' ``seed``, e.g. a
    regenerated caller's new seed: ``seeds={"user": 2}``).
    """
    session = _Session(scenario, setup, limits, trial, wrap_agent, builtin)
    session.seeds = dict(seeds or {})
    session.result.agent_backend, session.result.user_backend = (
        agent_uri,
        user_uri,
    )  # until session.ready names them
    error: str | None = None
    source: str | None = None
    try:
        async with asyncio.timeout(limits.max_duration_s):
            await session.open(agent_uri, user_uri)
            stop = await session.converse()
    except _Stop as err:
        stop, error, source = err.reason, err.message, err.source
    except _ProtocolBreak as err:
        await err.link.fail("unexpected_message", err.message, err.reply_to)
        stop, error, source = err.kind, err.message, err.source
    except SideFailure as err:
        stop, error, source = err.kind, err.message, err.source
    except TimeoutError:
        stop, error = "timeout", f"max_duration ({limits.max_duration_s:g} s) reached"
        answering, user_s, agent_s = session.clock()
        if answering:
            error += " while the user side was answering"
        # the user simulator's failure, not the agent's, when it took most of the time: an agent
        # that stalls until just before the end and then hands the turn over is still to blame
        if user_s > agent_s:
            error += f" (the user side took {user_s:.1f} s of it, the agent {agent_s:.1f} s)"
            source = blame("user", "silent", "user" in builtin)
    except asyncio.CancelledError:
        await asyncio.shield(session.close("error", "run interrupted"))
        raise
    except Exception as err:  # an engine bug: this session fails with the message, the run goes on
        stop, error, source = "error", f"engine error: {type(err).__name__}: {err}", "engine"
    await session.close(stop, error)
    result = session.result
    result.stop_reason = stop  # type: ignore[assignment]
    result.error = one_line(error) if error else None  # may quote a side: one line, bounded
    result.error_source = source if result.error else None
    result.ended_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    result.final_db = session.runtime.db
    result.user_db = session.user_runtime.db if session.user_runtime is not None else None
    result.actions = list(session.runtime.actions)
    result.duration_s = time.perf_counter() - session.t0
    result.engine_time_s = session.engine_time_s + sum(link.engine_time_s for link in session.links.values())
    session.log("system", "end", {"stop_reason": stop, "error": result.error})
    return result
