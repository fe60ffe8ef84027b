"""Issue 30 item 8 (the breaker): a data-root JSON nested 200,000 deep gives one clear error and
no traceback on every verb that reads the data root; NaN / Infinity in a data-root DB are refused
(they are not JSON, and final_db.json could only hold them as non-JSON tokens)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

DB = Path("mock_shop/dbs/M1.json")


def _root(tmp_path: Path, content: str) -> Path:
    root = tmp_path / "dataroot"
    shutil.copytree(MOCK_DATA_ROOT, root)
    (root / DB).write_text(content, encoding="utf-8")
    return root


def _verbs(root: Path, out: Path) -> dict[str, list[str]]:
    spec = str(MOCK_SPEC_DIR)
    return {
        "list": ["list", spec],
        "validate": ["validate", spec],
        "render": ["render", spec, "-s", "mock__cancel_order"],
        "run": ["run", spec, "--no-progress", "--workers", "1", "--output-dir", str(out)],
        "serve": ["serve", "agent", "--port", "0", "--spec-dir", spec],
    }


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[" * 200_000 + "]" * 200_000, "is not valid JSON: nested too deeply (more than about 1000 levels)"),
        (
            '{"customers": {"C-1": {"credit": NaN}}, "orders": {}}',
            "is not valid JSON: NaN is not a JSON number",
        ),
        (
            '{"customers": {"C-1": {"credit": -Infinity}}}',
            "is not valid JSON: -Infinity is not a JSON number",
        ),
    ],
    ids=["nested_200000_deep", "nan", "infinity"],
)
def test_hostile_data_root_json_is_one_clear_error_on_every_verb(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    root = _root(tmp_path, content)
    for verb, args in _verbs(root, tmp_path / "run").items():
        capsys.readouterr()
        code = cli.main([*args, "--data-root", str(root)])
        said = capsys.readouterr()
        err = said.err + said.out  # validate lists its problems on stdout
        assert code in (1, 2), (verb, code, err)
        assert "Traceback" not in err and "RecursionError" not in err, verb
        assert f"{DB} in data root {root} {expected}" in err, (verb, err)
