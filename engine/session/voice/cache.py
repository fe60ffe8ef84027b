"""A content-addressed cache of a voice run's deterministic work: speech synthesis and recognition.

The same line spoken by the same engine, voice and rate gives the same samples, and the same
samples heard by the same recogniser and settings give the same words, so a second voice run of
the same scenarios need not synthesise or recognise anything again. Entries are keyed by the
SHA-256 of everything that decides them:

- synthesis (:func:`synthesis_key`): the engine's identity (name, program version, voice, words per
  minute, any perturbation; :func:`engine.session.voice.tts.synth_identity`), the text and the
  sample rate; the value is the mono s16le samples;
- recognition (:func:`recognition_key`): the recogniser's identity (name, library version and
  configuration; :func:`engine.session.voice.asr.recognizer_identity`), the sample rate and the
  SHA-256 of the samples; the value is the transcript;
- voice activity (:func:`recognition_key` with the detector's identity,
  :func:`engine.session.voice.vad.vad_identity`): the speech segments of one utterance's samples.

Only engines that declare an identity are cached (the local ones: espeak-ng, the tone stand-in,
PocketSphinx); a command named by ``$EVALCTL_ASR`` is not. The store is a
`diskcache <https://grantjenks.com/docs/diskcache/>`_ folder (SQLite index, large values as
files; the ``voice`` extra), in the user cache dir (``$XDG_CACHE_HOME/evalctl/voice``, else
``~/.cache/evalctl/voice``), bounded to :data:`SIZE_LIMIT` bytes (least recently used entries go
first). ``$EVALCTL_VOICE_CACHE`` names another folder, or ``off`` for none; ``evalctl cache
clear`` empties it. A cached value is what the engine computed, byte for byte, so a warm run's
verdicts, voice figures and DB hashes are a cold run's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: The environment variable naming the voice cache folder, or ``off`` / ``none`` for no cache.
VOICE_CACHE_ENV = "EVALCTL_VOICE_CACHE"
_OFF = frozenset({"off", "none", "0", "no"})
#: The most the cache holds on disk (bytes); diskcache evicts the least recently used beyond it.
SIZE_LIMIT = 2**30
#: Key prefix of each kind of entry (also the counters' names).
KINDS = ("tts", "asr", "vad")


def voice_cache_dir() -> Path | None:
    """The voice cache folder: ``$EVALCTL_VOICE_CACHE`` (None when it says ``off``), else
    ``$XDG_CACHE_HOME/evalctl/voice``, else ``~/.cache/evalctl/voice``."""
    value = os.environ.get(VOICE_CACHE_ENV, "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "evalctl" / "voice"


def _digest(parts: dict[str, Any]) -> str:
    body = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _digest_of(value: bytes | str) -> str:
    """The integrity tag stored beside a value: ``crc32:`` and the CRC-32 of its bytes (a check
    against damage on disk, not against tampering: it costs a fifth of a SHA-256 to verify)."""
    data = value if isinstance(value, bytes) else value.encode("utf-8")
    return f"crc32:{zlib.crc32(data):08x}"


def _matches(value: bytes | str, digest: str) -> bool:
    """True when ``digest`` is ``value``'s tag: a CRC-32 (:func:`_digest_of`), or the SHA-256 hex
    that entries stored before it carry."""
    if digest.startswith("crc32:"):
        return digest == _digest_of(value)
    data = value if isinstance(value, bytes) else value.encode("utf-8")
    return digest == hashlib.sha256(data).hexdigest()


def _checked(entry: Any) -> bytes | str | None:
    """The value of a stored ``(value, tag)`` entry when the tag (:func:`_matches`) still matches
    it; None for anything else (a missing key, an entry damaged on disk or of an older format)."""
    if not (
        isinstance(entry, tuple)
        and len(entry) == 2
        and isinstance(entry[0], (bytes, str))
        and isinstance(entry[1], str)
    ):
        return None
    value, digest = entry
    return value if _matches(value, digest) else None


def _pcm(value: Any) -> bytes:
    if not isinstance(value, bytes) or len(value) % 2:
        raise ValueError("not s16le samples")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("not a transcript")
    return value


def _segments(value: Any) -> list[tuple[float, float]]:
    """A ``vad`` entry's JSON (``[[start_ms, end_ms], ...]``) read back (floats exactly)."""
    if not isinstance(value, str):
        raise ValueError("not JSON text")
    found = [(float(a), float(b)) for a, b in json.loads(value)]
    if any(not 0 <= a <= b for a, b in found):
        raise ValueError("not speech segments")
    return found


#: How each kind's stored value is read back; ValueError / TypeError: not of its type and shape.
READERS: dict[str, Callable[[Any], Any]] = {"tts": _pcm, "asr": _text, "vad": _segments}


def _readable(key: str, entry: Any) -> Any:
    """``entry``'s value (:func:`_checked`) read by its kind's reader (:data:`READERS`; a kind
    without one: as stored), or None when either finds it unfit."""
    value = _checked(entry)
    reader = READERS.get(key.split(":", 1)[0])
    if value is None or reader is None:
        return value
    try:
        return reader(value)
    except (ValueError, TypeError):  # json.JSONDecodeError is a ValueError
        return None


def audio_digest(pcm: bytes) -> str:
    """The SHA-256 hex of ``pcm``: what keys its transcript and its speech segments
    (:func:`recognition_key`); computed once per utterance (``engine.session.voice.timeline``)."""
    return hashlib.sha256(pcm).hexdigest()


def synthesis_key(identity: str, text: str, rate: int) -> str:
    """The key of ``text`` spoken at ``rate`` Hz by the engine ``identity`` (hex SHA-256)."""
    return "tts:" + _digest({"engine": identity, "text": text, "rate": rate})


def recognition_key(
    identity: str, pcm: bytes, rate: int, kind: str = "asr", digest: str | None = None
) -> str:
    """The key of ``pcm`` (mono s16le at ``rate`` Hz) heard by the recogniser ``identity`` (or,
    ``kind`` ``vad``, segmented by the voice activity detector ``identity``); ``digest``: the
    samples' :func:`audio_digest` when the caller has it already (not computed again)."""
    audio = digest if digest is not None else audio_digest(pcm)
    return f"{kind}:" + _digest({"recognizer": identity, "audio": audio, "rate": rate})


@dataclass
class VoiceCache:
    """One cache folder, opened on first use in each process (it is sent to ``--workers``
    children as its folder only). ``counts`` holds this process's hits and misses per kind
    (``{"tts": [hits, misses], "asr": [...]}``). A folder that cannot be opened (not writable,
    diskcache not installed) or written turns the cache off for this process: ``error`` says why,
    and every lookup is a miss that stores nothing. A damaged entry is not that: it is one miss,
    deleted (:meth:`get`)."""

    directory: Path
    counts: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in KINDS})
    error: str | None = None
    _store: Any = field(default=None, repr=False, compare=False)
    _pid: int = field(default=0, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {"directory": self.directory, "counts": {k: [0, 0] for k in KINDS}, "error": self.error}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _store=None, _pid=0)

    def _open(self) -> Any:
        if self.error is not None:
            return None
        if self._store is None or self._pid != os.getpid():
            try:
                import diskcache  # type: ignore[import-untyped]

                self._store = diskcache.Cache(str(self.directory), size_limit=SIZE_LIMIT)
            except ImportError:
                self.error = "diskcache is not installed (pip install 'evalctl[voice]')"
                return None
            except Exception as err:  # an unwritable folder, a broken index: no cache, one line
                self.error = f"{self.directory}: {err}"
                return None
            self._pid = os.getpid()
        return self._store

    def get(self, key: str) -> Any:
        """The value stored under ``key`` as its kind's reader gives it (:data:`READERS`: ``tts``
        bytes, ``asr`` str, ``vad`` a list of ``(start_ms, end_ms)``), or None; counted as a hit
        or a miss of its kind. An entry that cannot be read (its file damaged, truncated or
        emptied), whose check tag does not match, or whose value is not of its kind's type and
        shape is a miss and is deleted: computed again and stored anew, the cache stays on. Only
        a store that cannot be written (that entry cannot even be deleted) turns the cache off.
        Never raises."""
        store = self._open()
        value = None
        if store is not None:
            try:
                value = _readable(key, store.get(key))
            except Exception:  # an unreadable entry (a bad pickle, a short file): that one is gone
                value = None
            if value is None:
                self._discard(store, key)
        self.counts.setdefault(key.split(":", 1)[0], [0, 0])[0 if value is not None else 1] += 1
        return value

    def _discard(self, store: Any, key: str) -> None:
        """Delete ``key`` (absent or damaged: computed again, stored anew); a store that cannot
        do even that is off for this process, with one line (:attr:`error`)."""
        try:
            store.delete(key)
        except Exception as err:  # a cache never fails a run: note it, go on without
            self.error, self._store = f"{self.directory}: {err}", None

    def put(self, key: str, value: bytes | str) -> None:
        """Store ``value`` under ``key`` (nothing when the cache is off)."""
        store = self._open()
        if store is None:
            return
        try:
            store.set(key, (value, _digest_of(value)))
        except Exception as err:
            self.error, self._store = f"{self.directory}: {err}", None

    def clear(self) -> int:
        """Delete every entry; returns how many there were. Raises RuntimeError when the folder
        cannot be opened."""
        store = self._open()
        if store is None:
            raise RuntimeError(self.error or "no cache")
        count = len(store)
        store.clear()
        return int(count)

    def stats(self) -> dict[str, Any]:
        """``{"path", "entries", "bytes"}`` of the folder (RuntimeError as :meth:`clear`)."""
        store = self._open()
        if store is None:
            raise RuntimeError(self.error or "no cache")
        return {"path": str(self.directory), "entries": len(store), "bytes": int(store.volume())}

    def line(self) -> str:
        """One line for the run summary: the hits and misses of each kind, and the folder."""
        names = {"tts": "synthesis", "asr": "recognition", "vad": "voice activity"}
        parts = ", ".join(f"{names[k]} {h} hits / {m} misses" for k, (h, m) in self.counts.items())
        where = f"off ({self.error})" if self.error else str(self.directory)
        return f"voice cache: {parts} ({where})"

    def close(self) -> None:
        if self._store is not None and self._pid == os.getpid():
            self._store.close()
        self._store = None


def default_cache() -> VoiceCache | None:
    """The run's voice cache (:func:`voice_cache_dir`), or None when ``$EVALCTL_VOICE_CACHE`` is off."""
    folder = voice_cache_dir()
    return None if folder is None else VoiceCache(folder)


#: The lookups under way in this process, by event loop and key: a second session asking for a
#: line or a transcript another session is computing right now waits for that one.
_PENDING: dict[tuple[int, str], asyncio.Future[Any]] = {}
_AGAIN = object()  # the computing session was cancelled: a waiter computes it itself


async def computed_once(cache: VoiceCache, key: str, make: Callable[[], Awaitable[T]], kind: type[T]) -> T:
    """The value under ``key``: from ``cache`` when it holds one of type ``kind``; else, when
    another task of this event loop is computing the same key, that computation's value (or its
    exception: the same input fails the same way); else ``await make()``, stored under ``key``.
    So two sessions starting the same line at once (a cold run's shared greeting) synthesise or
    recognise it once. A computation cancelled with its session is not shared: its waiters each
    compute it. Raises what ``make`` raises."""
    hit = cache.get(key)
    if isinstance(hit, kind):
        return hit
    slot = (id(asyncio.get_running_loop()), key)
    while (pending := _PENDING.get(slot)) is not None:
        value = await asyncio.shield(pending)
        if value is not _AGAIN:
            return value
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    _PENDING[slot] = future
    try:
        value = await make()
    except asyncio.CancelledError:
        future.set_result(_AGAIN)
        raise
    except BaseException as err:
        future.set_exception(err)
        future.exception()  # retrieved here: no "never retrieved" warning when nobody waited
        raise
    else:
        cache.put(key, value)  # type: ignore[arg-type]
        future.set_result(value)
        return value
    finally:
        del _PENDING[slot]
