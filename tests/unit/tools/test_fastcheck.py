"""The quick yes of engine.core.tools.fastcheck never says yes where jsonschema finds an error (that it
says yes to the eva gold calls is in tests/domains/eva_airline/test_eva_fastcheck.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.core.tools.fastcheck import compile_object, compile_value

simple = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean", "null"])}),
    st.fixed_dictionaries({"type": st.just("string"), "enum": st.lists(st.sampled_from(["a", "b", "A"]))}),
    st.fixed_dictionaries({"pattern": st.sampled_from([r"^[A-Z]{3}\Z", r"\d", "^$"])}),
    st.fixed_dictionaries(
        {
            "type": st.just("string"),
            "pattern": st.sampled_from([r"^[A-Z]{3}\Z", r"\d"]),
            "minLength": st.just(1),
        }
    ),
    st.fixed_dictionaries({"minLength": st.integers(0, 3), "maxLength": st.integers(0, 3)}),
    st.tuples(
        st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
        st.sampled_from([0, 1, 2.5, -1]),
    ).map(lambda kv: {kv[0]: kv[1]}),
    st.fixed_dictionaries({"type": st.sampled_from([["string", "null"], ["integer", "boolean"]])}),
)
schemas = st.recursive(
    simple,
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2),
                "required": st.lists(st.sampled_from(["x", "y"]), max_size=2, unique=True),
            }
        ),
    ),
    max_leaves=4,
)
values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.sampled_from([0.0, 1.0, 2.5, -1.5, float("nan")]),
        st.sampled_from(["", "a", "A", "ABC", "abc", "1", "ABC\n", "b"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["x", "y"]), inner)),
    max_leaves=6,
)


@settings(max_examples=600, deadline=None)
@given(schemas, values)
def test_a_quick_yes_is_always_right(schema: dict[str, Any], value: Any) -> None:
    check = compile_value(schema)
    assert check is not None  # the subset above is all decided here
    if check(value):
        assert Draft202012Validator(schema).is_valid(value), (schema, value)


def test_schemas_beyond_the_subset_always_take_the_full_validator() -> None:
    assert compile_value({"type": "string", "format": "date"}) is None
    assert compile_value({"enum": [1, True]}) is None  # JSON Schema equality differs from Python's
    assert compile_value({"$ref": "#/$defs/x"}) is None
    assert compile_object({"type": "object", "properties": {"a": {"anyOf": []}}}) is None
    assert compile_value({"type": "string", "description": "annotations are fine"}) is not None
