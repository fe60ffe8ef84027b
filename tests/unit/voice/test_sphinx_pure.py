"""PocketSphinx's transcript of an utterance depends on that audio alone: the decoder a worker
process keeps carries its feature state (cepstral mean, noise estimate) from one utterance to the
next unless reset, so the same turn was heard differently after other turns (and the voice cache,
keyed by the samples, would have kept whichever came first)."""

from __future__ import annotations

import asyncio

import pytest

from engine.session.voice.sphinx import MODEL_RATE, PocketSphinx, available
from engine.session.voice.tts import EspeakNG, missing_tts

pytestmark = [
    pytest.mark.skipif(not available(), reason="pocketsphinx not installed (the voice extra)"),
    pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}"),
]


def test_an_utterance_is_heard_the_same_whatever_was_decoded_before() -> None:
    tts = EspeakNG()
    line = asyncio.run(tts.synthesize("Hi, I need to change my flight to March twenty fifth.", MODEL_RATE))
    other = asyncio.run(tts.synthesize("Thank you for calling, goodbye.", MODEL_RATE))
    alone = PocketSphinx().transcribe(line, MODEL_RATE)
    asr = PocketSphinx(maxhmmpf=2999)  # another decoder of its own (decoders are kept per setting)
    asr.transcribe(other, MODEL_RATE)  # before the fix, this changed how the line below was heard
    after = asr.transcribe(line, MODEL_RATE)
    alone_again = PocketSphinx(maxhmmpf=2999).transcribe(line, MODEL_RATE)
    assert after == alone_again
    assert alone  # heard something
