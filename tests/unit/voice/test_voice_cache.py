"""The voice cache (engine/session/voice/cache.py): a warm run reads every synthesis and every
transcript from it and gives the cold run's verdicts, voice figures and DB hashes; its keys cover
what decides the value; off and broken caches; ``evalctl cache clear --voice``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import cli
from engine.run.runner import run
from engine.session.voice.cache import VOICE_CACHE_ENV, VoiceCache, recognition_key, synthesis_key
from engine.session.voice.link import VoiceConfig
from engine.session.voice.pcm import samples
from engine.session.voice.perturb import Perturbation, Perturbed
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.sphinx import PocketSphinx
from engine.session.voice.tts import EspeakNG, ToneVoice, cached, synth_identity
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options
from tests.unit.voice.test_voice import THREE, _run

#: Fields measured on the engine's wall clock (time to first audio, TTS seconds): they differ
#: between any two runs, cached or not; everything else must be equal.
WALL_CLOCK = {"ttfa_ms", "turn_ttfa_ms", "tts_s"}


@dataclass(frozen=True)
class Loudness:
    """A deterministic stand-in recogniser: one word per 100 ms of audio above silence, so
    different audio is heard differently."""

    name: str = "loudness"

    def transcribe(self, pcm: bytes, rate: int) -> str:
        loud = len(pcm) // 2 - samples(pcm).count(0)
        return " ".join(["word"] * (loud * 10 // rate))

    def cache_identity(self) -> str:
        return "loudness 1"


def _cached_run(cache: VoiceCache) -> VoiceRun:
    tts = cached(ToneVoice(), cache)
    return VoiceRun(VoiceConfig(tts, recognizer=Loudness(), cache=cache), VoiceStyle(tts))


def _without_wall_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_wall_clock(v) for k, v in value.items() if k not in WALL_CLOCK}
    if isinstance(value, list):
        return [_without_wall_clock(v) for v in value]
    return value


async def test_a_warm_run_reads_everything_and_gives_the_cold_runs_results(tmp_path: Path) -> None:
    cold_cache, warm_cache = VoiceCache(tmp_path / "cache"), VoiceCache(tmp_path / "cache")
    names = THREE[:1]  # one scenario: 4 caller lines, 4 agent turns (fast; the bench runs eva's 50)
    cold = await _run(tmp_path / "cold", names, voice=_cached_run(cold_cache))
    opts = run_options(
        MOCK_SPEC_DIR, MOCK_DATA_ROOT, scenarios=names, output_dir=tmp_path / "warm", quiet=True, voice=True
    )
    report = await run(opts, _cached_run(warm_cache))
    warm = {n: json.loads((tmp_path / "warm" / n / "metrics.json").read_text()) for n in names}
    assert all(misses > 0 for _, misses in cold_cache.counts.values()) and cold_cache.error is None
    # warm: every line and every turn's audio found, nothing synthesised, recognised or segmented again
    assert warm_cache.counts == {kind: [sum(counts), 0] for kind, counts in cold_cache.counts.items()}
    for name in names:
        c, w = cold[name], warm[name]
        assert c["is_successful"] is True and w["is_successful"] is True
        assert (c["db_hash"], c["success_breakdown"]) == (w["db_hash"], w["success_breakdown"])
        assert _without_wall_clock(c["voice"]) == _without_wall_clock(w["voice"])
        docs = [json.loads((tmp_path / run / name / "voice.json").read_text()) for run in ("cold", "warm")]
        assert _without_wall_clock(docs[0]) == _without_wall_clock(docs[1])
        assert all(t["asr_text"].startswith("word") for t in docs[1]["turns"])  # it heard something
        wavs = [(tmp_path / run / name / "audio" / "agent.wav").read_bytes() for run in ("cold", "warm")]
        assert wavs[0] == wavs[1]
    # the run's summary says so (evalctl run prints it under the voice figures)
    assert report.voice_cache == warm_cache.line() and report.voice_cache.startswith("voice cache: synthesis")
    assert f"recognition {sum(cold_cache.counts['asr'])} hits / 0 misses" in report.voice_cache


def test_the_keys_cover_what_decides_the_value() -> None:
    espeak = synth_identity(EspeakNG())
    assert espeak is not None and "espeak-ng" in espeak and "voice=en-us" in espeak
    keys = {
        synthesis_key(espeak, "Hello there.", 16000),
        synthesis_key(espeak, "Hello there!", 16000),
        synthesis_key(espeak, "Hello there.", 8000),
        synthesis_key(str(synth_identity(EspeakNG(voice="en-gb"))), "Hello there.", 16000),
        synthesis_key(str(synth_identity(EspeakNG(words_per_minute=150))), "Hello there.", 16000),
        synthesis_key(
            str(synth_identity(Perturbed(EspeakNG(), Perturbation(snr_db=10)))), "Hello there.", 16000
        ),
        synthesis_key(
            str(synth_identity(Perturbed(EspeakNG(), Perturbation(snr_db=20)))), "Hello there.", 16000
        ),
    }
    assert len(keys) == 7
    sphinx = PocketSphinx().cache_identity()
    assert "pocketsphinx 5.1.1" in sphinx and "'ds': 2" in sphinx
    audio = bytes(range(200))
    heard = {
        recognition_key(sphinx, audio, 16000),
        recognition_key(sphinx, audio[:-1] + b"\x00", 16000),
        recognition_key(sphinx, audio, 8000),
        recognition_key(PocketSphinx(ds=1).cache_identity(), audio, 16000),
    }
    assert len(heard) == 4


def test_engines_without_an_identity_are_not_cached(tmp_path: Path) -> None:
    class Unknown:
        name = "unknown"

        async def synthesize(self, text: str, rate: int) -> bytes:
            return b""

    plain = Unknown()
    assert cached(plain, VoiceCache(tmp_path)) is plain and cached(ToneVoice(), None) == ToneVoice()


def test_off_by_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VOICE_CACHE_ENV, "off")
    assert VoiceRun.create(tts=ToneVoice()).cache is None
    monkeypatch.setenv(VOICE_CACHE_ENV, str(tmp_path / "v"))
    run = VoiceRun.create(tts=ToneVoice())
    assert run.cache is not None and run.cache.directory == tmp_path / "v"
    assert run.config.tts == run.style.tts and run.config.tts.name == "tone"


def test_an_unusable_folder_turns_the_cache_off_without_failing(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    cache = VoiceCache(tmp_path / "file")
    cache.put("tts:k", b"x")
    assert cache.get("tts:k") is None and cache.error is not None
    assert cache.counts["tts"] == [0, 1] and "off (" in cache.line()


def test_cache_stats_and_clear_voice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "voice"
    monkeypatch.setenv(VOICE_CACHE_ENV, str(folder))
    monkeypatch.delenv("EVALCTL_CACHE", raising=False)
    assert cli.main(["cache", "stats", "--voice"]) == 2
    assert "holds no voice cache" in capsys.readouterr().err
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")  # a folder of the user's, not a cache
    assert cli.main(["cache", "clear", "--voice"]) == 2
    assert "holds no voice cache" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]  # nothing made in it
    # the default folder before any voice run is empty, not bad input (before: exit 2)
    monkeypatch.delenv(VOICE_CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cli.main(["cache", "stats"]) == 0
    assert "empty (no voice run has cached anything yet)" in capsys.readouterr().out
    assert cli.main(["cache", "stats", "--voice", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"entries": 0, "bytes": 0}
    assert not (tmp_path / "xdg").exists()  # looking made nothing
    monkeypatch.setenv(VOICE_CACHE_ENV, str(folder))
    (folder / "notes.txt").unlink()
    cache = VoiceCache(folder)
    cache.put(synthesis_key("tone", "hi", 16000), b"\x01\x00" * 10)
    cache.put(recognition_key("loudness 1", b"\x01\x00", 16000), "word")
    cache.close()
    assert cli.main(["cache", "stats", "--voice", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 2
    assert cli.main(["cache", "clear"]) == 0  # no model-call cache named: the voice cache
    assert capsys.readouterr().out.strip() == f"voice cache {folder}: 2 entries removed"
    assert VoiceCache(folder).stats()["entries"] == 0
    assert cli.main(["cache", "clear", str(tmp_path), "--voice"]) == 2
    assert "not DIR" in capsys.readouterr().err
    monkeypatch.setenv(VOICE_CACHE_ENV, "off")
    assert cli.main(["cache", "clear", "--voice"]) == 2
    assert "the voice cache is off" in capsys.readouterr().err


def test_an_entry_damaged_on_disk_is_a_miss_and_is_stored_anew(tmp_path: Path) -> None:
    """Before: whatever the store gave back was used (a damaged synthesis failed the replay agent's
    speech gate, with no word of the cache)."""
    import diskcache  # type: ignore[import-untyped]

    cache = VoiceCache(tmp_path / "voice")
    key = synthesis_key("engine x", "Hello there.", 16000)
    cache.put(key, b"\x00\x01" * 800)
    assert cache.get(key) == b"\x00\x01" * 800
    cache.close()
    with diskcache.Cache(str(tmp_path / "voice")) as raw:  # the bytes on disk change under it
        _, digest = raw.get(key)
        raw.set(key, (b"\x01", digest))
    again = VoiceCache(tmp_path / "voice")
    assert again.get(key) is None and again.counts["tts"] == [0, 1]  # a miss, not the damage
    assert again.get(key) is None  # and gone: the next computation stores it anew
    again.close()


def _entry_file(folder: Path) -> Path:
    """The one value file diskcache wrote (values over its 32 KiB threshold go to files)."""
    files = [p for p in folder.rglob("*.val")]
    assert len(files) == 1
    return files[0]


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: bytes([b[0] ^ 0xFF]) + b[1:],  # byte 0 flipped: "invalid load key"
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"",  # emptied
    ],
    ids=["flipped", "truncated", "emptied"],
)
def test_an_unreadable_entry_file_is_one_miss_and_the_cache_stays_on(tmp_path: Path, damage: Any) -> None:
    """Before: the unpickling error turned the whole cache off (``off (...: invalid load key``),
    and the entry stayed, so every later run was cold too."""
    folder = tmp_path / "voice"
    cache = VoiceCache(folder)
    key, other = synthesis_key("engine x", "Hello.", 16000), synthesis_key("engine x", "Bye.", 16000)
    cache.put(key, b"\x00\x01" * 40_000)
    cache.put(other, b"\x02\x00" * 10)  # small: in the index, not a file
    cache.close()
    path = _entry_file(folder)
    path.write_bytes(damage(path.read_bytes()))
    again = VoiceCache(folder)
    assert again.get(key) is None and again.error is None and again.counts["tts"] == [0, 1]
    assert again.get(other) == b"\x02\x00" * 10  # the rest of the cache still serves
    assert not list(folder.rglob("*.val"))  # that entry is gone, its file too
    again.put(key, b"\x00\x01" * 40_000)  # computed again, stored anew
    assert again.get(key) == b"\x00\x01" * 40_000 and again.counts["tts"] == [2, 1]
    assert "off (" not in again.line()
    again.close()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (recognition_key("vad x", b"\x01\x00", 16000, kind="vad"), "not json"),
        (recognition_key("vad x", b"\x01\x00", 16000, kind="vad"), '{"a": 1}'),
        (recognition_key("vad x", b"\x01\x00", 16000, kind="vad"), "[[5.0, 1.0]]"),
        (synthesis_key("engine x", "Hello.", 16000), b"abc"),  # 3 bytes: not s16le samples
        (synthesis_key("engine x", "Hello.", 16000), "text, not samples"),
        (recognition_key("asr x", b"\x01\x00", 16000), b"bytes, not a transcript"),
    ],
    ids=["vad-not-json", "vad-object", "vad-backwards", "tts-odd", "tts-str", "asr-bytes"],
)
def test_a_value_of_the_wrong_shape_under_a_valid_tag_is_a_deleted_miss(
    tmp_path: Path, key: str, value: bytes | str
) -> None:
    """Before: a tagged VAD value that was not JSON failed scoring on every run (exit 3), and a
    3-byte synthesis failed the agent (WER 100 %); neither was ever evicted."""
    import diskcache  # type: ignore[import-untyped]

    from engine.session.voice.cache import _digest_of

    with diskcache.Cache(str(tmp_path / "voice")) as raw:
        raw.set(key, (value, _digest_of(value)))
    cache = VoiceCache(tmp_path / "voice")
    kind = key.split(":", 1)[0]
    assert cache.get(key) is None and cache.counts[kind] == [0, 1] and cache.error is None
    with diskcache.Cache(str(tmp_path / "voice")) as raw:
        assert key not in raw
    cache.close()


def test_the_cached_vad_recomputes_a_bad_value(tmp_path: Path) -> None:
    from engine.session.voice.vad import CachedVAD, speech_segments, vad_identity

    cache = VoiceCache(tmp_path / "voice")
    pcm = b"\x00\x00" * 1600 + b"\xff\x3f\x01\xc0" * 4000 + b"\x00\x00" * 1600
    key = recognition_key(vad_identity(), pcm, 16000, kind="vad")
    cache.put(key, "garbage")  # its tag is right: only the shape is wrong
    assert CachedVAD(cache)(pcm, 16000) == speech_segments(pcm, 16000)
    assert CachedVAD(cache)(pcm, 16000) == speech_segments(pcm, 16000)  # stored anew: a hit
    assert cache.counts["vad"] == [1, 1] and cache.error is None
    cache.close()
