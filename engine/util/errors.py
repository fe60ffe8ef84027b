"""User-facing errors and their exit codes.

Every error a user can cause derives from :class:`EvalctlError`. The CLI prints ``str(err)``
(one line per problem, never a traceback) and exits with ``err.exit_code``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The exit code of a verb that did its job (docs/cli.md "Exit codes").
OK_EXIT = 0

#: The exit code of a verdict below the bar: ``--fail-under`` not met (run, rescore, merge), or
#: ``evalctl validate`` found a problem.
BELOW_BAR_EXIT = 1

#: The exit code of bad input (docs/scoring.md "Exit codes"): a spec problem, a missing data root,
#: an unknown option value, a file given that cannot be read; 1 is kept for ``--fail-under`` (and
#: for ``evalctl validate``'s own verdict), so a CI job tells a broken spec from a low score.
BAD_INPUT_EXIT = 2


class EvalctlError(Exception):
    """Base class of user errors. ``exit_code`` is what the CLI exits with (default 2: bad input)."""

    exit_code: int = BAD_INPUT_EXIT


class DataRootError(EvalctlError):
    """The data root is missing or lacks a file a spec refers to."""


#: The exit code of a run with results that have no verdict (infrastructure failed: a model
#: endpoint, the user simulator, the judge, the transport), or whose endpoint failed its check.
INFRASTRUCTURE_EXIT = 3


#: The exit code of an interrupted verb (Ctrl-C, SIGTERM): the finished results are kept.
INTERRUPTED_EXIT = 130

#: The exit code when the reader of standard output went away (``evalctl ... | head -1``): 128 +
#: SIGPIPE, as a shell reports a program a closed pipe ended. Not a verb's outcome: outside the
#: table below.
BROKEN_PIPE_EXIT = 141

#: Every exit code of the CLI and what it means in one phrase; docs/cli.md's table lists the same
#: (tests/project/test_exit_codes.py holds them to it).
EXIT_CODES: dict[int, str] = {
    OK_EXIT: "done",
    BELOW_BAR_EXIT: "below --fail-under, or validate found problems",
    BAD_INPUT_EXIT: "bad input or unwritable output",
    INFRASTRUCTURE_EXIT: "infrastructure failed: results without a verdict or missing, an endpoint check",
    INTERRUPTED_EXIT: "interrupted",
}


class InfrastructureError(EvalctlError):
    """Something the run depends on failed before it started (a model endpoint is unreachable,
    refuses the key or does not answer): no result would have a verdict."""

    exit_code = INFRASTRUCTURE_EXIT


class UsageError(EvalctlError):
    """A command was given arguments that cannot work (unknown scenario name, bad option value)."""


class OutputError(EvalctlError):
    """The run directory cannot be written: a folder that cannot be created or written to, a full
    disk (exit 2, as for bad input: docs/scoring.md "Exit codes")."""


@dataclass(frozen=True)
class Problem:
    """One validation finding.

    ``file`` is the spec file path as given to the loader, ``line`` is 1-based (0 when unknown),
    ``json_path`` is a JSONPath such as ``$.tools[rebook_flight].parameters``, ``subject`` names the
    object (scenario or tool name) when one applies.
    """

    file: str
    line: int
    json_path: str
    message: str
    subject: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        who = f" [{self.subject}]" if self.subject else ""
        return f"{where}: {self.json_path}: {self.message}{who}"


class SpecError(EvalctlError):
    """One or more spec problems; ``problems`` holds every one found (never only the first).
    Given a message alone (a string: code that is not evalctl's, an in-process agent's or a
    plugin's, raising this class), that message is the error's text and its one problem's
    message, never read as a list of problems (one per character)."""

    def __init__(self, problems: list[Problem] | str):
        if isinstance(problems, str):
            self.problems = [Problem("", 0, "$", problems)]
            super().__init__(problems)
            return
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class StrayExit(EvalctlError):
    """A SystemExit or KeyboardInterrupt raised in this process outside evalctl's own work (a
    callback or task of an in-process agent's code, with ``--workers 1``) stopped the run: the
    exit code is not that code's to choose (exit 3; the finished results and the summary are kept)."""

    exit_code = INFRASTRUCTURE_EXIT

    @classmethod
    def of(cls, exc: BaseException) -> StrayExit:
        """The error for ``exc``, its repr named (``SystemExit(4)``)."""
        name = f"{type(exc).__name__}({', '.join(repr(a) for a in exc.args)})"
        return cls(
            f"{name} was raised outside evalctl's own work, by code running in this process (an in-process "
            "agent's, with --workers 1): the run stopped; finished results are kept (--resume completes it)"
        )
