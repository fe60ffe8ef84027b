"""``pipecat:FILE.py:FACTORY``: a user's pipecat pipeline (their LLM service, their prompt) as an
evalctl agent, text mode, run in-process (the ``pipecat`` extra: pipecat-ai 1.14.0; imported
only when a session of this scheme starts).

The factory is ``make_pipeline(session: InprocSession) -> Pipeline | FrameProcessor |
list[FrameProcessor]``: given the scenario's system prompt and tool schemas
(:func:`tools_schema` turns them into pipecat's ``ToolsSchema``), it builds the pipeline the
user ships, in text mode (no transport, STT or TTS): typically a context aggregator pair over an
``LLMContext`` and an OpenAI-compatible LLM service between them. The adapter then

- registers a proxy for each scenario tool on every OpenAI-compatible LLM service in the
  pipeline (and a catch-all for any other name, so an unknown tool reaches the engine too): a
  proxy waits for the engine to run the call on the scenario DB and hands pipecat the result;
- taps the service's completion stream (``BaseOpenAILLMService.get_chat_completions``), below
  pipecat's argument parsing: pipecat 1.14.0 ``_process_context`` drops a call whose arguments
  are not JSON (``json.loads`` … ``continue``) and reads only the first tool call of a chunk, so
  the tap sends the engine each call's raw argument text as the model sent it, never repaired,
  and hands pipecat one chunk per call with arguments that parse (a non-JSON text wrapped as
  ``{"__evalctl_raw__": TEXT}``) so that none is dropped;
- reads the model's token use from the same stream: pipecat's OpenAI services ask for it
  (``stream_options={"include_usage": True}``) and the server sends it on the last chunk, the
  prompt and completion tokens recorded as the ``openai:`` backend records them (a stream without
  it: the step's tokens are unknown, ``unreported``, never 0);
- sends each caller line as ``LLMMessagesAppendFrame(run_llm=True)``; each completion is one
  model step (its text and its batch of tool calls) of the session. ``end_conversation`` /
  ``transfer_to_agent`` end the call when the engine runs them.

What the user's code raises (even ``SystemExit``), a factory that returns no pipeline (an ``async
def`` factory is awaited), an ``ErrorFrame`` the pipeline pushes (e.g. its LLM service cannot
connect: pipecat's error text) or a pipeline without an OpenAI-compatible LLM service is the
agent's FAIL (``agent_error``) at once.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
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
from engine.session.backends.pipecat_audio import PipelineAudio, TurnSpeech, voice_services
from engine.session.backends.pipecat_log import quiet_pipecat
from engine.session.backends.python_agent import resolve
from engine.util.errors import UsageError

#: The key a non-JSON argument text is wrapped under for pipecat (which would drop it otherwise).
RAW_KEY = "__evalctl_raw__"


def _require_pipecat() -> None:
    """Import pipecat (UsageError when it is not installed) with its logs off: its import banner
    and every request's whole context at DEBUG (``EVALCTL_PIPECAT_LOG=1`` keeps them:
    :mod:`engine.session.backends.pipecat_log`)."""
    quiet_pipecat()
    try:
        import pipecat  # noqa: F401
    except ImportError:
        raise UsageError("backend pipecat: needs pipecat-ai (pip install 'evalctl[pipecat]')") from None


class PipelineError(Exception):
    """An ``ErrorFrame`` the user's pipeline pushed (its LLM service could not connect, a
    processor raised): the agent's FAIL, with pipecat's error text."""


def tools_schema(session: InprocSession) -> Any:
    """The scenario's tools as pipecat's ``ToolsSchema`` (one ``FunctionSchema`` each: name,
    description, parameter properties and required names)."""
    from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
    from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema

    functions = []
    for tool in session.tools:
        fn = tool.get("function", {})
        params = fn.get("parameters") or {}
        functions.append(
            FunctionSchema(
                name=fn.get("name", ""),
                description=fn.get("description", ""),
                properties=params.get("properties", {}),
                required=params.get("required", []),
            )
        )
    return ToolsSchema(standard_tools=functions)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class _Tap:
    """A completion stream seen by pipecat as the service's own; records the step (module doc)."""

    def __init__(self, stream: Any, bridge: ToolBridge):
        self.stream = stream
        self.bridge = bridge

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[Any]:
        from openai.types.chat.chat_completion_chunk import (
            ChatCompletionChunk,
            Choice,
            ChoiceDelta,
            ChoiceDeltaToolCall,
            ChoiceDeltaToolCallFunction,
        )

        text: list[str] = []
        calls: dict[int, list[str]] = {}
        model = ""
        usage: Usage | None = None
        stream = aiter(self.stream)
        while True:
            try:
                chunk = await anext(stream)
            except StopAsyncIteration:
                break
            except BaseException as exc:  # SystemExit and the like would end pipecat's loop
                if isinstance(exc, Exception) or not own_failure(exc):
                    raise  # an Exception: pipecat reports it as an ErrorFrame (on_pipeline_error)
                self.bridge.fail(exc)
                return
            model = chunk.model or model
            if getattr(chunk, "usage", None) is not None:  # the stream's last chunk (include_usage)
                usage = Usage(
                    token_count(chunk.usage.prompt_tokens), token_count(chunk.usage.completion_tokens)
                )
            delta = chunk.choices[0].delta if chunk.choices else None
            if delta is not None and delta.content:
                text.append(delta.content)
            if delta is not None and delta.tool_calls:
                for part in delta.tool_calls:
                    entry = calls.setdefault(part.index, ["", "", ""])
                    entry[0] = part.id or entry[0]
                    if part.function is not None:
                        entry[1] += part.function.name or ""
                        entry[2] += part.function.arguments or ""
                if delta.content:  # pipecat reads no text beside a tool call: hand it over alone
                    yield ChatCompletionChunk(
                        id=chunk.id,
                        choices=[Choice(index=0, delta=ChoiceDelta(content=delta.content))],
                        created=chunk.created,
                        model=chunk.model,
                        object="chat.completion.chunk",
                    )
                continue
            yield chunk
        batch = [
            ToolCallRequest(call_id or f"pipecat-{uuid.uuid4().hex[:12]}", name, raw)
            for _, (call_id, name, raw) in sorted(calls.items())
        ]
        for index, call in enumerate(batch):
            args = call.arguments if call.arguments and _is_json(call.arguments) else None
            wrapped = args or json.dumps({RAW_KEY: call.arguments})
            function = ChoiceDeltaToolCallFunction(name=call.name or "unnamed", arguments=wrapped)
            part = ChoiceDeltaToolCall(index=index, id=call.call_id, type="function", function=function)
            yield ChatCompletionChunk(
                id="evalctl-tap",
                choices=[Choice(index=0, delta=ChoiceDelta(tool_calls=[part]))],
                created=0,
                model=model or "unknown",
                object="chat.completion.chunk",
            )
        self.bridge.step("".join(text), batch, usage)

    async def close(self) -> None:
        close = getattr(self.stream, "close", None) or getattr(self.stream, "aclose", None)
        if close is not None:
            await close()


def _pipeline(made: Any, name: str) -> Any:
    """The factory's answer as a ``Pipeline``: a Pipeline as it is, a processor or a list of
    processors wrapped in one. Raises BackendError (the agent's FAIL) for anything else."""
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.processors.frame_processor import FrameProcessor

    if isinstance(made, Pipeline):
        return made
    if isinstance(made, FrameProcessor):
        return Pipeline([made])
    if isinstance(made, list) and made and all(isinstance(p, FrameProcessor) for p in made):
        return Pipeline(made)
    got = type(made).__name__ if not isinstance(made, list) else "a list that is not of processors"
    raise BackendError(
        f"{name}: the factory returned {got}, not a Pipeline, a FrameProcessor or a list of them"
    )


def _processors(root: Any) -> list[Any]:
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(getattr(node, "processors", None) or [])
    return found


class PipecatAgent:
    """The backend of one session of a ``pipecat:`` agent."""

    def __init__(self, factory: Callable[..., Any], info: SessionInfo, name: str):
        self.name = name
        self.bridge = ToolBridge()
        self._factory = factory
        self._info = info
        self._worker: Any = None
        self._runner_task: asyncio.Task[Any] | None = None
        self.audio: PipelineAudio | None = None

    # --- a voice run (engine.session.voice.listening): the caller's audio in, the TTS's out -------

    def listen(self, rate: int) -> None:
        """Make this session an audio session at ``rate`` Hz: each turn feeds the caller's audio
        (:meth:`hear`) to the pipeline's STT and :meth:`speech` returns its TTS audio
        (``engine.session.backends.pipecat_audio``). Called before the first turn."""
        self.audio = PipelineAudio(rate)

    def hear(self, pcm: bytes) -> None:
        """The caller's audio of the coming turn (mono s16le at the session's rate)."""
        assert self.audio is not None, "hear() before listen()"
        self.audio.hear(pcm)

    async def speech(self) -> TurnSpeech:
        """The pipeline's speech of the turn just answered, once its TTS has spoken it all."""
        assert self.audio is not None, "speech() before listen()"
        return await self.audio.speech()

    async def speech_so_far(self) -> TurnSpeech:
        """The TTS audio of the turn in progress not yet taken, once there is some (empty after
        :meth:`wake`)."""
        assert self.audio is not None, "speech_so_far() before listen()"
        return await self.audio.speech_so_far()

    def wake(self) -> None:
        """End a :meth:`speech_so_far` wait."""
        assert self.audio is not None, "wake() before listen()"
        self.audio.wake()

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        return await self.bridge.respond(messages, turn, self._begin)

    async def _begin(self, text: str) -> None:
        from pipecat.frames.frames import LLMMessagesAppendFrame

        if self._worker is None:
            await self._start()
        if self.audio is not None:
            frames = self.audio.input_frames()
            if frames:
                for frame in frames:
                    await self._worker.queue_frame(frame)
                return
        new: list[Any] = [{"role": "user", "content": text}] if text else []
        await self._worker.queue_frame(LLMMessagesAppendFrame(messages=new, run_llm=True))

    async def _start(self) -> None:
        from pipecat.pipeline.worker import PipelineParams, PipelineWorker
        from pipecat.services.openai.base_llm import BaseOpenAILLMService
        from pipecat.workers.runner import WorkerRunner

        session = InprocSession(
            self._info.system_prompt, list(self._info.tools), dict(self._info.scenario), self._info.role
        )
        try:
            made = self._factory(session)
            if inspect.isawaitable(made):  # an ``async def`` factory
                made = await made
        except BaseException as exc:  # the user's code, even SystemExit: its FAIL
            if not own_failure(exc):
                raise
            raise BackendError(f"{self.name}: the factory raised {exception_line(exc)}") from exc
        pipeline = _pipeline(made, self.name)
        services = [p for p in _processors(pipeline) if isinstance(p, BaseOpenAILLMService)]
        if not services:
            raise BackendError(f"{self.name}: the pipeline has no OpenAI-compatible LLM service")
        for service in services:
            self._proxy_tools(service, session)
        params = PipelineParams()
        observers: list[Any] = []
        if self.audio is not None:
            _, self.audio.tts = voice_services(_processors(pipeline), self.name)
            rate = self.audio.rate
            params = PipelineParams(audio_in_sample_rate=rate, audio_out_sample_rate=rate)
            observers.append(self.audio.observer())
        # evalctl reads the LLM service's stream itself: no RTVI processor and observer (pipecat adds
        # them by default and serializes every frame for a client there is none of), no turn
        # tracking observer, no idle monitor (the session's own timeouts bound it)
        self._worker = PipelineWorker(
            pipeline,
            cancel_on_idle_timeout=False,
            enable_rtvi=False,
            enable_turn_tracking=False,
            idle_timeout_secs=None,
            params=params,
            observers=observers,
        )
        started = asyncio.Event()

        @self._worker.event_handler("on_pipeline_started")  # type: ignore[untyped-decorator]
        async def _started(worker: Any, frame: Any) -> None:
            started.set()

        @self._worker.event_handler("on_pipeline_error")  # type: ignore[untyped-decorator]
        async def _error(worker: Any, frame: Any) -> None:  # e.g. the LLM service cannot connect
            self.bridge.fail(PipelineError(str(getattr(frame, "error", frame))))

        runner = WorkerRunner(handle_sigint=False, check_dangling_tasks=False)
        await runner.add_workers(self._worker)
        self._runner_task = asyncio.ensure_future(runner.run())
        waiter = asyncio.ensure_future(started.wait())
        await asyncio.wait({waiter, self._runner_task}, return_when=asyncio.FIRST_COMPLETED)
        if not started.is_set():
            waiter.cancel()
            raise BackendError(f"{self.name}: the pipeline stopped before it started")

    def _proxy_tools(self, service: Any, session: InprocSession) -> None:
        bridge, audio = self.bridge, self.audio
        original = service.get_chat_completions

        async def get_chat_completions(context: Any) -> _Tap:
            if audio is not None:
                audio.completion_started()
            return _Tap(await original(context), bridge)

        service.get_chat_completions = get_chat_completions

        async def proxy(params: Any) -> None:
            result = await bridge.result(params.tool_call_id)
            try:
                value: Any = json.loads(result)
            except ValueError:
                value = result
            await params.result_callback(value)

        for name in [*session.tool_names, None]:
            service.register_function(name, proxy)

    async def aclose(self) -> None:
        """Cancel the pipeline (the session ended)."""
        if self._worker is not None:
            await self._worker.cancel()
        if self._runner_task is not None:
            await asyncio.gather(self._runner_task, return_exceptions=True)


@dataclass(frozen=True)
class PipecatFactory:
    """Makes a :class:`PipecatAgent` per session from the user's ``make_pipeline``."""

    factory: Callable[..., Any]
    name: str

    @classmethod
    def load(cls, target: str, name: str) -> PipecatFactory:
        """The factory of ``pipecat:TARGET`` (``FILE.py:FACTORY``, ``MODULE:FACTORY`` or
        ``@NAME``). Raises UsageError when pipecat is not installed or the target does not load."""
        _require_pipecat()
        return cls(resolve(target, "pipecat"), name)

    def __call__(self, info: SessionInfo) -> PipecatAgent:
        return PipecatAgent(self.factory, info, self.name)
