"""Realistic callers: the perturbations change the caller's audio as they say (sox and numpy),
deterministically; several espeak-ng voices speak."""

from __future__ import annotations

import math
from array import array

import pytest

from engine.session.voice.pcm import duration_ms, samples
from engine.session.voice.perturb import VOICES, Perturbation, Perturbed, add_noise
from engine.session.voice.tts import EspeakNG, missing_tts

pytestmark = pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}")
TEXT = "My confirmation number is Z K three F F W and my last name is Rivera."


def _rms(pcm: bytes) -> float:
    x = samples(pcm)
    return math.sqrt(sum(v * v for v in x) / max(1, len(x)))


async def test_speed_volume_telephone_and_noise_change_the_audio_as_said() -> None:
    tts = EspeakNG()
    clean = await tts.synthesize(TEXT, 16000)
    fast = await Perturbed(tts, Perturbation(speed=1.25)).synthesize(TEXT, 16000)
    assert abs(duration_ms(fast, 16000) - duration_ms(clean, 16000) / 1.25) <= 60
    quiet = await Perturbed(tts, Perturbation(volume_db=-6.0)).synthesize(TEXT, 16000)
    assert abs(20 * math.log10(_rms(quiet) / _rms(clean)) + 6.0) <= 0.2
    phone = await Perturbed(tts, Perturbation(telephone=True)).synthesize(TEXT, 16000)
    assert len(phone) == len(clean) and phone != clean  # same length, band-limited and quantised
    noisy = await Perturbed(tts, Perturbation(snr_db=10.0)).synthesize(TEXT, 16000)
    noise = array("h", (a - b for a, b in zip(samples(noisy), samples(clean), strict=True)))
    snr = 20 * math.log10(_rms(clean) / math.sqrt(sum(v * v for v in noise) / len(noise)))
    assert abs(snr - 10.0) <= 0.5
    assert add_noise(clean, 10.0, 7) == add_noise(clean, 10.0, 7) != add_noise(clean, 10.0, 8)  # seeded
    assert (
        Perturbed(tts, Perturbation(telephone=True, snr_db=10, speed=1.2)).name == "espeak-ng[tel+snr10+x1.2]"
    )


async def test_several_caller_voices_sound_different() -> None:
    said = {v: await EspeakNG(voice=v).synthesize(TEXT, 16000) for v in VOICES}
    assert all(said.values()) and len(set(said.values())) == len(VOICES)


def test_noise_of_silence_is_silence() -> None:
    assert add_noise(bytes(320), 10.0, 1) == bytes(320)
