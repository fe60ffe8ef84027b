"""Issue #27 item 1, voice: a pipecat pipeline of real pipecat services (an STT service, the fake
gold-replaying LLM behind pipecat's OpenAI service, an espeak-ng TTS service: tests/pipecat_voice.py)
in a voice run hears the caller's audio and answers in its own audio; on three short eva scenarios
its verdicts, stop reasons, DB hashes and tool calls equal ``--agent replay --voice``'s, and the
agent's recording is the pipeline's TTS speech. Also the example voice bot (PocketSphinx STT) on
one scenario. No speech recognition on the engine's side (the agent's words are not what is
tested here, and PocketSphinx costs seconds a turn)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.core.dbhash import db_hash
from engine.run.runner import run
from engine.session.backends.replay import gold_script
from engine.session.voice.link import VoiceConfig
from engine.session.voice.pcm import read_wav, speech_bounds
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import EspeakNG, missing_tts
from engine.spec.loader import LoadedDomain
from tests.conftest import SPEC_DIR
from tests.fake_llm import GoldLLM
from tests.runtime_helpers import run_options

pytest.importorskip("pipecat")
if missing_tts():
    pytest.skip(f"voice runs need espeak-ng and sox: {missing_tts()}", allow_module_level=True)

REPO = Path(__file__).resolve().parents[3]
SHORT = ("eva_airline__5_2_6", "eva_airline__5_1_5", "eva_airline__cancellation_refund")
TTS = EspeakNG()
DOC = REPO / "docs" / "agents.md"


def _voice() -> VoiceRun:
    return VoiceRun(VoiceConfig(TTS, recognizer=None), VoiceStyle(TTS))


def _outcomes(report: Any, loaded: LoadedDomain) -> dict[str, Any]:
    found = {}
    for result, metrics in report.results():
        rules = loaded.scenario(result.scenario_name).domain.hash_rules
        calls = [(c["name"], c["arguments"]) for c in result.tool_calls]
        passed = bool(metrics and metrics.is_successful)
        found[result.scenario_name] = (passed, result.stop_reason, db_hash(result.final_db, rules), calls)
    return found


def _run(data_root: Path, agent: str, out: Path, names: tuple[str, ...]) -> Any:
    opts = run_options(
        SPEC_DIR,
        data_root,
        agent=agent,
        scenarios=names,
        output_dir=out,
        progress=False,
        quiet=True,
        voice=True,
    )
    return asyncio.run(run(opts, _voice()))


def test_pipecat_pipeline_in_voice_equals_replay_voice(
    data_root: Path, loaded: LoadedDomain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests import pipecat_voice

    chosen = [loaded.scenario(name) for name in SHORT]
    lines = [line for s in chosen for line in gold_script(s).user_lines]
    asyncio.run(pipecat_voice.learn(lines, TTS))
    replayed = _outcomes(_run(data_root, "replay", tmp_path / "replay", SHORT), loaded)
    with GoldLLM(chosen) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        agent = "pipecat:tests.pipecat_voice:make_pipeline"  # the module the test taught
        found = _outcomes(_run(data_root, agent, tmp_path / "pipecat", SHORT), loaded)
    assert sum(passed for passed, *_ in replayed.values()) == len(SHORT)
    assert found == replayed  # verdict, stop reason, DB hash and tool calls, scenario by scenario
    asked = [m["content"] for r in llm.requests for m in r["messages"][-1:] if m.get("role") == "user"]
    assert sorted(asked) == sorted(lines)  # the LLM was asked on what the STT heard: each gold line
    for name in SHORT:
        doc = json.loads((tmp_path / "pipecat" / name / "voice.json").read_text())
        agent_turns = [u for u in doc["utterances"] if u["role"] == "agent" and u["frames"]]
        assert len(agent_turns) == len(gold_script(loaded.scenario(name)).agent_turns)
        pcm, rate = read_wav((tmp_path / "pipecat" / name / "audio" / "agent.wav").read_bytes())
        assert rate == 16000 and speech_bounds(pcm, rate) is not None  # the pipeline's TTS spoke
        assert doc["summary"]["agent_turns_with_audio"] == len(agent_turns)


def test_the_example_voice_bot_hears_with_pocketsphinx(
    data_root: Path, loaded: LoadedDomain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pocketsphinx", reason="the example bot's STT is PocketSphinx (the voice extra)")
    name = "eva_airline__5_1_5"
    with GoldLLM([loaded.scenario(name)], heard=True) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        agent = f"pipecat:{REPO}/examples/pipecat_voice_bot.py:make_pipeline"
        report = _run(data_root, agent, tmp_path, (name,))
    [(result, _)] = list(report.results())
    # what PocketSphinx makes of espeak-ng's voice varies with the turn (module doc): the call may
    # leave the gold path, so only what goes through the adapter is checked, not the verdict
    assert result.stop_reason in ("exit", "user_hangup"), result.error
    heard = [m["content"] for r in llm.requests for m in r["messages"][-1:] if m.get("role") == "user"]
    assert heard and all(isinstance(h, str) and h.strip() for h in heard)  # PocketSphinx's words
    assert result.tool_calls  # the bot's calls reached the engine
    doc = json.loads((tmp_path / name / "voice.json").read_text())
    assert doc["summary"]["agent_turns_with_audio"] >= 1
    assert "--voice --agent pipecat:examples/pipecat_voice_bot.py:make_pipeline" in DOC.read_text()


def test_the_example_voice_bot_loads_from_any_directory(tmp_path: Path) -> None:
    """Before: it imported its text sibling as ``examples.pipecat_bot``, which only a process
    started in the repository with it on the path could import (the documented command failed)."""
    pytest.importorskip("pipecat")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import runpy, sys; runpy.run_path(sys.argv[1]); print('loaded')"
    path = str(REPO / "examples" / "pipecat_voice_bot.py")
    done = subprocess.run(
        [sys.executable, "-c", code, path], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "loaded", done.stderr[-2000:]
