"""A fresh interpreter for ``test_isolation``: runs the mock shop with the agent and settings given
as one JSON argument and prints one JSON line (the report's exit code, whether the run isolated the
agent, and how many sessions the agent's factory saw in this process). A fresh process has no other
thread (the pytest worker may hold a few from earlier tests), so the run can fork its worker; and a
crash that isolation failed to contain takes this process, not pytest's."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from engine.run import workers
from engine.run.runner import run
from engine.session.backends.python_agent import register_agent
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import SHOP

#: Crashes its process in the session of the scenario named by $CRASH_ON (every session when
#: unset), else answers, then ends the call on its second turn.
CRASHER = """
import os


def make(session, tools):
    target = os.environ.get("CRASH_ON")
    turns = iter(range(100))

    async def turn(line):
        if target is None or session.scenario["name"] == target:
            os._exit(9)  # no exception to catch: the process is gone
        if next(turns) == 0:
            return "Let me look into that."
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn
"""

SEEN: list[str] = []


def _recording(session: Any, tools: Any) -> Any:
    SEEN.append(session.scenario["name"])

    async def turn(line: str) -> str:
        await tools.call("end_conversation", "{}", say="Goodbye.")
        return ""

    return turn


def main(raw: str) -> None:
    args = json.loads(raw)
    workers.BEAT_S = args.pop("beat_s", workers.BEAT_S)
    workers.HANG_GRACE_S = args.pop("hang_grace_s", workers.HANG_GRACE_S)
    workers.STOP_GRACE_S = args.pop("stop_grace_s", workers.STOP_GRACE_S)
    isolate = args.pop("isolate", True)
    agent = args.pop("agent", "replay")
    if agent == "recording":
        agent = register_agent(_recording, "recording")
    args["scenarios"] = tuple(args["scenarios"])
    args["output_dir"] = Path(args["output_dir"])
    opts = run_options(*SHOP, agent=agent, progress=False, **args)
    opts = dataclasses.replace(opts, isolate_agent_code=isolate)
    isolated = workers.isolated(opts)
    report = asyncio.run(run(opts))
    print(json.dumps({"exit_code": report.exit_code(), "isolated": isolated, "seen": len(SEEN)}))


if __name__ == "__main__":
    main(sys.argv[1])
