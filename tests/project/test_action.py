"""action.yml is a valid composite action whose steps are scripts/ci_gate.sh: every input reaches
the script through a variable the script reads, and the report and JUnit file are uploaded."""

from __future__ import annotations

import re

import yaml

from tests.conftest import REPO


def test_the_action_runs_the_gate_script() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    (gate,) = [s for s in steps if "ci_gate.sh" in s.get("run", "")]
    script = (REPO / "scripts" / "ci_gate.sh").read_text(encoding="utf-8")
    read = set(re.findall(r"\$\{(EVALCTL_[A-Z_]+)", script))
    assert set(gate["env"]) == read
    wired = {m for v in gate["env"].values() for m in re.findall(r"inputs\.([a-z-]+)", v)}
    assert wired | {"extras", "python-version"} == set(action["inputs"])
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload["if"] == "always()"
    assert "report.html" in upload["with"]["path"] and "junit.xml" in upload["with"]["path"]
