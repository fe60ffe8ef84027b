"""tau2's reward basis as evalctl gating signals (the ``tau2_reward_signals`` derive).

tau2 (17e07b1 ``evaluator.evaluate_simulation``) scores a task as the product of the rewards of
the types its ``evaluation_criteria.reward_basis`` lists, after a termination gate (reward 0
unless the conversation ended by the agent's or the user's stop). Each type has an evalctl signal
that checks the same thing:

- ``DB`` -> ``db_state_match``: tau2's hash of the end state equals that of the gold replay;
- ``COMMUNICATE`` -> ``communicate_info``, a diagnostic that gates through ``gate_diagnostics``:
  every ``communicate_info`` value appears in an agent turn (ignoring case and commas); a task
  that lists none passes in tau2 and is not applicable here (no gate either way);
- ``NL_ASSERTION`` -> ``nl_assertion``: the judge holds every assertion (not applicable without
  ``--judge-model``, where tau2 always has a judge);
- ``ENV_ASSERTION`` -> ``db_state_assertion``: every env assertion of the task holds;
- ``ACTION`` -> ``is_action_match``: every gold action was made.

:func:`reward_signals` gives the signals and :func:`reward_gates` the diagnostic; ``clean_exit``
is added last, as every evalctl scenario gates on it: it stands for tau2's termination gate
(docs/domains/tau2_airline_retail.md says where the two differ).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: tau2 reward type -> the evalctl signal (or bool diagnostic) that checks it.
BASIS_SIGNALS: dict[str, str] = {
    "DB": "db_state_match",
    "ENV_ASSERTION": "db_state_assertion",
    "ACTION": "is_action_match",
    "COMMUNICATE": "communicate_info",
    "NL_ASSERTION": "nl_assertion",
}


def _basis(record: Mapping[str, Any]) -> list[str]:
    """The task's ``reward_basis`` (default ``[DB, COMMUNICATE]``, as tau2's ``EvaluationCriteria``).

    Raises ValueError for a reward type tau2 does not have, TypeError for a record without
    mapping ``evaluation_criteria``.
    """
    criteria = record.get("evaluation_criteria")
    if not isinstance(criteria, Mapping):
        raise TypeError("evaluation_criteria is not a mapping")
    basis = criteria.get("reward_basis")
    if basis is None:
        basis = ["DB", "COMMUNICATE"]
    unknown = [b for b in basis if b not in BASIS_SIGNALS]
    if unknown:
        raise ValueError(f"reward_basis holds {unknown}, not a tau2 reward type ({', '.join(BASIS_SIGNALS)})")
    return list(basis)


def reward_signals(record: Mapping[str, Any]) -> list[str]:
    """derive ``tau2_reward_signals``: the signals of the task's reward basis in tau2's order, then
    ``clean_exit`` (COMMUNICATE is not among them: see :func:`reward_gates`). Raises as ``_basis``."""
    signals = [BASIS_SIGNALS[b] for b in _basis(record) if b != "COMMUNICATE"]
    return [*dict.fromkeys(signals), "clean_exit"]


def reward_gates(record: Mapping[str, Any]) -> list[str] | None:
    """derive ``tau2_reward_gates``: ``["communicate_info"]`` when the basis has COMMUNICATE, else
    None (no gate). Raises as ``_basis``."""
    return ["communicate_info"] if "COMMUNICATE" in _basis(record) else None
