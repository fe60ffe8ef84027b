"""tau2-bench's telecom domain (commit 17e07b1): a carrier DB with 13 agent tools, the caller's
phone as a second DB with 30 user tools, the sync between them, task initialisation, env-assertion
predicates and tau2's DB hash, and ``PLUGIN``, the domain plugin of ``specs/tau2_telecom``.
docs/domains/tau2_telecom.md describes the contract.
"""

from engine.domains.tau2_telecom.agent_tools import AGENT_HANDLERS, AGENT_WRITES
from engine.domains.tau2_telecom.assertions import PREDICATE_SIDES, PREDICATES, check_assertion
from engine.domains.tau2_telecom.common import tau2_content
from engine.domains.tau2_telecom.environment import INIT_FUNCTIONS, initialise, sync
from engine.domains.tau2_telecom.model import normalise, tau2_hash
from engine.domains.tau2_telecom.plugin import PLUGIN
from engine.domains.tau2_telecom.replay import replay_gold
from engine.domains.tau2_telecom.user_tools import USER_HANDLERS, USER_WRITES

#: Tools whose success ends the call: the agent's hand-off to a human.
ENDING_TOOLS: dict[str, str] = {"transfer_to_human_agents": "transfer"}

__all__ = [
    "AGENT_HANDLERS",
    "AGENT_WRITES",
    "ENDING_TOOLS",
    "INIT_FUNCTIONS",
    "PLUGIN",
    "PREDICATES",
    "PREDICATE_SIDES",
    "USER_HANDLERS",
    "USER_WRITES",
    "check_assertion",
    "initialise",
    "normalise",
    "replay_gold",
    "sync",
    "tau2_content",
    "tau2_hash",
]
