"""Before the first session: is each ``openai:`` endpoint of the run (agent, user, judge) there,
and does it take the key? One ``GET <base URL>/models`` each, without retries. An external side
(``ws://host:port``, an ``rtvi+ws://`` bot's ``ws://`` URL) is checked by the WebSocket opening
handshake of ``websockets`` (the sessions' own client), closed at once: the side sees a connection
that ends before its ``session.start``, never a session.

Unreachable, silent past the timeout, or refusing the key (HTTP 401 / 403) stops the run with one
line naming the endpoint, before any session is spent on it; so does a side whose port answers the
upgrade request with anything but a WebSocket (a plain HTTP server's 404 or 501: the wrong port).
Any other answer of a model endpoint (a 404 from a server without a model list included) counts as
reachable: the sessions' own requests say the rest.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidHandshake, InvalidMessage, InvalidStatus

from engine.core.protocol import MAX_FRAME_BYTES
from engine.util.errors import InfrastructureError
from engine.util.untrusted import one_line

#: Seconds the check waits for an endpoint at most (the run's request timeout when shorter).
PROBE_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Endpoint:
    """One endpoint to check: ``label`` names its roles (``agent model endpoint``, ``judge
    endpoint``), ``base_url`` None = the client's default, ``api_key_env`` where its key is."""

    label: str
    base_url: str | None
    api_key_env: str
    #: An external side's ``ws://`` / ``wss://`` URI: checked by a WebSocket handshake, not as a
    #: model API.
    side_uri: str | None = None
    #: The option that sets ``base_url`` or ``side_uri`` (named when the endpoint fails its check).
    url_option: str = "--base-url"
    #: The side's address as the user gave it, quoted in messages (``rtvi+ws://HOST:PORT``, whose
    #: ``side_uri`` is the ``ws://`` URL connected to); empty: ``side_uri``.
    side_text: str = ""


async def probe_side(endpoint: Endpoint, timeout_s: float) -> None:
    """Open a WebSocket connection to an external side and close it at once; raises
    InfrastructureError (one line naming it) when nothing accepts it within ``timeout_s`` seconds,
    or when what answers is not a WebSocket server (the upgrade request answered with an HTTP
    status, or with no valid HTTP response at all). The line quotes the side's address as the
    user gave it (``endpoint.side_text``)."""
    uri = str(endpoint.side_uri)
    shown = endpoint.side_text or uri
    try:
        async with connect(
            uri,
            open_timeout=timeout_s,
            close_timeout=1.0,
            compression=None,
            max_size=MAX_FRAME_BYTES,
            proxy=None,
        ):
            pass
    except (OSError, TimeoutError) as err:
        # a timeout: nothing accepted the connection, or what did never answered the handshake
        why = (
            f"no answer to the WebSocket handshake in {timeout_s:g} s"
            if isinstance(err, TimeoutError)
            else (err.strerror or err)
        )
        raise InfrastructureError(
            f"{endpoint.label} {shown} is unreachable ({why}); start that side first (e.g. `evalctl serve`)"
        ) from None
    except InvalidHandshake as err:
        # a WebSocket server may refuse the upgrade too (401, 403: its credentials; 503: full)
        refused = isinstance(err, InvalidStatus) and err.response.status_code in _REFUSALS
        what = "refused the WebSocket connection" if refused else "is not a WebSocket server"
        raise InfrastructureError(
            f"{endpoint.label} {shown} {what} ({_answer(err)}); check {endpoint.url_option}"
        ) from None


#: HTTP statuses with which a WebSocket server itself may answer an upgrade request it refuses.
_REFUSALS = frozenset({401, 403, 429, 503})


def _answer(err: InvalidHandshake) -> str:
    """What a side's port answered the upgrade request with, in a few words (its text clipped)."""
    if isinstance(err, InvalidStatus):
        response = err.response
        status = f"HTTP {response.status_code} {one_line(response.reason_phrase, 60)}".strip()
        return f"it answered the upgrade request with {status}"
    if isinstance(err, InvalidMessage):
        cause = err.__cause__ or err
        return f"no valid HTTP/1.1 answer to the upgrade request: {one_line(str(cause), 200)}"
    return f"its answer to the upgrade request: {one_line(str(err), 200)}"


async def probe(endpoint: Endpoint, timeout_s: float) -> None:
    """Check one endpoint; raises InfrastructureError (one line naming it) when it is unreachable,
    does not answer within ``timeout_s`` seconds, or refuses the key."""
    import openai  # imported here: runs without a model never pay for it

    client = openai.AsyncOpenAI(
        base_url=endpoint.base_url,
        api_key=os.environ.get(endpoint.api_key_env) or "unused",
        timeout=timeout_s,
        max_retries=0,
    )
    url = str(client.base_url).rstrip("/")
    try:
        await client.models.list()
    except openai.APITimeoutError:
        raise InfrastructureError(f"{endpoint.label} {url} did not answer in {timeout_s:g} s") from None
    except openai.APIConnectionError as err:
        cause = err.__cause__ or err
        raise InfrastructureError(
            f"{endpoint.label} {url} is unreachable ({type(cause).__name__}: {cause}); "
            f"check {endpoint.url_option}"
        ) from None
    except openai.APIStatusError as err:
        if err.status_code in (401, 403):
            body = err.body if isinstance(err.body, dict) else {}
            said = body.get("message") if isinstance(body.get("message"), str) else err.message
            raise InfrastructureError(
                f"{endpoint.label} {url} refused the API key in ${endpoint.api_key_env} "
                f"(HTTP {err.status_code}: {one_line(str(said), 200)})"
            ) from None
    except (openai.APIError, ValueError):
        pass  # it answered, with something that is not a model list: reachable
    finally:
        await client.close()


async def check_endpoints(endpoints: list[Endpoint], timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Check every endpoint once (the same URL and key variable once for all their roles), all at
    once; raises the first failure's InfrastructureError."""
    merged: dict[tuple[str | None, str], list[Endpoint]] = {}
    sides: dict[str, list[Endpoint]] = {}
    for e in endpoints:
        if e.side_uri is not None:
            sides.setdefault(e.side_uri, []).append(e)
        else:
            merged.setdefault((e.base_url, e.api_key_env), []).append(e)
    checks = [probe(_one_check(url, env, same), timeout_s) for (url, env), same in merged.items()]
    checks += [probe_side(_one_side(uri, same), timeout_s) for uri, same in sides.items()]
    outcomes = await asyncio.gather(*checks, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


def _one_check(url: str | None, env: str, same: list[Endpoint]) -> Endpoint:
    """The endpoints sharing a URL and key variable, checked once: their roles and options joined."""
    options = " / ".join(dict.fromkeys(e.url_option for e in same))
    return Endpoint(" and ".join(e.label for e in same), url, env, url_option=options)


def _one_side(uri: str, same: list[Endpoint]) -> Endpoint:
    """The sides at one URI (the agent and the user on one ``evalctl serve``), checked once; their
    addresses as given, each once (``ws://H:P / rtvi+ws://H:P`` when they were given apart)."""
    options = " / ".join(dict.fromkeys(e.url_option for e in same))
    shown = " / ".join(dict.fromkeys(e.side_text or uri for e in same))
    label = " and ".join(e.label for e in same)
    return Endpoint(label, None, "", side_uri=uri, url_option=options, side_text=shown)
