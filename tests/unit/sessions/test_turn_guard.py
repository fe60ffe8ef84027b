"""A side server stops a turn when the engine closes the connection meanwhile (TurnGuard: one
watcher per connection instead of a watcher task per turn), and only then: a turn that ends, fails
or is cancelled from outside keeps its own outcome, and the handler is left uncancelled."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from engine.session.sides.server import TurnGuard, _SessionEnded


class _Conn:
    """Enough of a server connection for TurnGuard: ``wait_closed`` returns once :meth:`drop` ran."""

    def __init__(self) -> None:
        self._closed = asyncio.Event()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def drop(self) -> None:
        self._closed.set()


async def _handler(conn: _Conn, *turns: object) -> list[str]:
    """What a connection handler sees of each turn run through one guard."""
    guard = TurnGuard(conn)
    seen: list[str] = []
    try:
        for turn in turns:
            try:
                await guard.turn(turn)  # type: ignore[arg-type]
                seen.append("done")
            except _SessionEnded:
                seen.append("ended")
            except ValueError as err:
                seen.append(f"raised {err}")
        await asyncio.sleep(0)  # the handler goes on: no cancellation is left pending on it
        seen.append(f"cancelling={asyncio.current_task().cancelling()}")  # type: ignore[union-attr]
    finally:
        guard.close()
    return seen


async def test_turns_run_to_their_end_while_the_connection_is_open() -> None:
    async def turn(n: int) -> None:
        await asyncio.sleep(0)

    assert await _handler(_Conn(), turn(1), turn(2)) == ["done", "done", "cancelling=0"]


async def test_a_close_during_a_turn_cancels_it_and_ends_the_session() -> None:
    conn = _Conn()
    stopped: list[str] = []

    async def slow_turn() -> None:
        conn.drop()  # the engine closes while the model request is in flight
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.append("model request cancelled")
            raise

    seen = await _handler(conn, slow_turn())
    assert stopped == ["model request cancelled"]
    assert seen == ["ended", "cancelling=0"]


async def test_a_turn_after_the_close_is_not_started() -> None:
    conn = _Conn()
    guard = TurnGuard(conn)
    started: list[int] = []

    async def turn() -> None:
        started.append(1)

    conn.drop()
    for _ in range(5):  # a few loop iterations: the watcher sees the close (no clock involved)
        await asyncio.sleep(0)
    with pytest.raises(_SessionEnded):
        await guard.turn(turn())
    guard.close()
    assert started == []


async def test_a_turn_that_swallows_the_cancellation_still_ends_the_session() -> None:
    conn = _Conn()

    async def stubborn_turn() -> None:
        conn.drop()
        with contextlib.suppress(asyncio.CancelledError):  # a backend that ignores cancellation
            await asyncio.Event().wait()

    assert await _handler(conn, stubborn_turn()) == ["ended", "cancelling=0"]


async def test_a_failing_turn_keeps_its_error() -> None:
    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("bad reply")

    async def fine() -> None:
        await asyncio.sleep(0)

    assert await _handler(_Conn(), failing(), fine()) == ["raised bad reply", "done", "cancelling=0"]


async def test_a_cancellation_from_outside_is_not_swallowed() -> None:
    conn = _Conn()
    entered = asyncio.Event()

    async def waiting_turn() -> None:
        entered.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(_handler(conn, waiting_turn()))
    await entered.wait()
    task.cancel()  # the server shutting down cancels its handlers
    with pytest.raises(asyncio.CancelledError):
        await task
