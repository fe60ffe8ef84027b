"""Realistic callers: the caller's synthesised speech changed the way a phone line or a room
changes it, by sox (the OS package the local TTS already needs) and numpy.

:class:`Perturbed` wraps any :class:`~engine.session.voice.tts.Synthesizer` and applies a
:class:`Perturbation` to what it returns: ``speed`` (tempo, pitch kept: sox ``tempo``),
``volume_db`` (sox ``vol``), ``telephone`` (G.711 μ-law at 8 kHz and back: sox, the band and the
quantisation noise of a phone call) and ``snr_db`` (white noise at that signal-to-noise ratio
over the speech, numpy, seeded by the text so a run is reproducible). sox raises TTSError as the
synthesiser does. :data:`VOICES` lists
espeak-ng voice variants for several callers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from engine.session.voice.tts import Synthesizer, _run

#: espeak-ng voices for different callers (built into the package; ``+f3`` and the like are its
#: variants: pitch, formants).
VOICES = ("en-us", "en-us+f3", "en-us+m3", "en-gb", "en-us+f5")


@dataclass(frozen=True)
class Perturbation:
    """What to change: ``speed`` factor (1 = as synthesised), ``volume_db`` gain, ``telephone``
    (8 kHz μ-law round trip), ``snr_db`` (None: no noise)."""

    speed: float = 1.0
    volume_db: float = 0.0
    telephone: bool = False
    snr_db: float | None = None

    @property
    def label(self) -> str:
        """A short name: ``clean``, or the changes joined (``tel+snr10+x1.2``)."""
        parts = ["tel"] if self.telephone else []
        if self.snr_db is not None:
            parts.append(f"snr{self.snr_db:g}")
        if self.speed != 1.0:
            parts.append(f"x{self.speed:g}")
        if self.volume_db:
            parts.append(f"{self.volume_db:+g}dB")
        return "+".join(parts) or "clean"


def _raw(rate: int) -> list[str]:
    return ["-t", "raw", "-r", str(rate), "-e", "signed", "-b", "16", "-c", "1", "-L"]


async def _sox(pcm: bytes, rate: int, effects: list[str], timeout_s: float) -> bytes:
    # -D: no dither, so the same speech always comes out the same
    return await _run(["sox", "-q", "-D", *_raw(rate), "-", *_raw(rate), "-", *effects], pcm, timeout_s)


async def _telephone(pcm: bytes, rate: int, timeout_s: float) -> bytes:
    ulaw = await _run(
        ["sox", "-q", *_raw(rate), "-", "-t", "raw", "-r", "8000", "-e", "u-law", "-b", "8", "-c", "1", "-"],
        pcm,
        timeout_s,
    )
    back = ["-t", "raw", "-r", "8000", "-e", "u-law", "-b", "8", "-c", "1", "-"]
    return await _run(["sox", "-q", *back, *_raw(rate), "-"], ulaw, timeout_s)


def add_noise(pcm: bytes, snr_db: float, seed: int) -> bytes:
    """``pcm`` with white noise whose power is ``snr_db`` below the signal's (mean over its
    samples), clipped to 16 bits."""
    import numpy as np

    x = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    if not len(x):
        return pcm
    power = float(np.mean(x**2))
    noise = np.random.default_rng(seed).normal(0.0, np.sqrt(power / 10 ** (snr_db / 10)), len(x))
    return bytes(np.clip(np.rint(x + noise), -32768, 32767).astype("<i2").tobytes())


@dataclass(frozen=True)
class Perturbed:
    """``inner``'s speech with ``change`` applied (see the module docstring)."""

    inner: Synthesizer
    change: Perturbation
    timeout_s: float = 60.0

    @property
    def name(self) -> str:
        return f"{self.inner.name}[{self.change.label}]"

    async def synthesize(self, text: str, rate: int) -> bytes:
        pcm = await self.inner.synthesize(text, rate)
        if not pcm:
            return pcm
        c = self.change
        effects: list[str] = []
        if c.speed != 1.0:
            effects += ["tempo", "-s", f"{c.speed:g}"]
        if c.volume_db:
            effects += ["vol", f"{c.volume_db:g}dB"]
        if effects:
            pcm = await _sox(pcm, rate, effects, self.timeout_s)
        if c.telephone:
            pcm = await _telephone(pcm, rate, self.timeout_s)
        if c.snr_db is not None:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            pcm = add_noise(pcm, c.snr_db, seed)
        return pcm
