"""Realistic callers without a TTS program: the perturbation grammar, the scenario ``caller:``
block and its errors, the CLI options and their record in run.json, and the scheduled barge-ins
and backchannels of a caller against the built-in replay agent (the stand-in ToneVoice speaks
both sides). The real-speech tests are in tests/domains/eva_airline/test_callers_eva.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cli
from engine.core.caller import (
    Backchannel,
    BargeIn,
    CallerStyle,
    Perturbation,
    caller_from_spec,
    dealt_voice,
    parse_perturbation,
)
from engine.domains.registry import plugins
from engine.session.voice.link import VoiceConfig
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import ToneVoice
from engine.spec.loader import load_domain
from engine.util.errors import SpecError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.unit.voice.test_voice import THREE, _run, _voice

TONE = ToneVoice()


# --- the grammar -------------------------------------------------------------------------------


def test_the_perturbation_grammar_reads_every_item_and_round_trips() -> None:
    p = parse_perturbation(" snr=10, telephone ,speed=1.2,volume=-6")
    assert p == Perturbation(speed=1.2, volume_db=-6.0, telephone=True, snr_db=10.0)
    assert p.spec == "telephone,snr=10,speed=1.2,volume=-6" and parse_perturbation(p.spec) == p
    assert p.line == Perturbation(telephone=True, snr_db=10.0)  # what the agent's speech passes
    assert parse_perturbation("tel") == Perturbation(telephone=True)
    assert parse_perturbation("clean").clean and parse_perturbation("clean").spec == "clean"
    assert Perturbation(speed=1.5).line.clean  # speed is the caller's manner, not the line's


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty perturbation"),
        ("snr=10,,tel", "empty item"),
        ("telefone", "unknown perturbation item 'telefone'"),
        ("snr=loud", "snr needs a number"),
        ("snr=nan", "snr must be within -10..60"),
        ("speed=3", "speed must be within 0.5..2"),
        ("volume=-50", "volume must be within -40..20"),
        ("telephone=1", "telephone takes no value"),
        ("snr=5,snr=10", "names snr twice"),
        ("clean,telephone", "clean cannot be combined"),
    ],
)
def test_a_bad_perturbation_is_one_line_naming_the_item(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        parse_perturbation(text)
    assert "\n" not in str(err.value)


def test_a_barge_in_schedule_by_turns_or_seeded_probability() -> None:
    listed = BargeIn(800, turns=(1, 3))
    assert [t for t in range(6) if listed.scheduled(t)] == [1, 3]
    drawn = BargeIn(800, probability=0.5, seed=7)
    picks = [t for t in range(200) if drawn.scheduled(t)]
    assert picks == [t for t in range(200) if BargeIn(800, probability=0.5, seed=7).scheduled(t)]
    assert 70 < len(picks) < 130 and picks != [
        t for t in range(200) if BargeIn(800, probability=0.5, seed=8).scheduled(t)
    ]
    assert not any(BargeIn(800).scheduled(t) for t in range(50))


def test_a_scenarios_caller_block_goes_over_the_runs_options() -> None:
    spec = caller_from_spec({"voice": "en-gb", "barge_in": {"after_ms": 500, "turns": [2]}})
    run = CallerStyle(voice="en-us+f3", perturbation=Perturbation(telephone=True))
    both = spec.over(run)
    assert both.voice == "en-gb" and both.perturbation == Perturbation(telephone=True)
    assert both.barge_in == BargeIn(500.0, (2,)) and both.backchannel is None
    assert caller_from_spec({"backchannel": {}}).backchannel == Backchannel()
    with pytest.raises(ValueError, match=r"^perturb: unknown perturbation item 'x'"):
        caller_from_spec({"perturb": "x"})


def test_voices_are_dealt_by_scenario_name() -> None:
    voices = ("en-us", "en-us+f3", "en-gb")
    names = [f"eva_airline__{i}" for i in range(60)]
    dealt = [dealt_voice(voices, n) for n in names]
    assert dealt == [dealt_voice(voices, n) for n in reversed(names)][::-1]  # not by position
    assert set(dealt) == set(voices) and dealt_voice((), names[0]) is None


# --- the spec and the command line ---------------------------------------------------------------


def _spec_with(tmp_path: Path, block: str) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    first = sorted((spec / "scenarios").glob("*.yaml"))[0]
    first.write_text(first.read_text() + block)
    return first


@pytest.mark.parametrize(
    ("block", "path", "message"),
    [
        ("caller:\n  perturb: snr=5,telefone\n", "$.caller.perturb", "unknown perturbation item 'telefone'"),
        ("caller:\n  barge_in: {after_ms: -1, turns: [1]}\n", "$.caller.barge_in.after_ms", "minimum of 0"),
        ("caller:\n  voice: 'en us'\n", "$.caller.voice", "does not match"),
        ("caller:\n  backchannel: {at: 2}\n", "$.caller.backchannel.at", "maximum of 1"),
        ("caller:\n  accent: scottish\n", "$.caller.accent", "accent"),
    ],
)
def test_a_bad_caller_block_names_its_file_line_and_path(
    tmp_path: Path, block: str, path: str, message: str
) -> None:
    file = _spec_with(tmp_path, block)
    with pytest.raises(SpecError) as err:
        load_domain(file.parent.parent, MOCK_DATA_ROOT, plugins=plugins())
    problems = [p for p in err.value.problems if p.file == str(file)]
    assert len(problems) == 1, err.value.problems
    p = problems[0]
    assert p.json_path == path and message in p.message and p.line > 1


def test_the_caller_options_go_with_voice_and_refuse_bad_values(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress"]
    assert cli.main([*base, "--perturb", "snr=5"]) == 2
    assert "go with --voice" in capsys.readouterr().err
    assert cli.main([*base, "--voice", "--perturb", "speed=9"]) == 2
    err = capsys.readouterr().err
    assert "speed must be within 0.5..2" in err and "Traceback" not in err


# --- barge-ins and backchannels on the media timeline ---------------------------------------------


def _tone_run(caller: CallerStyle) -> VoiceRun:
    return VoiceRun(VoiceConfig(TONE), VoiceStyle(TONE), caller)


async def test_scheduled_barge_ins_and_backchannels_are_measured(tmp_path: Path) -> None:
    caller = CallerStyle(
        barge_in=BargeIn(300.0, probability=1.0),
        backchannel=Backchannel(("okay",), min_agent_ms=100.0, at=0.1),
    )
    names = THREE[:1]  # four agent turns, three of them interrupted
    busy = await _run(tmp_path, names, voice=_tone_run(caller))
    for name in names:
        b = busy[name]
        assert b["is_successful"] is True and b["db_hash"] == b["expected_db_hash"]  # the same verdict
        doc = _voice(tmp_path, name)
        measured = [t["turn"] for t in doc["turns"] if t["barge_in"]]
        # every scheduled barge-in is measured as one, on the agent turn it interrupted (each one
        # the caller answered); the replay agent talks on through it
        assert measured and measured == doc["caller"]["barged_into_turns"]
        assert len(measured) == len(doc["turns"]) - 1
        for t in doc["turns"]:  # 300 ms into the agent's speech, or just after the backchannel
            if t["barge_in"]:
                assert t["agent_speech_ms"][0] + 300.0 <= t["barge_in"]["at_ms"] < t["agent_speech_ms"][1]
        assert b["voice"]["timing"]["barge_ins"] == len(measured)
        backs = [u for u in doc["utterances"] if u.get("kind") == "backchannel"]
        assert len(backs) == len(doc["caller"]["backchannel_turns"]) > 0
        assert all(u["text"] == "okay" for u in backs)
        assert b["voice"]["overlap_ms"] > 0  # the caller over the agent


async def test_a_barge_in_longer_than_the_agents_speech_is_not_made(tmp_path: Path) -> None:
    busy = await _run(
        tmp_path, THREE[:1], voice=_tone_run(CallerStyle(barge_in=BargeIn(60_000.0, probability=1.0)))
    )
    doc = _voice(tmp_path, THREE[0])
    assert doc["caller"]["barged_into_turns"] == [] and busy[THREE[0]]["voice"]["timing"]["barge_ins"] == 0


def test_run_json_records_the_caller_settings(tmp_path: Path) -> None:
    out = tmp_path / "run"
    base = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress"]
    code = cli.main([*base, "--scenarios", THREE[0], "--output-dir", str(out)])
    assert code == 0
    settings = json.loads((out / "run.json").read_text())["settings"]
    assert settings["caller_voices"] == [] and settings["perturb"] is None
    assert cli.main([*base, "--resume", str(out), "--perturb", "telephone"]) == 2


# --- several conditions in one command -------------------------------------------------------------


def test_the_conditions_option_grammar() -> None:
    from engine.commands.conditions import parse_conditions
    from engine.util.errors import UsageError

    assert parse_conditions("clean,snr=5,telephone") == (
        ("clean", "clean"),
        ("snr5", "snr=5"),
        ("tel", "telephone"),
    )
    assert parse_conditions("clean;telephone,snr=10") == (
        ("clean", "clean"),
        ("tel+snr10", "telephone,snr=10"),
    )
    for bad, message in (
        ("clean", "at least two"),
        ("clean,tel,telephone", "twice"),
        ("clean,snr=x", "snr needs"),
    ):
        with pytest.raises(UsageError, match=message):
            parse_conditions(bad)


@pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None, reason="espeak-ng/sox")
def test_one_command_runs_each_condition_and_pairs_it_against_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EVALCTL_ASR", "none")  # the grouping and pairing, not the hearing
    out = tmp_path / "run"
    args = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress", "--voice"]
    names = ",".join(THREE[:2])
    assert (
        cli.main([*args, "--scenarios", names, "--conditions", "clean,volume=-6", "--output-dir", str(out)])
        == 0
    )
    captured = capsys.readouterr()
    printed = captured.out
    # the replay caller's note once for the whole run, in the first condition's summary
    assert printed.count("NOTE: replay caller") == 1 and "evalctl: caller" not in captured.err
    doc = json.loads((out / "conditions.json").read_text())
    assert doc["baseline"] == "clean" and [c["label"] for c in doc["conditions"]] == ["clean", "-6dB"]
    quiet = doc["conditions"][1]
    for c in doc["conditions"]:
        assert c["success"]["passed"] == c["success"]["total"] == 2 and c["success"]["ci"] is not None
    settings = [
        json.loads((out / c["label"] / "run.json").read_text())["settings"] for c in doc["conditions"]
    ]
    assert [s["perturb"] for s in settings] == [None, "volume=-6"]
    paired = quiet["paired"]
    assert paired["against"] == "clean" and paired["overall"]["difference"] == 0.0
    assert {v["name"] for v in paired["voice"]} >= {"response latency", "time to first audio"}
    assert (
        "Conditions (2, paired against clean):" in printed and "  -6dB (volume=-6): success 100.0%" in printed
    )
    page = (out / "compare--6dB.html").read_text()
    assert "Voice (paired over the scenarios both runs measured)" in page
    assert "Caller: A clean → B volume=-6" in page
    assert cli.main([*args, "--conditions", "clean,telephone", "--perturb", "snr=5"]) == 2
    assert "leave --perturb out" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None, reason="espeak-ng/sox")
def test_a_resume_keeps_the_callers_voice_and_perturbation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALCTL_ASR", "none")
    out = tmp_path / "run"
    base = ["run", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), "--no-progress"]
    given = ["--voice", "--caller-voice", "en-gb", "--perturb", "volume=-6"]
    assert cli.main([*base, "--scenarios", THREE[0], *given, "--output-dir", str(out)]) == 0
    shutil.rmtree(out / THREE[0])  # lost: the resume runs it again, with the run's own caller
    assert cli.main([*base, "--resume", str(out)]) == 0
    doc = _voice(out, THREE[0])
    assert doc["caller"]["voice"] == "en-gb" and doc["caller"]["perturbation"] == "volume=-6"
    assert doc["caller"]["tts"] == "espeak-ng:en-gb[-6dB]"
    assert cli.main([*base, "--resume", str(out), "--caller-voice", "en-us"]) == 2


@pytest.mark.skipif(shutil.which("espeak-ng") is None or shutil.which("sox") is None, reason="espeak-ng/sox")
def test_a_voice_espeak_lacks_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _spec_with(tmp_path, "caller:\n  voice: en-us+nosuchvariant\n")
    base = ["run", str(file.parent.parent), "--data-root", str(MOCK_DATA_ROOT), "--no-progress", "--voice"]
    assert cli.main([*base, "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{file}: caller.voice en-us+nosuchvariant: espeak-ng has no voice variant 'nosuchvariant'" in err
    assert cli.main([*base, "--caller-voice", "xx-nosuch", "--output-dir", str(tmp_path / "out2")]) == 2
    assert "--caller-voice xx-nosuch: espeak-ng has no voice 'xx-nosuch'" in capsys.readouterr().err
    assert not (tmp_path / "out" / "run.json").exists()


@pytest.mark.parametrize("voice", ["+f3", "en-us+", "en-us --stdout", ""])
def test_a_malformed_voice_name_is_refused_before_espeak_is_asked(voice: str) -> None:
    """Before: ``+f3`` passed (espeak-ng speaks an empty voice name) and every session then failed."""
    from engine.session.voice.perturb import voice_problem

    assert (
        voice_problem(voice)
        == "not a voice name: a voice, optionally + one of its variants (e.g. en-us, en-us+f3)"
    )


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox (the volume change is sox's)")
@pytest.mark.parametrize("with_cache", [False, True])
async def test_the_line_is_on_what_the_agent_is_sent_not_on_the_timeline(
    tmp_path: Path, with_cache: bool
) -> None:
    # the caller's speech is placed (and timed) as the caller said it; the agent is sent the same
    # stretch as its noisy line carries it, sample for sample, with the cache or without
    from engine.core.caller import parse_perturbation
    from engine.session.sides.link import SideLink
    from engine.session.voice.cache import VoiceCache
    from engine.session.voice.link import AudioLink
    from engine.session.voice.pcm import trim
    from engine.session.voice.perturb import perturb, seed_of
    from engine.session.voice.timeline import Timeline

    cache = VoiceCache(tmp_path / "cache") if with_cache else None
    run = VoiceRun.create(tts=TONE, perturb="snr=10,volume=-6", cache=cache)
    scenario = next(iter(load_domain(MOCK_SPEC_DIR, MOCK_DATA_ROOT, plugins=plugins()).scenarios))
    call = run.call(scenario)
    assert call.tts_name == f"{TONE.name}[snr10+-6dB]" and call.line == parse_perturbation("snr=10")
    call.timeline = Timeline(16000, 60_000.0)
    link = AudioLink(SideLink("agent", "mem:test", None), call)  # type: ignore[arg-type]
    for _ in range(2):  # the second time from the cache, when there is one
        said, carried = await link._synthesize("I want to cancel my order")
        quiet = await perturb(await TONE.synthesize("I want to cancel my order", 16000), 16000,
                              parse_perturbation("volume=-6"), 0)  # fmt: skip
        assert said == trim(quiet, 16000) and len(carried) == len(said) and carried != said
        noisy = await perturb(
            quiet, 16000, parse_perturbation("snr=10"), seed_of("I want to cancel my order")
        )
        start = quiet.index(said[:200])
        assert carried == noisy[start : start + len(said)]
