"""Mono 16-bit PCM helpers (stdlib only): WAV files, speech detection by energy, test tones.

Samples are signed 16-bit little-endian (``pcm_s16le``) bytes; times are milliseconds.
"""

from __future__ import annotations

import io
import math
import operator
import struct
import sys
import wave
from array import array

#: A 10 ms window whose RMS level is above this (dB relative to full scale) holds speech.
SPEECH_DBFS = -50.0
WINDOW_MS = 10


def samples(pcm: bytes) -> array[int]:
    """The samples of little-endian s16 ``pcm`` as an ``array('h')`` (a trailing odd byte is dropped)."""
    out = array("h")
    out.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    if sys.byteorder == "big":
        out.byteswap()
    return out


def to_bytes(values: array[int]) -> bytes:
    """``array('h')`` samples as little-endian s16 bytes."""
    if sys.byteorder == "big":
        values = array("h", values)
        values.byteswap()
    return values.tobytes()


def duration_ms(pcm: bytes, rate: int) -> float:
    """Length of ``pcm`` in ms at ``rate`` Hz."""
    return 1000.0 * (len(pcm) // 2) / rate


def silence(ms: float, rate: int) -> bytes:
    """``ms`` of digital silence."""
    return bytes(2 * round(ms * rate / 1000.0))


def tone(ms: float, rate: int, hz: float = 440.0, level_dbfs: float = -12.0) -> bytes:
    """A sine tone of ``ms`` at ``hz`` and ``level_dbfs`` peak."""
    n = round(ms * rate / 1000.0)
    amp = 32767 * 10 ** (level_dbfs / 20)
    step = 2 * math.pi * hz / rate
    return to_bytes(array("h", (int(amp * math.sin(step * i)) for i in range(n))))


def _view(pcm: bytes) -> array[int] | memoryview:
    """The samples of ``pcm`` indexable as ints: a view of its bytes where the machine is
    little-endian (no copy), else :func:`samples`."""
    if sys.byteorder != "little":
        return samples(pcm)
    view = memoryview(pcm)
    return view[: len(view) - len(view) % 2].cast("h")


def _loud(window: array[int] | memoryview, threshold: float) -> bool:
    return sum(map(operator.mul, window, window)) > threshold * len(window)


def speech_bounds(pcm: bytes, rate: int, dbfs: float = SPEECH_DBFS) -> tuple[float, float] | None:
    """``(start_ms, end_ms)`` of the speech in ``pcm``: from the start of the first 10 ms window
    whose RMS is above ``dbfs`` to the end of the last one; None when no window is. Scans inwards
    from both ends, so the cost is the leading and trailing silence, not the whole clip (the
    samples are read in place, not copied, on a little-endian machine)."""
    values = _view(pcm)
    n = max(1, rate * WINDOW_MS // 1000)
    threshold = (32768 * 10 ** (dbfs / 20)) ** 2  # mean square at the threshold
    count = (len(values) + n - 1) // n
    first = next((i for i in range(count) if _loud(values[i * n : (i + 1) * n], threshold)), None)
    if first is None:
        return None
    last = next(i for i in range(count - 1, first - 1, -1) if _loud(values[i * n : (i + 1) * n], threshold))
    end = min(len(values), (last + 1) * n)
    return 1000.0 * first * n / rate, 1000.0 * end / rate


def speech_slice(pcm: bytes, rate: int) -> slice | None:
    """The byte range of ``pcm``'s speech (:func:`speech_bounds`), to cut the same stretch out of
    another version of the same audio (a perturbed one); None when it holds no speech."""
    bounds = speech_bounds(pcm, rate)
    if bounds is None:
        return None
    start, end = (2 * round(ms * rate / 1000.0) for ms in bounds)
    return slice(start, end)


def trim(pcm: bytes, rate: int) -> bytes:
    """``pcm`` cut to its speech (:func:`speech_slice`): a synthesiser's leading and trailing
    silence removed, so the audio ends where the speech ends; empty when it holds no speech."""
    cut = speech_slice(pcm, rate)
    return b"" if cut is None else pcm[cut]


def wav_bytes(pcm: bytes, rate: int) -> bytes:
    """A mono 16-bit WAV file holding ``pcm`` at ``rate`` Hz."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return buf.getvalue()


#: The RIFF header :func:`wav_bytes` (the standard library's ``wave``) writes for mono 16-bit PCM.
_WAV_HEADER = struct.Struct("<4sI4s4sIHHIIHH4sI")
#: Its size (bytes): where the samples of such a file start.
WAV_HEADER_BYTES = _WAV_HEADER.size


def wav_header(data_bytes: int, rate: int) -> bytes:
    """The 44-byte header of a mono 16-bit WAV file holding ``data_bytes`` bytes of samples at
    ``rate`` Hz: the bytes :func:`wav_bytes` puts before them, for a file built in place (one
    buffer, no copy of the samples)."""
    return _WAV_HEADER.pack(
        b"RIFF", 36 + data_bytes, b"WAVE", b"fmt ", 16, 1, 1, rate, 2 * rate, 2, 16, b"data", data_bytes
    )


def read_wav(data: bytes) -> tuple[bytes, int]:
    """``(pcm, rate)`` of a mono 16-bit WAV file. Raises ValueError for another layout."""
    with wave.open(io.BytesIO(data), "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(
                f"expected mono 16-bit WAV, got {w.getnchannels()} channels of {w.getsampwidth()} bytes"
            )
        return w.readframes(w.getnframes()), w.getframerate()
