"""Issue 30 item 8 (the breaker): ``list`` on 2,000 scenarios used 1.8x the CPU and 1.9x the memory
of the release before: it replayed every gold trace (a full DB copy per scenario, kept) only to
print names. Measured on tau2_retail's tasks repeated to 2,000: 197 MB -> 97 MB peak RSS, about
2.5 s -> 1.4-1.9 s of CPU (a busy machine). ``list`` now loads without the replays; ``validate``
and ``run`` keep them."""

from __future__ import annotations

from pathlib import Path

import pytest

import cli
import engine.spec.scenario_build
from tests.conftest import REPO


def test_list_on_many_scenarios_replays_no_gold_trace(
    data_root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed: list[str] = []
    real = engine.spec.scenario_build.gold_replay

    def counting(scenario):  # type: ignore[no-untyped-def]
        replayed.append(scenario.name)
        return real(scenario)

    monkeypatch.setattr(engine.spec.scenario_build, "gold_replay", counting)
    spec = str(REPO / "specs/tau2_retail")
    assert cli.main(["list", spec, "--data-root", str(data_root)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 114 and replayed == []
    assert cli.main(["validate", spec, "--data-root", str(data_root), "--num-tasks", "2", "--no-replay"]) == 0
    assert len(replayed) == 114  # the loader of the verbs that score still replays each gold once
