"""Per-role model request settings: ``--agent-args`` / ``--user-args`` / ``--judge-args`` JSON.

A role's args are one JSON object of chat-completions request fields. The fields the OpenAI
chat-completions API names (:data:`REQUEST_FIELDS`: ``temperature``, ``top_p``, ``seed``,
``max_tokens``, ``reasoning_effort``, ``tool_choice``...) are sent as themselves; any other key is
provider-specific (``top_k``, ``min_p``, ``repetition_penalty``, ``chat_template_kwargs``...) and
sent in the request body as given (the client's ``extra_body``). The fields evalctl itself sets
(:data:`RESERVED`: ``model``, ``messages``, ``tools``, ``stream``, ``n``) cannot be given.

With no args evalctl sends the agent and the user simulator ``model``, ``messages`` and (when the
side has tools) ``tools`` only: every sampling setting is the server's default. The judge sends
``temperature: 0`` and a JSON-schema ``response_format`` unless its args say otherwise.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from engine.util.artifacts import UnreadableFile, loads_bounded
from engine.util.errors import UsageError

#: Request fields of the OpenAI chat-completions API that a role's args may set, sent as themselves.
REQUEST_FIELDS = frozenset(
    {
        "temperature",
        "top_p",
        "seed",
        "max_tokens",
        "max_completion_tokens",
        "reasoning_effort",
        "tool_choice",
        "parallel_tool_calls",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "response_format",
        "service_tier",
        "verbosity",
        "user",
        "metadata",
        "store",
    }
)
#: Fields evalctl sets itself: refused in a role's args.
RESERVED = frozenset({"model", "messages", "tools", "stream", "stream_options", "n", "functions"})
#: Fields whose value must be a number (int or float), and those that must be an integer.
_NUMBERS = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
_INTEGERS = ("seed", "max_tokens", "max_completion_tokens", "top_logprobs")


def parse_model_args(text: str | None, flag: str) -> dict[str, Any]:
    """The args object of ``flag`` (``--agent-args``) from its JSON ``text`` (None or empty: ``{}``).
    Raises UsageError (one line naming ``flag``) for text that is not a JSON object, nested too
    deeply, holding a non-finite number or an over-long integer, a reserved
    field, or a number field of the wrong type (``{"temperature": "hot"}``)."""
    if text is None or not text.strip():
        return {}
    try:
        value = loads_bounded(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{flag}: not JSON ({err.msg} at character {err.pos}): {text[:80]!r}") from None
    except UnreadableFile as err:
        raise UsageError(f"{flag}: not JSON ({err}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{flag}: expected a JSON object of request fields, got {type(value).__name__}")
    check_model_args(value, flag)
    return value


def check_model_args(args: Mapping[str, Any], flag: str) -> None:
    """UsageError (one line) when ``args`` sets a reserved field or gives a number field a value
    that is not a finite number (an integer for ``seed`` and the token limits)."""
    for key, value in args.items():
        if key in RESERVED:
            raise UsageError(f"{flag}: {key!r} is set by evalctl itself and cannot be given")
        if key in _INTEGERS and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError(f"{flag}: {key!r} must be an integer, got {value!r}")
        if key in _NUMBERS and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        ):
            raise UsageError(f"{flag}: {key!r} must be a number, got {value!r}")


def request_kwargs(args: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for ``args``: the API's own fields as
    themselves, every other key under ``extra_body`` (sent in the JSON body as given). Keys are
    sorted, so equal args give equal requests (and equal cache keys)."""
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key in sorted(args):
        (kwargs if key in REQUEST_FIELDS else extra)[key] = args[key]
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def with_seed(args: Mapping[str, Any], seed: int | None) -> dict[str, Any]:
    """``args`` with ``seed`` set (a per-attempt seed, e.g. a regenerated caller's); ``seed`` None
    leaves ``args`` as they are."""
    return dict(args) if seed is None else {**args, "seed": seed}
