"""eva_airline in eva 2.1.0's cultures (``--language fr`` / ``fr-CA``), and a run's refusal of a spec
whose gold replay fails (issue 28, item 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli import main
from engine.core.render import spell
from engine.domains.registry import plugins
from engine.run import runner
from engine.session.voice.asr import recognition_note
from engine.session.voice.run import VoiceRun
from engine.session.voice.sphinx import available as sphinx_available
from engine.session.voice.spoken import spelled_runs
from engine.session.voice.tts import EspeakNG, espeak_voice, missing_tts
from engine.spec.gold_replay import replay_gold
from engine.spec.loader import load_domain
from engine.util.errors import UsageError
from tests.conftest import SPEC_DIR
from tests.runtime_helpers import run_options

TWO = ("eva_airline__voluntary_date_change", "eva_airline__irrops_cancellation")
needs_tts = pytest.mark.skipif(missing_tts() is not None, reason=f"local TTS: {missing_tts()}")


@pytest.mark.parametrize("language", ["fr", "fr-CA"])
def test_every_gold_replays_in_french_with_the_cultures_names(data_root: Path, language: str) -> None:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins(), language=language)
    outcomes = [replay_gold(s) for s in loaded.scenarios]
    assert [o.scenario_name for o in outcomes if not o.ok] == [] and len(outcomes) == 50
    first = loaded.scenario("eva_airline__voluntary_date_change")
    culture = first.record["culture_overrides"][language]
    assert first.domain.language == language
    assert first.user.name == f"{culture['first_name']} {culture['last_name']}"
    assert first.user.starting_utterance == first.record["starting_utterances"][language]
    said = [s.text for s in first.gold_trace.steps if s.kind == "user"]
    assert any(culture["last_name"] in line for line in said)
    assert not any("Rodriguez" in line for line in said)  # the English caller's name is gone
    passenger = first.initial_db["reservations"]["ZK3FFW"]["passengers"][0]
    assert passenger["last_name"] == culture["last_name"].lower()  # eva's romanized placeholder


def test_a_language_the_spec_lacks_is_one_line(data_root: Path) -> None:
    with pytest.raises(UsageError, match=r"--language de: domain eva_airline runs in en, fr, fr-CA only"):
        load_domain(SPEC_DIR, data_root, plugins=plugins(), language="de")


def test_french_text_replay_passes_50_of_50(data_root: Path, tmp_path: Path) -> None:
    opts = run_options(SPEC_DIR, data_root, output_dir=tmp_path / "run", quiet=True, language="fr")
    report = runner.run_cli(opts)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["overall"]["passed"] == 50 == summary["overall"]["total"]
    assert report.exit_code() == 0
    record = json.loads((tmp_path / "run" / "run.json").read_text())
    assert record["settings"]["language"] == "fr"
    opening = (tmp_path / "run" / TWO[0] / "transcript.jsonl").read_text().splitlines()[0]
    assert json.loads(opening)["content"] == "Bonjour, je dois changer mon vol pour le 25 mars."


@needs_tts
async def test_french_voice_replay_passes_with_french_speech(data_root: Path, tmp_path: Path) -> None:
    opts = run_options(
        SPEC_DIR,
        data_root,
        scenarios=TWO[1:],
        output_dir=tmp_path / "v",
        quiet=True,
        voice=True,
        language="fr",
    )
    await runner.run(opts)
    metrics = json.loads((tmp_path / "v" / TWO[1] / "metrics.json").read_text())
    assert metrics["is_successful"] is True, metrics.get("error")
    assert metrics["voice"]["caller_speech_ms"] > 0 and metrics["voice"]["agent_speech_ms"] > 0
    tts = VoiceRun.create(language="fr").config.tts
    assert isinstance(tts, EspeakNG) and tts.voice == espeak_voice("fr") and tts.voice.startswith("fr")


@pytest.mark.skipif(not sphinx_available(), reason="pocketsphinx not installed")
def test_french_goes_without_pocketsphinx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALCTL_ASR", raising=False)
    assert VoiceRun.create(tts=EspeakNG("fr-fr"), language="fr").config.recognizer is None
    assert VoiceRun.create(tts=EspeakNG(), language="en").config.recognizer is not None
    assert "en-US model only" in (recognition_note("fr-CA") or "")
    assert recognition_note("en") is None


def test_codes_are_spelled_and_read_back_in_french() -> None:
    assert spell("SK-621", "fr-CA") == "S, K, tiret, six, deux, un"
    assert spell("SK621") == "S, K, six, two, one"
    assert spelled_runs("F, L, tiret bas, S, K, six, deux, zéro", "fr") == ["FL_SK620"]
    assert spelled_runs("S K six deux un") == ["SK6"]  # English reads no French words


def _french_spec(tmp_path: Path) -> Path:
    """eva_airline with ``language: fr`` but eva 0.1.3's English DBs: every gold call to
    get_reservation fails authentication (French last names)."""
    spec = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, spec)
    text = (spec / "domain.yaml").read_text()
    (spec / "domain.yaml").write_text(text.replace("\nlanguage: en\n", "\nlanguage: fr\n", 1))
    return spec


def test_a_run_refuses_a_spec_whose_gold_fails(
    data_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _french_spec(tmp_path)
    args = ["run", str(spec), "--data-root", str(data_root), "--scenarios", ",".join(TWO), "--no-progress"]
    assert main([*args, "--output-dir", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gold replay fails in 2 scenario(s)" in err[0], err
    assert TWO[0] in err[0] and "authentication_failed" in err[0] and "--allow-gold-mismatch" in err[0]
    assert not (tmp_path / "refused").exists()
    out = tmp_path / "allowed"
    assert main([*args, "--output-dir", str(out), "--allow-gold-mismatch", "--workers", "1"]) == 0
    record = json.loads((out / "run.json").read_text())
    assert record["args"]["allow_gold_mismatch"] is True


def test_validate_checks_a_language(data_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SPEC_DIR), "--data-root", str(data_root), "--language", "fr-CA"]) == 0
    assert "gold replay 50/50" in capsys.readouterr().out
