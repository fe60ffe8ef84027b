"""evalctl command line: a thin click layer; each verb calls one engine function.

User errors (``engine.errors.EvalctlError``) print one line per problem and exit non-zero;
they never show a traceback.
"""

from __future__ import annotations

import sys

import click

from engine import __version__
from engine.errors import EvalctlError

DATA_ROOT_HELP = "Folder with the upstream releases (eva-0.1.3/, eva-2.1.0/). Default: $EVAL_DATA_ROOT, else ./data."


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="evalctl")
def group() -> None:
    """evalctl: declarative scenario engine for evaluating conversational customer-service agents.

    \b
    Typical use:
      evalctl list specs/eva_airline
      evalctl validate specs/eva_airline
      evalctl run specs/eva_airline
      evalctl diff runs/<run>
    """


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and map user errors to one clear line and an exit code."""
    try:
        rv = group.main(args=argv, prog_name="evalctl", standalone_mode=False)
    except EvalctlError as err:
        click.echo(f"evalctl: {err}" if "\n" not in str(err) else str(err), err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("evalctl: interrupted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except click.exceptions.Exit as err:
        return err.exit_code
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())
