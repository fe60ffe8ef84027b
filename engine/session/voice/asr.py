"""Speech recognition behind one small interface, run in worker processes, and the word error rate.

The default recogniser is PocketSphinx (:mod:`engine.session.voice.sphinx`, the ``voice`` extra;
its model is inside the pip package, nothing is downloaded). ``$EVALCTL_ASR`` selects another:
a command that reads a WAV file and prints its transcript, e.g.
``EVALCTL_ASR='whisper-cli -nt -m /models/ggml-tiny.en.bin -f {wav}'`` (``{wav}`` is replaced by
the file's path; the command runs without a shell), or ``none`` for no recognition. Each agent
turn's audio is transcribed as the turn ends (:func:`hear`: in a pool of worker processes, never
on the event loop); the caller is given what was heard, and the metrics compare it with the
agent's own text (:func:`wer`, by rapidfuzz, jiwer's engine, when installed).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from engine.core.render import SPOKEN_DIGITS
from engine.session.voice.cache import VoiceCache, computed_once, recognition_key
from engine.session.voice.pcm import wav_bytes
from engine.session.voice.pool import in_worker
from engine.util.errors import UsageError

ASR_ENV = "EVALCTL_ASR"


class Recognizer(Protocol):
    """Speech to text: ``transcribe(pcm, rate)`` of mono s16le samples; raises RuntimeError."""

    @property
    def name(self) -> str: ...

    def transcribe(self, pcm: bytes, rate: int) -> str: ...


@dataclass(frozen=True)
class CommandRecognizer:
    """Runs ``argv`` (``{wav}`` replaced by a temporary WAV file's path) and reads its stdout."""

    argv: tuple[str, ...]
    timeout_s: float = 300.0
    name: str = "command"

    def transcribe(self, pcm: bytes, rate: int) -> str:
        with tempfile.TemporaryDirectory(prefix="evalctl-asr-") as tmp:
            path = Path(tmp) / "turn.wav"
            path.write_bytes(wav_bytes(pcm, rate))
            argv = [a.replace("{wav}", str(path)) for a in self.argv]
            try:
                done = subprocess.run(argv, capture_output=True, timeout=self.timeout_s, check=False)
            except (OSError, subprocess.TimeoutExpired) as err:
                raise RuntimeError(f"speech recogniser {argv[0]}: {err}") from None
        if done.returncode != 0:
            detail = done.stderr.decode(errors="replace")[:300]
            raise RuntimeError(f"speech recogniser {argv[0]} exited with {done.returncode}: {detail}")
        return " ".join(done.stdout.decode(errors="replace").split())


def recognizer_from_env() -> Recognizer | None:
    """The recogniser ``$EVALCTL_ASR`` names (None when unset). Raises UsageError when the
    command lacks ``{wav}`` or its program is not found."""
    spec = os.environ.get(ASR_ENV, "").strip()
    if not spec:
        return None
    argv = tuple(shlex.split(spec))
    if not any("{wav}" in a for a in argv):
        raise UsageError(f"${ASR_ENV} must name the WAV file as {{wav}} in its command: {spec!r}")
    from shutil import which

    if which(argv[0]) is None:
        raise UsageError(f"${ASR_ENV}: program {argv[0]!r} not found")
    return CommandRecognizer(argv, name=Path(argv[0]).name)


#: ``$EVALCTL_ASR`` values that turn recognition off.
ASR_OFF = frozenset({"none", "off"})


def default_recognizer(language: str = "en") -> Recognizer | None:
    """The run's recogniser: ``$EVALCTL_ASR``'s command when set (None for ``none`` / ``off``),
    else PocketSphinx when installed and ``language`` is English (its package ships en-US only:
    :func:`recognition_note`), else None. Raises UsageError as :func:`recognizer_from_env`."""
    spec = os.environ.get(ASR_ENV, "").strip()
    if spec.lower() in ASR_OFF:
        return None
    if spec:
        return recognizer_from_env()
    from engine.session.voice import sphinx

    if not _english(language):
        return None
    return sphinx.PocketSphinx() if sphinx.available() else None


def _english(language: str) -> bool:
    return language.split("-")[0].lower() == "en"


def recognition_note(language: str) -> str | None:
    """One line when a voice run in ``language`` goes without recognition because the only
    recogniser installed is PocketSphinx's en-US model (None when ``$EVALCTL_ASR`` names one, turns
    recognition off, or the language is English)."""
    if os.environ.get(ASR_ENV, "").strip() or _english(language):
        return None
    from engine.session.voice import sphinx

    if not sphinx.available():
        return None
    return (
        f"pocketsphinx ships an en-US model only: this {language} voice run has no speech recognition "
        f"(${ASR_ENV} names a recogniser for {language})"
    )


def recognizer_identity(recognizer: Recognizer) -> str | None:
    """What decides ``recognizer``'s transcripts, for the voice cache
    (``engine.session.voice.cache``): its ``cache_identity()`` when it has one (PocketSphinx: the
    library's version and the decoder settings), else None (not cached: a command named by
    ``$EVALCTL_ASR`` may change without its arguments changing)."""
    ident = getattr(recognizer, "cache_identity", None)
    return ident() if callable(ident) else None


async def hear(
    recognizer: Recognizer, pcm: bytes, rate: int, cache: VoiceCache | None = None, digest: str | None = None
) -> str:
    """``recognizer.transcribe(pcm, rate)`` in a worker process (``engine.session.voice.pool``; the
    recogniser is pickled to it), awaited without blocking the event loop; with ``cache``, a
    transcript of the same samples by the same recogniser and settings is read from it instead
    (:func:`engine.session.voice.cache.recognition_key`; ``digest``: the samples' SHA-256 hex when
    known). Raises RuntimeError as the recogniser does (a failure is not cached)."""
    if not pcm:
        return ""
    identity = recognizer_identity(recognizer) if cache is not None else None
    key = recognition_key(identity, pcm, rate, digest=digest) if identity is not None else None
    if cache is not None and key is not None:  # the same samples being heard right now: once
        return await computed_once(cache, key, lambda: in_worker(recognizer.transcribe, pcm, rate), str)
    return await in_worker(recognizer.transcribe, pcm, rate)


_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"[a-z0-9']+")


def normalize(text: str) -> list[str]:
    """Words for WER: NFKC, lower case, punctuation dropped, apostrophes kept inside words, each
    digit said as its word (``703`` -> ``seven zero three``; a crude but symmetric rule)."""
    return list(_normalized(text))


@lru_cache(maxsize=4096)
def _normalized(text: str) -> tuple[str, ...]:
    # a session's lines are compared with every turn's transcript (metrics.speech_match): each
    # text is normalised once
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    text = _NUMBER.sub(lambda m: f" {SPOKEN_DIGITS[int(m.group(0))]} ", text)
    return tuple(w.strip("'") for w in _WORD.findall(text) if w.strip("'"))


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    """Word-level Levenshtein distance (substitutions, deletions, insertions)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i]
        for j, h in enumerate(hyp, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h)))
        prev = cur
    return prev[-1]


def wer(reference: str, hypothesis: str) -> tuple[int, int]:
    """``(edits, reference words)`` after :func:`normalize`; WER is their ratio. The edits are the
    word-level Levenshtein distance, counted by rapidfuzz (the library jiwer counts with; jiwer's
    ``process_words`` gives the same number, at forty times the cost of its string transforms)
    when installed, else by :func:`edit_distance` (the same number)."""
    ref, hyp = _normalized(reference), _normalized(hypothesis)
    if not ref:
        return len(hyp), 0
    if not hyp:
        return len(ref), len(ref)
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError:
        return edit_distance(ref, hyp), len(ref)
    return int(Levenshtein.distance(ref, hyp)), len(ref)
