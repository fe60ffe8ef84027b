"""Issue 30 item 1, the differential test: mutated gold action sequences of tau2 airline and retail
(dropped, doubled and swapped calls; undeclared, missing, wrong-type and convertible arguments),
recorded once through tau2-bench's own environment code (``tools/tau2_oracle/record_mutations.py``
wrote ``data/tau2_mutation_oracle.json.gz``), replayed here through evalctl's runtime and shipped tool
tables: every call's error flag and text (tau2's tool message, ``result_text``) and the tau2 DB
hash at the end must agree.

The one deliberate divergence (docs/domains/tau2_airline_retail.md, "Arguments"): evalctl refuses
a value of the wrong JSON type before the tool runs, where tau2 runs the tool with it. Each such
disagreement must be exactly that refusal, and is counted; nothing else may disagree.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.core.toolruntime import ToolRuntime
from engine.core.tools.writeset import session_view
from engine.domains.registry import plugins
from engine.domains.tau2_common.plugin import result_text
from engine.spec.loader import LoadedDomain, load_domain
from tests.conftest import REPO

ORACLE = Path(__file__).parent / "data" / "tau2_mutation_oracle.json.gz"
DOMAINS = ("airline", "retail")
TYPE_REFUSAL = "Error: Argument '"
#: (sequences that agree in full, sequences that differ only by the type refusal), per domain.
MEASURED = {"airline": (215, 85), "retail": (215, 85)}


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    with gzip.open(ORACLE, "rt", encoding="utf-8") as fh:
        return dict(json.load(fh))


@pytest.fixture(scope="module")
def specs(data_root: Path) -> dict[str, LoadedDomain]:
    return {d: load_domain(REPO / "specs" / f"tau2_{d}", data_root, plugins=plugins()) for d in DOMAINS}


def _replay(loaded: LoadedDomain, calls: list[dict[str, Any]]) -> tuple[list[tuple[bool, str]], str]:
    scenario = loaded.scenarios[0]
    assert scenario.initial_db is not None
    db = session_view(scenario.initial_db)
    runtime = ToolRuntime(scenario.tools, db)
    shown = []
    for call in calls:
        result = runtime.call(call["name"], call["arguments"]).result
        shown.append((result.get("status") != "success", result_text(result)))
    return shown, str(scenario.domain.hash_rules.func(db))


def _agrees(got: tuple[bool, str], want: dict[str, Any]) -> bool:
    error, text = got
    if error != want["error"]:
        return False
    if error:
        return bool(text == want["content"])
    return hashlib.sha256(text.encode("utf-8")).hexdigest() == want["sha256"]


_REPLAYED: dict[int, tuple[list[tuple[bool, str]], str]] = {}


def _replayed(loaded: LoadedDomain, sequence: dict[str, Any]) -> tuple[list[tuple[bool, str]], str]:
    """:func:`_replay` of the whole sequence, once per module (the oracle fixture keeps every
    sequence alive, so its id stays its own)."""
    key = id(sequence)
    if key not in _REPLAYED:
        _REPLAYED[key] = _replay(loaded, sequence["calls"])
    return _REPLAYED[key]


def _compare(loaded: LoadedDomain, sequence: dict[str, Any]) -> tuple[list[int], bool]:
    """(indexes of the calls that disagree, whether the end hash agrees)."""
    shown, digest = _replayed(loaded, sequence)
    pairs = zip(shown, sequence["responses"], strict=True)
    bad = [i for i, (got, want) in enumerate(pairs) if not _agrees(got, want)]
    return bad, digest == sequence["db_hash"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_issue30_item1_mutated_gold_sequences_agree_with_taus_own_code(domain: str, oracle, specs) -> None:
    sequences = oracle["domains"][domain]["sequences"]
    assert len(sequences) == sum(MEASURED[domain])
    assert {s["kind"] for s in sequences} == set(oracle["kinds"])
    agreed, divergent, wrong = 0, 0, []
    for n, sequence in enumerate(sequences):
        bad, same_hash = _compare(specs[domain], sequence)
        if not bad and same_hash:
            agreed += 1
            continue
        # the documented divergence: the first disagreeing call is evalctl's type refusal
        shown, _ = _replayed(specs[domain], sequence)
        refused = bool(bad) and shown[bad[0]][1].startswith(TYPE_REFUSAL)
        if refused and sequence["kind"] in ("wrong_type", "convertible"):
            divergent += 1
            continue
        wrong.append((n, sequence["task"], sequence["kind"], bad, same_hash))
    assert wrong == [], wrong[:5]
    assert (agreed, divergent) == MEASURED[domain]


@pytest.mark.parametrize("domain", DOMAINS)
def test_issue30_item1_structural_and_argument_name_mutations_agree_fully(domain: str, oracle, specs) -> None:
    """Dropped, doubled and swapped calls, undeclared and missing arguments: no divergence at all."""
    for sequence in oracle["domains"][domain]["sequences"]:
        if sequence["kind"] in ("wrong_type", "convertible"):
            continue
        bad, same_hash = _compare(specs[domain], sequence)
        assert (bad, same_hash) == ([], True), (sequence["task"], sequence["kind"], sequence["calls"])


@pytest.mark.parametrize("domain", DOMAINS)
def test_issue30_item1_the_type_refusal_changes_flag_and_db_only_where_tau2_stores_the_raw_value(
    domain: str, oracle, specs
) -> None:
    """Of the divergent sequences, those where the error flags or the end DB differ too: airline's
    convertible bag counts that tau2 accepts and stores raw (``"1"`` or ``1.0`` for
    ``total_baggages`` / ``nonfree_baggages`` of ``book_reservation`` and
    ``update_reservation_baggages``): 31 of the 42 convertible sequences; and 3 wrong-type values
    tau2 runs with and answers as a success (``search_direct_flight`` with ``origin=7`` or
    ``date=7`` finds no flight, ``[]``; ``transfer_to_human_agents(summary=7)``)."""
    differ = []
    for sequence in oracle["domains"][domain]["sequences"]:
        if sequence["kind"] not in ("wrong_type", "convertible"):
            continue
        shown, digest = _replayed(specs[domain], sequence)
        flags = [e for e, _ in shown] == [r["error"] for r in sequence["responses"]]
        if not flags or digest != sequence["db_hash"]:
            differ.append(sequence["kind"])
    assert Counter(differ) == {"airline": {"convertible": 31, "wrong_type": 3}, "retail": {}}[domain]
