"""Audio sessions (protocol version 2) with no TTS program: the caller and the built-in voice agent
speak through the stand-in ToneVoice (a tone per word), so these tests run everywhere. The local
TTS engine's own tests are in test_voice_local.py."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
import websockets
from hypothesis import given
from hypothesis import strategies as st

import cli
from engine.core.protocol import PROTOCOL_SCHEMA_DIR, ProtocolError, decode, schema_path
from engine.core.records.fields import RecordError
from engine.core.records.metrics import MetricsRecord
from engine.domains.registry import plugins
from engine.run.runner import run
from engine.session.backends.replay import ReplayFactory
from engine.session.sides import builtin_side
from engine.session.voice.asr import ASR_ENV, edit_distance, normalize, recognizer_from_env, wer
from engine.session.voice.frames import AudioFrame, FrameError, pack, split, unpack
from engine.session.voice.link import VoiceConfig
from engine.session.voice.pcm import read_wav, silence, speech_bounds, tone, trim
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import ToneVoice, TTSError
from engine.spec.loader import load_domain
from engine.util.errors import UsageError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR, REPO
from tests.runtime_helpers import run_options

TONE = ToneVoice()
#: The mock shop's three scenarios (eva's, one ending by a transfer: tests/domains/eva_airline/
#: test_voice_eva.py).
THREE = ("mock__cancel_order", "mock__late_delivery_credit", "mock__shipped_refusal")


def voice_run(delay_ms: float = 0.0, sleep: bool = False, recognizer: Any = None) -> VoiceRun:
    return VoiceRun(
        VoiceConfig(TONE, recognizer=recognizer), VoiceStyle(TONE, delay_ms=delay_ms, sleep=sleep)
    )


async def _run(
    out: Path, names: tuple[str, ...], voice: VoiceRun | None = None, **kwargs: Any
) -> dict[str, dict]:
    """Run ``names`` (audio sessions under ``voice``, if given); returns each scenario's metrics.json."""
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        scenarios=names,
        output_dir=out,
        progress=False,
        quiet=True,
        voice=voice is not None,
        **kwargs,
    )
    await run(opts, voice)
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/metrics.json")}


def _voice(out: Path, name: str) -> dict:
    return json.loads((out / name / "voice.json").read_text())


# --- frames and schemas ------------------------------------------------------------------------


@given(
    stream=st.integers(0, 0xFFFF),
    seq=st.integers(0, 0xFFFFFFFF),
    t_ms=st.integers(0, 0xFFFFFFFF),
    samples=st.integers(1, 1600),
)
def test_frame_header_round_trips(stream: int, seq: int, t_ms: int, samples: int) -> None:
    frame = AudioFrame(stream, seq, t_ms, bytes(range(256)) * (2 * samples // 256) + bytes(2 * samples % 256))
    data = pack(frame)
    assert len(data) == 12 + 2 * samples and data[:2] == b"V\x01"
    assert struct.unpack(">HII", data[2:12]) == (stream, seq, t_ms)
    assert unpack(data, 16000, 100) == frame


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"V\x01\x00", "shorter than the 12-byte header"),
        (b"X\x01" + bytes(10) + b"\x00\x00", "expected 0x56 1"),
        (b"V\x02" + bytes(10) + b"\x00\x00", "expected 0x56 1"),
        (b"V\x01" + bytes(10), "not a whole number of samples"),
        (b"V\x01" + bytes(10) + b"\x00", "not a whole number of samples"),
        (b"V\x01" + bytes(10) + bytes(2 * 1601), "over 100 ms of audio"),
    ],
)
def test_bad_frames(data: bytes, message: str) -> None:
    with pytest.raises(FrameError, match=message):
        unpack(data, 16000, 100)


def test_split_stamps_each_frame() -> None:
    frames = split(bytes(2 * 3500), 16000, 100, 7, 40, 1000.0)
    assert [(f.stream, f.seq, f.t_ms, len(f.pcm)) for f in frames] == [
        (7, 40, 1000, 3200),
        (7, 41, 1100, 3200),
        (7, 42, 1200, 600),
    ]


def test_v2_schemas_are_v1_plus_audio() -> None:
    for v1 in sorted(PROTOCOL_SCHEMA_DIR.glob("*.json")):
        one = json.loads(v1.read_text())
        two = json.loads(schema_path(one["title"], 2).read_text())
        assert two["properties"].pop("v") == {
            "const": 2,
            "description": "Protocol major version: 2, the audio session.",
        }
        one["properties"].pop("v")
        audio = two["properties"].pop("audio", None)
        assert (audio is not None) == (
            one["title"] in ("session.start", "session.ready", "turn.request", "turn.response")
        )
        if audio is not None:
            two["required"].remove("audio")
        assert two["$id"] == one["$id"].replace("/protocol/", "/protocol/v2/")
        for s in (one, two):
            for key in ("$id", "description"):
                s.pop(key)
            for prop in s["properties"].values():
                prop.pop("description", None)
        assert one == two, one["title"]


def test_decode_keeps_versions_apart() -> None:
    v2 = {"v": 2, "type": "turn.response", "id": "a", "reply_to": "e", "text": "Hi.", "audio": {"frames": 3}}
    assert decode(json.dumps(v2), version=2) == v2
    with pytest.raises(ProtocolError, match="unsupported_version"):
        decode(json.dumps(v2))  # a version-1 connection
    with pytest.raises(ProtocolError, match="bad_message"):
        decode(json.dumps({**v2, "audio": None}), version=2)
    v1 = {k: v for k, v in v2.items() if k != "audio"} | {"v": 1}
    with pytest.raises(ProtocolError, match="unsupported_version"):
        decode(json.dumps(v1), version=2)


# --- whole runs ---------------------------------------------------------------------------------


async def test_voice_run_keeps_the_text_runs_db_hashes(tmp_path: Path) -> None:
    text = await _run(tmp_path / "text", THREE)
    voice = await _run(tmp_path / "voice", THREE, voice=voice_run())
    for name in THREE:
        t, v = text[name], voice[name]
        assert v["is_successful"] is True and v["stop_reason"] == t["stop_reason"], v.get("error")
        assert v["db_hash"] == t["db_hash"] == v["expected_db_hash"]
        assert v["agent_backend"] == "voice:replay"
        summary = v["voice"]
        assert summary["sample_rate"] == 16000 and summary["tts"] == "tone"
        doc = _voice(tmp_path / "voice", name)
        turns = doc["turns"]
        assert len(turns) == v["agent_turns"] and all(t["frames"] > 0 for t in turns)
        assert [t["latency_ms"] for t in turns] == [0.0] * len(turns)  # answered right after the caller
        assert all(t["ttfa_ms"] is not None and t["ttfa_ms"] >= 0 for t in turns)
        assert summary["overlap_ms"] == 0 and summary["wer"] is None
        # the transcript holds each side's own text, as in text mode
        lines = [
            json.loads(x) for x in (tmp_path / "voice" / name / "transcript.jsonl").read_text().splitlines()
        ]
        said = [e["content"] for e in lines if e["role"] == "agent" and e["type"] == "utterance"]
        assert said == [t["text"] for t in turns]
        user_pcm, rate = read_wav((tmp_path / "voice" / name / "audio" / "user.wav").read_bytes())
        agent_pcm, _ = read_wav((tmp_path / "voice" / name / "audio" / "agent.wav").read_bytes())
        assert rate == 16000 and len(user_pcm) == len(agent_pcm) == 2 * round(summary["media_ms"] * 16)
        assert any(user_pcm) and any(agent_pcm)
        # metrics.json reads back through its record: voice last, and only in the voice run
        assert list(v)[-1] == "voice" and doc["summary"] == summary and "voice" not in t
        record = MetricsRecord.from_json(v)
        assert record.voice_run and record.voice is not None and record.to_json() == v
        assert record.voice.latency_ms.count == len(turns) and record.voice.wer_turns is None
        assert not MetricsRecord.from_json(t).voice_run


async def test_audio_settings_for_a_text_run_are_refused(tmp_path: Path) -> None:
    opts = run_options(MOCK_SPEC_DIR, MOCK_DATA_ROOT, scenarios=THREE[:1], output_dir=tmp_path, quiet=True)
    with pytest.raises(ValueError, match="audio settings for a text run"):
        await run(opts, voice_run())
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.parametrize("delay_ms", [700.0, -400.0])
async def test_an_injected_delay_is_measured(tmp_path: Path, delay_ms: float) -> None:
    """The replay agent stamps its replies ``delay_ms`` after the caller's audio ends; the engine
    measures latency from the audio's energy on the media timeline, and a negative delay as overlap.
    An agent cannot start before the caller does, nor overlap longer than it speaks: a caller line or an
    agent line shorter than the overlap (the mock's "Yes please.", "Goodbye!") bounds it."""
    name = THREE[0]
    await _run(tmp_path, (name,), voice=voice_run(delay_ms))
    turns = _voice(tmp_path, name)["turns"]
    assert len(turns) >= 3
    longer = 0
    for t in turns:
        caller = t["caller_speech_ms"][1] - t["caller_speech_ms"][0]
        assert abs(t["latency_ms"] - max(delay_ms, -caller)) <= 40, t
        longer += caller > -delay_ms
        agent = t["agent_speech_ms"][1] - t["agent_speech_ms"][0]  # "Goodbye!" is shorter than 400 ms
        assert abs(t["overlap_ms"] - min(max(0.0, -delay_ms), caller, agent)) <= 40, t
    assert longer >= 2  # most turns are not bounded by the caller's line


async def test_time_to_first_audio_sees_a_slow_agent(tmp_path: Path) -> None:
    """With ``sleep`` the voice agent also waits 250 ms of wall time before it speaks: the engine's
    own clock sees at least that (the upper bound is generous: a loaded machine)."""
    name = THREE[1]
    await _run(tmp_path, (name,), voice=voice_run(250.0, sleep=True))
    for t in _voice(tmp_path, name)["turns"]:
        assert 245 <= t["ttfa_ms"] <= 250 + 10_000, t
        assert abs(t["latency_ms"] - 250) <= 40


class _Echo:
    """A recogniser that hears a fixed text (stands in for a real one)."""

    name = "echo"

    def __init__(self, text: str):
        self.text = text
        self.calls = 0

    def transcribe(self, pcm: bytes, rate: int) -> str:
        self.calls += 1
        return self.text


async def test_a_recogniser_gives_the_agents_word_error_rate(tmp_path: Path) -> None:
    name = THREE[1]
    echo = _Echo("thanks for calling")
    metrics = await _run(tmp_path, (name,), voice=voice_run(recognizer=echo))
    turns = _voice(tmp_path, name)["turns"]
    # every turn heard, in a worker process (never this one, which runs the event loop)
    assert echo.calls == 0 and all(t["asr_text"] == "thanks for calling" for t in turns)
    edits, words = sum(t["wer_edits"] for t in turns), sum(t["wer_words"] for t in turns)
    assert (
        metrics[name]["voice"]["wer"] == round(edits / words, 4)
        and metrics[name]["voice"]["recognizer"] == "echo"
    )
    record = MetricsRecord.from_json(metrics[name])
    assert record.voice is not None and record.voice.wer_turns == len(turns)
    assert record.to_json() == metrics[name]
    body = metrics[name]
    with pytest.raises(RecordError, match=r"voice: unknown key\(s\) pitch"):
        MetricsRecord.from_json({**body, "voice": {**body["voice"], "pitch": 1}})
    with pytest.raises(RecordError, match=r"voice\.ttfa_ms: no p90"):
        ttfa = {k: x for k, x in body["voice"]["ttfa_ms"].items() if k != "p90"}
        MetricsRecord.from_json({**body, "voice": {**body["voice"], "ttfa_ms": ttfa}})


async def test_a_version_1_side_refuses_an_audio_session(tmp_path: Path) -> None:
    loaded = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins())
    async with builtin_side(ReplayFactory({s.name: s for s in loaded.scenarios}), role="agent") as uri:
        metrics = await _run(tmp_path, THREE[:1], agent=uri, voice=voice_run())
    m = metrics[THREE[0]]
    assert m["stop_reason"] == "error" and "unsupported_version" in m["error"]
    assert m["voice"] is None and "no audio session" in _voice(tmp_path, THREE[0])["error"]
    record = MetricsRecord.from_json(m)
    assert record.voice_run and record.voice is None and record.to_json() == m


def _doc_agent() -> Any:
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    code = text.split("### A minimal voice agent", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(code.replace("asyncio.run(main())", ""), namespace)  # the doc's own code, minus its main()
    return namespace["session"]


async def test_the_minimal_voice_agent_in_docs_protocol_md_runs(tmp_path: Path) -> None:
    async with websockets.serve(_doc_agent(), "127.0.0.1", 0) as server:
        uri = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        metrics = await _run(tmp_path, THREE[:1], agent=uri, voice=voice_run())
    m = metrics[THREE[0]]
    assert m["stop_reason"] == "exit" and m["agent_backend"] == uri, m["error"]
    [turn] = _voice(tmp_path, THREE[0])["turns"]
    assert (turn["frames"], turn["text"], turn["latency_ms"]) == (8, "Goodbye.", 0.0)
    assert 790 <= turn["agent_speech_ms"][1] - turn["agent_speech_ms"][0] <= 800


def _bad_agent(fault: str) -> Any:
    async def session(ws: Any) -> None:
        start = json.loads(await ws.recv())
        rate = 12345 if fault == "rate" else 16000
        audio = {"encoding": "pcm_s16le", "sample_rate": rate}
        await ws.send(
            json.dumps({"v": 2, "type": "session.ready", "id": "a0", "reply_to": start["id"], "audio": audio})
        )
        async for message in ws:
            if isinstance(message, bytes):
                continue
            msg = json.loads(message)
            if msg["type"] != "turn.request":
                return
            seq, stream, t_ms = 0, msg["turn"], msg["audio"]["end_ms"]
            if fault == "seq":
                seq = 5
            elif fault == "stream":
                stream += 1
            elif fault == "media":
                t_ms = 0xFFFFFFF0
            header = struct.pack(">BBHII", 0x56, 1, stream, seq, t_ms)
            await ws.send(header + bytes(320))
            frames = 2 if fault == "count" else 1
            reply = {
                "v": 2,
                "type": "turn.response",
                "id": "r",
                "reply_to": msg["id"],
                "text": "Hi.",
                "audio": {"frames": frames},
            }
            await ws.send(json.dumps(reply))

    return session


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("rate", "sample_rate 12345 is not one of"),
        ("seq", "audio frame seq 5, expected 0"),
        ("stream", "audio frame of stream 1 during turn 0"),
        ("media", "would pass the session's"),
        ("count", "turn.response says 2 audio frames, 1 arrived in turn 0"),
    ],
)
async def test_broken_voice_sides_end_their_session(tmp_path: Path, fault: str, message: str) -> None:
    async with websockets.serve(_bad_agent(fault), "127.0.0.1", 0) as server:
        uri = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        metrics = await _run(tmp_path, THREE[:1], agent=uri, voice=voice_run())
    m = metrics[THREE[0]]
    assert m["stop_reason"] == "error" and message in m["error"], m["error"]


class _BrokenTTS:
    """A synthesiser that fails as espeak-ng does when it crashes."""

    name = "broken"

    async def synthesize(self, text: str, rate: int) -> bytes:
        raise TTSError("espeak-ng exited with 1: simulated crash")


async def test_a_failing_caller_tts_is_an_error_not_the_agents_failure(tmp_path: Path) -> None:
    # Before the fix the engine's own text-to-speech of the caller failing was a FAIL of the agent.
    voice = VoiceRun(VoiceConfig(_BrokenTTS()), VoiceStyle(TONE))  # type: ignore[arg-type]
    metrics = (await _run(tmp_path, THREE[:1], voice=voice))[THREE[0]]
    assert "the caller's text-to-speech failed" in metrics["error"], metrics["error"]
    assert metrics["is_successful"] == "error" and metrics["error_cause"]["source"] == "engine"


def test_voice_without_a_tts_engine_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no espeak-ng, no sox
    args = [
        "run",
        str(MOCK_SPEC_DIR),
        "--data-root",
        str(MOCK_DATA_ROOT),
        "--voice",
        "--output-dir",
        str(tmp_path / "o"),
    ]
    code = cli.main([*args, "--scenarios", THREE[0]])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err == (
        "evalctl: voice runs need a local text-to-speech engine: espeak-ng and sox not installed "
        "(apt-get install espeak-ng sox)"
    )
    assert not (tmp_path / "o").exists()


# --- pieces -------------------------------------------------------------------------------------


def test_speech_bounds_and_trim() -> None:
    pcm = silence(230, 16000) + tone(500, 16000) + silence(120, 16000)
    start, end = speech_bounds(pcm, 16000) or (0, 0)
    assert abs(start - 230) <= 10 and abs(end - 730) <= 10
    assert abs(len(trim(pcm, 16000)) - 2 * 8000) <= 2 * 160
    assert speech_bounds(silence(300, 16000), 16000) is None and trim(silence(300, 16000), 16000) == b""


def test_word_error_rate() -> None:
    assert normalize("Flight 703, gate B-12!") == [
        "flight",
        "seven",
        "zero",
        "three",
        "gate",
        "b",
        "one",
        "two",
    ]
    assert wer("Your flight is SK 621.", "your flight is s k six two one") == (2, 7)  # sk -> s, + k
    assert wer("You’re all set.", "you're all set") == (0, 3)
    assert edit_distance(["a", "b", "c"], ["a", "c", "d"]) == 2


def test_a_recogniser_command_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ASR_ENV, 'sh -c "test -s \\"$0\\" && echo Hello,  world" {wav}')
    rec = recognizer_from_env()
    assert rec is not None and rec.transcribe(tone(100, 16000), 16000) == "Hello, world"
    monkeypatch.setenv(ASR_ENV, "sh -c 'exit 3' {wav}")
    with pytest.raises(RuntimeError, match="exited with 3"):
        recognizer_from_env().transcribe(b"\x00\x00", 16000)  # type: ignore[union-attr]
    monkeypatch.setenv(ASR_ENV, "whisper-cli -m model.bin")
    with pytest.raises(UsageError, match=r"must name the WAV file as \{wav\}"):
        recognizer_from_env()
    monkeypatch.setenv(ASR_ENV, "/no/such/asr {wav}")
    with pytest.raises(UsageError, match="not found"):
        recognizer_from_env()
    monkeypatch.delenv(ASR_ENV)
    assert recognizer_from_env() is None


async def test_a_side_that_asks_for_text_gets_the_callers_words(tmp_path: Path) -> None:
    heard: list[tuple[Any, int]] = []

    async def session(ws: Any) -> None:
        start = json.loads(await ws.recv())
        audio = {"encoding": "pcm_s16le", "sample_rate": 8000, "text": True}
        ready = {"v": 2, "type": "session.ready", "id": "a0", "reply_to": start["id"], "audio": audio}
        await ws.send(json.dumps(ready))
        frames = 0
        async for message in ws:
            if isinstance(message, bytes):
                frames += 1
                continue
            msg = json.loads(message)
            if msg["type"] != "turn.request":
                return
            heard.append((msg["utterance"], frames))
            call = {"v": 2, "type": "tool.call", "id": "c", "reply_to": msg["id"], "call_id": "x"}
            await ws.send(json.dumps({**call, "name": "end_conversation", "arguments": "{}"}))
            await ws.recv()
            reply = {"v": 2, "type": "turn.response", "id": "r", "reply_to": msg["id"], "text": ""}
            await ws.send(json.dumps({**reply, "audio": {"frames": 0}}))

    sc = load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenario(THREE[0])
    async with websockets.serve(session, "127.0.0.1", 0) as server:
        uri = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        metrics = await _run(tmp_path, THREE[:1], agent=uri, voice=voice_run())
    words = sc.user.starting_utterance
    speech_ms = 160 * len(words.split()) - 40  # ToneVoice: 120 ms tone + 40 ms gap a word, last gap trimmed
    assert heard == [(words, math.ceil(speech_ms / 100))]  # 100 ms frames of audio, then the words
    assert metrics[THREE[0]]["voice"]["sample_rate"] == 8000 and metrics[THREE[0]]["stop_reason"] == "exit"


def test_barge_in_yield_and_long_silences_from_the_waveform() -> None:
    from engine.session.voice.metrics import session_metrics, turn_metrics
    from engine.session.voice.timeline import Timeline, Utterance

    rate = 16000
    timeline = Timeline(rate, 60_000.0)
    caller0 = Utterance("user", 0, rate, text="hello")
    caller0.place(0.0, tone(500, rate))
    agent0 = Utterance("agent", 0, rate, text="a long answer", requested_at=0.0, first_audio_at=0.1)
    agent0.place(500.0, tone(3000, rate))  # speaks 500..3500
    caller1 = Utterance("user", 1, rate, text="wait")
    caller1.place(1000.0, tone(400, rate))  # the caller barges in at 1000: the agent talks on 2.5 s
    agent1 = Utterance("agent", 1, rate, text="sorry", requested_at=1.0, first_audio_at=1.2)
    agent1.place(7500.0, tone(300, rate))  # 4 s of silence before it (3500..7500)
    caller2 = Utterance("user", 2, rate, text="stop")
    caller2.place(7600.0, tone(300, rate))  # barges in at 7600; the agent stops at 7800
    timeline.utterances += [caller0, agent0, caller1, agent1, caller2]
    turns = turn_metrics(timeline)
    assert turns[0]["barge_in"] == {"at_ms": 1000.0, "yield_ms": 2500.0, "yielded": False}
    assert turns[1]["barge_in"] == {"at_ms": 7600.0, "yield_ms": 200.0, "yielded": True}
    assert turns[0]["latency_ms"] == 0.0 and turns[1]["latency_ms"] == 6100.0  # 1400 -> 7500
    summary = session_metrics(timeline, turns, "tone", 0.0)
    assert summary.timing is not None
    assert (summary.timing.barge_ins, summary.timing.barge_ins_yielded) == (2, 1)
    assert summary.timing.long_silences == 1 and summary.timing.longest_silence_ms == 4000.0
    assert summary.hearing is None  # no recogniser ran


async def test_the_caller_answers_what_its_recogniser_heard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runtime_helpers import ScriptedOpenAI, Step, completion

    monkeypatch.setenv("OPENAI_API_KEY", "local")
    heard = "i heard something else entirely"
    with ScriptedOpenAI([Step(completion("Thanks, goodbye."))]) as server:
        await _run(
            tmp_path,
            (THREE[0],),
            voice=voice_run(recognizer=_Echo(heard)),
            user="openai:u",
            base_url=server.base_url,
            max_turns=2,
        )
    said = [m["content"] for _, b in server.requests for m in b["messages"] if m["role"] == "user"]
    assert heard in said and all(m == heard for m in said[1:]), said  # the agent's turns, as heard
    turns = _voice(tmp_path, THREE[0])["turns"]
    assert turns and all(t["asr_text"] == heard and t["text"] != heard for t in turns)
