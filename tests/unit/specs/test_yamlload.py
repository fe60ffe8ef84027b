"""The YAML loader on hostile or surprising input: alias bombs and recursion, files that are not
regular or too big, bytes that are not UTF-8, non-finite numbers and YAML 1.1 values that do not
mean what they look like. Each case pins the behaviour after a fix."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from engine.util.yamlload import YamlSyntaxError, format_json_path, load_yaml, parse_yaml

BOMB = "\n".join(
    [
        'a: &a ["x","x","x","x","x","x","x","x","x"]',
        *(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
    ]
)


def test_yaml_alias_bomb_is_refused_quickly() -> None:
    started = time.perf_counter()
    with pytest.raises(YamlSyntaxError) as info:
        parse_yaml(BOMB, "bomb.yaml")
    assert time.perf_counter() - started < 5
    assert "alias bomb" in info.value.problem.message
    assert info.value.problem.file == "bomb.yaml"


@pytest.mark.parametrize("text", ["name: &a [*a]\n", "a: &a\n  b: *a\n"], ids=["list", "mapping"])
def test_yaml_recursive_alias_is_a_problem_not_a_recursion_error(text: str) -> None:
    with pytest.raises(YamlSyntaxError) as info:
        parse_yaml(text, "rec.yaml")
    assert "recursive alias" in info.value.problem.message
    assert info.value.problem.line == 1


def test_yaml_aliases_in_moderation_still_work() -> None:
    doc = parse_yaml("base: &b {x: 1}\nother: *b\n", "ok.yaml")
    assert doc.data == {"base": {"x": 1}, "other": {"x": 1}}


def test_spec_file_that_is_a_fifo_or_a_device_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        with pytest.raises(YamlSyntaxError) as info:
            load_yaml(path)  # would block (FIFO) or fill memory (/dev/zero) if read
        assert info.value.problem.message == "cannot read file: not a regular file"


def test_oversized_spec_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as fh:
        fh.truncate(11 * 1024 * 1024)
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(big)
    assert "over the 10485760 limit" in info.value.problem.message


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_number_in_a_spec_is_a_problem(value: str) -> None:
    doc = parse_yaml(f"name: x\nmax_duration: {value}\n", "domain.yaml")
    (problem,) = doc.problems
    assert (problem.line, problem.json_path) == (2, "$.max_duration")
    assert problem.message == f"{value!r} is not a finite number"


def test_non_utf8_spec_names_the_line(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b'name: x\neva_id: "1.1.2"\ndescription: caf\xe9\n')
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(latin)
    assert info.value.problem.line == 3
    assert (
        info.value.problem.message
        == "not UTF-8: byte 0xe9 (invalid continuation byte); save the file as UTF-8"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("zip: 02134", "unquoted '02134' reads as the octal number 1116"),
        ("departs: 12:30", "unquoted '12:30' reads as the base-60 number 750"),
        ("country: NO", "unquoted 'NO' reads as false in YAML; write false for a boolean or 'NO' for text"),
        ("seat_ok: yes", "unquoted 'yes' reads as true"),
        ("flight_date: 2026-01-05", "unquoted '2026-01-05' reads as a YAML date, not text"),
    ],
)
def test_yaml_11_surprises_are_problems(line: str, message: str) -> None:
    from engine.util.yamlload import parse_yaml

    # before: reference_answer {zip: 02134} held 1116 and {departs: 12:30} held 750, silently:
    # an agent sending "02134" or "12:30" could never match
    doc = parse_yaml(f"reference_answer:\n  - {{{line}}}\n", "s.yaml")
    (problem,) = doc.problems
    assert (problem.line, problem.json_path.split("[0].")[0]) == (2, "$.reference_answer")
    assert message in problem.message


def test_plain_yaml_values_stay_quiet() -> None:
    from engine.util.yamlload import parse_yaml

    text = "a: '02134'\nb: \"12:30\"\nc: true\nd: False\ne: 0\nf: -2.5\ng: 1e3\n"
    text += "h: '2026-01-05'\ni: 08\nj: |\n  yes\n"
    doc = parse_yaml(text, "s.yaml")
    assert doc.problems == ()
    assert doc.data["a"] == "02134" and doc.data["c"] is True and doc.data["e"] == 0


def test_yaml_lines_and_paths() -> None:
    doc = parse_yaml("a: 1\ntools:\n  - name: x\n    kind: read\n  - name: y\n    kind: [oops]\n", "f.yaml")
    assert doc.line(("tools", 1, "kind")) == 6
    assert doc.line(("tools", 1, "kind", 0)) == 6
    assert doc.line(("missing",)) == 1
    assert format_json_path(("tools", 1, "kind"), doc.data) == "$.tools[y].kind"
    assert format_json_path(("a", "b c"), None) == "$.a['b c']"
    dup = parse_yaml("a: 1\na: 2\n", "d.yaml")
    assert [str(p) for p in dup.problems] == ["d.yaml:2: $.a: duplicate key 'a' (first at line 1)"]
    with pytest.raises(YamlSyntaxError) as info:
        parse_yaml("a: [1\n", "bad.yaml")
    assert str(info.value).startswith("bad.yaml:1: $: YAML syntax error")
    with pytest.raises(YamlSyntaxError):
        parse_yaml("!!python/object:os.system {}\n", "unsafe.yaml")


def test_a_nul_byte_names_the_line_and_column(tmp_path: Path) -> None:
    # before: "YAML error: unacceptable character #x0000 ... position 15", no line
    nul = tmp_path / "nul.yaml"
    nul.write_bytes(b"name: x\ndesc: a\x00b\n")
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(nul)
    assert (info.value.problem.line, info.value.problem.json_path) == (2, "$")
    assert info.value.problem.message.startswith("YAML error: character U+0000 at column 8:")


def test_a_symlink_loop_in_a_spec_folder_is_one_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: RuntimeError "Symlink loop" from display_path (Path.resolve), a traceback
    import shutil

    import cli
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    (spec / "scenarios" / "loop.yaml").symlink_to("loop.yaml")
    assert cli.main(["validate", str(spec), "--data-root", str(MOCK_DATA_ROOT)]) == 1
    err = capsys.readouterr()
    lines = [line for line in (err.out + err.err).splitlines() if "loop.yaml" in line]
    assert lines and all(line.startswith(f"{spec / 'scenarios' / 'loop.yaml'}: $: ") for line in lines), lines


@pytest.mark.parametrize("file", ["scenarios/listed.yaml", "domain.yaml"])
def test_a_spec_file_whose_top_level_is_a_list_says_it_must_be_a_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str
) -> None:
    """Before: two schema lines (``... is valid under each of {'required': ['eva_id']}, ...`` and
    ``... is not of type 'object'``) that never said the file must be a mapping."""
    import shutil

    import cli
    from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    (spec / file).write_text("# a list, not a mapping\n- id: listed\n- name: other\n", encoding="utf-8")
    assert cli.main(["validate", str(spec), "--data-root", str(MOCK_DATA_ROOT)]) == 1
    err = capsys.readouterr()
    lines = [line for line in (err.out + err.err).splitlines() if str(spec / file) in line]
    kind = "domain" if file == "domain.yaml" else "scenario"
    assert lines == [
        f"{spec / file}:2: $: the file's top level is a list (its lines start with '- '): "
        f"a {kind} spec file must be a mapping (key: value lines)"
    ], lines
