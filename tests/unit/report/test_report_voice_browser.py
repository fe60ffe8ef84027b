"""A voice run's HTML report in headless Chromium: the opened result shows both waveforms on the
turn timeline, each side's speech, the turns' latency, and two audio players that load the run's
WAV files (their duration is the session's media time). Skips (one line) without Chromium."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.report_html import write_report
from engine.run.runner import run
from engine.session.voice.link import VoiceConfig
from engine.session.voice.run import VoiceRun
from engine.session.voice.side import VoiceStyle
from engine.session.voice.tts import ToneVoice
from tests import browser as chromium
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options

pytestmark = pytest.mark.skipif(chromium.missing() is not None, reason=str(chromium.missing()))
NAME = "mock__cancel_order"


def test_the_report_plays_the_audio_and_draws_the_timeline(tmp_path: Path) -> None:
    tone = ToneVoice()
    out = tmp_path / "run"
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        scenarios=(NAME,),
        output_dir=out,
        progress=False,
        quiet=True,
        voice=True,
    )
    asyncio.run(run(opts, VoiceRun(VoiceConfig(tone), VoiceStyle(tone, delay_ms=250.0))))
    page = out / "report.html"
    write_report(out, page)
    with chromium.browser() as driver:
        chromium.open_page(driver, page, "#r0")
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(driver, 20).until(
            lambda d: d.execute_script(
                "return [...document.querySelectorAll('#detail audio')].every(a => a.readyState >= 1)"
                " && document.querySelectorAll('#detail audio').length === 2"
            )
        )
        durations = driver.execute_script(
            "return [...document.querySelectorAll('#detail audio')].map(a => [a.dataset.role, a.duration])"
        )
        media_s = driver.execute_script(
            "return JSON.parse(document.getElementById('d-0').textContent).voice.media_ms / 1000"
        )
        assert sorted(r for r, _ in durations) == ["agent", "user"]
        assert all(abs(d - media_s) < 0.05 for _, d in durations), (durations, media_s)
        waves = driver.execute_script(
            "return [...document.querySelectorAll('#detail svg.voice-timeline path.wave')]"
            ".map(p => [p.dataset.role, p.getAttribute('d').split('M').length - 1])"
        )
        assert sorted(r for r, _ in waves) == ["agent", "user"] and all(n > 100 for _, n in waves)
        speech = driver.execute_script(
            "return document.querySelectorAll('#detail svg.voice-timeline rect.speech').length"
        )
        assert speech >= 4
        cells = driver.execute_script(
            "return [...document.querySelectorAll('#detail table.voice-turns tbody tr')]"
            ".map(r => r.children[1].textContent)"
        )
        assert cells and all(c == "250 ms" for c in cells), cells
        # the agent's track decodes (its audio data loads, not only its header)
        agent = "document.querySelector('#detail audio[data-role=agent]')"
        driver.execute_script(f"const a = {agent}; a.preload = 'auto'; a.load();")
        WebDriverWait(driver, 20).until(
            lambda d: d.execute_script(
                "const a = document.querySelector('#detail audio[data-role=agent]');"
                "return a.readyState >= 3 && a.error === null"
            )
        )
        assert chromium.console_problems(driver) == []
