"""Regression tests for inputs found to break evalctl (hostile specs, bad data, bad tool calls).

Each test pins the behaviour after a fix: a clear ``file:line`` problem or a structured error
result, never a hang, a traceback or a corrupted DB.
"""

from __future__ import annotations

import time

import pytest

from engine.yamlload import YamlSyntaxError, parse_yaml

BOMB = "\n".join(
    [
        'a: &a ["x","x","x","x","x","x","x","x","x"]',
        *(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        ),
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
