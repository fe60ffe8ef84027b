"""Optional speech recognition, behind one small interface, and the word error rate.

evalctl ships no recogniser and never downloads a model: a user who has one installed points
``$EVALCTL_ASR`` at a command that reads a WAV file and prints its transcript, e.g.
``EVALCTL_ASR='whisper-cli -nt -m /models/ggml-tiny.en.bin -f {wav}'`` (``{wav}`` is replaced by
the file's path; the command runs without a shell). With a recogniser, each agent turn's audio is
transcribed after the session and compared with the agent's own text (:func:`wer`).
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
from pathlib import Path
from typing import Protocol

from engine.core.render import SPOKEN_DIGITS
from engine.session.voice.pcm import wav_bytes
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


_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"[a-z0-9']+")


def normalize(text: str) -> list[str]:
    """Words for WER: NFKC, lower case, punctuation dropped, apostrophes kept inside words, each
    digit said as its word (``703`` -> ``seven zero three``; a crude but symmetric rule)."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    text = _NUMBER.sub(lambda m: f" {SPOKEN_DIGITS[int(m.group(0))]} ", text)
    return [w.strip("'") for w in _WORD.findall(text) if w.strip("'")]


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
    """``(edits, reference words)`` after :func:`normalize`; WER is their ratio."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    return edit_distance(ref, hyp), len(ref)
