"""The binary audio frame of protocol version 2: a 12-byte header, then samples.

```
offset  size  field
0       1     magic 0x56 ("V")
1       1     header version: 1
2       2     stream   uint16, big-endian: the turn the audio belongs to
4       4     seq      uint32, big-endian: frame number per sender and connection, from 0, +1 each
8       4     t_ms     uint32, big-endian: media time of the first sample (ms on the session clock)
12      n     samples in the agreed encoding (pcm_s16le: n even), mono, 1 ms to max_frame_ms of audio
```

Frames travel as WebSocket binary messages; JSON messages stay text messages. ``stream``: frames
the engine sends before a ``turn.request`` carry that request's ``turn``; frames a side sends carry
the turn it is answering. Parsing uses :mod:`struct` only (no numpy).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = 0x56
HEADER_VERSION = 1
HEADER = struct.Struct(">BBHII")
HEADER_BYTES = HEADER.size  # 12

#: Bytes per sample of each encoding.
SAMPLE_BYTES = {"pcm_s16le": 2}


class FrameError(ValueError):
    """A binary frame that is not a valid audio frame; the message says what is wrong."""


@dataclass(frozen=True)
class AudioFrame:
    """One frame: ``stream`` (turn), ``seq``, ``t_ms`` (media time of the first sample, ms) and
    ``pcm`` (the samples, bytes)."""

    stream: int
    seq: int
    t_ms: int
    pcm: bytes

    def duration_ms(self, rate: int, encoding: str = "pcm_s16le") -> float:
        """Audio length in ms at ``rate`` Hz."""
        return 1000.0 * len(self.pcm) / (SAMPLE_BYTES[encoding] * rate)


def pack(frame: AudioFrame) -> bytes:
    """The wire bytes of ``frame``. Raises FrameError for a field out of range."""
    if not (0 <= frame.stream <= 0xFFFF and 0 <= frame.seq <= 0xFFFFFFFF and 0 <= frame.t_ms <= 0xFFFFFFFF):
        raise FrameError(
            f"header field out of range: stream {frame.stream}, seq {frame.seq}, t_ms {frame.t_ms}"
        )
    return HEADER.pack(MAGIC, HEADER_VERSION, frame.stream, frame.seq, frame.t_ms) + frame.pcm


def unpack(data: bytes, rate: int, max_frame_ms: int, encoding: str = "pcm_s16le") -> AudioFrame:
    """Parse one binary message of a session at ``rate`` Hz. Raises FrameError when it is shorter
    than the header, has another magic or header version, holds a partial sample, no sample, or more
    than ``max_frame_ms`` of audio."""
    if len(data) < HEADER_BYTES:
        raise FrameError(f"binary frame of {len(data)} bytes is shorter than the {HEADER_BYTES}-byte header")
    magic, version, stream, seq, t_ms = HEADER.unpack_from(data)
    if magic != MAGIC or version != HEADER_VERSION:
        raise FrameError(
            f"binary frame header starts {magic:#04x} {version}, expected {MAGIC:#04x} {HEADER_VERSION}"
        )
    size = len(data) - HEADER_BYTES
    width = SAMPLE_BYTES[encoding]
    if size == 0 or size % width:
        raise FrameError(
            f"binary frame holds {size} bytes of {encoding}: not a whole number of samples (> 0)"
        )
    limit = width * rate * max_frame_ms // 1000
    if size > limit:
        raise FrameError(f"binary frame holds {size} bytes, over {max_frame_ms} ms of audio ({limit} bytes)")
    return AudioFrame(stream, seq, t_ms, bytes(data[HEADER_BYTES:]))


def split(pcm: bytes, rate: int, frame_ms: int, stream: int, first_seq: int, t_ms: float) -> list[AudioFrame]:
    """Cut ``pcm`` (s16le at ``rate`` Hz) into frames of ``frame_ms`` from media time ``t_ms``,
    numbered from ``first_seq``; each frame's ``t_ms`` is its first sample's time (rounded down)."""
    step = 2 * rate * frame_ms // 1000
    frames = []
    for i, start in enumerate(range(0, len(pcm), step)):
        at = t_ms + 1000.0 * start / (2 * rate)
        frames.append(AudioFrame(stream, first_seq + i, int(at), pcm[start : start + step]))
    return frames
