"""The one shared tau2 airline DB is never written by a session (issue #12 §6; found by a breaker
pass): a tool table that under-declares ``writes`` is refused at load and by validate, with the
paths that changed, instead of corrupting the base and the expected DBs replayed from it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from engine.spec.validate import validate_specs
from engine.util.errors import SpecError
from tests.conftest import REPO

SPEC = REPO / "specs" / "tau2_airline"


@pytest.fixture
def underdeclared(tmp_path: Path) -> Path:
    spec = tmp_path / "air"
    shutil.copytree(SPEC, spec)
    tools = spec / "tools.yaml"
    text = tools.read_text()
    old = 'action_type: cancel_reservation, writes: ["/reservations/{reservation_id}"]}'
    assert old in text
    tools.write_text(text.replace(old, "action_type: cancel_reservation, writes: []}"))
    return spec


def test_writing_into_the_shared_db_is_refused(underdeclared: Path, data_root: Path) -> None:
    # before: 1 of the 7 scenarios that cancel was flagged, and a run passed on a drifting expected DB
    with pytest.raises(SpecError) as info:
        load_domain(underdeclared, data_root, plugins=plugins())
    (problem,) = info.value.problems
    assert problem.json_path == "$.tool_table"
    assert "the shared DB tau2-17e07b1/data/tau2/domains/airline/db.json changed" in problem.message
    assert "/status" in problem.message  # a cancelled reservation's status is among the paths
    report = validate_specs(underdeclared, data_root, plugins=plugins())
    assert not report.ok and any("shared DB" in p.message for p in report.problems)


def test_the_shipped_spec_leaves_the_shared_db_alone(data_root: Path) -> None:
    loaded = load_domain(SPEC, data_root, plugins=plugins())
    assert loaded.data is not None and loaded.data.changed() == []
    report = validate_specs(SPEC, data_root, plugins=plugins())
    assert report.ok and loaded.shared_db_problems() == []


def test_a_writes_placeholder_must_be_an_argument(tmp_path: Path, data_root: Path) -> None:
    spec = tmp_path / "air"
    shutil.copytree(SPEC, spec)
    tools = spec / "tools.yaml"
    tools.write_text(
        tools.read_text().replace(
            'writes: ["/reservations/{reservation_id}"]}', 'writes: ["/reservations/{resv}"]}', 1
        )
    )
    with pytest.raises(SpecError, match=r"writes names \{resv\}, not an argument of '\w+'"):
        load_domain(spec, data_root, plugins=plugins())
