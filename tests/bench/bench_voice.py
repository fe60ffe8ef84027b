"""Voice benchmark: the scoring overhead of the spoken-form checks, and the real-time factor of a
voice replay run.

Spoken-form overhead: finish_session (score + every artifact) for the 50 eva scenarios, each
session holding its gold conversation (every line and tool result), with eva_airline's plugin as
shipped and with its three spoken-form diagnostics removed; rounds alternate and the median of
each is compared (target: under 5% more). The diagnostics' own time is also measured alone.

Real-time factor: a voice replay run (espeak-ng when installed, else the tone stand-in) of three
eva scenarios at concurrency 1 and of all 50 at the default concurrency: wall time / media time
of the conversations (below 1 is faster than real time), with the TTS time of the caller.

CPU: a voice replay of the 50 eva scenarios with recognition and VAD on, cold (an empty voice
cache) and warm (the cache the cold run filled), against a text replay measured the same way
(:func:`bench_voice_cpu`: in this process after a warm-up run, and as fresh ``evalctl run``
processes; this process or the evalctl process with its reaped children, the voice workers and
the TTS programs they run).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine.core.model import Scenario, SessionResult
from engine.core.options import ScoringOptions
from engine.core.plugin import DiagnosticInputs
from engine.domains.eva_airline import spoken
from engine.domains.eva_airline.spoken import DIAGNOSTICS
from engine.domains.registry import plugins
from engine.results.run_report import RunReport
from engine.results.scoring_stage import finish_session
from engine.run import runner
from engine.session.voice.cache import VOICE_CACHE_ENV, VoiceCache
from engine.session.voice.pool import shutdown_pool
from engine.session.voice.run import VoiceRun
from engine.session.voice.tts import ToneVoice, missing_tts
from engine.session.voice.vad import vad_name
from engine.spec.loader import load_domain
from tests.conftest import REPO, SPEC_DIR
from tests.runtime_helpers import run_options

THREE = (
    "eva_airline__voluntary_date_change",
    "eva_airline__irrops_cancellation",
    "eva_airline__escalation_edge_case",
)
ROUNDS = 3


def _session(sc: Scenario) -> SessionResult:
    """A session that said and did exactly what the gold conversation did."""
    transcript, calls = [], []
    for step in sc.gold_trace or ():
        if step.kind == "tool_call":
            calls.append({"name": step.tool, "arguments": "{}", "result": step.result, "turn": 0})
        else:
            transcript.append({"role": step.kind, "type": "utterance", "content": step.text, "t": 0.0})
    return SessionResult(
        sc.name,
        1,
        "exit",
        transcript=transcript,
        tool_calls=calls,
        final_db=dict(sc.expected_db or {}),
        agent_turns=4,
    )


def _without_spoken(sc: Scenario) -> Scenario:
    plugin = sc.domain.plugin
    assert plugin is not None
    kept = {k: v for k, v in plugin.diagnostics.items() if k not in DIAGNOSTICS}
    counts = plugin.count_diagnostics & set(kept)
    bare = dataclasses.replace(plugin, diagnostics=kept, count_diagnostics=counts)
    domain = dataclasses.replace(sc.domain, plugin=bare)
    return dataclasses.replace(sc, domain=domain)


def _cold() -> None:
    """Forget what the spoken-form checks cached (per scenario, per session), as in a new run."""
    spoken._BASE.clear()
    spoken._REPORTS.clear()


def _score_all(run_dir: Path, pairs: list[tuple[Scenario, SessionResult]]) -> float:
    async def go() -> None:
        for sc, result in pairs:
            await finish_session(run_dir, sc, result, 1, ScoringOptions())

    t0 = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - t0


def bench_spoken_overhead() -> None:
    scenarios = load_domain(SPEC_DIR, REPO / "data", plugins=plugins()).scenarios
    shipped = [(sc, _session(sc)) for sc in scenarios]
    bare = [(_without_spoken(sc), r) for sc, r in shipped]
    with_spoken, without = [], []
    with tempfile.TemporaryDirectory() as tmp:
        _score_all(Path(tmp) / "warm", shipped)  # gold replays cached, imports done
        for k in range(ROUNDS):
            without.append(_score_all(Path(tmp) / f"b{k}", [(sc, _session(sc)) for sc, _ in bare]))
            _cold()
            with_spoken.append(_score_all(Path(tmp) / f"a{k}", [(sc, _session(sc)) for sc, _ in shipped]))
    a, b = statistics.median(with_spoken), statistics.median(without)
    _cold()
    t0 = time.perf_counter()
    for sc, _ in shipped:  # fresh results, nothing cached: each scenario's DB walked once, as in a run
        inp = DiagnosticInputs(sc, _session(sc))
        for diag in DIAGNOSTICS.values():
            diag(inp)
    alone = time.perf_counter() - t0
    n = len(shipped)
    print(
        f"spoken-form checks: finish_session for {n} scenarios {1000 * a / n:.1f} ms each with them, "
        f"{1000 * b / n:.1f} ms without (median of {ROUNDS}): {100 * (a - b) / b:+.1f}% (target < 5%); "
        f"the checks alone {1000 * alone / n:.2f} ms per session ({100 * alone / b:.1f}% of scoring)"
    )


def bench_voice_rtf() -> None:
    reason = missing_tts()
    # no cache: the real-time factor of synthesising every line
    voice = VoiceRun.create(cache=None) if reason is None else VoiceRun.create(tts=ToneVoice(), cache=None)
    label = "espeak-ng" if reason is None else f"tone stand-in ({reason})"
    with tempfile.TemporaryDirectory() as tmp:
        for names, concurrency in ((THREE, 1), ((), 8)):
            opts = run_options(
                SPEC_DIR,
                REPO / "data",
                scenarios=names,
                output_dir=Path(tmp) / f"c{concurrency}",
                quiet=True,
                concurrency=concurrency,
                voice=True,
            )
            report = asyncio.run(runner.run(opts, voice))
            summaries = [m.voice for _, m in report.results() if m is not None and m.voice is not None]
            media = sum(v.media_ms for v in summaries) / 1000
            tts_s = sum(v.tts_s for v in summaries)
            passed = sum(1 for _, m in report.results() if m and m.is_successful is True)
            print(
                f"voice replay ({label}), {len(report.outcomes)} scenarios, concurrency {concurrency}: "
                f"wall {report.wall_s:.2f} s for {media:.0f} s of conversation: real-time factor "
                f"{report.wall_s / media:.4f} ({media / report.wall_s:.0f}x faster than real time); "
                f"caller TTS {tts_s:.2f} s; {passed}/{len(report.outcomes)} successful"
            )


#: Rounds of the CPU comparison (text and warm voice alternate; medians).
CPU_ROUNDS = 3


@dataclasses.dataclass(frozen=True)
class Cpu:
    """One replay run's CPU seconds: ``user`` and ``system`` of the evalctl process (every thread:
    the event loop and the writer thread) and of its reaped children (the voice workers and the
    espeak-ng / sox programs they ran), ``workers`` the children's share; ``passed`` sessions;
    ``pool`` whether the voice workers were started at all; ``heard`` what the recogniser heard
    over the run (:func:`_heard`; empty for text)."""

    user: float
    system: float
    workers: float
    passed: int
    pool: bool
    heard: str = ""

    @property
    def total(self) -> float:
        return self.user + self.system


def _usage() -> tuple[float, float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (
        own.ru_utime + kids.ru_utime,
        own.ru_stime + kids.ru_stime,
        kids.ru_utime + kids.ru_stime,
    )


def _heard(report: RunReport) -> str:
    """The run's word error rate (edits over the reference words of every transcribed agent
    turn), the turns whose transcript matched their own line (the gate ``speech_matches_text``)
    and the key entities heard as said; empty for a run without recognition."""
    edits = words = matched = turns = entities = heard = 0.0
    for _, metrics in report.results():
        voice = metrics.voice if metrics is not None else None
        if voice is None or voice.hearing is None or voice.wer is None:
            continue
        h = voice.hearing
        edits += voice.wer * h.words
        words += h.words
        matched, turns = matched + h.matched, turns + h.transcribed
        entities, heard = entities + h.entities, heard + h.entities_heard
    if not words:
        return ""
    return (
        f"WER {100 * edits / words:.1f} % of {words:.0f} words, {matched:.0f}/{turns:.0f} turns heard as "
        f"their own line, {heard:.0f}/{entities:.0f} entities heard"
    )


def _replay_cpu(out: Path, voice: VoiceRun | None) -> Cpu:
    """The CPU of a replay of the 50 eva scenarios in this process (:class:`Cpu`); its folder is
    removed after (a voice run's is 0.3 GB of WAV files)."""
    from engine.session.voice import pool

    opts = run_options(SPEC_DIR, REPO / "data", output_dir=out, quiet=True, voice=voice is not None)
    before = _usage()
    report = asyncio.run(runner.run(opts, voice))
    started = pool._POOL is not None
    shutdown_pool()  # the voice workers' CPU is counted once they have ended (RUSAGE_CHILDREN)
    after = _usage()
    heard = _heard(report) if voice is not None else ""
    shutil.rmtree(out, ignore_errors=True)
    passed = sum(1 for o in report.outcomes if o.is_successful is True)
    user, system, workers = (a - b for a, b in zip(after, before, strict=True))
    return Cpu(user, system, workers, passed, started, heard)


def _cli_cpu(out: Path, voice: bool, cache: Path) -> float:
    """CPU seconds (user + system) of one ``evalctl run`` of eva_airline in a fresh process, from
    wait4: its interpreter start, imports and voice workers included, the same for text and
    voice. Raises CalledProcessError when it does not exit 0 (a session failed)."""
    env = {**os.environ, VOICE_CACHE_ENV: str(cache)}
    argv = [sys.executable, str(REPO / "cli.py"), "run", str(SPEC_DIR), "--data-root", str(REPO / "data"),
            "--output-dir", str(out), "--no-progress", *(["--voice"] if voice else [])]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    shutil.rmtree(out, ignore_errors=True)
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), argv)
    return usage.ru_utime + usage.ru_stime


def _line(label: str, runs: list[Cpu], text: float, n: int) -> str:
    mid = sorted(runs, key=lambda r: r.total)[len(runs) // 2]
    return (
        f"  {label} {mid.total:.2f} s ({1000 * mid.total / n:.0f} ms per session; user {mid.user:.2f} s, "
        f"system {mid.system:.2f} s, workers and programs {mid.workers:.1f} s; voice workers "
        f"{'started' if mid.pool else 'never started'}): {mid.total / text:.1f}x text, "
        f"{mid.passed}/{n} passed"
    )


def bench_voice_cpu() -> None:
    """CPU of a voice replay of the 50 eva scenarios with recognition and VAD on, against a text
    replay of the same (issue #28's target: at most 3x), measured two ways:

    - in this process: a text run first, not counted (the engine's imports and per-process caches,
      as in a long-running process), then a voice run with an empty voice cache (cold; the voice
      modules' imports land in it), then :data:`CPU_ROUNDS` rounds of voice with the cache the
      cold run filled (warm) alternating with text; medians, and the median of the rounds' ratios;
    - from the command line: ``evalctl run`` (text) and ``evalctl run --voice`` (warm cache), each a
      fresh process, alternating, :data:`CPU_ROUNDS` rounds: start-up counted on both sides.

    CPU is user + system time of the evalctl process and of its reaped children (the voice workers,
    started on the first cache miss, and the programs they run). Not in either figure: the
    kernel's writeback of the files written (its flusher threads), for text and voice alike."""
    if missing_tts() is not None:
        print(f"voice CPU: skipped ({missing_tts()})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache = VoiceCache(Path(tmp) / "voice-cache")  # empty: the first voice run is cold
        voice = VoiceRun.create(cache=cache)  # espeak-ng, the default recogniser, webrtcvad
        rec = voice.config.recognizer.name if voice.config.recognizer else "none"
        load = os.getloadavg()[0]
        _replay_cpu(Path(tmp) / "warm-up", None)
        cold = _replay_cpu(Path(tmp) / "cold", voice)
        cold_counts = {k: list(v) for k, v in cache.counts.items()}
        text: list[Cpu] = []
        warm: list[Cpu] = []
        for k in range(CPU_ROUNDS):
            cache.counts = {kind: [0, 0] for kind in cache.counts}
            warm.append(_replay_cpu(Path(tmp) / f"warm{k}", voice))
            text.append(_replay_cpu(Path(tmp) / f"text{k}", None))
        warm_counts = cache.counts
        cache.close()
        cli_text, cli_voice = [], []
        for k in range(CPU_ROUNDS):
            cli_voice.append(_cli_cpu(Path(tmp) / f"cli-voice{k}", True, cache.directory))
            cli_text.append(_cli_cpu(Path(tmp) / f"cli-text{k}", False, cache.directory))
        end_load = os.getloadavg()[0]
    n = 50
    t = statistics.median(r.total for r in text)
    ratios = statistics.median(a.total / b.total for a, b in zip(warm, text, strict=True))
    ct, cv = statistics.median(cli_text), statistics.median(cli_voice)
    cli_ratio = statistics.median(a / b for a, b in zip(cli_voice, cli_text, strict=True))
    print(
        f"voice CPU (recognition {rec}, VAD {vad_name()}; load average {load:.1f} at the start, "
        f"{end_load:.1f} at the end), replay of the {n} eva scenarios, in this process:"
    )
    print(_line(f"text (median of {len(text)})", text, t, n))
    print(
        _line("voice cold (empty cache)", [cold], t, n)
        + f" (target <= 3x: not for a cold run, real recognition of every agent turn); cache {cold_counts}"
    )
    same = all(r.heard == cold.heard for r in warm)
    print(f"    heard (cold): {cold.heard}; the warm runs heard {'the same' if same else 'OTHER WORDS'}")
    print(
        _line(f"voice warm (the cold run's cache, median of {len(warm)})", warm, t, n)
        + f"; median of the rounds' ratios {ratios:.2f}x (target <= 3x: "
        + f"{'met' if ratios <= 3 else 'not met'}); cache {warm_counts}"
    )
    print(
        f"  from the command line (a fresh process each, start-up included, median of {CPU_ROUNDS}): "
        f"text {ct:.2f} s, voice warm {cv:.2f} s: {cli_ratio:.2f}x "
        f"(target <= 3x: {'met' if cli_ratio <= 3 else 'not met'}); rounds text "
        f"{', '.join(f'{x:.2f}' for x in cli_text)}, voice {', '.join(f'{x:.2f}' for x in cli_voice)}"
    )


def run() -> None:
    bench_spoken_overhead()
    bench_voice_rtf()
    bench_voice_cpu()


if __name__ == "__main__":
    run()
