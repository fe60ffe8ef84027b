"""Tokens and cost per role and per scenario (issue #16 §3): price files, the sums, a resumed run
counting every session once, and what `evalctl report --prices` prints."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from cli import main
from engine.core.records.metrics import Usage
from engine.results.costs import Price, PriceTable, load_prices, money, run_costs
from engine.results.scoring_stage import load_run_metrics
from engine.run.runner import run_cli
from engine.util.errors import SpecError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.mock_domain.sample_run import AGENT_TOKENS, JUDGE_TOKENS, MODELLED, PRICES_YAML
from tests.record_helpers import metrics_row
from tests.runtime_helpers import ScriptedOpenAI, Step, completion, run_options

PRICES = PriceTable({"gpt-x": Price(2.0, 8.0), "judge-y": Price(0.5, 1.0)}, "prices.yaml")


def test_price_file_is_read_and_checked(tmp_path: Path) -> None:
    good = tmp_path / "prices.yaml"
    good.write_text("gpt-x: {input: 2, output: 8.5}\n", encoding="utf-8")
    assert load_prices(good).prices == {"gpt-x": Price(2.0, 8.5)}
    bad = tmp_path / "bad.yaml"
    bad.write_text("gpt-x: {input: 2, output: 8}\njudge-y:\n  input: -1\n  outptu: 2\n", encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_prices(bad)
    text = str(err.value)
    assert "bad.yaml:3: $['judge-y'].input: -1 is less than the minimum of 0" in text, text
    assert "bad.yaml:4: $['judge-y'].outptu: unknown key 'outptu' (did you mean 'output'?)" in text, text
    (tmp_path / "broken.yaml").write_text("gpt-x: [\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"broken.yaml:\d+: \$: YAML syntax error"):
        load_prices(tmp_path / "broken.yaml")


def test_a_price_key_matches_the_whole_name_or_the_part_after_the_backend() -> None:
    assert PRICES.lookup("gpt-x") == PRICES.lookup("openai:gpt-x") == Price(2.0, 8.0)
    assert PRICES.lookup("gpt-x-mini") is None and PRICES.lookup("openai:gpt-x-mini") is None
    assert PRICES.lookup(None) is None and PRICES.lookup(":gpt-x") is None


def test_cost_per_role_and_per_scenario() -> None:
    rows = [
        metrics_row(
            "a",
            usage={"agent": Usage("openai:gpt-x", 1_000_000, 100_000, 3), "user": Usage("replay", 0, 0, 4)},
        ),
        metrics_row(
            "b",
            usage={"agent": Usage("openai:gpt-x", 500_000, 0, 1), "judge": Usage("judge-y", 2_000_000, 0, 1)},
        ),
        metrics_row("c", usage={"agent": Usage("openai:other", 10, 10, 1)}),
    ]
    cost = run_costs(rows, PRICES)
    agent = cost.roles["agent"]
    assert (agent.prompt_tokens, agent.completion_tokens, agent.calls) == (1_500_010, 100_010, 5)
    assert agent.cost == pytest.approx(2.0 + 0.8 + 1.0)  # c's model has no price: left out, named
    assert agent.unpriced == ["openai:other"] and cost.unpriced == ("openai:other",)
    assert cost.roles["user"].cost == 0.0  # replay: no tokens, no price needed
    assert cost.roles["judge"].cost == pytest.approx(1.0)
    assert list(cost.roles) == ["agent", "user", "judge"]
    per = {s.scenario: s.cost for s in cost.scenarios}
    assert per == pytest.approx({"a": 2.8, "b": 2.0, "c": 0.0})
    assert cost.cost == pytest.approx(4.8)
    plain = run_costs(rows)  # without prices: tokens only
    assert plain.cost is None and plain.roles["agent"].cost is None and plain.tokens == 3_600_020
    assert money(0.01234) == "$0.0123" and money(12.5) == "$12.50" and money(None) == "n/a"


def _modelled_run(
    out: Path,
    spec: Path,
    monkeypatch: pytest.MonkeyPatch,
    resume: Path | None = None,
    server: ScriptedOpenAI | None = None,
):
    monkeypatch.setenv("EVALCTL_TEST_KEY", "test")
    bye = Step(completion("Goodbye.", [("c1", "end_conversation", "{}")], usage=AGENT_TOKENS))
    with contextlib.ExitStack() as stack:
        if server is None:
            server = stack.enter_context(ScriptedOpenAI([bye]))
        opts = run_options(
            spec,
            MOCK_DATA_ROOT,
            scenarios=MODELLED,
            agent="openai:demo-agent",
            base_url=server.base_url,
            api_key_env="EVALCTL_TEST_KEY",
            output_dir=None if resume else out,
            resume=resume,
            concurrency=1,
            quiet=True,
        )
        return run_cli(opts)


def test_usage_is_summed_per_run_also_after_a_resume(
    tmp_path: Path, mock_sample_spec: Path, monkeypatch
) -> None:
    run_dir = tmp_path / "run"
    bye = Step(completion("Goodbye.", [("c1", "end_conversation", "{}")], usage=AGENT_TOKENS))
    with ScriptedOpenAI([bye]) as server:  # a resume uses the run's recorded endpoint
        _modelled_run(run_dir, mock_sample_spec, monkeypatch, server=server)
        for name in ("metrics.json", "session.json"):  # as if killed before its conversation was stored
            (run_dir / MODELLED[1] / name).unlink()
        report = _modelled_run(run_dir, mock_sample_spec, monkeypatch, resume=run_dir, server=server)
    assert report.skipped == 1
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    agent = summary["usage"]["agent"]
    assert (agent["prompt_tokens"], agent["completion_tokens"]) == (2 * AGENT_TOKENS[0], 2 * AGENT_TOKENS[1])
    assert agent["models"] == ["openai:demo-agent"] and agent["calls"] == 2
    cost = run_costs(load_run_metrics(run_dir), PriceTable({"demo-agent": Price(2.0, 8.0)}))
    assert cost.roles["agent"].prompt_tokens == agent["prompt_tokens"]
    assert cost.cost == pytest.approx(2 * (AGENT_TOKENS[0] * 2.0 + AGENT_TOKENS[1] * 8.0) / 1e6)


def test_report_prints_cost_per_role_and_per_scenario(
    mock_sample_run_dir: Path, tmp_path: Path, capsys
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES_YAML, encoding="utf-8")
    assert main(["report", str(mock_sample_run_dir), "--prices", str(prices)]) == 0
    out = capsys.readouterr().out
    per_session = (AGENT_TOKENS[0] * 2.0 + AGENT_TOKENS[1] * 8.0) * 4 / 1e6  # four agent turns each
    judge = (JUDGE_TOKENS[0] * 0.4 + JUDGE_TOKENS[1] * 1.6) / 1e6
    lines = out.splitlines()
    for name in MODELLED:
        row = next(line for line in lines if f"│ {name} " in line)
        assert money(per_session + judge) in row, row
    total = next(line for line in lines if "│ total " in line)
    assert money(2 * (per_session + judge)) in total, total
    agent = next(line for line in lines if line.startswith("│ agent "))
    assert money(2 * per_session) in agent and "9,600" in agent, agent
    assert main(["report", str(mock_sample_run_dir), "--prices", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: $: cannot read file" in capsys.readouterr().err


def test_run_with_prices_ends_with_the_costs(tmp_path: Path, capsys) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES_YAML, encoding="utf-8")
    argv = [
        "run",
        str(MOCK_SPEC_DIR),
        "--data-root",
        str(MOCK_DATA_ROOT),
        "--scenarios",
        "mock__shipped_refusal",
    ]
    argv += ["--output-dir", str(tmp_path / "run"), "--no-progress", "--prices", str(prices)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tokens and cost per role" in out and f"cost per scenario (prices: {prices})" in out
    assert next(line for line in out.splitlines() if "│ mock__shipped_refusal " in line).endswith(
        "│ $0.0000 │"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("demo: {input: 1}\n", encoding="utf-8")
    again = [*argv[:-4], str(tmp_path / "run2"), "--no-progress", "--prices", str(bad)]
    assert main(again) == 2  # bad input, not a rate below --fail-under
    assert "bad.yaml:1: $.demo: missing required key: 'output'" in capsys.readouterr().err
    assert not (tmp_path / "run2").exists()  # checked before anything ran
