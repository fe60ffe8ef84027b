"""is_action_match: optimal order-free matching, string options, strictness at every list level."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.scoring.action_match import MatchOptions, is_action_match, max_matching, values_match

PLAIN = MatchOptions()
STRICT = MatchOptions(disallow_extra_items=True)

CASES = [
    # (id, reference, prediction, options, expected)
    ("number-like-string-is-not-a-number", {"zip": "02134"}, {"zip": 2134}, PLAIN, False),
    ("number-like-string-equals-itself", {"zip": "02134"}, {"zip": "02134"}, PLAIN, True),
    ("int-equals-float", {"amount": 289}, {"amount": 289.0}, PLAIN, True),
    ("bool-is-not-int", {"waive": True}, {"waive": 1}, PLAIN, False),
    ("none-only-matches-none", {"seat": None}, {"seat": "none"}, PLAIN, False),
    ("extra-keys-tolerated", {"a": 1}, {"a": 1, "b": 2}, PLAIN, True),
    ("extra-keys-tolerated-when-strict", {"a": 1}, {"a": 1, "b": 2}, STRICT, True),
    ("missing-key-fails", {"a": 1, "b": 2}, {"a": 1}, PLAIN, False),
    ("order-free-list", [1, 2, 3], [3, 1, 2], PLAIN, True),
    ("extra-top-level-item-tolerated", [1, 2], [2, 9, 1], PLAIN, True),
    ("extra-top-level-item-strict", [1, 2], [2, 9, 1], STRICT, False),
    ("nested-extra-item-tolerated", [{"ids": ["P1"]}], [{"ids": ["P1", "P2"]}], PLAIN, True),
    ("nested-extra-item-under-strict-fails", [{"ids": ["P1"]}], [{"ids": ["P1", "P2"]}], STRICT, False),
    ("duplicates-need-two-partners", [1, 1], [1, 2], PLAIN, False),
    ("list-vs-scalar", [1], 1, PLAIN, False),
    ("dict-vs-list", {"a": 1}, [{"a": 1}], PLAIN, False),
    # greedy first fit would pair {a:1} with the first prediction and leave {a:1,b:2} unmatched
    (
        "greedy-trap-optimal-assignment",
        [{"a": 1}, {"a": 1, "b": 2}],
        [{"a": 1, "b": 2}, {"a": 1}],
        PLAIN,
        True,
    ),
    ("case-sensitive-by-default", {"name": "Rodriguez"}, {"name": "rodriguez"}, PLAIN, False),
    (
        "ignore-capitalization",
        {"name": "Rodriguez"},
        {"name": "RODRIGUEZ"},
        MatchOptions(ignore_capitalization=True),
        True,
    ),
    (
        "ignore-punctuation",
        {"t": "Hello, world!"},
        {"t": "Hello world"},
        MatchOptions(ignore_punctuation=True),
        True,
    ),
    (
        "clean-text-whitespace-and-nfkc",
        {"t": "Ｆｕｌｌ  width "},
        {"t": " Full width"},
        MatchOptions(clean_text=True),
        True,
    ),
    ("no-clean-text-keeps-whitespace", {"t": "a  b"}, {"t": "a b"}, PLAIN, False),
]


@pytest.mark.parametrize(
    ("reference", "prediction", "opts", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_values_match(reference, prediction, opts, expected):
    assert values_match(reference, prediction, opts) is expected


def test_no_reference_is_not_applicable():
    assert is_action_match(None, [{"action_type": "x"}], {}) == "N/A"


def test_reference_without_actions_is_false():
    assert is_action_match([{"action_type": "rebook_flight"}], None, {}) is False
    assert is_action_match([{"action_type": "rebook_flight"}], [], {}) is False


def test_run_strict_flag_applies_to_nested_lists():
    ref = [{"action_type": "add_to_standby", "passenger_ids": ["PAX001"]}]
    pred = [{"action_type": "add_to_standby", "passenger_ids": ["PAX001", "PAX002"]}]
    assert is_action_match(ref, pred, {}) is True
    assert is_action_match(ref, pred, {}, strict=True) is False
    assert is_action_match(ref, pred, {"disallow_extra_items": True}) is False


def test_scalar_reference_matches_last_action():
    assert (
        is_action_match(
            {"answer": "yes"}, [{"answer": "no"}, {"answer": "YES"}], {"ignore_capitalization": True}
        )
        is True
    )


def test_max_matching_counts_a_perfect_assignment():
    compatible = [[True, True, False], [True, False, False], [False, True, True]]
    assert max_matching(compatible, 3) == 3


@given(st.lists(st.integers(min_value=0, max_value=5), max_size=6), st.randoms())
def test_any_permutation_matches_strictly(items, rnd):
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert values_match(items, shuffled, STRICT)


@pytest.mark.parametrize(
    ("reference", "prediction"),
    [("$25.00", "25.00"), ("+1 555 0100", "1 555 0100"), ("a|b~c", "abc"), ("1–2", "12")],
)
def test_ignore_punctuation_drops_ascii_symbols_too(reference: str, prediction: str) -> None:
    from engine.scoring.action_match import is_action_match

    # before: '$', '+', '|', '~' are Unicode symbols (S*), so "$25.00" never matched "25.00"
    assert is_action_match([{"v": reference}], [{"v": prediction}], {"ignore_punctuation": True}) is True
    assert is_action_match([{"v": reference}], [{"v": prediction}], {}) is False
