"""Loading eva_airline against data roots that are not quite right: no releases, one folder too
deep, an empty release, a file changed from the pins, an agent config of the wrong shape, a truncated
JSONL dataset. Moved from tests/unit/specs/test_specs.py (eva's releases are what they are about)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from engine.util.errors import SpecError
from tests.conftest import SPEC_DIR


def test_a_data_root_without_the_releases_is_one_line(tmp_path: Path, data_root: Path) -> None:
    from engine.util.errors import DataRootError

    with pytest.raises(DataRootError) as info:  # before: one problem per file the domain reads
        load_domain(SPEC_DIR, tmp_path, plugins=plugins())
    assert str(info.value) == (
        f"data root {tmp_path} holds none of the releases eva_airline reads (eva-0.1.3, eva-2.1.0)"
    )
    with pytest.raises(DataRootError, match=f"{data_root} holds them: use --data-root {data_root}$"):
        load_domain(SPEC_DIR, data_root / "eva-0.1.3", plugins=plugins())  # one folder too deep


def test_empty_release_reports_each_missing_file_once(tmp_path: Path) -> None:
    (tmp_path / "eva-0.1.3").mkdir()
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, tmp_path, plugins=plugins())
    lines = str(info.value).splitlines()
    assert len(lines) == 3
    assert lines[0].endswith(
        f"domain.yaml:41: $.policy.file: eva-0.1.3/configs/agents/airline_agent.yaml "
        f"not found in data root {tmp_path}"
    )
    assert "tools.yaml:5: $.tool_descriptions_from:" in lines[1]
    assert "domain.yaml:14: $.dataset.path: eva-0.1.3/data/airline_dataset.jsonl not found" in lines[2]


def test_modified_data_root_warns_once(tmp_path: Path, data_root: Path, capsys) -> None:
    import shutil

    root = tmp_path / "data"
    shutil.copytree(data_root, root)
    cfg = root / "eva-0.1.3/configs/agents/airline_agent.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8") + "\n# local note\n", encoding="utf-8")
    load_domain(SPEC_DIR, root, plugins=plugins())
    load_domain(SPEC_DIR, root, plugins=plugins())
    err = capsys.readouterr().err
    assert err.count("differs from the pinned upstream eva-0.1.3") == 1


def _data_copy(tmp_path: Path, data_root: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(data_root, target)
    return target


AGENT_CONFIG = "eva-0.1.3/configs/agents/airline_agent.yaml"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("- just\n- a list\n", "holds a list, not a mapping with a 'tools' list"),
        ("tools: [\n", "is not valid YAML: while parsing"),
    ],
    ids=["config_is_a_list", "config_bad_yaml"],
)
def test_agent_config_of_the_wrong_shape_is_one_line_problem(
    tmp_path: Path, data_root: Path, content: str, expected: str
) -> None:
    root = _data_copy(tmp_path, data_root)
    (root / AGENT_CONFIG).write_text(content, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, root, plugins=plugins())
    lines = [str(p) for p in info.value.problems]
    assert any("tools.yaml:" in s and "$.tool_descriptions_from" in s and expected in s for s in lines), lines
    assert all("\n" not in s for s in lines)


def test_truncated_jsonl_dataset_names_json_and_the_line(tmp_path: Path, data_root: Path) -> None:
    root = _data_copy(tmp_path, data_root)
    dataset = root / "eva-0.1.3/data/airline_dataset.jsonl"
    lines = dataset.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
    dataset.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_domain(SPEC_DIR, root, plugins=plugins())
    (problem,) = [str(p) for p in info.value.problems if "$.dataset.path" in str(p)]
    assert "is not valid JSON: " in problem and "line 3 column" in problem, problem
