"""Before the first session: is each ``openai:`` endpoint of the run (agent, user, judge) there,
and does it take the key? One ``GET <base URL>/models`` each, without retries. An external side
(``ws://host:port``) is checked by opening a TCP connection to it and closing it (no WebSocket
handshake, so the side sees no session).

Unreachable, silent past the timeout, or refusing the key (HTTP 401 / 403) stops the run with one
line naming the endpoint, before any session is spent on it. Any other answer (a 404 from a server
without a model list included) counts as reachable: the sessions' own requests say the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass

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
    #: An external side's ``ws://`` / ``wss://`` URI: checked by a TCP connect, not as a model API.
    side_uri: str | None = None
    #: The option that sets ``base_url`` (named when the endpoint is unreachable).
    url_option: str = "--base-url"


async def probe_side(endpoint: Endpoint, timeout_s: float) -> None:
    """Open and close a TCP connection to an external side; raises InfrastructureError (one line
    naming it) when nothing accepts it within ``timeout_s`` seconds."""
    from urllib.parse import urlsplit

    uri = str(endpoint.side_uri)
    parts = urlsplit(uri)
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, port), timeout_s)
    except (OSError, TimeoutError) as err:
        why = f"no answer in {timeout_s:g} s" if isinstance(err, TimeoutError) else (err.strerror or err)
        raise InfrastructureError(
            f"{endpoint.label} {uri} is unreachable ({why}); start that side first (e.g. `evalctl serve`)"
        ) from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


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
    sides: dict[str, list[str]] = {}
    for e in endpoints:
        if e.side_uri is not None:
            sides.setdefault(e.side_uri, []).append(e.label)
        else:
            merged.setdefault((e.base_url, e.api_key_env), []).append(e)
    checks = [probe(_one_check(url, env, same), timeout_s) for (url, env), same in merged.items()]
    checks += [
        probe_side(Endpoint(" and ".join(labels), None, "", uri), timeout_s) for uri, labels in sides.items()
    ]
    outcomes = await asyncio.gather(*checks, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


def _one_check(url: str | None, env: str, same: list[Endpoint]) -> Endpoint:
    """The endpoints sharing a URL and key variable, checked once: their roles and options joined."""
    options = " / ".join(dict.fromkeys(e.url_option for e in same))
    return Endpoint(" and ".join(e.label for e in same), url, env, url_option=options)
