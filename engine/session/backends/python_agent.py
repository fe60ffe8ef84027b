"""``python:FILE.py:FACTORY`` (or ``python:MODULE:FACTORY``): an agent written as a Python
callable, run in the side server's process.

The interface (docs/agents.md, "Python callable")::

    def make_agent(session: InprocSession, tools: ToolCaller) -> AgentTurn: ...
    async def agent_turn(caller_line: str) -> str | None: ...

``make_agent`` is called once per session with the scenario's system prompt and tool schemas
(:class:`engine.session.backends.bridge.InprocSession`) and a :class:`ToolCaller`; it returns the
coroutine function that answers each caller line with the agent's words. Inside it,
``await tools.call(name, arguments)`` runs one tool on the engine's scenario DB and returns its
result text (``arguments``: the raw JSON text, never repaired, or a dict), ``await
tools.call_many([(name, arguments), ...])`` runs a batch of parallel calls and returns their
results in order (``say=TEXT``: words said in the same model step as the calls). Calling the
scenario's hang-up tool (``end_conversation``) ends the call after it runs. What the agent
raises, and a reply that is not a string (or None), is the agent's FAIL; so is a turn the agent's
code cancels itself (``raise asyncio.CancelledError``, or ``asyncio.current_task().cancel()``),
at once: only evalctl's own cancellation of a turn (the next turn, the session's end, Ctrl-C) is
not the agent's.

:func:`register_agent` registers a factory object directly and returns the spec string that
names it (``python:@NAME``), for the Python API; a registered factory lives in this process only
(a run over several worker processes needs the ``FILE.py:FACTORY`` form).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.session.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo
from engine.session.backends.bridge import (
    InprocSession,
    ToolBridge,
    load_factory,
    raw_arguments,
)
from engine.util.errors import UsageError

#: One turn of an agent: the caller's line in, the agent's words out.
AgentTurn = Callable[[str], Awaitable["str | None"]]

_REGISTERED: dict[str, Callable[..., Any]] = {}
_NAMES = itertools.count(1)


def register_agent(factory: Callable[..., Any], name: str | None = None) -> str:
    """Register ``factory`` (the ``make_agent(session, tools)`` of the module doc) under ``name``
    (default: ``agentN``) and return the ``--agent`` spec naming it, ``python:@NAME``. Registering
    a name again replaces its factory. Raises UsageError when ``factory`` is not callable."""
    if not callable(factory):
        raise UsageError(f"register_agent: {factory!r} is not callable")
    key = name or f"agent{next(_NAMES)}"
    if not key.replace("_", "").replace("-", "").isalnum():
        raise UsageError(f"register_agent: name {key!r} must be letters, digits, '-' or '_'")
    _REGISTERED[key] = factory
    return f"python:@{key}"


def resolve(target: str, scheme: str = "python") -> Callable[..., Any]:
    """The factory a ``python:`` spec's arguments name: ``@NAME`` (registered), else
    :func:`engine.session.backends.bridge.load_factory`. Raises UsageError."""
    if target.startswith("@"):
        factory = _REGISTERED.get(target[1:])
        if factory is None:
            raise UsageError(
                f"backend '{scheme}:{target}': no agent registered as {target[1:]!r} in this process"
                " (register_agent; a run over worker processes needs FILE.py:FACTORY)"
            )
        return factory
    return load_factory(target, scheme)


@dataclass
class ToolCaller:
    """Runs the agent's tool calls on the engine (through the session's :class:`ToolBridge`)."""

    bridge: ToolBridge
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    async def call(self, name: str, arguments: str | Mapping[str, Any] = "{}", say: str = "") -> str:
        """Run tool ``name`` with ``arguments`` (raw JSON text or a dict); its result text.
        ``say``: words the agent says with the call (one model step: the caller hears them even
        when the call ends it)."""
        return (await self.call_many([(name, arguments)], say=say))[0]

    async def call_many(
        self, calls: Sequence[tuple[str, str | Mapping[str, Any]]], say: str = ""
    ) -> list[str]:
        """Run a batch of parallel calls ``(name, arguments)`` (with the words ``say``); their
        result texts in order. Raises TypeError when ``say`` is not a string (the agent's FAIL)."""
        if not isinstance(say, str):
            error = TypeError(f"tools.call: say must be a string, not {type(say).__name__}")
            self.bridge.fail(error)  # the agent's FAIL even when its code catches this
            raise error
        if not calls:
            return []
        requests = [
            ToolCallRequest(f"py-{next(self._ids)}", str(name), raw_arguments(args)) for name, args in calls
        ]
        self.bridge.step(say, requests)
        return list(await asyncio.gather(*(self.bridge.result(r.call_id) for r in requests)))


class PythonAgent:
    """The backend of one session of a ``python:`` agent."""

    def __init__(self, factory: Callable[..., Any], info: SessionInfo, name: str):
        self.name = name
        self.bridge = ToolBridge()
        self._factory = factory
        self._info = info
        self._turn_fn: AgentTurn | None = None
        self._task: asyncio.Task[None] | None = None
        #: The turn tasks evalctl cancelled (their CancelledError is not the agent's failure).
        self._stopped: weakref.WeakSet[asyncio.Task[None]] = weakref.WeakSet()

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        return await self.bridge.respond(messages, turn, self._begin)

    async def _begin(self, text: str) -> None:
        self._stop()
        self._task = asyncio.ensure_future(self._run(text))

    def _stop(self) -> None:
        """Cancel the running turn, if any: evalctl's cancellation (a new turn, the session's
        end), told apart from one the agent's code made (:meth:`_cancelled_by_agent`)."""
        if self._task is not None and not self._task.done():
            self._stopped.add(self._task)
            self._task.cancel()

    def _cancelled_by_agent(self) -> bool:
        """Whether the CancelledError ending the turn is the agent's code's own doing: it raised
        it, or cancelled its own turn's task (``asyncio.current_task().cancel()``), which evalctl
        did not (:meth:`_stop`). That turn is then the agent's FAIL at once, not a silence until
        ``--turn-timeout``; the task's cancellation request is withdrawn (``uncancel``)."""
        task = asyncio.current_task()
        if task is None or task in self._stopped:
            return False
        if task.cancelling():
            task.uncancel()
        return True

    async def _run(self, text: str) -> None:
        try:
            if self._turn_fn is None:
                session = InprocSession(
                    self._info.system_prompt,
                    list(self._info.tools),
                    dict(self._info.scenario),
                    self._info.role,
                )
                made = self._factory(session, ToolCaller(self.bridge))
                if not callable(made):
                    raise TypeError(f"the factory returned {type(made).__name__}, not an async callable")
                self._turn_fn = made
            pending = self._turn_fn(text)
            if not inspect.isawaitable(pending):  # a plain def: its value, not a coroutine
                raise TypeError(
                    f"the turn function returned {type(pending).__name__} instead of an awaitable: "
                    "define it with `async def turn(line)`"
                )
            reply = await pending
            if reply is not None and not isinstance(reply, str):
                raise TypeError(f"a turn returned {type(reply).__name__}, not a string")
            self.bridge.step(reply or "", [])
        except asyncio.CancelledError as exc:
            if not self._cancelled_by_agent():
                raise  # evalctl stopped the turn
            self.bridge.fail(exc)
        except BaseException as exc:  # the agent's own failure, even SystemExit: its FAIL
            self.bridge.fail(exc)

    async def aclose(self) -> None:
        """Stop the agent's running turn, if any (the session ended)."""
        if self._task is not None and not self._task.done():
            self._stop()
            await asyncio.gather(self._task, return_exceptions=True)


@dataclass(frozen=True)
class PythonFactory:
    """Makes a :class:`PythonAgent` per session from the resolved ``factory``."""

    factory: Callable[..., Any]
    name: str

    def __call__(self, info: SessionInfo) -> PythonAgent:
        return PythonAgent(self.factory, info, self.name)
