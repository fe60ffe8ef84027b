"""Trust model, templates: a prompt template from someone else's spec folder reads the plain data it
is given and nothing else. It cannot read or write a file, reach code, or exhaust the machine.

Each hostile template is rendered through the engine's own ``render`` with the spec folder set to a
watched temporary folder that holds a secret file; afterwards the folder must be unchanged (no file
written, renamed or removed) and the secret must appear neither in the prompt nor in any error.
Before the fix the context held ``pathlib.Path`` objects and the sandbox let a template call any
method not starting with ``_``: ``domain.spec_dir.joinpath('secret.txt').read_text()`` read it.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cli
from engine.core.model import Scenario
from engine.core.render import context, render
from engine.spec.loader import LoadedDomain
from engine.util.errors import SpecError
from tests.conftest import MOCK_DATA_ROOT, MOCK_SPEC_DIR

SECRET_NAME = "secret.txt"
SECRET = "S3CR3T-" + secrets.token_hex(8)


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Path]:
    """A folder with a secret file; the test fails if anything in it changes."""
    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / SECRET_NAME).write_text(SECRET, encoding="utf-8")
    (folder / "site-packages").mkdir()
    before = _snapshot(folder)
    cwd_before = sorted(os.listdir(Path.cwd()))
    yield folder
    assert _snapshot(folder) == before, "a template changed files outside the process"
    assert sorted(os.listdir(Path.cwd())) == cwd_before


def _snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        body = path.read_bytes() if path.is_file() else b""
        out[str(path.relative_to(folder))] = (info.st_mode, info.st_mtime_ns, body)
    return out


def _scenario(loaded: LoadedDomain, folder: Path, body: str) -> Scenario:
    (folder / "probe.md.j2").write_text(body, encoding="utf-8")
    domain = dataclasses.replace(
        loaded.domain, spec_dir=folder, data_root=folder, templates={"agent": "probe.md.j2"}
    )
    return dataclasses.replace(loaded.scenario("mock__cancel_order"), domain=domain)


def _render_leaks(loaded: LoadedDomain, folder: Path, body: str) -> str:
    """Render ``body``; returns the prompt or the error text (both must be free of the secret)."""
    scenario = _scenario(loaded, folder, body)
    try:
        text = render(scenario, "agent")
    except SpecError as err:
        text = "\n".join(str(p) for p in err.problems)
    finally:
        (folder / "probe.md.j2").unlink()
    return text


# --- the instance of the issue ------------------------------------------------------------------

ISSUE_TEMPLATE = """
{{ domain.spec_dir.joinpath('secret.txt').read_text() }}
{{ domain.spec_dir.joinpath('pwned.txt').write_text('owned') }}
{{ domain.data_root.joinpath('site-packages', 'evil.pth').write_text('import os') }}
{% for p in domain.spec_dir.glob('*') %}{{ p.name }}{% endfor %}
"""


def test_a_spec_template_cannot_read_or_write_files(loaded: LoadedDomain, watched: Path) -> None:
    out = _render_leaks(loaded, watched, ISSUE_TEMPLATE)
    assert SECRET not in out
    assert not (watched / "pwned.txt").exists()
    assert not (watched / "site-packages" / "evil.pth").exists()


def test_evalctl_list_on_a_hostile_spec_folder_touches_nothing(
    tmp_path: Path, watched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(MOCK_SPEC_DIR, spec)
    agent = (spec / "mock_agent.md.j2").read_text(encoding="utf-8")
    hostile = ISSUE_TEMPLATE.replace("domain.spec_dir", f"domain.spec_dir.parent.joinpath('{watched.name}')")
    (spec / "mock_agent.md.j2").write_text(agent + hostile, encoding="utf-8")
    assert spec.parent == watched.parent  # so spec_dir.parent.joinpath(watched.name) is the watched folder
    code = cli.main(["list", str(spec), "--data-root", str(MOCK_DATA_ROOT)])
    captured = capsys.readouterr()
    assert code == 2  # the template does not render: bad input, every verb refuses the folder
    assert SECRET not in captured.out + captured.err
    assert "agent.md.j2" in captured.err


# --- the kind: generated hostile templates ------------------------------------------------------

#: Every variable a template sees, and paths into them.
TARGETS = (
    "scenario", "domain", "user", "tools", "policy_role", "policy_instructions", "current_date",
    "agent_notes", "domain.spec_dir", "domain.data_root", "scenario.domain.spec_dir", "scenario.record",
    "user.decision_tree", "tools.tools", "tools.tools[0]", "scenario.initial_db", "agent_notes[0]",
    "domain.source", "scenario.source.file", "domain.extra", "self", "loop", "range", "dict",
    "cycler", "joiner", "namespace", "lipsum", "caller", "varargs", "kwargs", "''", "[]", "{}", "0",
)  # fmt: skip
#: Ways to reach a method or an internal object from a value.
REACHES = (
    ".read_text()", ".read_bytes()", ".open().read()", ".write_text('owned')", ".touch()", ".unlink()",
    ".glob('*')|list", ".iterdir()|list", ".joinpath('secret.txt').read_text()", ".resolve()",
    ".parent.joinpath('secret.txt').read_text()", ".rename('moved')", ".mkdir()", ".rmdir()",
    ".__class__", ".__class__.__mro__", ".__class__.__base__.__subclasses__()", ".__init__.__globals__",
    ".__globals__", ".__dict__", ".__reduce_ex__(2)", ".mro()", ".__call__", ".format('{0.__class__}')",
    ".format_map({})", ".copy()", ".update({'x': 1})", ".pop(0)", ".clear()", ".setdefault('x', 1)",
    ".append(1)", ".__init__", ".__self__", ".func_globals", ".gi_frame", ".f_globals", ".im_func",
    "|attr('read_text')", "|attr('__class__')", "|map(attribute='__class__')|list",
    "|map('attr', 'read_text')|list", "|selectattr('__class__')|list", "|sort(attribute='__class__')",
    "|map(attribute='read_text')|list", "|groupby('__class__')", "|sum(attribute='__class__')",
    "['__class__']", "['read_text']", "['__globals__']", ".__init__.__globals__['os'].popen('id').read()",
    ".__init__.__globals__.os.system('touch pwned')", "._TemplateReference__context", ".__builtins__",
)  # fmt: skip


def _wrap(target: str, reach: str) -> str:
    inner = f"{{{{ ({target}){reach} }}}}"
    if target == "loop":
        return "{% for i in [1] %}" + inner + "{% endfor %}"
    if target in ("caller", "varargs", "kwargs"):
        return "{% macro m() %}" + inner + "{% endmacro %}{% call m() %}x{% endcall %}{{ m(1, a=2) }}"
    return inner


@pytest.mark.parametrize("target", TARGETS)
def test_method_and_attribute_walks_on_every_value(loaded: LoadedDomain, watched: Path, target: str) -> None:
    for reach in REACHES:
        out = _render_leaks(loaded, watched, _wrap(target, reach))
        assert SECRET not in out, (target, reach)
        assert "<function" not in out and "<module" not in out and "<class" not in out, (target, reach, out)


_pieces = st.lists(st.sampled_from(REACHES), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(TARGETS), chain=_pieces)
def test_generated_chains_leak_nothing(
    loaded: LoadedDomain, watched: Path, target: str, chain: list[str]
) -> None:
    out = _render_leaks(loaded, watched, _wrap(target, "".join(chain)))
    assert SECRET not in out
    assert "<function" not in out and "<module" not in out, out


def test_templates_see_plain_data_only(loaded: LoadedDomain) -> None:
    plain_types = (str, int, float, bool, type(None), list, tuple, dict)

    def walk(value: Any, where: str) -> None:
        assert isinstance(value, plain_types), f"{where} is a {type(value).__name__}"
        if isinstance(value, dict):
            for k, v in value.items():
                assert isinstance(k, str), where
                walk(v, f"{where}.{k}")
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                walk(v, f"{where}[{i}]")

    for name, value in context(loaded.scenarios[0]).items():
        walk(value, name)
    variables = context(loaded.scenarios[0])
    assert variables["domain"]["spec_dir"] == str(MOCK_SPEC_DIR)
    assert variables["user"]["decision_tree"] and variables["agent_notes"]
    assert list(variables["tools"]["names"]) == list(loaded.domain.tools.names)


@pytest.mark.parametrize(
    "body",
    [
        "{{ domain.spec_dir }}|{{ domain.data_root|length > 0 }}",
        "{% for k, v in user.decision_tree.items() %}{{ k|humanize }}:{{ v|outline }}{% endfor %}",
        "{{ tools.names|join(', ') }} {{ tools.tools[0].name }} {{ scenario.record_id }}",
        "{{ 'ZK3'|spell }} {{ user.name.upper() }} {{ user.name.split(' ')[0] }} {{ '%s!'|format(1) }}",
        "{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m(current_date) }}{{ range(3)|list }}{{ dict(a=1) }}",
        "{% for n in agent_notes %}{{ loop.index }}{{ loop.cycle('a', 'b') }}{% else %}none{% endfor %}",
        "{% for g in tools.tools|groupby('kind') %}{{ g.grouper }}={{ g.list|length }} {% endfor %}",
    ],
)
def test_ordinary_templates_still_render(loaded: LoadedDomain, watched: Path, body: str) -> None:
    out = _render_leaks(loaded, watched, body)
    assert "template error" not in out, out


# --- bounded resources ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "steps"),
        (
            "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}",
            "steps",
        ),
        ("{{ 'x'|center(1000000000) }}", "over 10000"),
        ("{{ '%999999999s'|format(1) }}", "over 10000"),
        ("{{ 'x' * 999999 ~ 'x' * 999999 }}{% set a = 'y' * 999999 %}{{ ([a] * 100)|join }}", "characters"),
        ("{% set a = 'x' * 999999 %}{% set b = a ~ a ~ a ~ a %}{{ (b ~ b ~ b) ~ b }}", "characters"),
        ("{{ ('x' * 999999).replace('', 'y' * 1000) }}", "characters"),
        ("{{ ('x\n' * 400000)|indent(9000) }}", "characters"),
        ("{% set n = 7 ** 999 %}{{ n * n * n * n * n }}", "bits"),
        ("{{ scenario|tojson(indent=100000) }}", "over 10000"),
        ("{{ [scenario] * 1000 }}", "characters"),
        ("{{ range(100000)|batch(1000000000)|list }}", "over 10000"),
    ],
    ids=[
        "nested_loops", "macro_fan_out", "center", "printf_width", "join", "concat", "replace",
        "indent", "int_growth", "tojson_indent", "list_repeat", "batch",
    ],
)  # fmt: skip
def test_template_resource_bombs_stop_at_a_bound(
    loaded: LoadedDomain, watched: Path, body: str, needle: str
) -> None:
    out = _render_leaks(loaded, watched, body)
    assert "template error" in out and needle in out, out
