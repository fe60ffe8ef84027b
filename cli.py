"""evalctl command line: a thin click layer; each verb calls one engine function.

User errors (``engine.errors.EvalctlError``) print one line per problem and exit non-zero;
they never show a traceback.
"""

from __future__ import annotations

import sys

import click

from engine import __version__
from engine.errors import EvalctlError

DATA_ROOT_HELP = (
    "Folder with the upstream releases (eva-0.1.3/, eva-2.1.0/). Default: $EVAL_DATA_ROOT, else ./data."
)


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


@group.command("list")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {name, eva_id, description}.")
@click.option("--data-root", default=None, metavar="DIR", help=DATA_ROOT_HELP)
def list_cmd(spec_dir: str, as_json: bool, data_root: str | None) -> None:
    """List the scenarios of SPEC_DIR: one line each, name first, then eva_id and description.

    The specs are fully loaded and checked first, so a broken spec fails here too.

    \b
    Example:
      evalctl list specs/eva_airline
      evalctl list specs/eva_airline --json
    """
    from engine.specs import list_scenarios

    click.echo(list_scenarios(spec_dir, data_root, as_json=as_json))


@group.command("validate")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.option("--no-replay", is_flag=True, help="Skip replaying the gold traces (default: replay them).")
@click.option("--data-root", default=None, metavar="DIR", help=DATA_ROOT_HELP)
def validate_cmd(spec_dir: str, no_replay: bool, data_root: str | None) -> int:
    """Check SPEC_DIR: schemas, cross-checks, both prompts of every scenario, gold replay.

    Prints every problem as `file:LINE: $.json.path: message [scenario]` and exits 1 when there is
    any; exits 0 only if everything holds.

    \b
    Example:
      evalctl validate specs/eva_airline
      evalctl validate specs/eva_airline --no-replay --data-root ~/eva-data
    """
    from engine.validation import validate_specs

    report = validate_specs(spec_dir, data_root, replay=not no_replay)
    for line in report.lines():
        click.echo(line)
    return 0 if report.ok else 1


@group.command("render")
@click.argument("spec_dir", type=click.Path(file_okay=False))
@click.option(
    "--scenario", "-s", "scenario_name", required=True, metavar="NAME",
    help="Scenario name (see `evalctl list`).",
)
@click.option(
    "--side",
    type=click.Choice(["agent", "user", "tools"]),
    default="agent",
    show_default=True,
    help="agent: the agent system prompt; user: the user-simulator prompt; tools: the tool JSON schemas.",
)
@click.option("--data-root", default=None, metavar="DIR", help=DATA_ROOT_HELP)
def render_cmd(spec_dir: str, scenario_name: str, side: str, data_root: str | None) -> None:
    """Print exactly what a model sees for one scenario: a prompt or the tool schemas.

    \b
    Example:
      evalctl render specs/eva_airline --scenario eva_airline__voluntary_date_change
      evalctl render specs/eva_airline -s eva_airline__3_1_5 --side tools
    """
    from engine.render import render_side

    click.echo(render_side(spec_dir, scenario_name, side, data_root), nl=False)


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
