#!/usr/bin/env bash
# The CI gate of evalctl (the steps of action.yml, runnable anywhere; docs/cli.md "The GitHub Action").
# Runs the scenarios, then writes the HTML report, the JUnit file and a Markdown summary into
# $EVALCTL_OUT, appends the summary to $GITHUB_STEP_SUMMARY when set, and exits with the run's exit
# code (0 passed, 1 below EVALCTL_FAIL_UNDER, 2 bad input, 3 infrastructure).
set -uo pipefail

spec_dir="${EVALCTL_SPEC_DIR:-}"
out="${EVALCTL_OUT:-evalctl-out}"
evalctl="${EVALCTL:-evalctl}"
if [[ -z "$spec_dir" ]]; then
    echo "ci_gate: set EVALCTL_SPEC_DIR to the spec folder to run" >&2
    exit 2
fi
if [[ -e "$out/run" ]]; then
    echo "ci_gate: $out/run already exists; give an empty EVALCTL_OUT" >&2
    exit 2
fi
mkdir -p "$out" || exit 2

args=(run "$spec_dir" --output-dir "$out/run" --junit "$out/junit.xml"
      --agent "${EVALCTL_AGENT:-replay}" --user "${EVALCTL_USER:-replay}" --no-progress)
if [[ -n "${EVALCTL_FAIL_UNDER:-}" ]]; then
    args+=(--fail-under "$EVALCTL_FAIL_UNDER")
fi
# shellcheck disable=SC2206  # EVALCTL_ARGS is a list of options split on spaces, by design
extra=(${EVALCTL_ARGS:-})

# shellcheck disable=SC2086  # $evalctl may be a command with arguments (python cli.py)
$evalctl "${args[@]}" "${extra[@]}"
code=$?

if [[ -f "$out/run/summary.json" ]]; then
    if ! $evalctl report "$out/run" --html "$out/report.html" >&2 && [[ $code -eq 0 ]]; then
        code=2
    fi
    summary=(report "$out/run" --markdown)
    if [[ -n "${EVALCTL_BASELINE:-}" ]]; then
        summary+=(--baseline "$EVALCTL_BASELINE")
    fi
    if $evalctl "${summary[@]}" >"$out/summary.md"; then
        if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
            cat "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"
        fi
    elif [[ $code -eq 0 ]]; then
        code=2
    fi
fi
echo "ci_gate: exit $code (results in $out)" >&2
exit "$code"
