"""Which frames the engine checks against the protocol schemas: every frame of an external side,
none of a side the run serves itself (its frames come from this engine's own code), so a replay run
pays no schema check per frame while the trust model holds for ``ws://`` sides."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine.core import protocol
from engine.core.protocol import MESSAGE_TYPES
from engine.run import runner
from engine.session.sides.link import SideFailure, SideLink
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR
from tests.runtime_helpers import run_options

# legal JSON, known type, but the schema refuses it (turn.response has no field "extra")
OFF_SCHEMA = json.dumps(
    {"v": 1, "type": "turn.response", "id": "a1", "reply_to": "e1", "text": "hi", "extra": 1}
)


class _OneFrame:
    """Enough of a websockets connection for SideLink.receive: one frame, then sends go nowhere."""

    def __init__(self, frame: str):
        self.frame = frame

    async def recv(self) -> str:
        return self.frame

    async def send(self, frame: str) -> None:
        pass


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The message types the protocol schemas were asked to check, in order."""
    seen: list[str] = []
    real = protocol.validator

    def counting(message_type: str, version: int = protocol.PROTOCOL_VERSION) -> Any:
        seen.append(message_type)
        return real(message_type, version)

    monkeypatch.setattr(protocol, "validator", counting)
    return seen


async def test_an_external_side_frame_is_checked_against_its_schema(validations: list[str]) -> None:
    link = SideLink("agent", "ws://example.invalid", _OneFrame(OFF_SCHEMA))  # type: ignore[arg-type]
    with pytest.raises(SideFailure, match="agent side broke the protocol: bad_message"):
        await link.receive(1.0)
    assert validations == ["turn.response"]


async def test_a_builtin_side_frame_is_not(validations: list[str]) -> None:
    link = SideLink("agent", "ws://127.0.0.1:1", _OneFrame(OFF_SCHEMA), builtin=True)  # type: ignore[arg-type]
    msg = await link.receive(1.0)
    assert msg["type"] == "turn.response" and msg["extra"] == 1
    assert validations == []
    # what no schema is needed for is still refused: not JSON, unknown type, other version
    for frame, code in (
        ("{", "bad_json"),
        ('{"v":1,"type":"nope"}', "bad_message"),
        ('{"v":9}', "unsupported"),
    ):
        with pytest.raises(SideFailure, match=code):
            await SideLink("agent", "u", _OneFrame(frame), builtin=True).receive(1.0)  # type: ignore[arg-type]
    assert "nope" not in MESSAGE_TYPES


def test_a_replay_run_checks_no_frame_against_a_schema(tmp_path: Path, validations: list[str]) -> None:
    opts = run_options(
        MOCK_SPEC_DIR,
        MOCK_DATA_ROOT,
        scenarios=("mock__cancel_order", "mock__late_delivery_credit"),
        output_dir=tmp_path / "run",
        quiet=True,
    )
    report = asyncio.run(runner.run(opts))
    assert len(report.outcomes) == 2 and all(o.clean_exit for o in report.outcomes)
    assert sum(o.agent_turns + o.user_turns for o in report.outcomes) > 4
    assert validations == []
