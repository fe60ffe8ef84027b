"""The ``openai:MODEL`` backend: any OpenAI-compatible chat-completions endpoint.

Uses the official ``openai`` client (``AsyncOpenAI``). Retries: the client's own ``max_retries``,
which backs off exponentially (0.5 s doubling, capped at 8 s, with jitter) on 408, 409, 429 and
5xx and on connection errors, and waits what a ``Retry-After`` / ``retry-after-ms`` header asks
(up to 120 s) instead. Each request is limited to ``request_timeout_s`` seconds. The API key is read
from the environment variable named by ``api_key_env``, never from a file.

The same backend serves the agent and the user simulator; on the user side, tau2's stop tokens in
the model's words end the call (``BackendReply.end``; the words go on without the token). The
tool-call loop (and its cap on rounds per turn) lives in the side server; this class makes one
request per step. Tool calls are passed on exactly as the model produced them (malformed JSON
arguments or unknown tool names included): the engine answers them with structured error results
and the conversation goes on. A duplicate call id gets a suffix; ``arguments`` sent as an object
are re-encoded as JSON text. A reply that is not a chat completion (HTML, bad JSON, no choices, a
200 ``{"error": ...}``, a message of null) is a ``rejected`` BackendError naming the endpoint: the
endpoint answered, and its answer is the model's (for an agent, the agent's FAIL, stop reason
``agent_error``; for the user side, the user simulator's ``error``); 401/403/404 say what to check.
A 4xx that refuses the request itself (:func:`rejects`: 400, 404, 413, 422, ...) is a ``rejected``
BackendError too. Every message names the endpoint: ``openai:MODEL`` and its base URL.

Each request sends ``model``, ``messages``, ``tools`` (when the side has any) and the role's args
(``--agent-args`` / ``--user-args``, :mod:`engine.core.model_args`); nothing else, so without args
the sampling is the server's default. A session.start carrying ``scenario.seed`` (a per-attempt
seed) sets the request's ``seed``. Every reply's ``finish_reason`` is passed on
(``BackendReply.finish_reason``). With a cache (:mod:`engine.util.callcache`) a request already
answered is not sent: its stored response is the reply.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from engine.core.model_args import request_kwargs, with_seed
from engine.session.backends import (
    BackendError,
    BackendReply,
    SessionInfo,
    ToolCallRequest,
    TurnInfo,
    Usage,
    token_count,
    user_stop,
)
from engine.util.callcache import CallCache, call_key
from engine.util.errors import UsageError


@dataclass
class OpenAIBackend:
    """One session's model. ``opening`` is said verbatim as the user's first turn when the user
    simulator opens the call (the dataset's starting utterance), without a model request.
    ``stop_tokens`` (the user side): a reply holding one of tau2's stop tokens (``###STOP###``,
    ``###TRANSFER###``, ``###OUT-OF-SCOPE###``) ends the call, the token taken out of its words
    (:func:`engine.session.backends.user_stop`)."""

    client: openai.AsyncOpenAI
    model: str
    opening: str | None = None
    name: str = ""
    stop_tokens: bool = False
    #: The role's request fields (``engine.core.model_args``: sampling settings, provider extras).
    args: dict[str, Any] = field(default_factory=dict)
    #: The model-call cache shared by the run's sessions (None: every request is sent).
    cache: CallCache | None = None
    #: The option that sets this endpoint's URL, named when it cannot be reached.
    url_option: str = "--base-url"
    _calls: int = field(default=0, repr=False)
    _ids: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self.name = self.name or f"openai:{self.model}"

    @property
    def endpoint(self) -> str:
        """``openai:MODEL at BASE_URL``: what messages about this endpoint name."""
        return f"{self.name} at {self.client.base_url}"

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        if self.opening and turn.index == 0 and turn.round == 0 and len(messages) == 1:
            return BackendReply(text=self.opening)
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        kwargs.update(request_kwargs(self.args))
        key = call_key(str(self.client.base_url), kwargs) if self.cache is not None else None
        stored = self.cache.get(key) if self.cache is not None and key is not None else None
        if stored is not None:
            return self._finish(ChatCompletion.construct(**stored))
        response = await self._send(kwargs)
        reply = self._finish(response)
        if self.cache is not None and key is not None:
            self.cache.put(key, str(self.client.base_url), self.model, _dump(response))
        return reply

    async def _send(self, kwargs: dict[str, Any]) -> Any:
        """One request (the client's retries included); raises BackendError naming the endpoint."""
        try:
            return await self.client.chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            raise BackendError(self._no_answer(), timeout=True) from None
        except openai.APIStatusError as err:
            raise BackendError(self._status_message(err), rejected=rejects(err.status_code)) from None
        except openai.APIConnectionError as err:  # name the endpoint: a wrong or missing --base-url
            raise BackendError(
                f"{self.name}: cannot reach {self.client.base_url} ({type(err).__name__}: {err}); "
                f"check {self.url_option} / $OPENAI_BASE_URL"
            ) from None
        except openai.APIError as err:  # malformed responses: the endpoint answered
            raise BackendError(f"{self.endpoint}: {type(err).__name__}: {err}", rejected=True) from None
        except json.JSONDecodeError as err:  # a 200 whose body is not JSON
            raise BackendError(self._malformed(f"the body is not JSON ({err})"), rejected=True) from None

    def _finish(self, response: Any) -> BackendReply:
        """The reply of a chat completion, with the message as returned. Raises BackendError
        (``rejected``) when ``response`` is not shaped like one."""
        try:
            reply = self._reply(response)
        except (AttributeError, TypeError, IndexError, KeyError) as err:
            raise BackendError(self._malformed(f"{type(err).__name__}: {err}"), rejected=True) from None
        reply.message = returned_message(response, reply.tool_calls)
        return reply

    def _no_answer(self) -> str:
        """A hung server, named: ``openai:M: model endpoint URL did not answer in 60 s, 4 tries``
        (the request timeout, and the first request plus the client's retries)."""
        timeout = self.client.timeout
        seconds = getattr(timeout, "read", None) or timeout
        tries = 1 + int(self.client.max_retries)
        url = self.client.base_url
        times = f"{tries} tries" if tries > 1 else "1 try"
        return f"{self.name}: model endpoint {url} did not answer in {seconds:g} s, {times}"

    def _reply(self, response: Any) -> BackendReply:
        """The reply in a parsed chat completion. Raises BackendError (no choices), or
        AttributeError / TypeError when the body is not shaped like a chat completion."""
        if isinstance(response, str | bytes | list | dict):  # the client could not parse it as one
            raise TypeError(f"got {type(response).__name__} {str(response)[:200]!r}")
        if not response.choices:
            raise BackendError(self._malformed("the response has no choices"), rejected=True)
        choice = response.choices[0]
        message = choice.message
        calls: list[ToolCallRequest] = []
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:  # custom (non-function) tool calls are not part of this engine
                continue
            self._calls += 1
            call_id = call.id if isinstance(call.id, str) and call.id else f"call_{self._calls}"
            if call_id in self._ids:  # a duplicate id would make tool results ambiguous
                call_id = f"{call_id}_{self._calls}"
            self._ids.add(call_id)
            arguments = function.arguments
            if not isinstance(arguments, str):  # some servers send an object, not JSON text
                arguments = "" if arguments is None else json.dumps(arguments)
            calls.append(ToolCallRequest(_text(call_id), _text(str(function.name or "")), _text(arguments)))
        usage = Usage(calls=1)
        if response.usage is not None:
            usage.prompt_tokens = token_count(getattr(response.usage, "prompt_tokens", 0))
            usage.completion_tokens = token_count(getattr(response.usage, "completion_tokens", 0))
        text = _text(message.content) if isinstance(message.content, str) else ""
        refusal = getattr(message, "refusal", None)
        if not text and isinstance(refusal, str):  # a refusal is what the model said, not silence
            text = _text(refusal)
        end = None
        if self.stop_tokens:
            text, end = user_stop(text)
        finish = getattr(choice, "finish_reason", None)
        finish = _text(finish)[:40] if isinstance(finish, str) and finish else None
        return BackendReply(text=text, tool_calls=calls, usage=usage, end=end, finish_reason=finish)

    def _malformed(self, detail: str) -> str:
        return (
            f"{self.name}: the reply of {self.client.base_url}chat/completions is not a chat "
            f"completion ({detail[:300]})"
        )

    def _status_message(self, err: openai.APIStatusError) -> str:
        """``HTTP <code>: <message>``, plus a hint naming what to check for 401/403/404."""
        text = f"{self.endpoint}: HTTP {err.status_code}: {err.message}"[:1000]
        if err.status_code in (401, 403):
            text += " (check the API key, --api-key-env)"
        elif err.status_code == 404:
            text += f" (check the model name {self.model!r} and {self.url_option} {self.client.base_url})"
        return text


#: HTTP statuses of the 4xx class that are not the request's fault: the key (401, 403: the
#: start-up check refuses a key that fails; a key revoked mid-run is configuration, not the model),
#: and the ones the client retries (408, 409, 429: a server too busy to answer).
NOT_REJECTIONS = frozenset({401, 403, 408, 409, 429})


def rejects(status: int) -> bool:
    """True when HTTP ``status`` is the endpoint refusing the request itself (400 bad request or
    over the context length, 404 no such model, 413, 422, any other 4xx but
    :data:`NOT_REJECTIONS`): what the model under test asked for, so for an agent the agent's
    failure (stop reason ``agent_error``), never an ``error`` result."""
    return 400 <= status < 500 and status not in NOT_REJECTIONS


def returned_message(response: Any, calls: list[ToolCallRequest]) -> dict[str, Any] | None:
    """The assistant message of ``response`` as the endpoint returned it (every field it sent,
    provider extras included, such as a thinking model's signature on a tool call), its tool calls
    those passed on to the engine (``calls``: function calls only, under the ids the engine got);
    None when it cannot be read as JSON (the side then builds the message itself)."""
    try:
        # warnings=False: an endpoint's odd but usable fields (arguments as an object) are read as
        # they are; pydantic's serializer warning would only print noise on the user's terminal
        message = response.choices[0].message.model_dump(mode="json", exclude_unset=True, warnings=False)
        raw_calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict) and c.get("function")]
    except (AttributeError, IndexError, TypeError, ValueError):
        return None
    message["role"] = "assistant"
    message.pop("tool_calls", None)
    if calls and len(raw_calls) == len(calls):
        message["tool_calls"] = [
            {**raw, "id": call.call_id, "function": _as_text_arguments(raw["function"], call)}
            for raw, call in zip(raw_calls, calls, strict=True)
        ]
    elif calls:
        return None
    return message


def _as_text_arguments(function: dict[str, Any], call: ToolCallRequest) -> dict[str, Any]:
    """The function part of a returned tool call, its arguments as JSON text (as the engine got)."""
    return (
        function if isinstance(function.get("arguments"), str) else {**function, "arguments": call.arguments}
    )


def _dump(response: Any) -> dict[str, Any]:
    """A chat completion as the cache stores it: the fields the endpoint sent, as JSON."""
    dumped = response.model_dump(mode="json", exclude_unset=True, warnings=False)
    return dumped if isinstance(dumped, dict) else {}


def _text(value: str) -> str:
    """``value`` with lone UTF-16 surrogates (a model's ``\\ud800`` escape) replaced by ``?``: they
    cannot be encoded as UTF-8, so the next request and the results could not hold them."""
    return value.encode("utf-8", "replace").decode("utf-8")


@dataclass
class OpenAIFactory:
    """Makes an :class:`OpenAIBackend` per session; all sessions share one client (connection pool).

    ``base_url`` None = ``$OPENAI_BASE_URL``, else the client's default, https://api.openai.com/v1
    (README says so; tests/unit/sessions/test_default_base_url.py). Raises UsageError at once
    when the environment variable ``api_key_env`` is unset or empty.
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    request_timeout_s: float = 60.0
    max_retries: int = 4
    #: The role's request fields (``--agent-args`` / ``--user-args``; ``engine.core.model_args``).
    args: dict[str, Any] = field(default_factory=dict)
    #: The model-call cache folder (``--cache``); None: no cache.
    cache_dir: str | None = None
    #: The option that names this endpoint's URL, for messages (``--base-url``, ``--user-base-url``).
    url_option: str = "--base-url"
    client: openai.AsyncOpenAI = field(init=False, repr=False)
    cache: CallCache | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise UsageError(
                f"environment variable {self.api_key_env} is not set: it must hold the API key for "
                f"openai:{self.model} (any non-empty value for a server that needs none)"
            )
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            origin = self.url_option if self.base_url else "$OPENAI_BASE_URL"
            raise UsageError(f"{origin} {base_url!r} is not an http:// or https:// URL")
        self.client = openai.AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            timeout=self.request_timeout_s,
            max_retries=self.max_retries,
        )
        if self.cache_dir is not None:
            from pathlib import Path

            self.cache = CallCache(Path(self.cache_dir))

    async def aclose(self) -> None:
        """Close the shared client's connection pool (at the end of a run), and the cache."""
        await self.client.close()
        if self.cache is not None:
            self.cache.close()

    def __call__(self, info: SessionInfo) -> OpenAIBackend:
        opening = info.scenario.get("starting_utterance") if info.role == "user" else None
        user = info.role == "user"
        seed = info.scenario.get("seed")
        if not (isinstance(seed, int) and not isinstance(seed, bool)) and user:
            seed = info.scenario.get("attempt")  # a regenerated caller (--regenerate): a new seed
        args = with_seed(self.args, seed if isinstance(seed, int) and not isinstance(seed, bool) else None)
        return OpenAIBackend(
            self.client,
            self.model,
            opening=opening or None,
            stop_tokens=user,
            args=args,
            cache=self.cache,
            url_option=self.url_option,
        )
