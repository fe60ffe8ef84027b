"""Model backends: what produces a side's words and tool calls, behind one small interface.

A side server (``engine.session.sides``) holds the conversation as OpenAI chat ``messages`` (its own
system prompt first; the other party's lines as ``user``, its own as ``assistant``, tool results as
``tool``) and asks its backend for the next step with :meth:`Backend.respond`. Backends are
selected by a spec string (``engine.session.backends.registry.parse_backend_spec``):
``replay``, ``noop`` (a baseline that does nothing), ``openai:MODEL``, an external
``ws://host:port`` side (which is not a backend: the runner connects to it directly), or a
scheme an installed package registers. Each scheme is one class in that registry.
This package module holds the shared types only; :func:`engine.session.backends.factory.make_factory`
builds a built-in side's backend (it imports the backends, which import these types).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from engine.util.untrusted import bounded_count


@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call a model asked for. ``arguments`` is the raw JSON text, unparsed."""

    call_id: str
    name: str
    arguments: str


@dataclass
class Usage:
    """Tokens and model requests spent (``calls`` counts requests, retries excluded);
    ``unreported``: how many of those requests' tokens the backend could not learn (an in-process
    framework that reported none), so the token counts are a lower bound, not the whole."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    unreported: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        self.unreported += other.unreported


def token_count(value: Any) -> int:
    """A token count from a usage field; 0 when the server sent something that is not an int,
    at most engine.util.untrusted.MAX_COUNT."""
    return bounded_count(value)


@dataclass
class BackendReply:
    """One model step: ``text`` said (may be empty) and ``tool_calls`` wanted (may be empty).
    ``end`` (user side only) ends the call after this step, saying why: ``stop``, ``transfer`` or
    ``out_of_scope`` (:data:`USER_STOP_TOKENS`); its tool calls are then not run."""

    text: str = ""
    #: The assistant message exactly as the endpoint returned it (JSON; its tool calls those sent to
    #: the engine), for the side to send back in the history with every field a provider added
    #: (signatures of thinking models); None: the side builds the message from text and calls.
    message: dict[str, Any] | None = None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    end: str | None = None
    #: What an agent that keeps its own state reports of it after the turn (``{"db_hash": hex or
    #: None}``: an RTVI bot's own DB hash), sent as ``turn.response.agent_state``; None: nothing.
    state: dict[str, Any] | None = None
    #: Why the model stopped (the endpoint's ``finish_reason``: ``stop``, ``length`` = cut off at
    #: the token limit, ``tool_calls``, ``content_filter``...); None for a backend without a model.
    finish_reason: str | None = None


#: tau2's user-simulator stop tokens (tau2 17e07b1 ``tau2.user.base``) -> ``turn.response.end_reason``.
USER_STOP_TOKENS: dict[str, str] = {
    "###STOP###": "stop",
    "###TRANSFER###": "transfer",
    "###OUT-OF-SCOPE###": "out_of_scope",
}


def user_stop(text: str) -> tuple[str, str | None]:
    """``(text without the tokens, end reason)`` for a user model's words: the reason of the first
    stop token in the text (:data:`USER_STOP_TOKENS`, matched anywhere, as tau2 does), else None
    and the text unchanged. ``"Thanks! ###STOP###"`` -> ``("Thanks!", "stop")``."""
    found = [(text.find(token), reason) for token, reason in USER_STOP_TOKENS.items() if token in text]
    if not found:
        return text, None
    for token in USER_STOP_TOKENS:
        text = text.replace(token, " ")
    return " ".join(text.split()), min(found)[1]


@dataclass(frozen=True)
class TurnInfo:
    """Where the side is: ``index`` is its 0-based turn, ``round`` the model step within the turn
    (0 first, +1 after each batch of tool results), ``closing`` marks the agent's closing turn;
    ``last_round``: the turn's ``max_tool_rounds`` steps with tool calls are spent, so the side
    runs no tool call of this step (an in-process agent's calls there are its FAIL:
    ``engine.session.backends.bridge``)."""

    index: int
    round: int = 0
    closing: bool = False
    last_round: bool = False


class BackendError(Exception):
    """The backend could not answer. ``timeout`` is True when a request timed out; ``rejected``
    when the model endpoint answered and refused the request (an HTTP 4xx the model's own
    request caused, e.g. over the context length: ``backend_rejected``, the agent's failure
    rather than infrastructure's, see ``engine.session.sides.link.blame``)."""

    def __init__(self, message: str, *, timeout: bool = False, rejected: bool = False):
        super().__init__(message)
        self.timeout = timeout
        self.rejected = rejected


class Backend(Protocol):
    """What a built-in side asks for each model step. One instance serves one session; a backend
    that holds tasks or resources may also define ``async def aclose()``, awaited once when its
    session ends (``engine.session.sides.server``)."""

    #: What answers, recorded in results, e.g. ``replay`` or ``openai:gpt-4.1``.
    name: str

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: TurnInfo
    ) -> BackendReply:
        """The next step given the chat so far. Raises :class:`BackendError` on failure. A backend
        may also define ``async aclose()``: the side server awaits it when the session ends."""
        ...


@dataclass(frozen=True)
class SessionInfo:
    """What a side learned from ``session.start``: ``role`` (agent or user), the scenario metadata
    dict (``name``, ``starting_utterance``, ...), the system prompt and tool schemas."""

    role: Literal["agent", "user"]
    scenario: dict[str, Any]
    system_prompt: str
    tools: list[dict[str, Any]]


class BackendFactory(Protocol):
    """Makes the backend for one session; raises ``LookupError`` for an unknown scenario."""

    def __call__(self, info: SessionInfo) -> Backend: ...


@dataclass(frozen=True)
class BackendSpec:
    """A parsed ``--agent`` / ``--user`` value: ``kind`` replay, noop, openai, external (``ws://``,
    ``wss://``) or an installed scheme's name; ``model`` for openai; ``uri`` for external;
    ``scheme`` the registry key (``engine.session.backends.registry``), ``args`` what follows
    ``scheme:``, ``text`` the value as given (stripped)."""

    kind: str
    model: str | None = None
    uri: str | None = None
    scheme: str = field(default="", compare=False)
    args: str = field(default="", compare=False)
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.scheme:
            object.__setattr__(self, "scheme", "ws" if self.kind == "external" else self.kind)

    def __str__(self) -> str:
        names = {"replay": "replay", "noop": "noop", "openai": f"openai:{self.model}"}
        if self.kind == "external":
            return str(self.uri)
        return names.get(self.kind) or self.text or self.kind
