"""A result without a verdict is worded by who failed (issue: a caller-simulator error was called
infrastructure and told that a resume fixes it). Real runs of the mock shop against a scripted
caller on loopback that says an order id its persona does not hold (a caller-fidelity error), read
back by every verb that words errors; and the words of each error source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import main
from engine.core.records.common import ErrorCause, ErrorSource
from engine.core.records.error_words import cause_text, hint, origin, sources_text
from tests.unit.trust.test_caller_fidelity import CALLERS, CANCEL, _run, api_key  # noqa: F401

CALLER = "the caller simulator"


def test_a_caller_fidelity_error_names_the_caller_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "junit.xml"
    out, code, _ = _run(tmp_path, CALLERS["wrong_code"], "--regenerate", "0", "--junit", str(junit))
    assert code == 3
    run = capsys.readouterr()
    printed = run.out + run.err
    assert "infrastructure" not in printed
    assert f"1 result(s) without a verdict ({CALLER} failed" in run.out
    assert "fix or change the caller model or prompt (--user / --user-args)" in run.err
    assert "--resume" not in run.err.split("first:")[1].replace("a resume only", "")  # no resume hint
    text = (out / "all_summary.txt").read_text()
    assert f"ERRORS: 1 result(s) without a verdict ({CALLER} failed" in text
    assert "infrastructure" not in text

    assert main(["diff", str(out)]) == 0
    diff = capsys.readouterr().out
    assert f"({CALLER}, not the agent; fix or change the caller model" in diff
    assert "infrastructure" not in diff
    assert main(["diff", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["error_source"] == "user_simulator"

    message = junit.read_text()
    assert f'message="no verdict, {CALLER} failed: user_simulator: caller fidelity:' in message
    assert "infrastructure" not in message

    assert main(["report", str(out), "--markdown"]) == 0
    markdown = capsys.readouterr().out
    assert f"verdict error: 1 result(s) without a verdict ({CALLER} failed" in markdown
    assert "infrastructure" not in markdown

    page = tmp_path / "report.html"
    assert main(["report", str(out), "--html", str(page)]) == 0
    html = page.read_text()
    assert f"{CALLER}, not the agent; fix or change the caller model" in html
    assert "infrastructure" not in html


@pytest.mark.parametrize(
    ("source", "who", "helps"),
    [
        (ErrorSource.USER_SIMULATOR, "the caller simulator", "--user-args"),
        (ErrorSource.JUDGE, "the judge", "rescore"),
        (ErrorSource.AGENT_MODEL, "infrastructure (the agent's model endpoint)", "--resume"),
        (ErrorSource.TRANSPORT, "infrastructure (the transport)", "--resume"),
        (ErrorSource.ENGINE, "the engine itself", "--resume"),
    ],
)
def test_each_source_is_named_with_its_hint(source: str, who: str, helps: str) -> None:
    assert origin(source).startswith(who) and helps in hint(source)
    assert cause_text(ErrorCause(source, "boom")) == f"{origin(source)} failed ({source}): boom"


def test_mixed_sources_are_counted_by_who_failed() -> None:
    assert sources_text(["user_simulator"] * 2) == "the caller simulator failed"
    assert sources_text(["transport", "agent_model"]) == "infrastructure failed"
    assert (
        sources_text(["user_simulator", "transport", "user_simulator"])
        == "caller simulator 2, infrastructure 1"
    )
    assert sources_text([]) == ""
