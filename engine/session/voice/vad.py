"""Voice activity detection on a side's audio: where the speech is, by WebRTC's VAD (webrtcvad).

:func:`speech_segments` classifies 10 ms frames with ``webrtcvad.Vad`` (the ``voice`` extra:
``webrtcvad-wheels``) and joins voiced frames into segments, bridging pauses shorter than
``join_ms`` (the breath between words) and dropping blips shorter than ``min_ms``. The VAD holds
speech on for a few frames after it stops (its hangover), so the end of each segment is found by
running it backwards over the reversed samples: a segment's start and end are both onsets, each
found without the hangover, and so equally sharp. The VAD decides where speech is; its edges are
then placed where the sound crosses the energy threshold nearby (a soft onset the VAD calls late).

webrtcvad takes 8, 16, 32 or 48 kHz; other rates (22,050, 24,000, 44,100 Hz) are resampled to
16 kHz first (``scipy.signal.resample_poly``). Without webrtcvad installed the energy detector
of :mod:`engine.session.voice.pcm` stands in (:data:`VAD_NAME` says which one ran).

Times are milliseconds from the start of the samples given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from typing import Any

from engine.session.voice.cache import VoiceCache, recognition_key
from engine.session.voice.pcm import SPEECH_DBFS, speech_bounds

FRAME_MS = 10
#: Pauses shorter than this inside one side's speech are part of it (ms).
JOIN_MS = 300
#: Voiced stretches shorter than this are not speech (ms): a click, a codec burst.
MIN_MS = 30
#: webrtcvad's aggressiveness, 0 (keeps most) to 3 (drops most non-speech).
AGGRESSIVENESS = 2
PAD_MS = 200
#: How far outside a VAD segment its edges are looked for by energy (ms).
EDGE_MS = 200
_NATIVE = (8000, 16000, 32000, 48000)

Segment = tuple[float, float]


@lru_cache(maxsize=1)
def _webrtcvad() -> Any | None:
    try:
        import webrtcvad  # type: ignore[import-untyped]
    except ImportError:
        return None
    return webrtcvad


def vad_name() -> str:
    """``webrtcvad`` when the library is installed, else ``energy`` (the stand-in detector)."""
    return "webrtcvad" if _webrtcvad() is not None else "energy"


def _native(pcm: bytes, rate: int) -> tuple[bytes, int]:
    """``pcm`` at a rate webrtcvad takes (resampled to 16 kHz when it is not one)."""
    if rate in _NATIVE:
        return pcm, rate
    import numpy as np
    from scipy.signal import resample_poly  # type: ignore[import-untyped]

    g = gcd(16000, rate)
    x = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    y = resample_poly(x, 16000 // g, rate // g)
    return np.clip(np.rint(y), -32768, 32767).astype("<i2").tobytes(), 16000


def _flags(pcm: bytes, rate: int, aggressiveness: int) -> list[bool]:
    vad = _webrtcvad().Vad(aggressiveness)  # type: ignore[union-attr]
    step = 2 * rate * FRAME_MS // 1000
    return [vad.is_speech(pcm[i : i + step], rate) for i in range(0, len(pcm) - step + 1, step)]


def _onsets(flags: list[bool], join: int, shortest: int) -> list[tuple[int, int]]:
    """Runs of voiced frames as ``(first, last + 1)``, pauses under ``join`` frames bridged,
    runs under ``shortest`` frames dropped."""
    runs: list[tuple[int, int]] = []
    i, n = 0, len(flags)
    while i < n:
        if not flags[i]:
            i += 1
            continue
        j = i
        while j < n and flags[j]:
            j += 1
        if runs and i - runs[-1][1] < join:
            runs[-1] = (runs[-1][0], j)
        else:
            runs.append((i, j))
        i = j
    return [r for r in runs if r[1] - r[0] >= shortest]


def speech_segments(
    pcm: bytes,
    rate: int,
    aggressiveness: int = AGGRESSIVENESS,
    join_ms: float = JOIN_MS,
    min_ms: float = MIN_MS,
) -> list[Segment]:
    """The speech in mono s16le ``pcm`` at ``rate`` Hz as ``[(start_ms, end_ms), ...]`` in order
    (empty when there is none). Starts are the VAD's forward onsets, ends its onsets on the
    reversed samples (see the module docstring); 10 ms resolution."""
    if _webrtcvad() is None:
        bounds = speech_bounds(pcm, rate)
        return [] if bounds is None else [bounds]
    data, vrate = _native(pcm, rate)
    # silence around it: the VAD needs a few frames of context before it calls speech, and
    # audio cut to its speech (a synthesiser's output trimmed) has none at either end
    pad = 2 * vrate * PAD_MS // 1000
    data = bytes(pad) + data + bytes(pad)
    join, shortest = round(join_ms / FRAME_MS), max(1, round(min_ms / FRAME_MS))
    forward = _onsets(_flags(data, vrate, aggressiveness), join, shortest)
    if not forward:
        return []
    backward = _backward_ends(data, vrate, aggressiveness, join, shortest)
    out: list[Segment] = []
    for first, last in forward:
        # the reversed pass's end inside this run (the forward run's end carries the hangover)
        ends = [e for e in backward if first < e <= last]
        end = max(ends) if ends else last
        at, to = first * FRAME_MS - PAD_MS, end * FRAME_MS - PAD_MS
        out.append(_edges(pcm, rate, float(max(0, at)), float(min(to, 1000.0 * (len(pcm) // 2) / rate))))
    return out


def _edges(pcm: bytes, rate: int, start: float, end: float) -> Segment:
    """A VAD segment's edges moved out to where its sound begins and ends: the VAD calls a soft
    onset (a vowel, a fricative) speech some frames late, so the first and last 10 ms windows
    above the energy threshold (engine.session.voice.pcm.speech_bounds) within
    :data:`EDGE_MS` outside the segment are its edges."""
    total = 1000.0 * (len(pcm) // 2) / rate

    def cut(a: float, b: float) -> tuple[bytes, float]:
        i, j = 2 * round(max(0.0, a) * rate / 1000.0), 2 * round(min(total, b) * rate / 1000.0)
        return pcm[i:j], 1000.0 * (i // 2) / rate

    head, at = cut(start - EDGE_MS, start + FRAME_MS)
    found = speech_bounds(head, rate)
    if found is not None:
        start = min(start, at + found[0])
    tail, at = cut(end - FRAME_MS, end + EDGE_MS)
    found = speech_bounds(tail, rate)
    if found is not None:
        end = max(end, at + found[1])
    return start, end


def _backward_ends(data: bytes, rate: int, aggressiveness: int, join: int, shortest: int) -> list[int]:
    """Frame indices (forward time) where speech ends, from the VAD run over the reversed samples."""
    import numpy as np

    samples = np.frombuffer(data[: len(data) - len(data) % 2], dtype="<i2")
    n = len(samples) - len(samples) % (rate * FRAME_MS // 1000)  # whole frames, as the forward pass
    flags = _flags(samples[:n][::-1].tobytes(), rate, aggressiveness)
    total = len(flags)
    return [total - first for first, _ in _onsets(flags, join, shortest)]


def vad_identity() -> str:
    """What decides :func:`speech_segments`' answer (the voice cache's key): the detector, its
    version and every setting of this module."""
    lib = _webrtcvad()
    version = getattr(lib, "__version__", "unknown") if lib is not None else "energy"
    settings = (FRAME_MS, JOIN_MS, MIN_MS, AGGRESSIVENESS, PAD_MS, EDGE_MS, SPEECH_DBFS)
    return f"{vad_name()} {version} {settings}"


@dataclass(frozen=True)
class CachedVAD:
    """:func:`speech_segments` with its answers kept in ``cache`` (the voice cache), keyed by
    the samples' SHA-256 and :func:`vad_identity`: the same segments, found once."""

    cache: VoiceCache

    def __call__(self, pcm: bytes, rate: int, digest: str | None = None) -> list[Segment]:
        """The segments of ``pcm`` at ``rate`` Hz; ``digest``: its SHA-256 hex when known."""
        key = recognition_key(vad_identity(), pcm, rate, kind="vad", digest=digest)
        hit = self.cache.get(key)
        if hit is not None:  # the stored JSON read back (floats exactly), its shape checked
            return list(hit)
        found = speech_segments(pcm, rate)
        self.cache.put(key, json.dumps(found))
        return found


def speech_span(pcm: bytes, rate: int) -> Segment | None:
    """``(start_ms, end_ms)`` from the first segment's start to the last one's end, or None."""
    segments = speech_segments(pcm, rate)
    return (segments[0][0], segments[-1][1]) if segments else None
