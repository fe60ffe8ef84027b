"""Hypothesis strategies shared by the tests that compare orjson's text with the standard
library's."""

from __future__ import annotations

from hypothesis import strategies as st

#: JSON values whose text orjson and the standard library write alike: integers within 64 bits,
#: finite floats that the standard library prints without an exponent (1e-4 <= |f| < 1e16, or 0).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text()
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15).filter(
        lambda f: f == 0 or abs(f) >= 1e-4
    ),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)  # fmt: skip
