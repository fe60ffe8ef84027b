"""The verbs of evalctl: one module per CLI verb, each with one function that does the verb's work.

``cli.py`` parses the command line (click) and calls exactly one of these functions with plain,
typed options; each function prints what the verb prints and returns the exit code. This is the
top layer: it may import any engine module, and no engine module imports it (an import-linter
contract in ``pyproject.toml``, checked by ``make lint`` and ``tests/project/test_layers.py``). It is also
the one place that looks the domain plugins up (``engine.domains.registry.plugins()``) and hands
them to the loader, the validator, the runner and the served sides.

| verb     | function                                       |
| -------- | ---------------------------------------------- |
| list     | :func:`engine.commands.list.list_scenarios`    |
| validate | :func:`engine.commands.validate.validate`      |
| render   | :func:`engine.commands.render.render`          |
| run      | :func:`engine.commands.run.run`                |
| serve    | :func:`engine.commands.serve.serve`            |
| diff     | :func:`engine.commands.diff.diff`              |
| report   | :func:`engine.commands.report.report`          |
| compare  | :func:`engine.commands.compare.compare`        |
| merge    | :func:`engine.commands.merge.merge`            |
| load     | :func:`engine.commands.load.load`              |

The options that several verbs take are defined once, in :mod:`engine.commands.cli_options`.
:data:`VERB_EXIT_CODES` says which exit codes (``engine.util.errors.EXIT_CODES``) each verb can
return; docs/cli.md's table is held to it by tests/project/test_exit_codes.py.
"""

from __future__ import annotations

from engine.util.errors import (
    BAD_INPUT_EXIT,
    BELOW_BAR_EXIT,
    INFRASTRUCTURE_EXIT,
    INTERRUPTED_EXIT,
    OK_EXIT,
)

_ANY = (OK_EXIT, BAD_INPUT_EXIT, INTERRUPTED_EXIT)
_SCORED = (OK_EXIT, BELOW_BAR_EXIT, BAD_INPUT_EXIT, INFRASTRUCTURE_EXIT, INTERRUPTED_EXIT)

#: verb -> the exit codes it can return. Every verb exits 2 on bad input and 130 when interrupted.
VERB_EXIT_CODES: dict[str, tuple[int, ...]] = {
    "list": _ANY,
    "validate": (OK_EXIT, BELOW_BAR_EXIT, BAD_INPUT_EXIT, INTERRUPTED_EXIT),
    "render": _ANY,
    "run": _SCORED,
    "rescore": _SCORED,
    "merge": _SCORED,
    "serve": _ANY,
    "diff": _ANY,
    "report": _ANY,
    "compare": _ANY,
    "cache": _ANY,
    "play": (OK_EXIT, BAD_INPUT_EXIT, INFRASTRUCTURE_EXIT, INTERRUPTED_EXIT),
    "load": _SCORED,
}
