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
cache) and warm (the cache the cold run filled), against a text replay in the same bench (this
process and its finished children: the voice workers and the TTS programs they run).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from engine.core.model import Scenario, SessionResult
from engine.core.options import ScoringOptions
from engine.core.plugin import DiagnosticInputs
from engine.domains.eva_airline import spoken
from engine.domains.eva_airline.spoken import DIAGNOSTICS
from engine.domains.registry import plugins
from engine.results.scoring_stage import finish_session
from engine.run import runner
from engine.session.voice.cache import VoiceCache
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


def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its finished children (TTS programs and the voice
    workers, with the programs they ran), as ``(own, children)``."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def _replay_cpu(out: Path, voice: VoiceRun | None) -> tuple[float, float, int]:
    """``(own CPU s, children's CPU s, sessions passed)`` of a replay of the 50 eva scenarios."""
    opts = run_options(SPEC_DIR, REPO / "data", output_dir=out, quiet=True, voice=voice is not None)
    before = _cpu()
    report = asyncio.run(runner.run(opts, voice))
    shutdown_pool()  # the voice workers' CPU is counted once they have ended
    after = _cpu()
    passed = sum(1 for o in report.outcomes if o.is_successful is True)
    return after[0] - before[0], after[1] - before[1], passed


def bench_voice_cpu() -> None:
    """CPU of a voice replay of the 50 eva scenarios with recognition and VAD on, with an empty
    voice cache (cold) and again with the cache it filled (warm), against a text replay of the
    same measured in the same bench (target: at most 3x). Text and warm runs alternate, two rounds
    each (medians); the cold run, minutes of recognition, runs once."""
    if missing_tts() is not None:
        print(f"voice CPU: skipped ({missing_tts()})")
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache = VoiceCache(Path(tmp) / "voice-cache")  # empty: the first voice run is cold
        voice = VoiceRun.create(cache=cache)  # espeak-ng, the default recogniser, webrtcvad
        rec = voice.config.recognizer.name if voice.config.recognizer else "none"
        load = os.getloadavg()[0]
        text, warm = [], []
        text.append(_replay_cpu(Path(tmp) / "text0", None))
        cold = _replay_cpu(Path(tmp) / "cold", voice)
        cold_counts = {k: list(v) for k, v in cache.counts.items()}
        for k in range(2):
            cache.counts = {kind: [0, 0] for kind in cache.counts}
            warm.append(_replay_cpu(Path(tmp) / f"warm{k}", voice))
            text.append(_replay_cpu(Path(tmp) / f"text{k + 1}", None))
        warm_counts = cache.counts
        cache.close()
    t = statistics.median(a + b for a, b, _ in text)
    w = statistics.median(a + b for a, b, _ in warm)
    c = cold[0] + cold[1]
    n = 50
    print(
        f"voice CPU (recognition {rec}, VAD {vad_name()}; load average {load:.1f} at the start): "
        f"text replay of {n} eva scenarios {t:.1f} s ({1000 * t / n:.0f} ms per session, median of "
        f"{len(text)}), {text[-1][2]}/{n} passed"
    )
    print(
        f"  voice cold (empty cache) {c:.1f} s ({c / n:.2f} s per session; engine {cold[0]:.1f} s, "
        f"workers and programs {cold[1]:.1f} s): {c / t:.1f}x text (target <= 3x), {cold[2]}/{n} passed; "
        f"cache {cold_counts}"
    )
    print(
        f"  voice warm (cache filled) {w:.1f} s ({1000 * w / n:.0f} ms per session; engine "
        f"{warm[-1][0]:.1f} s, workers and programs {warm[-1][1]:.1f} s, median of {len(warm)}): "
        f"{w / t:.1f}x text (target <= 3x), {warm[-1][2]}/{n} passed; cache {warm_counts}"
    )


def run() -> None:
    bench_spoken_overhead()
    bench_voice_rtf()
    bench_voice_cpu()


if __name__ == "__main__":
    run()
