"""The quick yes of engine.core.tools.fastcheck takes every valid eva gold call, so the full JSON Schema
validator does not run for them (its soundness: tests/unit/tools/test_fastcheck.py)."""

from __future__ import annotations

from pathlib import Path

from engine.core.toolruntime import checker_for
from engine.domains.registry import plugins
from engine.spec.loader import load_domain
from tests.conftest import SPEC_DIR


def test_eva_gold_calls_get_the_quick_yes(data_root: Path) -> None:
    loaded = load_domain(SPEC_DIR, data_root, plugins=plugins())
    calls = 0
    for scenario in loaded.scenarios:
        assert scenario.gold_trace is not None
        for step in scenario.gold_trace.tool_calls():
            spec = scenario.tools.get(step.tool)
            assert spec is not None
            checker = checker_for(spec)
            assert checker.quick_yes is not None, step.tool
            clean = checker._clean(step.arguments)
            if checker.validator.is_valid(clean):
                assert checker.quick_yes(clean), (step.tool, step.arguments)
                calls += 1
    assert calls > 200
