"""The type check: mypy over engine/ and cli.py (``[tool.mypy]`` in pyproject.toml) reports nothing.

mypy keeps its incremental cache in the repository's ``.mypy_cache`` (as ``make lint`` does), so a
run after a small change re-checks only the changed modules and what depends on them: about 20 s
from an empty cache on 2 idle cores, 2-5 s once it is warm.

``mypy.api.run`` runs in a child interpreter: in this one it would leave the process changed for
the tests after it (it raises the recursion limit to 2**14 and retunes and freezes the garbage
collector), and a test that expects a RecursionError from deep JSON would then see none.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CHILD = """
import sys
from mypy import api
out, err, status = api.run(sys.argv[1:])
sys.stdout.write(out)
sys.stderr.write(err)
sys.exit(status)
"""


def test_mypy_reports_no_errors() -> None:
    # the configuration's ``files`` are relative to the working directory
    args = ["--config-file", "pyproject.toml", "--cache-dir", ".mypy_cache"]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert done.stdout.startswith("Success: no issues found"), done.stdout
