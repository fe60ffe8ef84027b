"""A line (or the same samples) asked for by two sessions at once is computed once: the second
waits for the first (engine/session/voice/cache.py ``computed_once``). A failure is shared, a
cancelled computation is not: its waiter computes the value itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.session.voice.cache import VoiceCache
from engine.session.voice.tts import CachedSynthesizer, TTSError

pytest.importorskip("diskcache")


class GatedVoice:
    """A synthesiser that waits for ``gate`` before answering, counting its calls."""

    name = "gated"

    def __init__(self, fail: bool = False) -> None:
        self.gate = asyncio.Event()
        self.calls = 0
        self.fail = fail

    async def synthesize(self, text: str, rate: int) -> bytes:
        self.calls += 1
        await self.gate.wait()
        if self.fail:
            raise TTSError("no voice")
        return text.encode() * 2


async def _both(voice: GatedVoice, tts: CachedSynthesizer, cancel_first: bool = False) -> list[object]:
    first = asyncio.ensure_future(tts.synthesize("Hello, how can I help?", 16000))
    await asyncio.sleep(0)  # the first is under way (its call counted) before the second asks
    second = asyncio.ensure_future(tts.synthesize("Hello, how can I help?", 16000))
    await asyncio.sleep(0)
    if cancel_first:
        first.cancel()
        await asyncio.sleep(0)
    voice.gate.set()
    return list(await asyncio.gather(first, second, return_exceptions=True))


def test_two_sessions_saying_the_same_line_at_once_synthesise_it_once(tmp_path: Path) -> None:
    voice = GatedVoice()
    tts = CachedSynthesizer(voice, VoiceCache(tmp_path / "cache"), "gated/1")
    results = asyncio.run(_both(voice, tts))
    assert results == [b"Hello, how can I help?" * 2] * 2 and voice.calls == 1


def test_a_failure_reaches_both_and_nothing_is_stored(tmp_path: Path) -> None:
    voice = GatedVoice(fail=True)
    cache = VoiceCache(tmp_path / "cache")
    results = asyncio.run(_both(voice, CachedSynthesizer(voice, cache, "gated/1")))
    assert [type(r) for r in results] == [TTSError, TTSError] and voice.calls == 1
    voice.fail, voice.gate = False, asyncio.Event()
    voice.gate.set()
    tts = CachedSynthesizer(voice, cache, "gated/1")
    again = asyncio.run(tts.synthesize("Hello, how can I help?", 16000))
    assert again == b"Hello, how can I help?" * 2 and voice.calls == 2


def test_a_cancelled_computation_leaves_its_waiter_to_compute_it(tmp_path: Path) -> None:
    voice = GatedVoice()
    tts = CachedSynthesizer(voice, VoiceCache(tmp_path / "cache"), "gated/1")
    first, second = asyncio.run(_both(voice, tts, cancel_first=True))
    assert isinstance(first, asyncio.CancelledError)
    assert second == b"Hello, how can I help?" * 2 and voice.calls == 2
