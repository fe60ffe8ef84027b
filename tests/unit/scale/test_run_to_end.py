"""``engine.util.aio.run_to_end``: a command's coroutine run as ``asyncio.run`` runs it, except
that a task left running which ignores its cancellation is named and left behind instead of
holding the process for ever."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest

from engine.util.aio import run_to_end


async def _ignores_cancellation(ended: list[str]) -> None:
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            ended.append("swallowed")


async def _ends_when_cancelled(ended: list[str]) -> None:
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        ended.append("cleaned up")
        raise


def test_the_value_of_main_and_a_stuck_task_named_not_waited_for() -> None:
    said: list[str] = []
    ended: list[str] = []
    keep: list[asyncio.Task[None]] = []

    async def main() -> int:
        keep.append(asyncio.ensure_future(_ignores_cancellation(ended)))
        keep.append(asyncio.ensure_future(_ends_when_cancelled(ended)))
        await asyncio.sleep(0)
        return 7

    assert run_to_end(main(), grace_s=0.2, say=said.append) == 7
    assert sorted(ended) == ["cleaned up", "swallowed"]
    assert len(said) == 1
    assert "1 task still running at the end did not end within 0.2 s of being cancelled" in said[0]
    assert "_ignores_cancellation() at " in said[0] and "test_run_to_end.py:" in said[0]
    assert keep[1].cancelled() and not keep[0].done()


def test_tasks_that_end_when_cancelled_end_in_silence() -> None:
    said: list[str] = []
    ended: list[str] = []

    keep: list[asyncio.Task[None]] = []

    async def main() -> str:
        keep.append(asyncio.ensure_future(_ends_when_cancelled(ended)))
        await asyncio.sleep(0)
        return "done"

    assert run_to_end(main(), say=said.append) == "done"
    assert ended == ["cleaned up"] and said == []


def test_what_main_raises_is_raised_after_the_leftovers_are_settled() -> None:
    said: list[str] = []
    ended: list[str] = []

    keep: list[asyncio.Task[None]] = []

    async def main() -> None:
        keep.append(asyncio.ensure_future(_ignores_cancellation(ended)))
        await asyncio.sleep(0)
        raise LookupError("main failed")

    with pytest.raises(LookupError, match="main failed"):
        run_to_end(main(), grace_s=0.1, say=said.append)
    assert ended == ["swallowed"] and len(said) == 1


def test_a_loop_is_usable_again_afterwards() -> None:
    keep: list[asyncio.Task[None]] = []

    async def main() -> None:
        keep.append(asyncio.ensure_future(_ignores_cancellation([])))
        await asyncio.sleep(0)

    run_to_end(main(), grace_s=0.05, say=lambda _: None)
    assert asyncio.run(asyncio.sleep(0, "again")) == "again"


def test_a_task_started_by_a_cancelled_one_is_cancelled_in_turn() -> None:
    said: list[str] = []
    ended: list[str] = []
    keep: list[asyncio.Task[None]] = []

    async def hands_over() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            keep.append(asyncio.ensure_future(_ignores_cancellation(ended)))
            raise

    async def main() -> None:
        keep.append(asyncio.ensure_future(hands_over()))
        await asyncio.sleep(0)

    run_to_end(main(), grace_s=0.3, say=said.append)
    assert ended == ["swallowed"] and len(said) == 1 and "_ignores_cancellation() at" in said[0]


def test_a_blocking_call_in_the_default_executor_holds_the_loop_no_longer_than_the_grace() -> None:
    """``loop.shutdown_default_executor`` joins its threads even when cancelled: a blocking call
    of the agent's held the end of the run for as long as it blocked."""
    import threading

    said: list[str] = []
    release = threading.Event()

    async def main() -> str:
        asyncio.get_running_loop().run_in_executor(None, release.wait)
        await asyncio.sleep(0)
        return "done"

    try:
        assert run_to_end(main(), grace_s=0.2, say=said.append) == "done"
        assert len(said) == 1 and "1 thread of asyncio's default executor" in said[0]
        assert said[0].endswith("still running at the end (what was written is complete)")
    finally:
        release.set()


def test_an_async_generator_whose_finally_waits_for_ever_is_left_behind() -> None:
    """Before: ``loop.shutdown_asyncgens`` had no bound; ``--workers 1`` hung for ever."""
    said: list[str] = []
    closing: list[str] = []

    async def gen() -> Any:
        try:
            yield 1
            yield 2
        finally:
            closing.append("finally")
            await asyncio.Event().wait()  # never set

    keep: list[Any] = []

    async def main() -> str:
        it = gen()
        keep.append(it)
        assert await it.__anext__() == 1  # suspended inside the try: its finally runs at close
        return "done"

    assert run_to_end(main(), grace_s=0.2, say=said.append) == "done"
    assert closing == ["finally"]
    assert len(said) == 1 and "async generators still closing 0.2 s after the end" in said[0]


@pytest.mark.parametrize("how", ["stop", "exit", "interrupt"])
def test_what_a_cancelled_task_does_to_the_loop_leaves_the_outcome_alone(how: str) -> None:
    """A cancelled task that stops the loop (``loop.stop()``), or raises SystemExit or
    KeyboardInterrupt. Before: a RuntimeError traceback, or SystemExit(7) / KeyboardInterrupt
    raised from the cleanup instead of main's value (exit 7, or 130 "interrupted")."""
    said: list[str] = []
    ended: list[str] = []
    keep: list[asyncio.Task[None]] = []

    async def unruly() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if how == "stop":
                asyncio.get_running_loop().stop()
                raise
            raise (SystemExit(7) if how == "exit" else KeyboardInterrupt()) from None

    async def slow_to_end() -> None:  # ends 0.1 s after its cancellation: after unruly() acted
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(0.1)
            ended.append("cleaned up")
            raise

    async def main() -> int:
        keep.append(asyncio.ensure_future(unruly()))
        keep.append(asyncio.ensure_future(slow_to_end()))
        await asyncio.sleep(0)
        return 0

    assert run_to_end(main(), grace_s=0.5, say=said.append) == 0
    assert keep[0].done()
    assert ended == ["cleaned up"] and said == []  # the other task's cancellation ran to its end too
    if how != "stop":  # it raised, and that is not reported again
        assert isinstance(keep[0].exception(), SystemExit if how == "exit" else KeyboardInterrupt)


def test_a_ctrl_c_while_the_leftovers_are_waited_for_ends_the_wait() -> None:
    """The user's Ctrl-C (a SIGINT, here sent by a leftover task as it is cancelled) ends the
    wait: the tasks still running are named, main's value stands. A KeyboardInterrupt that code
    raises without a SIGINT does not (the test above)."""
    said: list[str] = []
    keep: list[asyncio.Task[None]] = []

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                asyncio.get_running_loop().call_soon(_interrupt)

    async def main() -> int:
        keep.append(asyncio.ensure_future(stubborn()))
        await asyncio.sleep(0)
        return 0

    assert run_to_end(main(), grace_s=30, say=said.append) == 0  # not the 30 s: the wait ended
    assert len(said) == 1 and "1 task still running" in said[0] and "stubborn()" in said[0]


def _interrupt() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("stray", [SystemExit(4), KeyboardInterrupt()])
def test_an_exit_raised_outside_main_is_what_the_caller_says(stray: BaseException) -> None:
    """A callback of code running in this process raises SystemExit or KeyboardInterrupt. Before:
    the CLI exited with that code (4), silently. ``on_stray_exit`` names what to raise instead;
    ``main`` is cancelled with the rest (a run's summary is still written then)."""
    cancelled: list[str] = []

    async def main() -> None:
        def boom() -> None:
            raise stray

        asyncio.get_running_loop().call_soon(boom)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append("main")
            raise

    with pytest.raises(LookupError, match=type(stray).__name__):
        run_to_end(main(), grace_s=0.5, on_stray_exit=lambda exc: LookupError(repr(exc)))
    assert cancelled == ["main"]
    with pytest.raises(type(stray)):  # without it, raised as it is
        run_to_end(main(), grace_s=0.5)

    async def own() -> None:  # main's own SystemExit is main's: raised as it is
        raise SystemExit(5)

    with pytest.raises(SystemExit):
        run_to_end(own(), on_stray_exit=lambda exc: LookupError(repr(exc)))


def test_a_callback_raising_keyboard_interrupt_while_leftovers_end_is_not_a_ctrl_c() -> None:
    """Found by a breaker: an agent's callbacks raising KeyboardInterrupt over and over ended the
    wait at once ("19 tasks ... did not end within 0 s"), leaving evalctl's own tasks behind."""
    said: list[str] = []
    ended: list[str] = []

    async def noisy() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            asyncio.get_running_loop().call_soon(_raise_interrupt)
            await asyncio.sleep(0.1)
            ended.append("noisy")
            raise

    keep: list[asyncio.Task[None]] = []

    async def main() -> int:
        keep.append(asyncio.ensure_future(noisy()))
        keep.append(asyncio.ensure_future(_ends_when_cancelled(ended)))
        await asyncio.sleep(0)
        return 0

    assert run_to_end(main(), grace_s=30, say=said.append) == 0
    assert sorted(ended) == ["cleaned up", "noisy"] and said == []


def _raise_interrupt() -> None:
    raise KeyboardInterrupt
