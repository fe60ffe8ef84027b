"""A record that does not read never vanishes: every verb that reads run folders prints one
``warning: PATH: REASON`` line per such file on stderr and shows the count in its output; a run
with no readable result at all is bad input (exit 2, one line). Before: ``report --html`` said
"0 results" and exited 0 while the text report showed 1/1, and ``diff`` said "not a run
directory?"."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import cli
from tests.conftest import MOCK_DATA_ROOT, REPO

FROZEN = REPO / "tests" / "records" / "v3"  # a run of today's version: two results
CANCEL, SHIPPED = "mock__cancel_order", "mock__shipped_refusal"


def _truncate(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")


def _schema(value: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        body = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps({**body, "schema": value}), encoding="utf-8")

    return change


def _write(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text, encoding="utf-8")


def _replace(make: Callable[[Path], None]) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        path.unlink()
        make(path)

    return change


def _nan_duration(path: Path) -> None:
    body = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**body, "duration_s": float("nan")}), encoding="utf-8")  # NaN


#: How a metrics.json gets damaged, and what its warning says.
DAMAGE = {
    # a RecursionError traceback in every verb, before
    "deep-array": (_write("[" * 1_000_000 + "]" * 1_000_000), "nested too deeply"),
    "deep-object": (_write('{"a":' * 100_000 + "1" + "}" * 100_000), "nested too deeply"),
    "deep-but-parses": (_write("[" * 300 + "]" * 300), "nested too deeply (over 256 levels)"),
    # hung every verb / read without end, before
    "fifo": (_replace(os.mkfifo), "not a regular file (a FIFO)"),
    "symlink-devzero": (
        _replace(lambda p: p.symlink_to("/dev/zero")),
        "not a regular file (a character device)",
    ),
    # counted as missing without a word, before (merge: a raw error list)
    "symlink-dangling": (
        _replace(lambda p: p.symlink_to("/nonexistent/x.json")),
        "a dangling symbolic link (to /nonexistent/x.json)",
    ),
    "symlink-loop": (_replace(lambda p: p.symlink_to(p)), "Too many levels of symbolic links"),
    # crashed report --html, accepted by the others, before
    "nan": (_nan_duration, "holds a non-finite number (NaN)"),
    "infinity": (
        _write('{"schema": "evalctl.metrics/3", "duration_s": 1e999}'),
        "holds a non-finite number (1e999)",
    ),
    "not-json": (lambda p: p.write_text("<html>502 Bad Gateway</html>"), "not JSON (Expecting value"),
    "truncated": (_truncate, "truncated or damaged?"),
    "wrong-schema": (
        _schema("evalctl.summary/3"),
        "not an evalctl metrics record: schema 'evalctl.summary/3'",
    ),
    "future": (
        _schema("evalctl.metrics/9"),
        "is of a newer evalctl (this one reads evalctl.metrics/1 to /5)",
    ),
}


@pytest.fixture(params=sorted(DAMAGE))
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the frozen run whose mock__shipped_refusal/metrics.json is damaged; the line
    its warning must be."""
    run = tmp_path / "run"
    shutil.copytree(FROZEN, run)
    change, _ = DAMAGE[request.param]
    path = run / SHIPPED / "metrics.json"
    change(path)
    return run, f"warning: {path}: "


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _warned(err: str, line: str, reason: str) -> None:
    warnings = [w for w in err.splitlines() if w.startswith("warning: ")]
    assert len(warnings) == 1, err
    assert warnings[0].startswith(line) and reason in warnings[0], warnings[0]


def test_report_text_counts_an_unreadable_record(
    damaged: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    run, line = damaged
    code, out, err = _cli(capsys, "report", str(run))
    assert code == 0
    _warned(err, line, "")
    assert "warning: 1 unreadable record (warned above)" in out
    assert "Overall success" in out  # the report itself is still there


def test_report_html_shows_the_count(
    damaged: tuple[Path, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run, line = damaged
    page = tmp_path / "report.html"
    code, out, err = _cli(capsys, "report", str(run), "--html", str(page))
    assert code == 0
    _warned(err, line, "")
    assert "(1 results, 1 unreadable record," in out
    html = page.read_text(encoding="utf-8")
    assert "Unreadable records" in html and "1 unreadable record: left out of the results below" in html
    assert f"{run / SHIPPED / 'metrics.json'}:" in html


def test_diff_says_so(damaged: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    run, line = damaged
    code, out, err = _cli(capsys, "diff", str(run))
    assert code == 0
    _warned(err, line, "")
    assert f"== {CANCEL}: FAIL" in out
    assert "note: 1 unreadable record (warned above): left out of this diff" in out
    assert "missing" not in err  # an unreadable result is not a missing one


def test_compare_notes_it(damaged: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    run, line = damaged
    code, out, err = _cli(capsys, "compare", str(FROZEN), str(run), "--json")
    assert code == 0
    _warned(err, line, "")
    body = json.loads(out)
    assert (body["unreadable_a"], body["unreadable_b"]) == (0, 1)
    assert any(n.startswith("run B has 1 unreadable record (warned above)") for n in body["notes"])


def test_rescore_scores_the_stored_session_again(
    damaged: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, line = damaged
    monkeypatch.chdir(REPO)  # run.json names the spec folder relative to the checkout
    code, out, err = _cli(capsys, "rescore", str(run), "--data-root", str(MOCK_DATA_ROOT))
    assert code == 0
    _warned(err, line, "")
    assert "rescored 2 result(s); 1 unreadable record (warned above)" in out
    assert json.loads((run / SHIPPED / "metrics.json").read_text())["is_successful"] is True


def test_merge_leaves_it_out_and_says_so(
    damaged: tuple[Path, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run, line = damaged
    out_dir = tmp_path / "merged"
    code, out, err = _cli(capsys, "merge", str(run), "--output-dir", str(out_dir))
    _warned(err, line, "")  # once: the merged run's hard link to it is the same file
    assert "warning: 1 unreadable record (warned above)" in out
    assert json.loads((out_dir / "summary.json").read_text())["results"] == 1
    assert code == 3  # the merged run misses that result, as any run with a missing one
    assert "1 result(s) missing" in err


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_each_damage_has_its_reason(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(FROZEN, run)
    change, reason = DAMAGE[kind]
    change(run / SHIPPED / "metrics.json")
    code, _, err = _cli(capsys, "diff", str(run))
    assert code == 0
    _warned(err, f"warning: {run / SHIPPED / 'metrics.json'}: ", reason)


@pytest.mark.parametrize(
    "verb",
    [
        ("report",),
        ("report", "--html", "{tmp}/r.html"),
        ("diff",),
        ("compare", str(FROZEN)),
        ("rescore", "--data-root", str(MOCK_DATA_ROOT)),
        ("merge", "--output-dir", "{tmp}/merged"),
    ],
    ids=["report", "report-html", "diff", "compare", "rescore", "merge"],
)
def test_a_run_with_no_readable_result_is_bad_input(
    verb: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    run = tmp_path / "run"
    shutil.copytree(FROZEN, run)
    for name in (CANCEL, SHIPPED):
        (run / name / "metrics.json").write_text("{")
        (run / name / "session.json").unlink()  # nothing rescore could score again
    name, *rest = (part.format(tmp=tmp_path) for part in verb)
    args = [name, *rest[:1], str(run), *rest[1:]] if name == "compare" else [name, str(run), *rest]
    code, _, err = _cli(capsys, *args)
    assert code == 2
    assert sum(1 for w in err.splitlines() if w.startswith("warning: ")) == 2
    assert "no readable results (2 unreadable records, warned above)" in err
    assert "Traceback" not in err


def test_rescore_names_the_stored_file_that_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a breaker: a torn transcript line failed the rescore with "JSONDecodeError:
    Unterminated string ... line 1 column 26" (no file, the line within the line), and a
    session.json of garbage was noted as "no session.json (written by an older evalctl)"."""
    run = tmp_path / "run"
    shutil.copytree(FROZEN, run)
    monkeypatch.chdir(REPO)
    transcript = run / CANCEL / "transcript.jsonl"
    lines = len(transcript.read_text(encoding="utf-8").splitlines())
    with transcript.open("a", encoding="utf-8") as out:
        out.write('{"role": "user", "type": "utteran\n')
    (run / SHIPPED / "session.json").write_bytes(b"\xff\xfe not text")
    code, out, err = _cli(capsys, "rescore", str(run), "--data-root", str(MOCK_DATA_ROOT))
    assert code == 3
    assert f"ValueError: transcript.jsonl: line {lines + 1}: Unterminated string" in err
    assert "1 result(s) have a session.json that does not read (warned above)" in err + out
    assert "no session.json (written by an older evalctl)" not in err + out
