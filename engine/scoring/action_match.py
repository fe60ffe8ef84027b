"""``is_action_match``: does the recorded action list contain the scenario's reference answer?

Recursive, order-free comparison of a reference (JSON value) against a prediction:

- dict: every reference key must be present in the prediction with a matching value; extra
  prediction keys are always tolerated (the reference names what matters);
- list: every reference item must be matched to a *distinct* prediction item, chosen by an optimal
  assignment (maximum bipartite matching, Kuhn's augmenting paths), so a permissive reference item
  never steals the only partner of a stricter one (the reference harness matches greedily, first
  fit). With ``disallow_extra_items`` (scenario) or ``strict`` (the run's ``--strict-match``) the
  lists must also have the same length — at every list level, not only the top one;
- numbers compare as numbers (``1 == 1.0``; with ``isclose_numbers``, within NumPy ``isclose``'s
  default tolerance, ``|prediction - reference| <= 1e-8 + 1e-5 * |reference|``, as the NeMo
  reference harness compares them), booleans only with booleans, strings only with strings
  (``"02134"`` never equals ``2134``), ``None`` only with ``None`` (never with the text
  ``"None"``, which the reference harness takes for it), a string only by its text (``"Nan"``
  matches ``"Nan"``; the reference harness can never match it);
- strings are compared after the scenario's options: ``clean_text`` (Unicode NFKC, trim,
  collapse runs of whitespace), ``ignore_punctuation`` (drop Unicode punctuation characters and
  ASCII ``string.punctuation``),
  ``ignore_capitalization`` (case-folded).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.core.records.metrics import NOT_APPLICABLE

_WS = re.compile(r"\s+")
#: ASCII punctuation by Python's ``string.punctuation``: Unicode files ``$ + < = > ^ ` | ~`` as
#: symbols, not punctuation, yet "$25" and "25" should match when punctuation is ignored.
_ASCII_PUNCT = frozenset(string.punctuation)


@dataclass(frozen=True)
class MatchOptions:
    """String and list options of one comparison (all off by default)."""

    ignore_capitalization: bool = False
    ignore_punctuation: bool = False
    clean_text: bool = False
    disallow_extra_items: bool = False
    isclose_numbers: bool = False

    @classmethod
    def from_scenario(cls, match_options: Mapping[str, Any], strict: bool = False) -> MatchOptions:
        """Build from a scenario's ``match_options`` mapping; ``strict`` (``--strict-match``) forces
        ``disallow_extra_items``. Unknown keys are ignored here (the spec schema rejects them)."""
        return cls(
            ignore_capitalization=bool(match_options.get("ignore_capitalization", False)),
            ignore_punctuation=bool(match_options.get("ignore_punctuation", False)),
            clean_text=bool(match_options.get("clean_text", False)),
            disallow_extra_items=bool(match_options.get("disallow_extra_items", False)) or strict,
            isclose_numbers=bool(match_options.get("isclose_numbers", False)),
        )


def _is_punctuation(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


def normalize_text(text: str, opts: MatchOptions) -> str:
    """Apply the string options in a fixed order: NFKC, punctuation, case, whitespace."""
    if opts.clean_text:
        text = unicodedata.normalize("NFKC", text)
    if opts.ignore_punctuation:
        text = "".join(ch for ch in text if not _is_punctuation(ch))
    if opts.ignore_capitalization:
        text = text.casefold()
    if opts.clean_text:
        text = _WS.sub(" ", text).strip()
    return text


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def max_matching(compatible: list[list[bool]], n_right: int) -> int:
    """Size of a maximum bipartite matching; ``compatible[i][j]`` says left i may pair with right j.

    Kuhn's algorithm (augmenting paths), O(V·E) — ample for action lists of a few dozen items.
    """
    owner: list[int] = [-1] * n_right

    def augment(i: int, seen: list[bool]) -> bool:
        for j in range(n_right):
            if compatible[i][j] and not seen[j]:
                seen[j] = True
                if owner[j] == -1 or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(1 for i in range(len(compatible)) if augment(i, [False] * n_right))


#: NumPy ``isclose``'s default tolerances (relative, absolute).
ISCLOSE_RTOL, ISCLOSE_ATOL = 1e-5, 1e-8


def _isclose(prediction: float, reference: float) -> bool:
    """``numpy.isclose(prediction, reference)`` with its defaults (a NaN matches nothing)."""
    if math.isinf(reference) or math.isinf(prediction):
        return prediction == reference
    return abs(prediction - reference) <= ISCLOSE_ATOL + ISCLOSE_RTOL * abs(reference)


def values_match(reference: Any, prediction: Any, opts: MatchOptions) -> bool:
    """True when ``prediction`` satisfies ``reference`` under ``opts`` (see the module docstring)."""
    if isinstance(reference, Mapping):
        if not isinstance(prediction, Mapping):
            return False
        return all(k in prediction and values_match(v, prediction[k], opts) for k, v in reference.items())
    if _is_list(reference):
        if not _is_list(prediction):
            return False
        if opts.disallow_extra_items and len(prediction) != len(reference):
            return False
        if len(reference) > len(prediction):
            return False
        matrix = [[values_match(r, p, opts) for p in prediction] for r in reference]
        if any(not any(row) for row in matrix):
            return False
        return max_matching(matrix, len(prediction)) == len(reference)
    if isinstance(reference, bool) or isinstance(prediction, bool):
        return isinstance(reference, bool) and isinstance(prediction, bool) and reference == prediction
    if _is_number(reference):
        if not _is_number(prediction):
            return False
        if opts.isclose_numbers:
            return _isclose(float(prediction), float(reference))
        return bool(reference == prediction)
    if isinstance(reference, str):
        return isinstance(prediction, str) and normalize_text(reference, opts) == normalize_text(
            prediction, opts
        )
    return reference == prediction


def unmatched_reference_items(
    reference: Any, actions: list[Any] | None, match_options: Mapping[str, Any]
) -> list[tuple[int, Any]]:
    """For triage: ``(index, item)`` of the list reference items that no recorded action
    satisfies on its own (an item can also fail only through the optimal pairing or a length
    rule; then this list is empty and the pairing is what failed)."""
    if not _is_list(reference):
        return []
    opts = MatchOptions.from_scenario(match_options, False)
    found = list(actions or [])
    return [(i, r) for i, r in enumerate(reference) if not any(values_match(r, a, opts) for a in found)]


def is_action_match(
    reference: Any, actions: list[Any] | None, match_options: Mapping[str, Any], strict: bool = False
) -> bool | str:
    """The ``is_action_match`` signal.

    ``reference`` is the scenario's ``reference_answer`` (None = no reference → ``"N/A"``);
    ``actions`` the recorded action records (None = nothing recorded → False when a reference
    exists). A list reference is matched against the action list; any other reference against the
    last action (a single final answer).
    """
    if reference is None:
        return NOT_APPLICABLE
    if actions is None:
        return False
    opts = MatchOptions.from_scenario(match_options, strict)
    if _is_list(reference):
        return values_match(reference, actions, opts)
    return bool(actions) and values_match(reference, actions[-1], opts)
