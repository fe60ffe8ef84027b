"""The backend registry: one class per scheme, looked up by the part before ``:`` (the same with
an installed scheme, end to end: tests/unit/plugins/test_registries.py)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from engine.session.backends import BackendSpec, registry
from engine.session.backends.registry import (
    BUILTIN,
    BackendOptions,
    ExternalScheme,
    OpenAIScheme,
    parse_backend_spec,
    scheme_of,
)
from engine.util.errors import UsageError
from tests.conftest import REPO


def test_each_builtin_scheme_is_one_class_under_its_name() -> None:
    assert list(BUILTIN) == [
        "replay",
        "noop",
        "openai",
        "human",  # evalctl play
        "ws",
        "wss",
        "rtvi+ws",
        "python",
        "pipecat",
        "livekit",
    ]
    assert all(cls.scheme == name for name, cls in BUILTIN.items())
    assert scheme_of(parse_backend_spec("openai:m")) is OpenAIScheme
    assert scheme_of(parse_backend_spec("ws://127.0.0.1:9")) is ExternalScheme
    assert scheme_of(parse_backend_spec("wss://h:9")).external


def test_a_spec_keeps_what_was_written() -> None:
    spec = parse_backend_spec(" openai: gpt-4.1 ")
    assert (spec.kind, spec.model, spec.scheme, spec.args, str(spec)) == (
        "openai",
        "gpt-4.1",
        "openai",
        "gpt-4.1",
        "openai:gpt-4.1",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("noop:x", "backend 'noop:x': noop takes no arguments"),
        ("opnai:m", "(did you mean 'openai'?)"),
        ("replya", "(did you mean 'replay'?)"),
    ],
)
def test_bad_specs_say_what_is_expected(text: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_backend_spec(text)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_an_external_side_has_no_factory() -> None:
    with pytest.raises(UsageError, match="is an external side"):
        ExternalScheme.factory(BackendSpec("external", uri="ws://h:1"), BackendOptions())


def test_a_replay_side_never_imports_the_openai_client() -> None:
    code = (
        "import sys; from engine.session.backends.factory import make_factory; "
        "from engine.session.backends.registry import parse_backend_spec as p; "
        "make_factory(p('replay')); make_factory(p('noop')); print('openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


class _Misnamed(registry.ReplayScheme):
    scheme = "other"


def test_an_entry_point_that_fails_to_load_or_reuses_a_built_in_scheme_is_refused_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Repro 16: each refused backend entry point is one line on stderr, never skipped silently,
    printed even when the spec names a built-in scheme."""
    here = "tests.unit.sessions.test_backend_registry"
    eps = [
        EntryPoint("replay", f"{here}:_Misnamed", registry.ENTRY_POINT_GROUP),
        EntryPoint("brokenbe", "evalctl_no_such_module:X", registry.ENTRY_POINT_GROUP),
        EntryPoint("notascheme", "builtins:int", registry.ENTRY_POINT_GROUP),
        EntryPoint("misnamed", f"{here}:_Misnamed", registry.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr(registry, "entry_points", lambda group: eps)
    registry.installed.cache_clear()
    try:
        assert scheme_of(parse_backend_spec("replay")) is registry.ReplayScheme
        err = capsys.readouterr().err.splitlines()
        assert parse_backend_spec("noop") and capsys.readouterr().err == ""  # once per process
    finally:
        registry.installed.cache_clear()
    prefix = "evalctl: backend entry point evalctl.backends: "
    assert err == [
        f"{prefix}replay = {here}:_Misnamed: 'replay' is a built-in scheme; left out",
        f"{prefix}brokenbe = evalctl_no_such_module:X: does not load "
        "(ModuleNotFoundError: No module named 'evalctl_no_such_module'); left out",
        f"{prefix}notascheme = builtins:int: not a BackendScheme subclass; left out",
        f"{prefix}misnamed = {here}:_Misnamed: the class's scheme is 'other'; left out",
    ]
