"""The ``human`` backend: a person plays one side in the terminal (``evalctl play``, as ``tau2 play``).

Each turn shows what the other side said, then reads lines from the person:

- plain text is what they say (the turn ends);
- ``/tool NAME {json}`` calls a tool with those arguments (JSON, as a model sends them; a
  malformed or refused call comes back as its error result): the result is shown and the turn goes
  on (another call, or words);
- ``/tools`` lists the tools of the side with their arguments; ``/end`` hangs up (the agent: the
  scenario's hang-up tool, ``ends_call: exit``; the caller: ``end_call``); end of input hangs up too
  (as the person's own hang-up: a human caller's early end is not a simulator failure);
- any other ``/word`` is a mistyped command: it is refused (``unknown command /word``), never
  spoken, and the line is asked for again.

The lines come from ``read`` and the display goes to ``write`` (the terminal by default: stdin and
stdout). Standard input is watched by the event loop (``loop.add_reader``) rather than read in a
thread, so a cancelled session (Ctrl-C) stops waiting at once; a stdin the loop cannot watch (a
regular file, a test's in-memory stream) is read in a thread, where a read never waits long.
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.model import Scenario
from engine.core.protocol import END_CALL_TOOL
from engine.session.backends import BackendReply, SessionInfo, ToolCallRequest, TurnInfo, Usage
from engine.util.untrusted import one_line

#: The slash commands; any other line starting with ``/`` is refused as a mistyped command (it is
#: never sent as the person's words).
COMMANDS = frozenset({"/tool", "/tools", "/end"})

#: What the person is told once, at the start of the session.
HELP = "Type what you say and press Enter. /tool NAME {json} calls a tool, /tools lists them, /end hangs up."


def _stdin_line() -> str:
    return sys.stdin.readline()


class _StdinLines:
    """Lines of the process's standard input read by the event loop: bytes are taken when the
    loop says the descriptor is readable (never a blocking read), kept until a newline. ``b""``
    from the descriptor is the end of input (then ``""``, as ``readline`` gives)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._eof = False

    async def readline(self) -> str:
        """The next line with its newline, ``""`` at end of input. A cancellation ends the wait."""
        try:
            fd = sys.stdin.fileno()
        except (AttributeError, ValueError, io.UnsupportedOperation):  # an in-memory stdin
            return await asyncio.to_thread(sys.stdin.readline)
        loop = asyncio.get_running_loop()
        while b"\n" not in self._buffer and not self._eof:
            ready: asyncio.Future[None] = loop.create_future()
            try:
                loop.add_reader(fd, _wake, ready)
            except (OSError, ValueError, NotImplementedError):  # a regular file: reads never wait
                return await asyncio.to_thread(sys.stdin.readline)
            try:
                await ready
            finally:
                loop.remove_reader(fd)
            chunk = os.read(fd, 65536)
            self._buffer += chunk
            self._eof = not chunk
        line, sep, self._buffer = self._buffer.partition(b"\n")
        return (line + sep).decode("utf-8", errors="replace")


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


_STDIN = _StdinLines()


def _stdout(text: str) -> None:
    print(text, flush=True)


@dataclass
class HumanBackend:
    """One session's human side (module docstring). ``end_tool``: the tool ``/end`` calls."""

    role: str
    end_tool: str
    read: Callable[[], str] = _stdin_line
    write: Callable[[str], None] = _stdout
    name: str = "human"
    shown: int = 0  # messages already shown
    calls: int = field(default=0)

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        if self.shown == 0:
            self.write(f"[you are the {self.role}] {HELP}")
            self.shown = 1  # the system prompt is not shown: `evalctl render` prints it
        other = "caller" if self.role == "agent" else "agent"
        for message in messages[self.shown :]:
            if message.get("role") == "user" and message.get("content"):
                self.write(f"{other}: {one_line(message['content'], None)}")
            elif message.get("role") == "tool":
                self.write(f"  result: {one_line(message.get('content'), 2000)}")
        self.shown = len(messages)
        if turn.closing and turn.round == 0:
            self.write(f"[the {other} ended the call: your closing words, or /end]")
        while True:
            line = await (_STDIN.readline() if self.read is _stdin_line else asyncio.to_thread(self.read))
            if not line:  # end of input: hang up
                return self._end()
            text = line.strip()
            if not text:
                continue
            if text == "/end":
                return self._end()
            if text == "/tools":
                for tool in tools:
                    fn = tool.get("function", {})
                    params = ", ".join((fn.get("parameters") or {}).get("properties", {}))
                    self.write(f"  {fn.get('name')}({params})")
                continue
            word = text.split(None, 1)[0]
            if word.startswith("/") and word not in COMMANDS:
                self.write(f"  unknown command {one_line(word, 80)} (commands: /tool, /tools, /end)")
                continue
            if text.startswith("/tool"):
                parts = text.split(None, 2)
                if len(parts) < 2:
                    self.write("  usage: /tool NAME {json arguments}")
                    continue
                self.calls += 1
                call = ToolCallRequest(f"human-{self.calls}", parts[1], parts[2] if len(parts) > 2 else "{}")
                return BackendReply(tool_calls=[call], usage=Usage(calls=1))
            return BackendReply(text=text, usage=Usage(calls=1))

    def _end(self) -> BackendReply:
        self.calls += 1
        return BackendReply(tool_calls=[ToolCallRequest(f"human-{self.calls}", self.end_tool, "{}")])


@dataclass(frozen=True)
class HumanFactory:
    """Makes the :class:`HumanBackend` of a session; ``scenarios`` give the agent's hang-up tool.
    ``read`` / ``write``: where the lines come from and go (default: the terminal)."""

    scenarios: Mapping[str, Scenario]
    read: Callable[[], str] = _stdin_line
    write: Callable[[str], None] = _stdout

    def __call__(self, info: SessionInfo) -> HumanBackend:
        scenario = self.scenarios.get(str(info.scenario.get("name", "")))
        hangup = [t.name for t in scenario.tools.tools if t.ends_call == "exit"] if scenario else []
        end = END_CALL_TOOL if info.role == "user" else (hangup[0] if hangup else "end_conversation")
        return HumanBackend(info.role, end, self.read, self.write)
