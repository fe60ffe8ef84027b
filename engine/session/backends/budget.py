"""A model request's time budget inside one turn.

A side that waits on a hung endpoint must give up before the engine's turn timeout does, or the
run only learns "agent side sent nothing for 300 s" instead of which endpoint did not answer
(``openai:M: model endpoint URL did not answer in 60 s, 4 tries``). :func:`fit_to_turn` keeps the
requested per-try timeout when it fits and drops the retries that could never finish in time.
"""

from __future__ import annotations

#: The openai client's backoff before retry n (0-based): 0.5 s doubling, at most 8 s (openai
#: ``_base_client``: INITIAL_RETRY_DELAY, MAX_RETRY_DELAY; its jitter only shortens it).
INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
#: The share of the turn timeout the requests of one model step may use (the rest is the engine's
#: and the side's own time).
TURN_SHARE = 0.9


def backoff_s(retries: int) -> float:
    """Seconds the client sleeps in total between ``retries`` retries (no ``Retry-After``)."""
    return sum(min(INITIAL_RETRY_DELAY_S * 2.0**n, MAX_RETRY_DELAY_S) for n in range(retries))


def fit_to_turn(
    request_timeout_s: float, max_retries: int, turn_timeout_s: float | None
) -> tuple[float, int]:
    """``(per-try timeout in seconds, retries)`` whose worst case (every try timing out, with the
    backoff between them) ends within :data:`TURN_SHARE` of ``turn_timeout_s``: the timeout is at
    most that share, and retries are dropped (never below 0) until the tries fit. ``turn_timeout_s``
    None: unchanged. ``fit_to_turn(60, 4, 300)`` -> ``(60, 3)``: 4 tries of 60 s and 3.5 s of
    backoff end before 270 s."""
    if turn_timeout_s is None:
        return request_timeout_s, max_retries
    budget = TURN_SHARE * turn_timeout_s
    timeout = min(request_timeout_s, budget)
    retries = max(0, max_retries)
    while retries > 0 and (retries + 1) * timeout + backoff_s(retries) > budget:
        retries -= 1
    return timeout, retries
