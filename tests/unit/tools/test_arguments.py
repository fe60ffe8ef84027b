"""Tool arguments as JSON text: parsing and the checks before a handler runs."""

from __future__ import annotations


def test_tool_arguments_with_a_lone_surrogate_are_invalid_arguments() -> None:
    from engine.tools.arguments import parse_arguments

    args, err = parse_arguments('{"confirmation_number": "\\udc00"}')
    assert args is None and err is not None and err["error_type"] == "invalid_arguments"
    assert parse_arguments('{"last_name": "\\u00d1u\\u00f1ez"}') == ({"last_name": "Ñuñez"}, None)
