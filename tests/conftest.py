"""Shared fixtures: the real data root (filled by `make data`) and the repository paths, with the
mock domain's spec folder and data root (tests/mock_domain/, no download needed). Tests under
tests/unit/ use only the mock domain; the ones that read the real data live under tests/domains/."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (``derandomize``, no example database), so a
# landing is never blocked by a newly drawn input; `HYPOTHESIS_PROFILE=explore make test` draws
# fresh ones (what it finds becomes a listed case). No deadline in either: hypothesis's default
# fails an example that takes over 200 ms of wall time, which a loaded machine (the suite on
# 2 cores beside other work) reaches with no fault in the code: a wall-clock race.
settings.register_profile("repeatable", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
# voice runs in tests keep no voice cache in the user's home (a test that wants one names a folder)
os.environ.setdefault("EVALCTL_VOICE_CACHE", "off")

# A suite started in the background (`make test &`, nohup, some CI runners) inherits an ignored
# SIGINT, and an ignored signal stays ignored in every child: the tests that stop a child with
# SIGINT (Ctrl-C) would wait for it forever. A handler (unlike SIG_IGN) is reset to the default
# action in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
SPEC_DIR = REPO / "specs" / "eva_airline"
MOCK_SPEC_DIR = REPO / "tests" / "mock_domain" / "spec"
MOCK_DATA_ROOT = REPO / "tests" / "mock_domain" / "dataroot"


UNIT_DIR = REPO / "tests" / "unit"

#: Where the test session's distribution of the mock shop lives (tests/mock_domain/register.py).
_MOCK_SITE: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """Register the mock shop as a third party would (an ``evalctl.domains`` entry point of an
    installed distribution) for this process and every ``evalctl`` it starts."""
    from tests.mock_domain.register import register

    site = Path(tempfile.mkdtemp(prefix="evalctl-mock-site-"))
    register(site)
    _MOCK_SITE.append(site)


def pytest_unconfigure(config: pytest.Config) -> None:
    for site in _MOCK_SITE:
        shutil.rmtree(site, ignore_errors=True)


def only_unit_tests(config: pytest.Config) -> bool:
    """Whether every path given on the command line lies under tests/unit/ (the engine-core tests,
    which run on the mock domain alone: tests/project/test_unit_tests_need_no_data.py keeps them so)."""
    here = config.invocation_params.dir
    paths = [Path(here, arg.split("::", 1)[0]).resolve() for arg in config.args]
    return bool(paths) and all(p == UNIT_DIR or UNIT_DIR in p.parents for p in paths)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Without the data the suite stops with one line instead of hundreds of errors; the unit tests
    alone (``pytest tests/unit``) need no data and run."""
    root = Path(os.environ.get("EVAL_DATA_ROOT", REPO / "data")).resolve()
    if not (root / "eva-0.1.3").is_dir() and not only_unit_tests(session.config):
        pytest.exit(f"no eva data under {root}: run `make setup` first (it runs `make data`)", returncode=2)


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real eva data root: $EVAL_DATA_ROOT or ./data (run `make data` first)."""
    root = Path(os.environ.get("EVAL_DATA_ROOT", REPO / "data")).resolve()
    assert (root / "eva-0.1.3").is_dir(), f"no eva data under {root}: run `make data`"
    return root


@pytest.fixture(scope="session")
def sample_run_dir(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real eva_airline run with passes, failures with DB differences, a model agent with token
    usage and a judge (``tests/report_helpers.py``); built once per test session. Read it only."""
    from tests.report_helpers import sample_run

    return sample_run(data_root, tmp_path_factory.mktemp("sample"))


@pytest.fixture(scope="session")
def mock_sample_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mock spec folder with a report group rule and three more scenario files
    (``tests/mock_domain/sample_run.py``). Read it only."""
    from tests.mock_domain.sample_run import sample_spec

    return sample_spec(tmp_path_factory.mktemp("mock_spec"))


@pytest.fixture(scope="session")
def mock_sample_run_dir(mock_sample_spec: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mock shop's sample run: replayed passes, failures with DB differences, a model agent with
    token usage and a judge (``tests/mock_domain/sample_run.py``); built once per test session. Read
    it only."""
    from tests.mock_domain.sample_run import sample_run

    return sample_run(mock_sample_spec, tmp_path_factory.mktemp("mock_sample"))
