"""Issue 30 item 8 (real-model run): an argument error reads sensibly, not "Unterminated string
starting at at position 30" (Python's decoder message with " at position N" appended)."""

from __future__ import annotations

import pytest

from engine.core.tools.arguments import parse_arguments


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            '{"order_id": "O-100", "x": "ab',
            "a string that starts at character 28 is never closed (text of 30 characters)",
        ),
        ('{"order_id": }', "a value is missing at character 14 (text of 14 characters)"),
        ('{"a": 1} tail', "there is more text after the JSON object, from character 10"),
        ("{order_id: 1}", "a key in double quotes is expected at character 2"),
        ('{"a" 1}', "a ':' is expected at character 6"),
        ('{"a": "x\ny"}', "a raw control character (a newline, a tab) is inside a string at character 9"),
        ('{"a": "\\q"}', "invalid \\escape at character 8"),
    ],
    ids=["unterminated", "missing", "extra", "unquoted_key", "colon", "control", "escape"],
)
def test_argument_error_reads_sensibly(raw: str, expected: str) -> None:
    value, err = parse_arguments(raw)
    assert value is None and err is not None
    message = err["message"]
    assert message.startswith("Tool arguments are not valid JSON: ") and expected in message, message
    assert " at at " not in message and "position" not in message
