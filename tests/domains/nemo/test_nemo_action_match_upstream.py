"""Issue 30 item 1 (NeMo action match): the three behaviours of the reference harness's action
comparison, decided here (docs/domains/nemo_domains.md, "Action match against upstream"):

- numbers: upstream compares them with ``np.isclose`` (default tolerances); the NeMo domains do
  too (``isclose_numbers`` in their derived match options);
- ``None`` and ``"None"``: upstream treats them alike; evalctl keeps them apart, deliberately: a
  null argument and the text "None" are different calls to a tool;
- a reference string such as ``"Nan"``: upstream can never match it; evalctl matches it by its
  text, deliberately: a reference that no agent can meet is a bug of the harness, not a property
  of the task.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.domains.customer_service.scenario import match_options as cs_match_options
from engine.domains.restaurant.scenario import match_options as restaurant_match_options
from engine.scoring.action_match import is_action_match

ORDER = {"match": {"ignore_capitalization": True, "ignore_punctuation": True, "clean_text": True}}


def _match(reference: Any, predicted: Any, options: dict[str, Any]) -> Any:
    return is_action_match(
        [{"action_type": "T", "value": reference}], [{"action_type": "T", "value": predicted}], options
    )


@pytest.mark.parametrize("derive", [restaurant_match_options, cs_match_options])
def test_issue30_nemo_numbers_match_within_numpys_isclose_tolerance(derive: Any) -> None:
    options = derive(ORDER)
    assert options["isclose_numbers"] is True
    assert _match(25.99, 25.99 + 1e-7, options) is True  # within 1e-8 + 1e-5 * 25.99
    assert _match(1000.0, 1000.009, options) is True
    assert _match(1000.0, 1000.02, options) is False  # beyond 1e-8 + 1e-5 * 1000
    assert _match(0.0, 1e-9, options) is True and _match(0.0, 1e-7, options) is False
    assert _match(25.99, "25.99", options) is False  # still no number from text
    assert _match(1, True, options) is False  # nor from a boolean
    # without the option (tau2 telecom's action match, eva): exact
    assert _match(25.99, 25.99 + 1e-7, {}) is False


def test_issue30_nemo_none_and_the_text_none_are_different_values() -> None:
    options = restaurant_match_options(ORDER)
    assert _match(None, None, options) is True
    assert _match(None, "None", options) is False
    assert _match("None", None, options) is False
    assert _match("None", "none", options) is True  # as text, under the scenario's case rule


def test_issue30_nemo_a_reference_string_nan_matches_its_text() -> None:
    options = cs_match_options(ORDER)
    assert _match("Nan", "Nan", options) is True
    assert _match("Nan", "nan", options) is True  # capitalisation ignored, as every string
    assert _match("Nan", float("nan"), options) is False
    assert _match(float("nan"), float("nan"), options) is False  # a NaN equals nothing, as np.isclose
