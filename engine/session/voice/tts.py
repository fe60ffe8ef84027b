"""Speech synthesis from local programs: nothing is downloaded, no model is fetched.

:class:`EspeakNG` runs the OS packages ``espeak-ng`` (formant synthesis, its voices are built in)
and ``sox`` (to the session's sample rate) as subprocesses of the voice worker processes
(``engine.session.voice.pool``); install them with ``apt-get install espeak-ng sox``.
:class:`ToneVoice` is a stand-in that needs nothing: one tone per word, for tests of the audio
plumbing and metrics (it says nothing a recogniser could read). :class:`CachedSynthesizer` keeps
what a deterministic synthesiser said in the voice cache (``engine.session.voice.cache``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from engine.session.voice.cache import VoiceCache, computed_once, synthesis_key
from engine.session.voice.pcm import silence, tone
from engine.session.voice.pool import in_worker

#: Longest text synthesised at once (characters); the rest is cut (a runaway model's reply).
MAX_TTS_CHARS = 20_000


class TTSError(RuntimeError):
    """The synthesiser failed (a program missing, crashed or timed out)."""


class Synthesizer(Protocol):
    """Text to speech: ``synthesize(text, rate)`` returns mono s16le samples at ``rate`` Hz
    (empty bytes for empty text). Raises TTSError."""

    @property
    def name(self) -> str: ...

    async def synthesize(self, text: str, rate: int) -> bytes: ...


async def _run(argv: list[str], data: bytes, timeout_s: float) -> bytes:
    # its own session (process group): a terminal's Ctrl-C goes to the foreground group, and the
    # synthesiser killed by it failed its turn with a traceback ("side session crashed") before the
    # run's own cancellation came; the run ends the program itself (_end)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(timeout_s):
            out, err = await proc.communicate(data)
    except TimeoutError:
        await _end(proc)
        raise TTSError(f"{argv[0]} did not finish within {timeout_s:g} s") from None
    except BaseException:  # cancelled (Ctrl-C, a session closed mid-turn): the program goes too
        await _end(proc)
        raise
    if proc.returncode != 0:
        raise TTSError(f"{argv[0]} exited with {proc.returncode}: {err.decode(errors='replace')[:300]}")
    return out


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Kill ``proc`` and wait for it (a second cancellation cuts only the wait short): a program
    left behind would run on, and its pipes would be closed after the event loop (a traceback
    at exit)."""
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await proc.wait()
    finally:
        # the program's end does not close its pipes: that waits for their EOF on a later turn of
        # the loop, which a run ending at once never takes ('Exception ignored ... Event loop is
        # closed' at exit); closing the transport here closes them while the loop still runs
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()


def _program(argv: list[str], data: bytes, timeout_s: float) -> bytes:
    """``argv`` fed ``data``, its stdout (in a worker process: see :class:`EspeakNG`). Raises
    TTSError when it is missing, fails or runs past ``timeout_s``."""
    try:
        done = subprocess.run(argv, input=data, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise TTSError(f"{argv[0]} did not finish within {timeout_s:g} s") from None
    except OSError as err:
        raise TTSError(f"{argv[0]}: {err.strerror or err}") from None
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace")[:300]
        raise TTSError(f"{argv[0]} exited with {done.returncode}: {detail}")
    return done.stdout


def espeak_pcm(text: str, voice: str, words_per_minute: int, rate: int, timeout_s: float) -> bytes:
    """``text`` spoken by espeak-ng in ``voice`` (its WAV at 22,050 Hz), resampled by sox to mono
    s16le at ``rate`` Hz; empty for empty text. Raises TTSError. Runs in a worker process."""
    text = " ".join(text.split())[:MAX_TTS_CHARS]  # one line: espeak-ng pauses at line ends
    if not text:
        return b""
    wav = _program(
        ["espeak-ng", "--stdin", "--stdout", "-v", voice, "-s", str(words_per_minute)],
        text.encode("utf-8"),
        timeout_s,
    )
    # -R: sox's repeatable mode, its dither seeded with a fixed number, so the same text always
    # gives the same samples (by default two syntheses differed in 44 % of their samples, by up to
    # 2 LSB); dithered still: without it (-D) PocketSphinx hears digital silence worse
    sox = ["sox", "-q", "-R", "-t", "wav", "-", "-t", "raw", "-r", str(rate), "-e", "signed", "-b", "16"]
    return _program([*sox, "-c", "1", "-L", "-"], wav, timeout_s)


@lru_cache(maxsize=1)
def program_versions() -> str:
    """The versions of espeak-ng and sox (their ``--version`` lines), part of what decides the
    samples (:meth:`EspeakNG.cache_identity`)."""
    out = []
    for argv in (["espeak-ng", "--version"], ["sox", "--version"]):
        try:
            done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
            out.append(" ".join(done.stdout.decode(errors="replace").split()[:5]))
        except (OSError, subprocess.TimeoutExpired):
            out.append(f"{argv[0]} unknown")
    return "; ".join(out)


@dataclass(frozen=True)
class EspeakNG:
    """espeak-ng speaking ``voice`` at ``words_per_minute``, resampled by sox to the asked rate.
    Both programs run in the voice worker processes (``engine.session.voice.pool``), never on
    the event loop, and are forked from a small worker rather than from the engine."""

    voice: str = "en-us"
    words_per_minute: int = 175
    timeout_s: float = 60.0
    name: str = "espeak-ng"

    async def synthesize(self, text: str, rate: int) -> bytes:
        if not text.strip():
            return b""
        return await in_worker(espeak_pcm, text, self.voice, self.words_per_minute, rate, self.timeout_s)

    def cache_identity(self) -> str:
        """What decides the samples (the voice cache's key): the programs' versions, the voice
        and the speed."""
        return f"espeak-ng voice={self.voice} wpm={self.words_per_minute} sox -R ({program_versions()})"


@dataclass(frozen=True)
class ToneVoice:
    """A stand-in voice: ``lead_ms`` of silence, then per word a ``word_ms`` tone and a ``gap_ms``
    pause, then ``tail_ms`` of silence. Deterministic and instant; needs no program."""

    word_ms: int = 120
    gap_ms: int = 40
    lead_ms: int = 30
    tail_ms: int = 50
    name: str = "tone"

    async def synthesize(self, text: str, rate: int) -> bytes:
        words = text.split()
        if not words:
            return b""
        word = tone(self.word_ms, rate, hz=300.0) + silence(self.gap_ms, rate)
        return silence(self.lead_ms, rate) + word * len(words) + silence(self.tail_ms, rate)

    def cache_identity(self) -> str:
        """Its settings (the voice cache's key)."""
        return repr(self)


def synth_identity(tts: Synthesizer) -> str | None:
    """What decides ``tts``'s samples, for the voice cache: its ``cache_identity()``; for a
    synthesiser wrapping another with a change (``inner`` and ``change``, e.g.
    ``engine.session.voice.perturb.Perturbed``) the inner one's and the change; None for one
    without (not cached)."""
    ident = getattr(tts, "cache_identity", None)
    if callable(ident):
        return str(ident())
    inner, change = getattr(tts, "inner", None), getattr(tts, "change", None)
    if inner is not None and change is not None:
        base = synth_identity(inner)
        return None if base is None else f"{base} + {change!r}"
    return None


@dataclass(frozen=True)
class CachedSynthesizer:
    """``inner`` with its output kept in ``cache`` under
    :func:`engine.session.voice.cache.synthesis_key` of ``identity`` (:func:`synth_identity`),
    the text and the rate: a line said again (this run or a later one) is read, not
    synthesised, and a line another session is synthesising right now is waited for
    (:func:`engine.session.voice.cache.computed_once`). The same samples either way."""

    inner: Synthesizer
    cache: VoiceCache
    identity: str

    @property
    def name(self) -> str:
        return self.inner.name

    def cache_identity(self) -> str:
        """``identity``: a change wrapped around it (the phone line) is cached under it and the change."""
        return self.identity

    async def synthesize(self, text: str, rate: int) -> bytes:
        if not text.strip():
            return b""
        key = synthesis_key(self.identity, text, rate)
        return await computed_once(self.cache, key, lambda: self.inner.synthesize(text, rate), bytes)


def cached(tts: Synthesizer, cache: VoiceCache | None) -> Synthesizer:
    """``tts`` behind ``cache`` when it has an identity (:func:`synth_identity`), else ``tts``."""
    if cache is None or isinstance(tts, CachedSynthesizer):
        return tts
    identity = synth_identity(tts)
    return tts if identity is None else CachedSynthesizer(tts, cache, identity)


@lru_cache(maxsize=16)
def espeak_voice(language: str) -> str | None:
    """The espeak-ng voice for ``language`` (a BCP 47 code: ``en``, ``fr``, ``fr-CA``), from
    ``espeak-ng --voices=PRIMARY``: a built-in voice (not an MBROLA one, whose data is a separate
    package) of that region, else the first built-in one of the language; ``en`` is ``en-us``.
    None when espeak-ng has none (or is not installed)."""
    primary = language.split("-")[0].lower()
    if primary == "en":
        return "en-us"
    try:
        listed = subprocess.run(
            ["espeak-ng", f"--voices={primary}"], capture_output=True, timeout=10, check=False
        ).stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    voices = []  # (language column, file column) of each built-in voice, in espeak-ng's order
    for line in listed.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 5 and not cols[4].startswith("mb/"):
            voices.append(cols[1].lower())
    wanted = language.lower()
    for lang in voices:
        if lang == wanted:
            return lang
    same = [lang for lang in voices if lang.split("-")[0] == primary]
    return same[0] if same else None


def missing_tts() -> str | None:
    """Why the local TTS engine cannot run here (one line), or None when it can."""
    missing = [p for p in ("espeak-ng", "sox") if shutil.which(p) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (apt-get install espeak-ng sox)"
    return None


def local_tts(language: str = "en") -> Synthesizer:
    """The local TTS engine (espeak-ng) speaking ``language`` (:func:`espeak_voice`). Raises
    TTSError naming what is missing, or that espeak-ng has no voice for the language."""
    reason = missing_tts()
    if reason:
        raise TTSError(f"voice runs need a local text-to-speech engine: {reason}")
    if language.split("-")[0].lower() == "en":
        return EspeakNG()
    voice = espeak_voice(language)
    if voice is None:
        raise TTSError(f"espeak-ng has no voice for language {language!r} (espeak-ng --voices lists them)")
    return EspeakNG(voice=voice)
