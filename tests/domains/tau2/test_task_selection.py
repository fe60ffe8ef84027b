"""Issue 30 item 3: tau2's task selection (``--task-ids``, ``--task-split``, ``--num-tasks``) on
run, validate and list, with the splits read from the data's own split_tasks.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from tests.conftest import REPO


def _listed(capsys: pytest.CaptureFixture[str], data_root: Path, spec: str, *args: str) -> list[str]:
    code = cli.main(["list", str(REPO / "specs" / spec), "--data-root", str(data_root), "--json", *args])
    assert code == 0, capsys.readouterr().err
    return [row["id"] for row in json.loads(capsys.readouterr().out)]


def test_task_split_is_the_data_split_in_its_order(
    capsys: pytest.CaptureFixture[str], data_root: Path
) -> None:
    split = json.loads((data_root / "tau2-17e07b1/data/tau2/domains/airline/split_tasks.json").read_text())
    assert _listed(capsys, data_root, "tau2_airline", "--task-split", "test") == split["test"]
    assert (
        _listed(capsys, data_root, "tau2_airline", "--task-split", "train", "--num-tasks", "4")
        == split["train"][:4]
    )
    assert len(_listed(capsys, data_root, "tau2_retail", "--task-split", "train")) == 74


def test_task_ids_keep_the_given_order(capsys: pytest.CaptureFixture[str], data_root: Path) -> None:
    assert _listed(capsys, data_root, "tau2_retail", "--task-ids", "7, 3,7") == ["7", "3"]
    test = _listed(capsys, data_root, "tau2_retail", "--task-split", "test")
    picked = [i for i in test[:3]][::-1]  # the split's order wins over the order given
    assert (
        _listed(capsys, data_root, "tau2_retail", "--task-ids", ",".join(picked), "--task-split", "test")
        == test[:3]
    )


def test_task_ids_bad_id_names_the_nearest(capsys: pytest.CaptureFixture[str], data_root: Path) -> None:
    code = cli.main(
        ["list", str(REPO / "specs/tau2_retail"), "--data-root", str(data_root), "--task-ids", "3,1130"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("evalctl: --task-ids: no task '1130'") and "nearest: '113'" in err
    assert "Traceback" not in err


def test_task_split_unknown_lists_the_splits(capsys: pytest.CaptureFixture[str], data_root: Path) -> None:
    code = cli.main(
        ["list", str(REPO / "specs/tau2_airline"), "--data-root", str(data_root), "--task-split", "dev"]
    )
    assert code == 2
    assert "splits: base, test, train" in capsys.readouterr().err
    code = cli.main(
        ["list", str(REPO / "specs/eva_airline"), "--data-root", str(data_root), "--task-split", "test"]
    )
    assert code == 2
    assert "no split file" in capsys.readouterr().err


def test_task_split_small_of_telecom_is_not_its_tasks(
    capsys: pytest.CaptureFixture[str], data_root: Path
) -> None:
    # 17e07b1's `small` split names tasks of another task file than the v0.2.0 one the spec uses
    code = cli.main(
        ["list", str(REPO / "specs/tau2_telecom"), "--data-root", str(data_root), "--task-split", "small"]
    )
    assert code == 2
    assert "names none of the selected scenarios" in capsys.readouterr().err
    assert len(_listed(capsys, data_root, "tau2_telecom", "--task-split", "test")) == 40


def test_task_selection_validate_checks_only_the_selection(
    capsys: pytest.CaptureFixture[str], data_root: Path
) -> None:
    spec = str(REPO / "specs/tau2_retail")
    code = cli.main(
        ["validate", spec, "--data-root", str(data_root), "--task-split", "test", "--num-tasks", "3"]
    )
    assert code == 0
    assert "validated 3 scenarios" in capsys.readouterr().out


def test_task_selection_run_runs_only_the_selection(
    capsys: pytest.CaptureFixture[str], data_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    spec = str(REPO / "specs/tau2_airline")
    args = ["run", spec, "--data-root", str(data_root), "--output-dir", str(out), "--workers", "1"]
    code = cli.main([*args, "--task-split", "test", "--num-tasks", "2", "--task-ids", "2,6,8,1"])
    capsys.readouterr()
    assert code == 0
    record = json.loads((out / "run.json").read_text())
    assert record["scenarios"] == ["tau2_airline__2", "tau2_airline__6"]  # 8 is third, 1 is not in test
    assert record["args"]["tasks"] == {"task_ids": ["2", "6", "8", "1"], "task_split": "test", "num_tasks": 2}


def test_task_ids_not_in_the_split_say_so(capsys: pytest.CaptureFixture[str], data_root: Path) -> None:
    spec = str(REPO / "specs/tau2_airline")
    test = _listed(capsys, data_root, "tau2_airline", "--task-split", "test")
    assert "0" not in test
    code = cli.main(["list", spec, "--data-root", str(data_root), "--task-split", "test", "--task-ids", "0"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    # before: "(its ids are not this spec's tasks)", as if the split named none of the spec's tasks
    assert err.startswith("evalctl: --task-ids: no task of 0 is in split 'test' of tau2_airline")


def test_many_task_ids_not_in_the_split_name_the_first_five(
    capsys: pytest.CaptureFixture[str], data_root: Path
) -> None:
    """Before: every id was listed, however many were given."""
    spec = str(REPO / "specs/tau2_airline")
    test = set(_listed(capsys, data_root, "tau2_airline", "--task-split", "test"))
    outside = [rid for rid in _listed(capsys, data_root, "tau2_airline") if rid not in test][:7]
    args = [
        "list",
        spec,
        "--data-root",
        str(data_root),
        "--task-split",
        "test",
        "--task-ids",
        ",".join(outside),
    ]
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    first = ", ".join(outside[:5])
    assert err.startswith(
        f"evalctl: --task-ids: no task of {first} and 2 more is in split 'test' of tau2_airline"
    )
