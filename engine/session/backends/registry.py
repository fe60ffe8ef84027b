"""The backend registry: one class per ``--agent`` / ``--user`` scheme, looked up by the scheme.

A spec string names its scheme before the first ``:`` (``openai:gpt-4.1`` -> ``openai``,
``ws://127.0.0.1:9000`` -> ``ws``) or is the scheme alone (``replay``). Each scheme is one
subclass of :class:`BackendScheme`: it parses the rest of the string (:meth:`BackendScheme.parse`)
and builds the built-in side's backend factory (:meth:`BackendScheme.factory`); an ``external``
scheme (``ws://``) has no factory: the runner connects to the side at ``spec.uri``.

The built-in schemes are :data:`BUILTIN`. A third-party package adds one under the
``evalctl.backends`` entry-point group, its name the scheme and its value the class::

    [project.entry-points."evalctl.backends"]
    scripted = "scripted_backend:ScriptedScheme"

Built-in schemes cannot be replaced: an entry point taking a built-in name is refused, as is one that
does not load, is not a BackendScheme subclass or is named otherwise than its scheme; each refusal is
one line on stderr naming the entry point (the first time a spec is parsed). An installed scheme's
side is served by evalctl's side server, but its failures are blamed like an external side's
(:func:`evalctl_own`). docs/authoring.md, "Adding a backend", has a complete example.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import Any, ClassVar

from engine.core.validation import did_you_mean
from engine.session.backends import BackendFactory, BackendSpec
from engine.util.errors import UsageError

ENTRY_POINT_GROUP = "evalctl.backends"


@dataclass(frozen=True)
class BackendOptions:
    """What a built-in side's backend may be built with: ``scenarios`` (name -> Scenario, for
    backends that read a scenario's gold or tools), the ``openai`` endpoint's ``base_url`` (None:
    ``$OPENAI_BASE_URL``), the environment variable holding its key, its request timeout in
    seconds and retries, and the replay backend's latency per step in seconds."""

    scenarios: Mapping[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    request_timeout_s: float = 60.0
    max_retries: int = 4
    replay_latency_s: float = 0.0
    #: The role's request fields (``engine.core.model_args``), the model-call cache folder (None:
    #: none) and the option naming ``base_url`` in messages.
    args: Mapping[str, Any] = field(default_factory=dict)
    cache_dir: str | None = None
    url_option: str = "--base-url"


class BackendScheme:
    """One ``--agent`` / ``--user`` scheme. Subclasses set the class attributes and override
    :meth:`factory` (and :meth:`parse` when the part after ``scheme:`` needs checking).

    ``scheme``: the name before ``:`` (the registry key); ``usage``: how to write it, for
    messages (``openai:MODEL``); ``takes_args``: the scheme is written ``scheme:ARGS`` with
    non-empty ARGS (else alone); ``external``: a side the runner connects to, not a backend
    (``spec.uri`` is its URL); ``model_endpoint``: the side calls the OpenAI-compatible endpoint
    (checked once before the first session); ``gold_side``: the side plays the scenario's gold
    (a voice run then speaks its lines; ``evalctl serve`` then needs ``--spec-dir``);
    ``files_per_session``: file descriptors one session's side holds; ``runs_user_code``: the
    backend is the user's code run in-process (blamed as an external side's).
    """

    scheme: ClassVar[str] = ""
    usage: ClassVar[str] = ""
    takes_args: ClassVar[bool] = True
    external: ClassVar[bool] = False
    model_endpoint: ClassVar[bool] = False
    gold_side: ClassVar[bool] = False
    files_per_session: ClassVar[int] = 2
    #: The side runs the agent's own code (a bot the backend drives): blamed like an external side
    #: (:func:`evalctl_own` is False), though the scheme is built in.
    agent_code: ClassVar[bool] = False
    #: Sessions the side can hold at once (None: any number): the run's concurrency is cut to it
    #: (an RTVI bot serves one client at a time).
    sessions_at_once: ClassVar[int | None] = None
    #: The side runs the user's own code in this process (``python:``, ``pipecat:``,
    #: ``livekit:``): a built-in scheme whose failures are the agent's, as an installed one's
    #: (:func:`evalctl_own`).
    runs_user_code: ClassVar[bool] = False
    #: In a voice run (``--voice``) the backend hears the caller's audio and speaks for itself
    #: (``engine.session.voice.listening``: a ``pipecat:`` pipeline's own STT and TTS) instead of
    #: reading the caller's words and having the engine speak its text.
    voice_audio: ClassVar[bool] = False
    #: Why the scheme cannot take part in a voice run (empty: it can): ``--voice`` with it is
    #: refused in one line.
    voice_refusal: ClassVar[str] = ""

    @classmethod
    def parse(cls, text: str) -> BackendSpec:
        """The spec of ``text`` (stripped, starting with this scheme). Raises UsageError for
        arguments the scheme cannot use."""
        args = text[len(cls.scheme) + 1 :].strip() if ":" in text else ""
        if cls.takes_args and not args:
            raise UsageError(f"unknown backend {text!r}: {expected()}")
        if not cls.takes_args and text != cls.scheme:
            raise UsageError(f"backend {text!r}: {cls.scheme} takes no arguments (expected {cls.usage})")
        return BackendSpec(cls.scheme, scheme=cls.scheme, args=args, text=text)

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        """The factory of the built-in side's backends (one backend per session). Raises
        UsageError for what is missing (an API key)."""
        raise UsageError(f"{spec} is an external side, not a backend a built-in side can run")


class ReplayScheme(BackendScheme):
    """``replay``: the scenario's gold conversation played back."""

    scheme = "replay"
    usage = "replay"
    takes_args = False
    gold_side = True

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        from engine.session.backends.replay import ReplayFactory

        return ReplayFactory(options.scenarios, latency_s=options.replay_latency_s)


class NoopScheme(BackendScheme):
    """``noop``: a baseline that does nothing but hang up."""

    scheme = "noop"
    usage = "noop"
    takes_args = False

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        from engine.session.backends.noop import NoopFactory

        return NoopFactory(options.scenarios)


class OpenAIScheme(BackendScheme):
    """``openai:MODEL``: an OpenAI-compatible chat-completions endpoint."""

    scheme = "openai"
    usage = "openai:MODEL"
    model_endpoint = True
    files_per_session = 3

    @classmethod
    def parse(cls, text: str) -> BackendSpec:
        spec = super().parse(text)
        return BackendSpec("openai", model=spec.args, scheme=cls.scheme, args=spec.args, text=text)

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        # imported here: the openai client takes ~0.4 s to import, and replay never needs it
        from engine.session.backends.openai_chat import OpenAIFactory

        return OpenAIFactory(
            model=str(spec.model),
            base_url=options.base_url,
            api_key_env=options.api_key_env,
            request_timeout_s=options.request_timeout_s,
            max_retries=options.max_retries,
            args=dict(options.args),
            cache_dir=options.cache_dir,
            url_option=options.url_option,
        )


class HumanScheme(BackendScheme):
    """``human``: a person in the terminal (``evalctl play``; ``engine.session.backends.human``).
    Not advertised among the run's sides (``usage`` empty): one person plays one session."""

    scheme = "human"
    usage = ""
    takes_args = False

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        from engine.session.backends.human import HumanFactory

        return HumanFactory(options.scenarios)


class ExternalScheme(BackendScheme):
    """``ws://host:port`` (also ``wss://``): a side of your own, speaking docs/protocol.md."""

    scheme = "ws"
    usage = "ws://host:port"
    external = True
    files_per_session = 1

    @classmethod
    def parse(cls, text: str) -> BackendSpec:
        from urllib.parse import urlsplit

        if not text.startswith(("ws://", "wss://")) or not text.split("://", 1)[1]:
            raise UsageError(f"unknown backend {text!r}: {expected()}")
        try:
            parts = urlsplit(text)
            port = parts.port  # a port out of range or not a number raises ValueError
        except ValueError as err:
            raise UsageError(f"backend {text!r}: not a usable ws:// URL ({err})") from None
        if not parts.hostname or port == 0:
            raise UsageError(f"backend {text!r}: not a usable ws:// URL (expected ws://host:port)")
        return BackendSpec("external", uri=text, scheme=text.split(":", 1)[0], text=text)


class PythonScheme(BackendScheme):
    """``python:FILE.py:FACTORY`` (or ``python:MODULE:FACTORY``, ``python:@NAME`` for a factory
    registered with ``engine.session.backends.python_agent.register_agent``): an agent written
    as a Python callable, run in-process (``engine.session.backends.python_agent``)."""

    scheme = "python"
    usage = "python:FILE.py:FACTORY"
    runs_user_code = True

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        from engine.session.backends.python_agent import PythonFactory, resolve

        return PythonFactory(resolve(spec.args, cls.scheme), name=str(spec))


class PipecatScheme(BackendScheme):
    """``pipecat:FILE.py:FACTORY``: a pipecat pipeline (the ``pipecat`` extra), text mode, or in a
    voice run with its own STT and TTS (``engine.session.backends.pipecat_agent``)."""

    scheme = "pipecat"
    usage = "pipecat:FILE.py:FACTORY"
    runs_user_code = True
    voice_audio = True

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        from engine.session.backends.pipecat_agent import PipecatFactory

        return PipecatFactory.load(spec.args, name=str(spec))


class LiveKitScheme(BackendScheme):
    """``livekit:FILE.py:FACTORY``: a LiveKit Agents ``Agent`` (the ``livekit`` extra), text mode
    (``engine.session.backends.livekit_agent``)."""

    scheme = "livekit"
    usage = "livekit:FILE.py:FACTORY"
    runs_user_code = True
    voice_refusal = (
        "not supported: the adapter drives the agent through AgentSession.run(user_input=...),"
        " which is text only (docs/agents.md, LiveKit)"
    )

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        from engine.session.backends.livekit_agent import LiveKitFactory

        return LiveKitFactory.load(spec.args, name=str(spec))


class SecureExternalScheme(ExternalScheme):
    """``wss://host:port``: an external side over TLS."""

    scheme = "wss"
    usage = ""  # said by ws://host:port


class RtviScheme(BackendScheme):
    """``rtvi+ws://host:port``: an RTVI bot built like NVIDIA NeMo Voice-Agent's eval bots (a
    pipecat pipeline holding its own tools and DB), driven by ``engine.session.backends.rtvi``."""

    scheme = "rtvi+ws"
    usage = "rtvi+ws://host:port"
    agent_code = True
    files_per_session = 3
    sessions_at_once = 1
    voice_refusal = (
        "not supported: the adapter sends the bot text (send-text), not audio (docs/agents.md, RTVI bots)"
    )

    @classmethod
    def parse(cls, text: str) -> BackendSpec:
        from urllib.parse import urlsplit

        uri = text[len("rtvi+") :]
        try:
            parts = urlsplit(uri)
            port = parts.port
        except ValueError as err:
            raise UsageError(f"backend {text!r}: not a usable rtvi+ws:// URL ({err})") from None
        if not uri.startswith("ws://") or not parts.hostname or not port:
            raise UsageError(f"backend {text!r}: not a usable rtvi+ws:// URL (expected rtvi+ws://host:port)")
        return BackendSpec("rtvi", uri=uri, scheme=cls.scheme, args=uri, text=text)

    @classmethod
    def factory(cls, spec: BackendSpec, options: BackendOptions) -> BackendFactory:
        from engine.session.backends.rtvi import RtviFactory, tool_map
        from engine.session.backends.rtvi_wire import encode_frame

        encode_frame({})  # pipecat missing: one line (UsageError) before the first session
        first = next(iter(options.scenarios.values()), None)  # one domain, one map (read once)
        if first is not None:
            tool_map(first)  # a broken rtvi.yaml: one line before the first session
        return RtviFactory(str(spec.uri), str(spec), options.scenarios)


#: The built-in schemes (the registry's first entries; their names cannot be registered again).
BUILTIN: dict[str, type[BackendScheme]] = {
    cls.scheme: cls
    for cls in (
        ReplayScheme,
        NoopScheme,
        OpenAIScheme,
        HumanScheme,
        ExternalScheme,
        SecureExternalScheme,
        RtviScheme,
        PythonScheme,
        PipecatScheme,
        LiveKitScheme,
    )
}


def scan() -> tuple[dict[str, type[BackendScheme]], list[str]]:
    """The schemes installed packages register under ``evalctl.backends``, and one line per entry
    point refused: it takes a built-in name, does not load, is not a BackendScheme subclass or is
    named otherwise than its ``scheme``."""
    found: dict[str, type[BackendScheme]] = {}
    refused: list[str] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in BUILTIN:
            refused.append(f"{ep.name} = {ep.value}: {ep.name!r} is a built-in scheme")
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a third party's import error: its scheme is unknown
            refused.append(f"{ep.name} = {ep.value}: does not load ({type(exc).__name__}: {exc})")
            continue
        if not (isinstance(cls, type) and issubclass(cls, BackendScheme)):
            refused.append(f"{ep.name} = {ep.value}: not a BackendScheme subclass")
        elif cls.scheme != ep.name:
            refused.append(f"{ep.name} = {ep.value}: the class's scheme is {cls.scheme!r}")
        else:
            found[ep.name] = cls
    return found, refused


@cache
def installed() -> dict[str, type[BackendScheme]]:
    """The installed schemes (:func:`scan`, once per process, when a spec is parsed); each
    refused entry point is one line on stderr, as the signal registry's (a spec naming it is then
    an unknown backend)."""
    found, refused = scan()
    for line in refused:
        print(f"evalctl: backend entry point {ENTRY_POINT_GROUP}: {line}; left out", file=sys.stderr)
    return found


def _schemes() -> dict[str, type[BackendScheme]]:
    return {**BUILTIN, **installed()}


def expected() -> str:
    """``expected replay, noop, openai:MODEL, ws://host:port or rtvi+ws://host:port`` (and the
    installed schemes)."""
    usages = [cls.usage for cls in _schemes().values() if cls.usage]
    return f"expected {', '.join(usages[:-1])} or {usages[-1]}"


def backend_scheme(name: str) -> type[BackendScheme]:
    """The class of scheme ``name``: built in, else installed. Raises UsageError (unknown
    backend, with the schemes there are and the closest one)."""
    if name in BUILTIN:
        return BUILTIN[name]
    found = installed()
    if name in found:
        return found[name]
    raise UsageError(f"unknown backend scheme {name!r}: {expected()}{did_you_mean(name, _schemes())}")


def parse_backend_spec(text: str) -> BackendSpec:
    """Parse ``--agent`` / ``--user`` (``replay``, ``noop``, ``openai:MODEL``, ``ws://host:port``,
    or an installed ``scheme[:ARGS]``). Raises UsageError (one line, ``unknown backend 'X':
    expected ...`` with the closest scheme) for anything else."""
    value = text.strip()
    name = value.split(":", 1)[0]
    plugins = installed()  # scanned (and its refusals printed) whatever the scheme
    if name not in BUILTIN and name not in plugins:
        raise UsageError(f"unknown backend {text!r}: {expected()}{did_you_mean(name, _schemes())}")
    return backend_scheme(name).parse(value)


def evalctl_own(spec: BackendSpec) -> bool:
    """True when ``spec``'s scheme is built in (:data:`BUILTIN`): evalctl's own code answers for
    what its side does. A scheme an installed package registers is not: its backend is the
    package's code, so a built-in side serving it is blamed like an external side
    (``engine.session.sides.link.blame``: an agent's raise, its ``BackendError``, its silence are
    the agent's FAIL, never an ``error`` of evalctl's or of a model endpoint). Nor is a built-in
    scheme whose side runs the agent's own code: a bot it drives (``agent_code``: ``rtvi+ws://``)
    or the user's code in-process (``runs_user_code``: ``python:``, ``pipecat:``, ``livekit:``)."""
    scheme = BUILTIN.get(spec.scheme)
    return scheme is not None and not (scheme.agent_code or scheme.runs_user_code)


def scheme_of(spec: BackendSpec) -> type[BackendScheme]:
    """The class of a parsed spec's scheme."""
    return backend_scheme(spec.scheme)
