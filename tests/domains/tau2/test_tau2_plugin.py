"""The parts of the tau2 plugin records that are not tools: the ``tau2`` hash style on session DBs
(cached texts, same hash as the plain one), tau2's text for any result (the engine's own errors
too) and the ``communicate_info`` diagnostic."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from engine.core.model import SessionResult
from engine.core.plugin import DiagnosticInputs
from engine.core.tools.writeset import session_view
from engine.domains import tau2_airline, tau2_retail
from engine.domains.tau2_common import replay_actions, tau2_db_hash
from engine.domains.tau2_common.dbhash import SharedRecordHasher
from engine.domains.tau2_common.plugin import communicate_info, result_text
from tests.domains.tau2.conftest import Tau2Domain


@pytest.mark.parametrize("name", ["airline", "retail"])
def test_the_hash_style_is_taus_hash_on_shared_and_changed_dbs(
    name: str, tau2: dict[str, Tau2Domain]
) -> None:
    """The style the plugin registers equals tau2_db_hash on the base DB, on untouched session
    views (a cache hit) and on every gold end state (records replaced), in any order."""
    domain = tau2[name]
    style = {"airline": tau2_airline, "retail": tau2_retail}[name].PLUGIN.hash_styles["tau2"]
    assert isinstance(style, SharedRecordHasher)
    nulls = domain.package.NULL_DEFAULTS
    base = tau2_db_hash(domain.db, nulls)
    changed = [t for t in domain.base if any(domain.package.WRITES[a["name"]] for a in domain.actions(t))][:8]
    ends = [
        replay_actions(domain.db, domain.actions(t), domain.package.HANDLERS, domain.package.WRITES).db
        for t in changed
    ]
    for db in [domain.db, session_view(domain.db), *ends, session_view(domain.db), *reversed(ends)]:
        assert style(db) == tau2_db_hash(db, nulls)
    assert style(session_view(domain.db)) == base
    assert len({style(db) for db in ends}) > 1


@pytest.mark.parametrize(
    ("result", "text"),
    [
        ({"status": "success", "content": "Transfer successful"}, "Transfer successful"),
        ({"status": "success", "message": "Conversation ended"}, "Conversation ended"),
        (
            {"status": "error", "error_type": "not_found", "message": "Error: Order not found"},
            "Error: Order not found",
        ),
        (
            {
                "status": "error",
                "error_type": "tool_not_found",
                "message": "Tool 'x' not found. Available tools: a",
            },
            "Error: Tool 'x' not found. Available tools: a",
        ),
        ({"status": "error", "error_type": "execution_error"}, "Error: execution_error"),
    ],
)
def test_result_text_is_taus_tool_message(result: dict[str, Any], text: str) -> None:
    assert result_text(result) == text


def _inputs(record: dict[str, Any], agent_lines: list[str]) -> DiagnosticInputs:
    transcript = [{"role": "user", "type": "utterance", "content": "It costs 1,786 dollars?"}]
    transcript += [{"role": "agent", "type": "utterance", "content": line} for line in agent_lines]
    result = SessionResult("s", 1, "exit", transcript=transcript)
    return DiagnosticInputs(SimpleNamespace(record=record), result)  # type: ignore[arg-type]


def test_communicate_info_looks_for_every_value_in_the_agents_words() -> None:
    record = {"evaluation_criteria": {"communicate_info": ["1786", "Mastercard"]}}
    assert communicate_info(_inputs(record, ["The total is $1,786.", "Paid by MASTERCARD."])) is True
    assert communicate_info(_inputs(record, ["The total is $1,786 by visa."])) is False  # the user said it
    assert communicate_info(_inputs({"evaluation_criteria": {"communicate_info": []}}, ["x"])) is None
    assert communicate_info(_inputs({}, [])) is None
