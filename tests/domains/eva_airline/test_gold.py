"""eva_airline's gold adapter: the person values of each language of the dataset."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.domains.registry import load_domain
from engine.errors import SpecError
from tests.conftest import SPEC_DIR


def _spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(SPEC_DIR, target)
    return target


def test_language_without_person_values_is_a_spec_problem(tmp_path: Path, data_root: Path) -> None:
    # the gold trace would keep <LAST_NAME> placeholders and replay/user sides would say them
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("language: en", "language: xx"))
    with pytest.raises(SpecError) as info:
        load_domain(spec, data_root)
    (problem,) = info.value.problems
    assert problem.json_path == "$.language" and problem.file.endswith("domain.yaml")
    assert problem.message == "language 'xx' has no person values in the gold dataset (en, fr, fr-CA)"


def test_french_is_a_language_of_the_dataset(tmp_path: Path, data_root: Path) -> None:
    spec = _spec_copy(tmp_path)
    domain = spec / "domain.yaml"
    domain.write_text(domain.read_text(encoding="utf-8").replace("language: en", "language: fr"))
    assert len(load_domain(spec, data_root).scenarios) == 50
