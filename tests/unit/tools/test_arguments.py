"""Tool arguments: parsing the JSON text and checking and coercing values against the tool's
parameters before a handler runs."""

from __future__ import annotations


def test_tool_arguments_with_a_lone_surrogate_are_invalid_arguments() -> None:
    from engine.core.tools.arguments import parse_arguments

    args, err = parse_arguments('{"confirmation_number": "\\udc00"}')
    assert args is None and err is not None and err["error_type"] == "invalid_arguments"
    assert parse_arguments('{"last_name": "\\u00d1u\\u00f1ez"}') == ({"last_name": "Ñuñez"}, None)


def test_a_generic_domain_keeps_argument_case() -> None:
    # the runtime itself changes no values: only a handler's field rules do (the mock shop has none)
    from engine.core.tools.arguments import ArgumentChecker

    checker = ArgumentChecker(
        {"type": "object", "properties": {"confirmation_number": {"type": "string"}}}, {}
    )
    assert checker.check({"confirmation_number": "abc123"}) == ({"confirmation_number": "abc123"}, None)


def test_arguments_are_coerced_inside_arrays_and_objects() -> None:
    from engine.core.tools.arguments import ArgumentChecker

    line = {"type": "object", "properties": {"price": {"type": "number"}, "qty": {"type": "integer"}}}
    schema = {
        "type": "object",
        "properties": {
            "lines": {"type": "array", "items": line},
            "meta": {"type": "object", "properties": {"rush": {"type": "boolean"}, "inner": line}},
        },
    }
    checker = ArgumentChecker(schema, {})
    clean, failed = checker.check(
        {
            "lines": [{"price": "9.99", "qty": "2", "note": "7"}, {"price": 1, "qty": 3.0}],
            "meta": {"rush": "yes", "inner": {"price": "0.5", "qty": "1"}},
        }
    )
    assert failed is None
    assert clean == {
        "lines": [{"price": 9.99, "qty": 2, "note": "7"}, {"price": 1.0, "qty": 3}],  # undeclared keys kept
        "meta": {"rush": True, "inner": {"price": 0.5, "qty": 1}},
    }
    _, bad = checker.check({"lines": [{"price": 1}, {"price": "a lot"}]})
    assert bad is not None and bad["error_type"] == "invalid_parameter"
    assert bad["message"].endswith("unable to parse string as a number (at lines[1].price)")
    _, inf = checker.check({"meta": {"inner": {"price": 1e400}}})  # a JSON overflow to infinity, nested
    assert inf is not None and "finite" in inf["message"]
