"""What issue #28's cost work changed keeps its results: the voice side in-process, the cache's
CRC-32 tags (older SHA-256 tags still read), the one digest per utterance, the WAV files built in
place, the word error rate by rapidfuzz, the in-process transport's poll, and the voice files in
the session folder's group commit."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import jiwer
import pytest

from engine.session.sides.memory import MemoryConnection
from engine.session.voice.asr import wer
from engine.session.voice.cache import VoiceCache, audio_digest, recognition_key, synthesis_key
from engine.session.voice.link import VoiceCall, VoiceConfig
from engine.session.voice.pcm import read_wav, speech_bounds, tone, wav_bytes
from engine.session.voice.run import write_voice_artifacts
from engine.session.voice.side import VoiceStyle, voice_agent_side
from engine.session.voice.timeline import Timeline
from engine.session.voice.tts import ToneVoice
from engine.session.voice.vad import CachedVAD, speech_segments, vad_identity
from engine.util.artifacts import FolderWrite


async def test_the_built_in_voice_side_is_served_in_process() -> None:
    """Before: on a loopback TCP WebSocket, whose framing, masks and socket cost a warm voice run
    more CPU than the whole text replay it is compared with."""
    async with voice_agent_side(lambda info: None, VoiceStyle(ToneVoice())) as uri:  # type: ignore[arg-type,return-value]
        assert uri.startswith("mem:")


def test_the_voice_files_are_made_durable_by_the_folders_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: each WAV file and voice.json was fsynced on its own, with its folder (the files
    are megabytes: the writeback was charged to the run, and its CPU varied with the disk's other
    users); now they join the session folder's batch, synced once with the rest."""
    call = VoiceCall(VoiceConfig(ToneVoice()), limit_s=60.0)
    call.timeline = Timeline(16000, 60_000.0)
    call.timeline.caller(1, tone(300, 16000), "one")
    agent = call.timeline.agent_turn(1, 0.0)
    call.timeline.agent_frame(agent, 400, tone(200, 16000, hz=220.0), 0.1)
    syncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (syncs.append(fd), real_fsync(fd))[1])
    (tmp_path / "s").mkdir()
    batch = FolderWrite(tmp_path / "s", incomplete=True)
    summary = write_voice_artifacts(batch, call)
    assert summary is not None and syncs == []  # nothing synced yet: the commit does it
    batch.commit()
    for role in ("user", "agent"):
        wav = (tmp_path / "s" / "audio" / f"{role}.wav").read_bytes()
        assert wav == bytes(call.timeline.wav(role)) and read_wav(wav)[1] == 16000
    assert json.loads((tmp_path / "s" / "voice.json").read_text())["summary"] == summary.to_json()


def test_a_timelines_wav_is_the_wave_modules_file_of_its_track() -> None:
    timeline = Timeline(16000, 60_000.0)
    timeline.caller(1, tone(300, 16000), "one")
    agent = timeline.agent_turn(1, 0.0)
    timeline.agent_frame(agent, 450, tone(200, 16000, hz=220.0), 0.1)
    timeline.agent_frame(agent, 800, tone(100, 16000, hz=330.0), 0.2)  # a gap of silence before it
    timeline.caller(2, tone(150, 16000), "two")
    for role in ("user", "agent"):
        assert bytes(timeline.wav(role)) == wav_bytes(timeline.track(role), 16000)


def test_new_entries_carry_a_crc_and_old_sha256_entries_are_still_read(tmp_path: Path) -> None:
    import diskcache  # type: ignore[import-untyped]

    cache = VoiceCache(tmp_path / "voice")
    key = synthesis_key("engine x", "Hello.", 16000)
    cache.put(key, b"\x02\x00" * 400)
    cache.close()
    with diskcache.Cache(str(tmp_path / "voice")) as raw:
        value, tag = raw.get(key)
        assert tag.startswith("crc32:")
        old = synthesis_key("engine x", "Before.", 16000)  # an entry as the cache stored it before
        raw.set(old, (b"\x03\x00" * 400, hashlib.sha256(b"\x03\x00" * 400).hexdigest()))
        raw.set(key, (value[:-2] + b"\x00\x01", tag))  # damaged on disk: its CRC no longer matches
    again = VoiceCache(tmp_path / "voice")
    assert again.get(old) == b"\x03\x00" * 400
    assert again.get(key) is None and again.counts["tts"] == [1, 1]
    again.close()


def test_an_utterance_is_hashed_once_for_both_keys(tmp_path: Path) -> None:
    timeline = Timeline(16000, 60_000.0, finder=CachedVAD(VoiceCache(tmp_path / "voice")))
    utt = timeline.caller(1, tone(300, 16000), "one")
    pcm, digest = utt.audio()
    assert utt.audio() == (pcm, digest) and digest == audio_digest(pcm) == hashlib.sha256(pcm).hexdigest()
    assert recognition_key("r", pcm, 16000, digest=digest) == recognition_key("r", pcm, 16000)
    assert recognition_key(vad_identity(), pcm, 16000, "vad", digest) == recognition_key(
        vad_identity(), pcm, 16000, "vad"
    )
    assert utt.segments() == [(a, b) for a, b in speech_segments(pcm, 16000)]
    utt.place(400, tone(100, 16000))  # more audio: a new digest
    assert utt.audio()[1] == audio_digest(bytes(utt.pcm)) != digest


def test_the_word_error_rate_counts_what_jiwer_counts() -> None:
    rng = random.Random(28)
    words = [
        "your",
        "flight",
        "code",
        "seven",
        "nine",
        "x",
        "k",
        "q",
        "is",
        "confirmed",
        "thank",
        "you",
        "for",
        "calling",
        "the",
    ]
    for _ in range(500):
        ref = " ".join(rng.choice(words) for _ in range(rng.randint(1, 18)))
        hyp = " ".join(rng.choice(words) for _ in range(rng.randint(1, 18)))
        out = jiwer.process_words(ref, hyp)
        assert wer(ref, hyp) == (out.substitutions + out.deletions + out.insertions, len(ref.split()))


@pytest.mark.parametrize("size", [0, 1, 2, 161, 3200, 16001])
def test_speech_bounds_of_odd_and_silent_clips(size: int) -> None:
    loud = b"\x00\x40" * (size // 2) + b"\x01" * (size % 2)  # 16384: loud; an odd byte dropped
    quiet = bytes(size)
    assert speech_bounds(quiet, 16000) is None
    found = speech_bounds(loud, 16000)
    assert (found is None) == (size < 2)
    if found is not None:
        assert found[0] == 0.0 and found[1] == 1000.0 * (size // 2) / 16000


async def test_poll_gives_the_frames_already_delivered_in_order() -> None:
    ours, theirs = MemoryConnection.pair()
    assert ours.poll() is None
    for frame in (b"\x01", "text", b"\x02"):
        await theirs.send(frame)
    assert [ours.poll(), ours.poll(), ours.poll(), ours.poll()] == [b"\x01", "text", b"\x02", None]
