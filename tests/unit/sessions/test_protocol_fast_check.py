"""The compiled check of external frames (``jsonschema_rs``) accepts exactly what jsonschema
accepts: on the examples of every message type, both protocol versions, and on frames made from
them with a field dropped, replaced by any JSON value or added."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.protocol import (
    MESSAGE_TYPES,
    PROTOCOL_VERSION,
    ProtocolError,
    _accepted_fast,
    decode,
    encode,
    validator,
)
from tests.json_strategies import json_values
from tests.unit.sessions.test_protocol import EXAMPLES

VERSIONS = (PROTOCOL_VERSION, 2)


def _agree(msg: dict[str, Any], mtype: str, version: int) -> None:
    slow = validator(mtype, version).is_valid(msg)
    assert _accepted_fast(msg, mtype, version) == slow, (mtype, version, msg)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("mtype", MESSAGE_TYPES)
def test_the_examples_are_accepted_by_both(mtype: str, version: int) -> None:
    msg = {**EXAMPLES[mtype], "v": version}
    _agree(msg, mtype, version)
    if version == PROTOCOL_VERSION:
        assert _accepted_fast(msg, mtype, version)


@st.composite
def _near_examples(draw: st.DrawFn) -> tuple[dict[str, Any], str, int]:
    mtype = draw(st.sampled_from(MESSAGE_TYPES))
    version = draw(st.sampled_from(VERSIONS))
    msg = copy.deepcopy({**EXAMPLES[mtype], "v": version})
    for _ in range(draw(st.integers(0, 3))):
        keys = sorted(msg)
        action = draw(st.sampled_from(("drop", "replace", "add", "nest")))
        key = draw(st.sampled_from(keys))
        if action == "drop":
            msg.pop(key)
        elif action == "replace":
            msg[key] = draw(json_values)
        elif action == "add":
            msg[draw(st.text(max_size=6))] = draw(json_values)
        elif isinstance(msg[key], dict) and msg[key]:
            inner = draw(st.sampled_from(sorted(msg[key])))
            msg[key][inner] = draw(json_values)
    return msg, mtype, version


@given(_near_examples())
def test_frames_near_the_examples_get_the_same_verdict(case: tuple[dict[str, Any], str, int]) -> None:
    _agree(*case)


def test_a_refused_frame_is_still_worded_by_jsonschema() -> None:
    msg = {**EXAMPLES["turn.response"], "end": "yes"}
    assert not _accepted_fast(msg, "turn.response", PROTOCOL_VERSION)
    with pytest.raises(ProtocolError) as info:
        decode(encode(msg))
    assert info.value.code == "bad_message" and "$.end" in info.value.message


def test_a_value_the_compiled_check_cannot_take_goes_to_jsonschema() -> None:
    # a non-string key cannot reach it from a frame, but a caller of decode's checks might pass one
    assert _accepted_fast({1: "x"}, "turn.response", PROTOCOL_VERSION) is False  # type: ignore[dict-item]
