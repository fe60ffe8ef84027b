"""What the tau2 airline and retail plugins share: the text a model is shown for a tool result,
the ``communicate_info`` diagnostic and the plugin record builder.

- :func:`result_text` shows a result as tau2 (17e07b1 ``Environment.get_response``) does: a
  success as its bare text, a failure as ``Error: <message>``; it is the plugins' ``result_text``.
- :func:`communicate_info` mirrors tau2's COMMUNICATE check (``evaluator_communicate``, English
  substring mode): every value of the task's ``evaluation_criteria.communicate_info`` must appear,
  ignoring case, in one of the agent's turns with its commas removed.
- :func:`tau2_plugin` builds a domain's ``DomainPlugin``: its handlers, the ``tau2`` hash style
  (:class:`SharedRecordHasher` with the domain's null defaults), the result text, the diagnostic,
  tau2's argument rules and the ``tau2_reward_signals`` derive (tau2's reward basis as gates).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.core.plugin import DiagnosticInputs, DomainPlugin
from engine.core.tools.arguments import FieldRule
from engine.domains.tau2_common.arguments import tau2_arguments
from engine.domains.tau2_common.dbhash import NullDefaults, SharedRecordHasher
from engine.domains.tau2_common.results import Handler
from engine.domains.tau2_common.reward import reward_gates, reward_signals

ERROR_PREFIX = "Error: "


def result_text(result: Mapping[str, Any]) -> str:
    """tau2's tool message text for any result dict: a success's ``content`` (else its ``message``,
    as the engine's ``end_conversation`` gives, else the result as JSON); a failure's ``message``
    with tau2's ``Error: `` prefix (added to the engine's own errors: unknown tool, bad arguments)."""
    if result.get("status") == "success":
        for key in ("content", "message"):
            if isinstance(result.get(key), str):
                return str(result[key])
        return json.dumps(dict(result), default=str)
    message = result.get("message")
    text = message if isinstance(message, str) else str(result.get("error_type", "error"))
    return text if text.startswith(ERROR_PREFIX) else ERROR_PREFIX + text


def communicate_info(inputs: DiagnosticInputs) -> bool | None:
    """True when every ``communicate_info`` value of the task appears in the agent's words (tau2's
    COMMUNICATE check; one agent turn is one message here); None when the task lists none."""
    criteria = inputs.scenario.record.get("evaluation_criteria") or {}
    values = [str(v) for v in (criteria.get("communicate_info") or [])]
    if not values:
        return None
    said = [
        str(e["content"]).lower().replace(",", "")
        for e in inputs.result.transcript
        if e.get("role") == "agent" and e.get("type") == "utterance" and e.get("content")
    ]
    return all(any(v.lower() in turn for turn in said) for v in values)


def tau2_plugin(
    name: str,
    handlers: Mapping[str, Handler],
    null_defaults: NullDefaults,
    description: str,
    owner: str,
    field_rules: Mapping[str, Mapping[str, FieldRule]] | None = None,
) -> DomainPlugin:
    """The plugin record of a tau2 domain (see the module docstring). Hash style ``tau2``: tau2's
    own DB hash (17e07b1 ``get_pydantic_hash``) with the domain's declared null defaults; argument
    rules: Python's call rules for tau2's toolkit class ``owner`` (``AirlineTools``), no conversion
    (:mod:`engine.domains.tau2_common.arguments`). ``field_rules`` only mark the fields a handler
    compares without regard to case (``ignore_case``, read by ``evalctl diff``): tau2's argument
    check converts nothing and has no other rules."""
    return DomainPlugin(
        name=name,
        handlers=dict(handlers),
        diagnostics={"communicate_info": communicate_info},
        hash_styles={"tau2": SharedRecordHasher(null_defaults)},
        result_text=result_text,
        description=description,
        argument_check=tau2_arguments(owner),
        field_rules=dict(field_rules or {}),
        derive={"tau2_reward_signals": reward_signals, "tau2_reward_gates": reward_gates},
    )
