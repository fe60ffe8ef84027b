"""Realistic callers: the caller's synthesised speech changed the way a phone line or a room
changes it, by sox (the OS package the local TTS already needs) and numpy.

:class:`Perturbed` wraps any :class:`~engine.session.voice.tts.Synthesizer` and applies a
:class:`~engine.core.caller.Perturbation` (its grammar and direction: ``engine.core.caller``) to
what it returns; :func:`perturb` applies one to any audio (the agent's speech as the line
carries it to the caller): ``speed`` (tempo, pitch kept: sox ``tempo``),
``volume_db`` (sox ``vol``), ``telephone`` (G.711 μ-law at 8 kHz and back: sox, the band and the
quantisation noise of a phone call) and ``snr_db`` (white noise at that signal-to-noise ratio
over the speech, numpy, seeded by the text so a run is reproducible). sox raises TTSError as the
synthesiser does. :data:`VOICES` lists
espeak-ng voice variants for several callers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass

from engine.core.caller import Perturbation
from engine.session.voice.tts import EspeakNG, Synthesizer, _run

__all__ = [
    "VOICES",
    "Perturbation",
    "Perturbed",
    "add_noise",
    "caller_tts",
    "perturb",
    "seed_of",
    "voice_problem",
]

#: espeak-ng voices for different callers (built into the package; ``+f3`` and the like are its
#: variants: pitch, formants).
VOICES = ("en-us", "en-us+f3", "en-us+m3", "en-gb", "en-us+f5")


def _raw(rate: int) -> list[str]:
    return ["-t", "raw", "-r", str(rate), "-e", "signed", "-b", "16", "-c", "1", "-L"]


async def _sox(pcm: bytes, rate: int, effects: list[str], timeout_s: float) -> bytes:
    # -D: no dither, so the same speech always comes out the same
    return await _run(["sox", "-q", "-D", *_raw(rate), "-", *_raw(rate), "-", *effects], pcm, timeout_s)


async def _telephone(pcm: bytes, rate: int, timeout_s: float) -> bytes:
    ulaw = await _run(
        [
            "sox",
            "-q",
            "-R",
            *_raw(rate),
            "-",
            "-t",
            "raw",
            "-r",
            "8000",
            "-e",
            "u-law",
            "-b",
            "8",
            "-c",
            "1",
            "-",
        ],
        pcm,
        timeout_s,
    )
    back = ["-t", "raw", "-r", "8000", "-e", "u-law", "-b", "8", "-c", "1", "-"]
    return await _run(["sox", "-q", "-R", *back, *_raw(rate), "-"], ulaw, timeout_s)


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
        return await perturb(pcm, rate, self.change, seed_of(text), self.timeout_s)


def seed_of(text: str) -> int:
    """The noise seed of ``text`` (the same text gets the same noise in every run)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


async def perturb(pcm: bytes, rate: int, change: Perturbation, seed: int, timeout_s: float = 60.0) -> bytes:
    """``pcm`` (mono s16le at ``rate`` Hz) with ``change`` applied, in this order: speed and
    volume (sox), the telephone round trip (sox), then the noise (``seed``). Raises TTSError
    when sox fails."""
    if not pcm:
        return pcm
    c = change
    effects: list[str] = []
    if c.speed != 1.0:
        effects += ["tempo", "-s", f"{c.speed:g}"]
    if c.volume_db:
        effects += ["vol", f"{c.volume_db:g}dB"]
    if effects:
        pcm = await _sox(pcm, rate, effects, timeout_s)
    if c.telephone:
        pcm = await _telephone(pcm, rate, timeout_s)
    if c.snr_db is not None:
        pcm = add_noise(pcm, c.snr_db, seed)
    return pcm


#: A voice name as the scenario schema's ``caller.voice`` has it (schemas/scenario.schema.json).
_VOICE_NAME = re.compile(r"[A-Za-z0-9_-]+(\+[A-Za-z0-9_-]+)?")


def voice_problem(voice: str) -> str | None:
    """Why espeak-ng cannot speak ``voice`` (``en-us``, ``en-us+f3``: a voice, then optionally
    ``+`` and one of its variants), one line; None when it can (or espeak-ng is not installed:
    the run says so itself)."""
    import shutil
    import subprocess

    if not _VOICE_NAME.fullmatch(voice):
        return "not a voice name: a voice, optionally + one of its variants (e.g. en-us, en-us+f3)"
    if shutil.which("espeak-ng") is None:
        return None
    base, _, variant = voice.partition("+")
    try:
        spoke = subprocess.run(
            ["espeak-ng", "-q", "-v", base, "x"], capture_output=True, timeout=10, check=False
        )
        if spoke.returncode != 0:
            return f"espeak-ng has no voice {base!r} (espeak-ng --voices lists them)"
        if variant:
            listed = subprocess.run(
                ["espeak-ng", "--voices=variant"], capture_output=True, timeout=10, check=False
            ).stdout.decode(errors="replace")
            names = {
                cols[4].removeprefix("!v/")
                for cols in map(str.split, listed.splitlines()[1:])
                if len(cols) >= 5
            }
            if variant not in names:
                return f"espeak-ng has no voice variant {variant!r} (espeak-ng --voices=variant lists them)"
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"espeak-ng could not be asked about voice {voice!r}: {err}"
    return None


def caller_tts(base: Synthesizer, voice: str | None, change: Perturbation | None) -> Synthesizer:
    """The caller's synthesiser: ``base`` (the run's local engine) in ``voice`` when one is given
    (an EspeakNG named ``espeak-ng:VOICE``), with ``change`` applied when it changes anything."""
    tts = base
    if voice is not None and isinstance(base, EspeakNG):
        tts = dataclasses.replace(base, voice=voice, name=f"{base.name}:{voice}")
    if change is not None and not change.clean:
        tts = Perturbed(tts, change)
    return tts
