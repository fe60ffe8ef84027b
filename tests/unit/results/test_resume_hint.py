"""The hint that completes an interrupted run names the run's own spec folder (read from its
``run.json``), so it can be pasted as it stands: ``evalctl run --resume DIR`` alone is refused
(SPEC_DIR is required)."""

from __future__ import annotations

from pathlib import Path

from engine.results.provenance import resume_command, run_provenance
from engine.util.artifacts import write_json


def test_the_hint_names_the_recorded_spec_folder_quoted_for_the_shell(tmp_path: Path) -> None:
    run = tmp_path / "my run"
    run.mkdir()
    write_json(run / "run.json", run_provenance(run, {"spec_dir": "specs/my shop"}).to_json())
    assert resume_command(run) == f"evalctl run 'specs/my shop' --resume '{run}'"


def test_without_a_readable_run_record_the_hint_leaves_the_spec_folder_to_the_user(tmp_path: Path) -> None:
    assert resume_command(tmp_path) == f"evalctl run ... --resume {tmp_path}"
    (tmp_path / "run.json").write_text("{not json")
    assert resume_command(tmp_path) == f"evalctl run ... --resume {tmp_path}"
