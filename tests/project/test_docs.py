"""The docs are executable: docs/authoring.md's examples are built and run, and every `evalctl`
verb, option and relative link the docs and README mention exists.

The authoring guide marks its blocks with an HTML comment on the line before the fence:
``<!-- file: PATH -->`` (written to PATH in a temporary workspace), ``<!-- install: DIR -->`` (a
plugin package installed the way pip does it: its entry points in a ``*.dist-info`` folder on
``sys.path``), ``<!-- run -->`` (evalctl commands, run in order),
``<!-- broken: PATH -->`` + ``<!-- output: COMMAND -->`` (a bad spec and the exact output).
The workspace holds a copy of specs/eva_airline and ``data`` -> the real data root, so the doc's
commands run exactly as written, from the workspace folder.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest

import cli

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "authoring.md"
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_MARK = re.compile(r"^<!-- (\w+)(?:: (.+?))? -->$")
_FENCE = re.compile(r"^(\s*)```")


@dataclass(frozen=True)
class Block:
    """One marked fenced block: marker kind (file, python, run...), its argument, body text."""

    kind: str
    arg: str
    body: str


def marked_blocks(text: str) -> list[Block]:
    """Every fenced block that directly follows a ``<!-- kind: arg -->`` line."""
    lines = text.splitlines()
    blocks: list[Block] = []
    for i, line in enumerate(lines):
        m = _MARK.match(line)
        if not m or i + 1 >= len(lines) or not _FENCE.match(lines[i + 1]):
            continue
        end = next(j for j in range(i + 2, len(lines)) if _FENCE.match(lines[j]))
        blocks.append(Block(m.group(1), m.group(2) or "", "\n".join(lines[i + 2 : end]) + "\n"))
    return blocks


def _of(blocks: list[Block], kind: str) -> list[Block]:
    return [b for b in blocks if b.kind == kind]


def _copy_eva_spec(work: Path, data_root: Path) -> None:
    shutil.copytree(REPO / "specs" / "eva_airline", work / "specs" / "eva_airline")
    (work / "data").symlink_to(data_root, target_is_directory=True)


@pytest.fixture
def guide_blocks() -> list[Block]:
    blocks = marked_blocks(GUIDE.read_text(encoding="utf-8"))
    assert {b.kind for b in blocks} >= {"file", "install", "run", "broken", "output"}
    return blocks


@pytest.fixture
def workspace(
    tmp_path: Path, data_root: Path, guide_blocks: list[Block], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A folder laid out as the guide assumes, with the guide's code registered."""
    _copy_eva_spec(tmp_path, data_root)
    for block in _of(guide_blocks, "file"):
        target = tmp_path / block.arg
        assert not target.exists(), f"{block.arg} would overwrite a file"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.body, encoding="utf-8")
    for block in _of(guide_blocks, "install"):
        _install(tmp_path / block.arg, tmp_path / "site", monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVAL_DATA_ROOT", raising=False)
    yield tmp_path


def _install(package_dir: Path, site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``pip install -e package_dir`` leaves for entry-point discovery: the package importable
    and its ``[project.entry-points]`` in a dist-info folder on ``sys.path``."""
    import tomllib

    project = tomllib.loads((package_dir / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n", encoding="utf-8")
    groups = [
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
        for group, eps in project["entry-points"].items()
    ]
    (info / "entry_points.txt").write_text("\n".join(groups), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(package_dir))


def _evalctl(command: str) -> int:
    words = shlex.split(command)
    assert words[0] == "evalctl", command
    return cli.main(words[1:])


def _metrics(run_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((run_dir / name / "metrics.json").read_text(encoding="utf-8"))


def test_guide_examples_validate_and_run(workspace: Path, guide_blocks: list[Block], capsys) -> None:
    commands = [c for b in _of(guide_blocks, "run") for c in b.body.splitlines() if c.strip()]
    assert len(commands) >= 5
    for command in commands:
        assert _evalctl(command) == 0, f"`{command}` failed: {capsys.readouterr().out[-1500:]}"
    out = capsys.readouterr().out
    assert "validated 51 scenarios in specs/eva_airline" in out
    bakery_ok = re.search(
        r"`(validated 2 scenarios in specs/bakery: [^`]+)`", GUIDE.read_text(encoding="utf-8")
    )
    assert bakery_ok and bakery_ok.group(1) in out.splitlines()  # the line the guide quotes
    assert re.search(r"^eva_airline__date_change_strict\s+1\.1\.2\s", out, re.M)
    assert "Read the new departure time back to the caller before you rebook." in out  # render

    strict = _metrics(workspace / "runs" / "strict", "eva_airline__date_change_strict")
    assert strict["is_successful"] is True and strict["stop_reason"] == "exit"
    assert sorted(strict["success_breakdown"]["passed"]) == sorted(
        ["is_action_match", "db_state_match", "db_state_assertion", "clean_exit"]
    )
    assert strict["db_state_assertion_pass_rate"] == 1.0
    assert strict["nl_assertion_pass_rate"] is None  # no judge in this run

    bakery = workspace / "runs" / "bakery"
    summary = json.loads((bakery / "summary.json").read_text(encoding="utf-8"))
    assert summary["overall"] == {
        "passed": 2,
        "failed": 0,
        "not_applicable": 0,
        "errors": 0,
        "total": 2,
        "rate": 1.0,
        "ci": {"low": pytest.approx(0.3423802275), "high": 1.0, "method": "wilson"},  # Wilson of 2/2
    }
    move = _metrics(bakery, "bakery__move_pickup")
    assert move["is_action_match"] is True and move["db_state_match"] is True
    assert move["db_state_assertion_verdicts"][0]["actual"] == "2026-05-10"
    final = json.loads((bakery / "bakery__move_pickup" / "final_db.json").read_text(encoding="utf-8"))
    assert final["orders"]["K-9"]["pickup"] == "2026-05-10"
    cancel = _metrics(bakery, "bakery__cancel_cake")
    assert cancel["is_successful"] is True and cancel["success_signals"] == ["db_state_match", "clean_exit"]


def test_guide_handler_refuses_a_past_date(workspace: Path) -> None:
    from engine.core.toolruntime import ToolRuntime
    from engine.domains.registry import plugins
    from engine.spec.loader import load_domain

    scenario = load_domain("specs/bakery", "bakery-data", plugins=plugins()).scenario("bakery__move_pickup")
    db = scenario.fresh_db()
    runtime = ToolRuntime(scenario.tools, db)
    outcome = runtime.call("change_pickup", {"order_id": "K-9", "new_date": "2026-05-01"})
    assert outcome.result["error_type"] == "date_in_past" and runtime.actions == [], outcome.result
    assert db["orders"]["K-9"]["pickup"] == "2026-05-09"
    # `format: date` is checked before the handler runs (before: "sometime next spring" reached it)
    vague = runtime.call("change_pickup", {"order_id": "K-9", "new_date": "sometime next spring"}).result
    assert vague == {
        "status": "error",
        "error_type": "invalid_parameter",
        "message": "Invalid or missing parameter 'new_date': Input should be a valid date (YYYY-MM-DD)",
    }


def test_guide_validation_output_is_real(
    tmp_path: Path, data_root: Path, guide_blocks: list[Block], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    _copy_eva_spec(tmp_path, data_root)
    (broken,) = _of(guide_blocks, "broken")
    (expected,) = _of(guide_blocks, "output")
    (tmp_path / broken.arg).write_text(broken.body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVAL_DATA_ROOT", raising=False)
    assert _evalctl(expected.arg) == 1
    assert capsys.readouterr().out == expected.body


# --- every evalctl verb, option and link the docs mention exists --------------------------------

_INLINE = re.compile(r"`((?:\.venv/bin/)?evalctl [^`]+)`")
_LINE = re.compile(r"^\s*(?:\$ )?((?:\.venv/bin/)?evalctl .*)$")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*)")


def _mentions(text: str) -> list[str]:
    """`evalctl ...` inline code spans and command lines inside fenced blocks."""
    found = _INLINE.findall(text)
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif fenced and (m := _LINE.match(line)):
            found.append(m.group(1))
    return found


def test_docs_mention_only_real_verbs_and_options() -> None:
    commands: dict[str, click.Command] = cli.group.commands  # type: ignore[attr-defined]
    checked = 0
    for doc in DOC_FILES:
        for mention in _mentions(doc.read_text(encoding="utf-8")):
            words = mention.split("#")[0].split()
            if len(words) < 2 or words[1].startswith("-") or words[1].endswith(":"):
                continue  # an option alone, or output ("run: DIR" is a table's title)
            verb = words[1]
            assert verb in commands, f"{doc.name}: `{mention}` names no evalctl verb"
            known = {o for p in commands[verb].params for o in (*p.opts, *p.secondary_opts)}
            for option in _OPTION.findall(" ".join(words[2:])):
                assert option in known, f"{doc.name}: `{mention}`: evalctl {verb} has no {option}"
            checked += 1
    assert checked >= 10


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_docs_links_resolve() -> None:
    for doc in DOC_FILES:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            assert dest.exists(), f"{doc.name}: link to missing {target}"
            if anchor and dest.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), re.M)
                assert anchor in {_slug(h) for h in headings}, f"{doc.name}: no heading for #{anchor}"


def _layout_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```\n", 2)[1]


def test_readme_layout_names_every_engine_package_once() -> None:
    """The README's "Layout" block has one line per package of engine/, and names no other."""
    named = re.findall(r"^engine/(\w+)/", _layout_block(), re.M)
    packages = {p.name for p in (REPO / "engine").iterdir() if (p / "__init__.py").is_file()}
    assert len(named) == len(set(named)), f"a package named twice: {named}"
    assert set(named) - packages == set(), "the README names packages engine/ does not have"
    assert packages - set(named) == set(), "engine/ packages the README's layout block leaves out"


_MODULE_PATH = re.compile(r"\b(engine/[\w/]*\.py)\b")
_DOTTED = re.compile(r"(?<![\w.])(engine(?:\.\w+)+)")


def _exists(dotted: str) -> bool:
    """A dotted name under engine: a package or module, or an attribute of one."""
    parts = dotted.split(".")
    for n in range(len(parts), 1, -1):
        path = REPO.joinpath(*parts[:n])
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return True
    return False


def test_docs_name_only_real_engine_modules() -> None:
    """Every ``engine/...py`` path and ``engine.x.y`` name in the docs and tests/README.md exists."""
    stale = []
    for doc in [*DOC_FILES, *sorted((REPO / "docs" / "domains").glob("*.md")), REPO / "tests" / "README.md"]:
        text = doc.read_text(encoding="utf-8")
        stale += [f"{doc.name}: {p}" for p in _MODULE_PATH.findall(text) if not (REPO / p).is_file()]
        stale += [f"{doc.name}: {d}" for d in _DOTTED.findall(text) if not _exists(d)]
    assert not stale, "stale module names:\n" + "\n".join(stale)


def test_tests_readme_names_real_code_under_test() -> None:
    """The "code under test" column of tests/README.md's table names paths that exist (under
    engine/, or at the top for ``cli.py`` and ``specs/``)."""
    missing = []
    for line in (REPO / "tests" / "README.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `") or line.count(" | ") < 2:
            continue
        for path in re.findall(r"`([\w*./<>-]+)`", line.rsplit(" | ", 1)[1]):
            if path == "the repository":
                continue
            base = REPO if path.startswith(("cli.py", "specs/")) else REPO / "engine"
            pattern = path.replace("<name>", "*")
            if not list(base.glob(pattern.rstrip("/"))):
                missing.append(path)
    assert not missing, f"tests/README.md names code that does not exist: {missing}"
