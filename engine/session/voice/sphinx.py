"""The default speech recogniser: CMU PocketSphinx from its pip package (the ``voice`` extra).

The wheel ships its US English acoustic model, dictionary and language model, so nothing is
downloaded. :class:`PocketSphinx` is a :class:`engine.session.voice.asr.Recognizer`; it holds only
its settings (it is sent to worker processes), and each process builds its decoder once, on its
first transcription. Audio at another rate than the model's 16 kHz is resampled first
(``scipy.signal.resample_poly``; 8 kHz telephony audio is upsampled, its missing band stays
missing).

The settings trade accuracy for speed (``ds`` frame downsampling, ``topn`` Gaussians,
``maxhmmpf`` active HMMs per frame): on 34 of eva's gold agent lines (every sixth, 603 s of
espeak-ng speech) they take 0.20 s of CPU per second of speech at a WER of 88.6 % (the
package's defaults: about 0.4 s). Tried and not taken, on a third of those lines (195 s, one
after the other on a machine at load 10-17): without the second, flat-lexicon pass
(``fwdflat=False``) 0.158 s against 0.265 s (0.60x) for 89.2 % against 87.7 % WER, but the
replay of eva_airline__5_2_5 then matched 2 of its 3 agent turns to their lines instead of 3
(tests/domains/eva_airline/test_voice_hearing_eva.py); ``ds=3`` without the flat pass 0.212 s
(no faster than that pass alone, within this machine's noise) for 90.2 % WER. espeak-ng's
formant speech is far from the model's training speech, so the WER is high either way; the gate
``speech_matches_text`` (the nearest line) is what must hold.

Tried in issue #28's cost round, not taken: on 17 gold agent lines (every twelfth, 290 s of
speech, one after the other at load about 1) ``maxhmmpf=1500`` took 0.073 s of CPU per second of
speech against 0.099 s (0.74x) at 89.2 % WER against 89.3 %, but on the whole eva replay
(``make bench``'s cold run) it heard 188 of the 202 agent turns as their own line against 195,
and 29 of 980 key entities against 37 (WER 88.4 % against 88.1 %); ``ds=3`` 0.093 s at 92.3 %
and ``topn=1`` 0.086 s at 90.2 % gave little for the accuracy lost.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from typing import Any

MODEL_RATE = 16000


def available() -> bool:
    """True when the pocketsphinx package can be imported."""
    try:
        import pocketsphinx  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


@lru_cache(maxsize=4)
def _decoder(settings: tuple[tuple[str, Any], ...]) -> Any:
    from pocketsphinx import Decoder

    return Decoder(samprate=MODEL_RATE, loglevel="FATAL", **dict(settings))


def _at_model_rate(pcm: bytes, rate: int) -> bytes:
    if rate == MODEL_RATE:
        return pcm
    import numpy as np
    from scipy.signal import resample_poly  # type: ignore[import-untyped]

    g = gcd(MODEL_RATE, rate)
    x = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    y = resample_poly(x, MODEL_RATE // g, rate // g)
    return bytes(np.clip(np.rint(y), -32768, 32767).astype("<i2").tobytes())


@dataclass(frozen=True)
class PocketSphinx:
    """PocketSphinx with the package's en-US model; ``ds``, ``topn``, ``maxhmmpf``, ``fwdflat``
    as in the module docstring. ``transcribe`` raises RuntimeError when the package is missing."""

    ds: int = 2
    topn: int = 2
    maxhmmpf: int = 3000
    fwdflat: bool = True
    name: str = "pocketsphinx"

    def transcribe(self, pcm: bytes, rate: int) -> str:
        """The words heard in mono s16le ``pcm`` at ``rate`` Hz, lower case, space separated
        (empty for silence)."""
        if not pcm:
            return ""
        try:
            decoder = _decoder(
                (("ds", self.ds), ("topn", self.topn), ("maxhmmpf", self.maxhmmpf), ("fwdflat", self.fwdflat))
            )
        except ImportError:
            raise RuntimeError("pocketsphinx is not installed (pip install 'evalctl[voice]')") from None
        # the feature state (cepstral mean, noise estimate) is reset so the transcript is a function
        # of this audio alone, never of the utterances this process decoded before (which differ
        # with the worker a turn lands on): what the voice cache, keyed by the samples, relies on
        decoder.reinit_feat()
        decoder.start_utt()
        decoder.process_raw(_at_model_rate(pcm, rate), full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        return " ".join(hyp.hypstr.split()) if hyp is not None else ""

    def cache_identity(self) -> str:
        """What decides the transcripts (the voice cache's key): the package version and every
        setting of the decoder."""
        return f"pocketsphinx {_version()} {dataclasses.asdict(self)} per-utterance features"


@lru_cache(maxsize=1)
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pocketsphinx")
    except PackageNotFoundError:
        return "unknown"
