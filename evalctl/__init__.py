"""evalctl's Python API: the verbs of the command line as functions that return typed records.

>>> import evalctl
>>> result = evalctl.run("specs/eva_airline", agent="replay", scenarios=["eva_airline__3_1_5"])
>>> result.composite_rate
1.0

| function | returns | the verb |
| --- | --- | --- |
| :func:`load` | ``LoadedDomain`` (``.scenarios``, tools, templates) | ``evalctl list`` |
| :func:`validate` | ``ValidationReport`` (``.ok``, ``.problems``) | ``evalctl validate`` |
| :func:`run` | ``RunReport`` (``.composite_rate``, ``.summary``, ``.run_dir``...) | ``evalctl run`` |
| :func:`rescore` | ``RescoreReport`` (``.report``: the new ``RunReport``) | ``evalctl rescore`` |
| :func:`diff` | ``list[ScenarioDiff]`` | ``evalctl diff`` |
| :func:`compare` | ``Comparison`` | ``evalctl compare`` |
| :func:`report` | ``SummaryRecord`` | ``evalctl report`` |

They are the functions the command line itself calls (``engine.commands.library``), with every
installed domain plugin. Bad input raises :class:`EvalctlError` subclasses (``SpecError``,
``DataRootError``, ``UsageError``; ``InfrastructureError`` when a model endpoint fails its check),
whose ``str()`` is the CLI's message. :mod:`evalctl.testing` is a pytest plugin with an
``evalctl_run`` fixture. docs/api.md has a worked pytest example (run by the tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine import __version__
from engine.commands.library import compare, diff, load, report, rescore, validate
from engine.commands.library import run as _run
from engine.results.run_report import RunReport
from engine.util.errors import (
    DataRootError,
    EvalctlError,
    InfrastructureError,
    SpecError,
    UsageError,
)

__all__ = [
    "DataRootError",
    "EvalctlError",
    "InfrastructureError",
    "RunReport",
    "SpecError",
    "UsageError",
    "__version__",
    "agent_spec",
    "compare",
    "diff",
    "load",
    "report",
    "rescore",
    "run",
    "validate",
]

#: An agent or user side: a spec string (``replay``, ``noop``, ``openai:MODEL``, ``ws://host:port``)
#: or a Python callable (the in-process backend).
Side = str | Callable[..., Any]


def agent_spec(side: Side) -> str:
    """The ``--agent`` spec string of ``side``: a string as it is; a Python callable registered as
    an in-process agent. Raises TypeError for anything else."""
    if isinstance(side, str):
        return side
    if callable(side):
        # IN-PROCESS AGENT: the one place a Python callable becomes an `--agent` spec string. The
        # in-process backend (engine/session/backends, engine `inproc`) provides the function that
        # registers the callable and returns its spec; call it here.
        raise TypeError("a Python callable as agent needs the in-process backend; give a spec string")
    raise TypeError(f"agent must be a spec string or a callable, not {type(side).__name__}")


def run(
    spec_dir: str | Path,
    *,
    agent: Side = "replay",
    user: str = "replay",
    scenarios: Sequence[str] = (),
    domain: str | None = None,
    trials: int = 1,
    output_dir: str | Path | None = None,
    data_root: str | Path | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    judge_model: str | None = None,
    concurrency: int = 8,
    progress: bool = False,
    **settings: Any,
) -> RunReport:
    """Run and score the scenarios of ``spec_dir`` in this process, as ``evalctl run`` does
    (:func:`engine.commands.library.run` has every argument). ``agent``: a spec string or a Python
    callable (:func:`agent_spec`). Returns the :class:`RunReport`: ``composite_rate`` and
    ``strict_success_rate`` (0..1; NaN when not applicable), ``summary``, ``run_dir``,
    ``exit_code(fail_under)``. Raises SpecError / DataRootError / UsageError for bad input,
    InfrastructureError when a model endpoint fails its check."""
    return _run(
        spec_dir,
        agent=agent_spec(agent),
        user=user,
        scenarios=scenarios,
        domain=domain,
        trials=trials,
        output_dir=output_dir,
        data_root=data_root,
        base_url=base_url,
        api_key_env=api_key_env,
        judge_model=judge_model,
        concurrency=concurrency,
        progress=progress,
        **settings,
    )
