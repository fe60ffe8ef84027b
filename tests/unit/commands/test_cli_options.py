"""The options several verbs share (engine/commands/cli_options.py): one help text each, which
names the default (and, for an option with a value, an example); the verbs on a stored run leave
the recorded settings unless told."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import click
import pytest

import cli

#: The trailing "(default: ...)" / "(required: ...)" of a help text: what may differ per verb.
_DEFAULT = re.compile(r" \((?:default|default file|required): [^()]*(?:\([^()]*\)[^()]*)*\)\.?$")
#: Options whose help describes each verb's own output (the JSON shape), not one setting, or
#: whose meaning is the verb's own (``cache --voice`` names the voice cache, ``run --voice`` runs
#: audio sessions).
_PER_VERB = {"--json", "--help", "--voice"}


def _options() -> dict[str, list[tuple[str, click.Option]]]:
    """Each option name -> the (verb, option) pairs that take it."""
    by_name: dict[str, list[tuple[str, click.Option]]] = defaultdict(list)
    for verb, command in cli.group.commands.items():
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                by_name[param.opts[0]].append((verb, param))
    return by_name


SHARED = {name: uses for name, uses in _options().items() if len(uses) > 1 and name not in _PER_VERB}


def test_the_shared_options_are_the_ones_defined_once() -> None:
    assert set(SHARED) >= {
        "--data-root", "--fail-under", "--allow-errors", "--output-dir", "--concurrency", "--api-key-env",
        "--min-agent-turns", "--strict-match", "--judge-model", "--judge-base-url", "--judge-threshold",
        "--prices", "--html", "--base-url", "--request-timeout",
    }  # fmt: skip


@pytest.mark.parametrize("name", sorted(SHARED))
def test_a_shared_option_has_one_help_text_with_its_default_and_an_example(name: str) -> None:
    helps = {verb: option.help or "" for verb, option in SHARED[name]}
    for verb, text in helps.items():
        assert _DEFAULT.search(text), f"evalctl {verb} {name}: the help names no default: {text!r}"
        option = dict(SHARED[name])[verb]
        if not option.is_flag:
            assert "e.g. " in text, f"evalctl {verb} {name}: the help gives no example: {text!r}"
    stems = {_DEFAULT.sub("", text) for text in helps.values()}
    assert len(stems) == 1, f"{name} is explained in {len(stems)} ways: {sorted(stems)}"


def test_rescore_keeps_every_recorded_setting_it_is_not_given() -> None:
    rescore = {p.name: p.default for p in cli.group.commands["rescore"].params if isinstance(p, click.Option)}
    run = {p.name: p.default for p in cli.group.commands["run"].params if isinstance(p, click.Option)}
    settings = ["min_agent_turns", "strict_match", "judge_model", "judge_base_url", "judge_threshold"]
    assert {k: rescore[k] for k in [*settings, "api_key_env", "concurrency"]} == dict.fromkeys(
        [*settings, "api_key_env", "concurrency"]
    )
    assert [run[k] for k in settings] == [3, False, None, None, 0.9]
    assert (run["api_key_env"], run["concurrency"]) == ("OPENAI_API_KEY", 8)


def test_the_help_output_shows_the_shared_text_with_the_verbs_examples() -> None:
    from click.testing import CliRunner

    for verb in ("run", "rescore", "merge"):
        out = CliRunner().invoke(cli.group, [verb, "--help"], terminal_width=100).output
        flat = " ".join(out.split()).replace("--allow- errors", "--allow-errors")  # a wrap at the hyphen
        assert "Example:" in out, verb
        assert (
            "--fail-under RATE Exit 1 when the strict success rate (errors count as failures; with "
            "--allow-errors the overall rate, errors left out) is below RATE (0..1), e.g. 0.9 " in flat
        )
        assert "(default: exit 3)" in flat, verb


def test_list_and_validate_take_every_selector_run_takes(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

    selectors = {"--scenarios", "--domain", "--task-ids", "--task-split", "--num-tasks"}
    for verb in ("run", "list", "validate"):
        names = {p.opts[0] for p in cli.group.commands[verb].params if isinstance(p, click.Option)}
        assert selectors <= names, f"evalctl {verb} lacks {sorted(selectors - names)}"
    base = [str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
    capsys.readouterr()
    assert cli.main(["list", *base, "--scenarios", "mock__cancel_order"]) == 0  # before: no such option
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["mock__cancel_order"]
    assert cli.main(["list", *base, "--domain", "mock__s"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["mock__shipped_refusal"]
    assert cli.main(["validate", *base, "--scenarios", "mock__cancel_order", "--no-replay"]) == 0
    assert capsys.readouterr().out.startswith("validated 1 scenario in ")
    assert cli.main(["list", *base, "--scenarios", "mock__nope"]) == 2
    assert capsys.readouterr().err.startswith("evalctl: no scenario named 'mock__nope'")


def test_scenarios_given_twice_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    """Found by a new user: `--scenarios A --scenarios B` kept B alone, silently."""
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

    args = ["list", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
    assert cli.main([*args, "--scenarios", "mock__cancel_order", "--scenarios", "mock__shipped_refusal"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert sorted(names) == ["mock__cancel_order", "mock__shipped_refusal"]


#: The verbs that take --scenarios and --domain, with what each needs besides to reach the
#: selection (no run folder is written: ``OUT`` stands for one under the test's tmp_path).
SELECTING = {
    "run": ["--output-dir", "OUT"],
    "load": ["--ramp", "1", "--output-dir", "OUT"],
    "list": [],
    "validate": ["--no-replay"],
}


def test_the_selecting_verbs_are_the_ones_that_take_scenarios() -> None:
    taking = {verb for verb, c in cli.group.commands.items() for p in c.params if "--scenarios" in p.opts}
    assert taking == set(SELECTING)


def _is_one_usage_error(
    verb: str, args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evalctl VERB`` on the mock shop with ``args`` exits 2 with ``message`` as its one stderr
    line, prints nothing and writes no run folder."""
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

    out = tmp_path / "out"
    extra = [str(out) if a == "OUT" else a for a in SELECTING[verb]]
    capsys.readouterr()
    code = cli.main([verb, str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT), *extra, *args])
    captured = capsys.readouterr()
    assert (code, captured.err.strip().splitlines(), captured.out) == (2, [message], "")
    assert not out.exists()


@pytest.mark.parametrize("verb", sorted(SELECTING))
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (  # before: A alone was selected, silently (list, validate: '' alone meant all)
            ["--scenarios", "mock__cancel_order", "--scenarios", ""],
            "evalctl: --scenarios '' names no scenario (leave it out to run all)",
        ),
        (["--scenarios", ""], "evalctl: --scenarios '' names no scenario (leave it out to run all)"),
        (
            ["--scenarios", "mock__cancel_order,,M2"],
            "evalctl: --scenarios 'mock__cancel_order,,M2' has an empty name: give names or record ids "
            "separated by single commas, e.g. A,B",
        ),
        (
            ["--scenarios", "M1,"],
            "evalctl: --scenarios 'M1,' has an empty name: give names or record ids separated by single "
            "commas, e.g. A,B",
        ),
        (  # before: the error named --domain alone
            ["--scenarios", "mock__cancel_order,M2", "--domain", "mock__s"],
            "evalctl: no scenario matches both --scenarios 'mock__cancel_order,M2' and --domain 'mock__s'",
        ),
        (  # before: one unknown name per run
            ["--scenarios", "mock__cancel_ordr,M1,nope"],
            "evalctl: 2 names match no scenario: 'mock__cancel_ordr' (did you mean 'mock__cancel_order', "
            "record 'M1'?), 'nope'",
        ),
        (  # before: '' selected every scenario, ' ' none ("no scenario matches")
            ["--domain", ""],
            "evalctl: --domain '' names no prefix (leave it out to run all)",
        ),
        (["--domain", " "], "evalctl: --domain ' ' names no prefix (leave it out to run all)"),
    ],
    ids=[
        "empty_again",
        "empty",
        "empty_item",
        "trailing_comma",
        "both_filters",
        "all_unknown",
        "empty_domain",
        "blank_domain",
    ],
)
def test_a_bad_selection_is_one_usage_error_in_every_verb_that_takes_it(
    verb: str, args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _is_one_usage_error(verb, args, message, tmp_path, capsys)


#: The verbs that take --task-ids (and --task-split, --num-tasks; run, list, validate), with what
#: each needs besides, as in :data:`SELECTING`.
TASK_SELECTING = {
    verb: SELECTING[verb]
    for verb, command in cli.group.commands.items()
    if any("--task-ids" in p.opts for p in command.params)
}


@pytest.mark.parametrize("verb", sorted(TASK_SELECTING))
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (  # before: the last one alone was kept
            ["--task-ids", "M1", "--task-ids", ""],
            "evalctl: --task-ids '' names no task (leave it out to run all)",
        ),
        (["--task-ids", " , "], "evalctl: --task-ids ' , ' names no task (leave it out to run all)"),
        (  # before: M1 and M2 were taken, silently
            ["--task-ids", "M1,,M2"],
            "evalctl: --task-ids 'M1,,M2' has an empty id: give task ids separated by single commas, "
            "e.g. 0,3",
        ),
        (
            ["--task-ids", "M1,"],
            "evalctl: --task-ids 'M1,' has an empty id: give task ids separated by single commas, e.g. 0,3",
        ),
        (  # before: one unknown id per run
            ["--task-ids", "M1,M9,zzz,M9"],
            "evalctl: --task-ids: 2 ids match no task in the selection: 'M9' (nearest: 'M3', scenario "
            "mock__shipped_refusal), 'zzz'",
        ),
    ],
    ids=["empty_again", "empty", "empty_item", "trailing_comma", "all_unknown"],
)
def test_a_bad_task_selection_is_one_usage_error_in_every_verb_that_takes_it(
    verb: str, args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _is_one_usage_error(verb, args, message, tmp_path, capsys)


def test_task_ids_given_twice_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    """As --scenarios: `--task-ids A --task-ids B` kept B alone, silently."""
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

    args = ["list", str(MOCK_SPEC_DIR), "--data-root", str(MOCK_DATA_ROOT)]
    capsys.readouterr()
    assert cli.main([*args, "--task-ids", "M3", "--task-ids", "M1,M3"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert names == ["mock__shipped_refusal", "mock__cancel_order"]


def test_domain_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Found by a breaker: `--domain A --domain B` kept B alone, silently (2 scenarios, none of A's)."""
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

    args = [
        "list",
        str(MOCK_SPEC_DIR),
        "--data-root",
        str(MOCK_DATA_ROOT),
        "--domain",
        "mock__c",
        "--domain",
        "mock__s",
    ]
    assert cli.main(args) == 2
    assert "--domain': given 2 times (mock__c, mock__s): give one" in capsys.readouterr().err
    assert cli.main([*args[:-4], "--domain", "mock__c", "--domain", "mock__c"]) == 0  # the same twice
