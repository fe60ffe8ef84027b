"""The bridge between an in-process agent that calls tools through a callback and the
:class:`engine.session.backends.Backend` protocol, shared by the ``python:``, ``pipecat:`` and
``livekit:`` schemes.

A side server asks its backend for one model step at a time and runs the step's tool calls on the
engine itself (``engine.session.sides.server``); an in-process agent instead awaits each tool's
result inside its own code. :class:`ToolBridge` turns one into the other: the agent announces a
step (:meth:`ToolBridge.step`: its words and the batch of tool calls it made, each with the raw
argument text the model sent), then awaits each call's result (:meth:`ToolBridge.result`); the
backend's ``respond`` returns that step to the side server, and the next ``respond`` (round + 1)
brings the engine's results back, which resolve the awaited calls. A step with tool calls past the
turn's ``max_tool_rounds`` (``TurnInfo.last_round``), and words or arguments that are not valid
UTF-8 text, are the agent's failure too. Whatever the agent raises is
handed to ``respond`` (:meth:`ToolBridge.fail`) and raised there as a :class:`BackendError`: the
agent's FAIL (these schemes are not evalctl's own code: ``registry.evalctl_own``), its detail one
line naming the exception (``engine.session.backends.failure_text``).

:class:`InprocSession` is what every in-process agent factory is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import json
import os
import site
import sys
import sysconfig
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.session.backends import BackendError, BackendReply, ToolCallRequest, TurnInfo, Usage
from engine.session.backends.failure_text import agent_failed, exception_line
from engine.util.errors import UsageError

#: The result an agent's pending tool call gets when the engine never ran it (the turn's round cap
#: dropped it, or a new turn started first).
NOT_RUN = json.dumps({"error": "tool call not run"})


@dataclass(frozen=True)
class InprocSession:
    """What an in-process agent factory is given for one session: ``system_prompt`` (the rendered
    agent prompt), ``tools`` (the scenario's tool schemas, OpenAI ``{"type": "function",
    "function": {...}}`` dicts), ``scenario`` (the scenario's metadata as ``session.start`` sends
    it: ``name``, ``starting_utterance``, ...) and ``role`` (``agent``)."""

    system_prompt: str
    tools: list[dict[str, Any]]
    scenario: dict[str, Any] = field(default_factory=dict)
    role: str = "agent"

    @property
    def tool_names(self) -> list[str]:
        """The scenario's tool names, in schema order."""
        return [str(t.get("function", {}).get("name", "")) for t in self.tools]


@dataclass
class _Step:
    text: str
    calls: list[ToolCallRequest]
    #: The step's model tokens as the agent's framework reported them; None: not reported.
    usage: Usage | None = None


class ToolBridge:
    """One session's step hand-over between an in-process agent and the side server (module doc).

    Agent side: :meth:`step`, :meth:`result`, :meth:`fail`. Backend side: :meth:`respond`, given
    ``begin(text)``, the coroutine that hands a new caller line to the agent. One instance serves
    one session, on one event loop."""

    def __init__(self) -> None:
        self._steps: asyncio.Queue[_Step | BaseException] = asyncio.Queue()
        self._results: dict[str, asyncio.Future[str]] = {}
        self._failed: BaseException | None = None

    # --- the agent's side ---------------------------------------------------------------------

    def step(self, text: str, calls: list[ToolCallRequest], usage: Usage | None = None) -> None:
        """The agent finished one model step: it said ``text`` and made ``calls`` (raw arguments,
        as the model sent them); ``usage``: the step's prompt and completion tokens as the model
        server counted them (its ``calls`` ignored: a step is one request), None when the agent's
        framework did not report them (the step's tokens are then unknown, never 0). The calls'
        results are then awaited with :meth:`result`."""
        for call in calls:
            self._future(call.call_id)
        self._steps.put_nowait(_Step(text, list(calls), usage))

    async def result(self, call_id: str) -> str:
        """The engine's result of call ``call_id`` (the text the model is shown), once it ran."""
        return await self._future(call_id)

    def fail(self, error: BaseException) -> None:
        """The agent failed (raised, or answered what is not a step): the pending ``respond``
        raises a BackendError naming it. The same error failed twice is handed over once."""
        if error is self._failed:
            return
        self._failed = error
        self._steps.put_nowait(error)

    def _future(self, call_id: str) -> asyncio.Future[str]:
        future = self._results.get(call_id)
        if future is None:
            future = self._results[call_id] = asyncio.get_running_loop().create_future()
        return future

    # --- the side server's side ---------------------------------------------------------------

    async def respond(
        self,
        messages: list[dict[str, Any]],
        turn: TurnInfo,
        begin: Callable[[str], Awaitable[None]],
    ) -> BackendReply:
        """The agent's next step. Round 0: the caller's new line(s) (the trailing ``user``
        messages, joined by a newline) go to ``begin``; a later round: the trailing ``tool``
        messages resolve the awaited calls. Raises BackendError when the agent failed (its message:
        ``engine.session.backends.failure_text.agent_failed``)."""
        if turn.round == 0:
            self._settle_pending()
            await begin("\n".join(_trailing(messages, "user")))
        else:
            for message in reversed(_trailing_messages(messages, "tool")):
                future = self._results.get(str(message.get("tool_call_id")))
                if future is not None and not future.done():
                    future.set_result(str(message.get("content", "")))
        item = await self._steps.get()
        if isinstance(item, BaseException):
            raise BackendError(agent_failed(item, raised_at(item))) from item
        _check_text(item)
        if item.calls and turn.last_round:
            names = ", ".join(repr(c.name) for c in item.calls)
            raise BackendError(
                f"the agent made tool calls in more than {turn.round} model steps of turn {turn.index}"
                f" (the max_tool_rounds cap, --max-tool-rounds): {names} not run"
            )
        if item.usage is None:
            spent = Usage(calls=1, unreported=1)
        else:
            spent = Usage(item.usage.prompt_tokens, item.usage.completion_tokens, calls=1)
        return BackendReply(text=item.text, tool_calls=item.calls, usage=spent)

    def _settle_pending(self) -> None:
        for future in self._results.values():
            if not future.done():
                future.set_result(NOT_RUN)
        self._results.clear()
        failed: BaseException | None = None
        while not self._steps.empty():  # a step of the last turn the side never asked for
            item = self._steps.get_nowait()
            failed = failed or (item if isinstance(item, BaseException) else None)
        if failed is not None:  # the agent failed between turns: this turn's answer
            self._steps.put_nowait(failed)


#: Where evalctl's own code and installed packages live: a frame there is not the agent's code.
_NOT_YOURS = tuple(
    str(Path(p).resolve()) + os.sep
    for p in {
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")),
        *site.getsitepackages(),
        str(Path(__file__).resolve().parents[2]),  # engine/
    }
)


def raised_at(exc: BaseException) -> str:
    """`` (raised at FILE:LINE in FUNCTION)``: the innermost frame of ``exc``'s traceback in the
    agent's own code (not evalctl's, the standard library's or an installed package's: a library's
    error is shown where the agent called it); FILE relative to the working folder when under it.
    Empty when no frame is the agent's (evalctl's own checks say what to fix).
    The FAIL then names the line to fix: the traceback itself is not kept (it would hold the
    agent's locals in its frames)."""
    mine = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not str(Path(f.filename).resolve()).startswith(_NOT_YOURS)
    ]
    if not mine:
        return ""
    frame = mine[-1]
    path = Path(frame.filename)
    with contextlib.suppress(ValueError):
        path = path.resolve().relative_to(Path.cwd())
    return f" (raised at {path}:{frame.lineno} in {frame.name})"


def _check_text(step: _Step) -> None:
    """Raise BackendError when the step's words, a tool name or arguments are not valid UTF-8
    text (a lone surrogate, ``"\\ud800"``: the engine could not send it on)."""
    parts = [("words", step.text)]
    for call in step.calls:
        parts += [("tool name", call.name), (f"arguments of {call.name!r}", call.arguments)]
    for what, text in parts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise BackendError(
                f"the agent's {what}: not valid UTF-8 text ({err.reason} at index {err.start})"
            ) from None


def _trailing_messages(messages: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != role:
            break
        out.append(message)
    return out


def _trailing(messages: list[dict[str, Any]], role: str) -> list[str]:
    return [str(m.get("content") or "") for m in reversed(_trailing_messages(messages, role))]


def own_failure(exc: BaseException) -> bool:
    """Whether ``exc``, raised in the user's code, is the agent's own failure to hand to
    :meth:`ToolBridge.fail`: any exception, ``SystemExit`` and ``KeyboardInterrupt`` included
    (they must not end the run), and an ``asyncio.CancelledError`` the code raised itself; not
    the cancellation of the task running it (the session ending: ``Task.cancelling()`` > 0)."""
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        return task is None or task.cancelling() == 0
    return True


def raw_arguments(arguments: Any) -> str:
    """A tool call's arguments as the raw text the engine takes: a string as it is (never
    repaired), anything else as JSON."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def load_factory(target: str, scheme: str) -> Callable[..., Any]:
    """The callable named by ``path/to/file.py:NAME`` or ``package.module:NAME`` (a ``python:`` /
    ``pipecat:`` / ``livekit:`` spec's arguments). Raises UsageError (one line) when the file or
    module does not load or has no callable ``NAME``."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise UsageError(
            f"backend '{scheme}:{target}': expected {scheme}:FILE.py:FACTORY or {scheme}:MODULE:FACTORY"
        )
    if where.endswith(".py") or "/" in where:
        path = Path(where).resolve()
        if not path.is_file():
            raise UsageError(f"backend '{scheme}:{target}': no file {where}")
        module_name = f"evalctl_agent_{abs(hash(str(path)))}"
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                raise UsageError(f"backend '{scheme}:{target}': {where} is not a Python file")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                _users_code(spec.loader.exec_module, module, target, scheme, where)
            except BaseException:
                del sys.modules[module_name]
                raise
    else:
        module = _users_code(importlib.import_module, where, target, scheme, where)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise UsageError(f"backend '{scheme}:{target}': {where} has no callable {name!r}")
    return factory


def _users_code(load: Callable[[Any], Any], arg: Any, target: str, scheme: str, where: str) -> Any:
    """``load(arg)``: the user's module imported or run. What it raises (even one of evalctl's own
    exception classes, a ``UsageError`` or ``SpecError`` of its code) is bad input, said as one
    line naming that exception (``failure_text.exception_line``)."""
    try:
        return load(arg)
    except (Exception, SystemExit) as exc:  # the user's module: what it raises on import is bad input
        said = exception_line(exc)
        raise UsageError(f"backend '{scheme}:{target}': {where} does not load ({said})") from None
