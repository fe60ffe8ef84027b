"""Trust model, paths: every file the engine reads for a spec folder or a data root resolves,
symlinks included, inside its folder and is a regular file of bounded size; errors name the path
and never quote what an outside file holds.

Each test builds a copy of the mock shop (tests/mock_domain: spec folder + data root) and an
outside folder holding a secret, then points something at the secret. Before the fix: ``{eva_id}``
was substituted after the ``..`` check, symlinks were followed out of the data root (the outside DB
became the scenario's DB), ``tool_table:`` took any path and its schema error quoted the outside
file, and data-root files were read whatever they were (a FIFO hung the load).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.datasources import DataFiles
from engine.domains.registry import plugins
from engine.results.provenance import hash_tree, run_provenance
from engine.spec.loader import LoadedDomain, load_domain
from engine.util.errors import SpecError
from tests.conftest import REPO

MOCK = REPO / "tests" / "mock_domain"
SECRET = "OUTSIDE-SECRET-7f3a"


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(spec folder, data root, outside folder) of a fresh copy of the mock shop."""
    spec, root, outside = tmp_path / "spec", tmp_path / "data", tmp_path / "outside"
    shutil.copytree(MOCK / "spec", spec)
    shutil.copytree(MOCK / "dataroot", root)
    outside.mkdir()
    db = json.loads((root / "mock_shop/dbs/M1.json").read_text(encoding="utf-8"))
    db["customers"]["C-1"]["name"] = SECRET
    (outside / "db.json").write_text(json.dumps(db), encoding="utf-8")
    (outside / "first_line.yaml").write_text(f"{SECRET}: leaked\n", encoding="utf-8")
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    return spec, root, outside


def _problems(spec: Path, root: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_domain(spec, root, plugins=plugins())
    text = "\n".join(str(p) for p in info.value.problems)
    assert SECRET not in text
    return text


@contextlib.contextmanager
def unblocked(fifo: Path) -> Iterator[None]:
    """Opens ``fifo`` for writing (and writes junk) as soon as a reader waits, so code that wrongly
    reads a FIFO gets bad content instead of hanging the test."""
    stop = threading.Event()

    def feed() -> None:
        while not stop.wait(0.02):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # no reader yet (ENXIO)
            with contextlib.suppress(OSError):
                os.write(fd, b"\x00junk")
            os.close(fd)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


# --- the instances of the issue -------------------------------------------------------------------


def test_eva_id_cannot_climb_out_of_the_data_root(shop: tuple[Path, Path, Path]) -> None:
    spec, root, _ = shop
    evil = "../../../outside/db"  # mock_shop/dbs/{eva_id}.json -> <tmp>/outside/db.json
    records = json.loads((root / "mock_shop/dataset.json").read_text(encoding="utf-8"))
    records.append({**records[0], "id": evil})
    (root / "mock_shop/dataset.json").write_text(json.dumps(records), encoding="utf-8")
    body = (spec / "scenarios/cancel.yaml").read_text(encoding="utf-8")
    (spec / "scenarios/cancel.yaml").write_text(body.replace("eva_id: M1", f'eva_id: "{evil}"'))
    text = _problems(spec, root)
    assert "cancel.yaml" in text and "$.eva_id" in text and "does not match" in text
    # the data root refuses the substituted path even without the schema's pattern
    with pytest.raises(OSError, match="leaves its folder"):
        DataFiles(root).file(f"mock_shop/dbs/{evil}.json")


@pytest.mark.parametrize("hops", [0, 2], ids=["direct", "chain"])
def test_a_symlink_out_of_the_data_root_is_not_followed(shop: tuple[Path, Path, Path], hops: int) -> None:
    spec, root, outside = shop
    target = outside / "db.json"
    for i in range(hops):  # M1.json -> hop0 -> hop1 -> outside (each hop inside the root)
        link = root / f"hop{i}.json"
        link.symlink_to(target)
        target = link
    (root / "mock_shop/dbs/M1.json").unlink()
    (root / "mock_shop/dbs/M1.json").symlink_to(target)
    text = _problems(spec, root)
    assert "mock_shop/dbs/M1.json" in text and "leaves its folder" in text


def test_a_symlink_inside_the_data_root_still_works(shop: tuple[Path, Path, Path]) -> None:
    spec, root, _ = shop
    (root / "mock_shop/dbs/M1.json").rename(root / "m1_real.json")
    (root / "mock_shop/dbs/M1.json").symlink_to(root / "m1_real.json")
    loaded: LoadedDomain = load_domain(spec, root, plugins=plugins())
    assert loaded.scenario("mock__cancel_order").initial_db["customers"]["C-1"]["name"] == "Ada Lane"


def test_tool_table_outside_the_spec_folder_is_refused_unquoted(shop: tuple[Path, Path, Path]) -> None:
    spec, root, outside = shop
    domain = (spec / "domain.yaml").read_text(encoding="utf-8")
    (spec / "domain.yaml").write_text(
        domain.replace("tool_table: tools.yaml", "tool_table: ../outside/x.yaml")
    )
    assert "does not match" in _problems(spec, root)  # the schema refuses '..'
    (spec / "link.yaml").symlink_to(outside / "first_line.yaml")
    (spec / "domain.yaml").write_text(domain.replace("tool_table: tools.yaml", "tool_table: link.yaml"))
    text = _problems(spec, root)  # before: "$: 'OUTSIDE-SECRET-7f3a' ... is not of type" quoted it
    assert "$.tool_table" in text and "leaves its folder" in text


def test_a_fifo_in_the_data_root_is_refused_without_reading(shop: tuple[Path, Path, Path]) -> None:
    spec, root, _ = shop
    fifo = root / "mock_shop/dbs/M1.json"
    fifo.unlink()
    os.mkfifo(fifo)
    with unblocked(fifo):
        text = _problems(spec, root)
    assert "mock_shop/dbs/M1.json" in text and "is a FIFO, not a regular file" in text


def test_a_link_to_dev_zero_is_refused_without_reading(shop: tuple[Path, Path, Path]) -> None:
    spec, root, _ = shop
    (root / "mock_shop/dataset.json").unlink()
    (root / "mock_shop/dataset.json").symlink_to("/dev/zero")
    # in a child with 1 GiB of address space: reading /dev/zero would fail there, not here
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from engine.util.errors import SpecError\n"
        "from engine.domains.registry import plugins\n"
        "from engine.spec.loader import load_domain\n"
        "try:\n    load_domain(sys.argv[1], sys.argv[2], plugins=plugins())\n"
        "except SpecError as err:\n    print('\\n'.join(str(p) for p in err.problems))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(spec), str(root)], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "$.dataset.path: cannot read mock_shop/dataset.json" in done.stdout
    assert "leaves its folder" in done.stdout and "(it resolves to /dev/zero)" in done.stdout


def test_an_oversized_data_file_is_refused_without_reading(shop: tuple[Path, Path, Path]) -> None:
    spec, root, _ = shop
    with (root / "mock_shop/dbs/M1.json").open("r+b") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: costs no disk
    text = _problems(spec, root)
    assert "mock_shop/dbs/M1.json" in text and "over the 67108864 byte limit" in text


def test_templates_and_includes_stay_in_their_folder(shop: tuple[Path, Path, Path]) -> None:
    spec, root, outside = shop
    agent = (spec / "mock_agent.md.j2").read_text(encoding="utf-8")
    (spec / "inc.j2").symlink_to(outside / "secret.txt")
    (spec / "mock_agent.md.j2").write_text(agent + "{% include 'inc.j2' %}\n", encoding="utf-8")
    assert "leaves its folder" in _problems(spec, root)
    (spec / "mock_agent.md.j2").unlink()
    (spec / "mock_agent.md.j2").symlink_to(outside / "secret.txt")
    assert "$.templates.agent" in _problems(spec, root)


def test_spec_files_linked_from_outside_are_not_loaded(shop: tuple[Path, Path, Path]) -> None:
    spec, root, outside = shop
    (spec / "scenarios/extra.yaml").symlink_to(outside / "first_line.yaml")
    assert "extra.yaml: $: not loaded: the scenario file leaves its folder" in _problems(spec, root)
    (spec / "scenarios/extra.yaml").unlink()
    (spec / "domain.yaml").rename(outside / "domain.yaml")
    (spec / "domain.yaml").symlink_to(outside / "domain.yaml")
    assert "domain.yaml leaves its folder" in _problems(spec, root)


# --- the kind: generated hostile paths ---------------------------------------------------------


@pytest.fixture(scope="module")
def maze(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A data root full of traps, and the outside folder they point at."""
    base = tmp_path_factory.mktemp("maze")
    root, outside = base / "root", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.json").write_text(json.dumps(SECRET), encoding="utf-8")
    (root / "ok.json").write_text('"inside"', encoding="utf-8")
    (root / "sub/ok.json").write_text('"inside"', encoding="utf-8")
    (root / "sub/in_link.json").symlink_to("../ok.json")
    (root / "out_link.json").symlink_to(outside / "secret.json")
    (root / "out_dir").symlink_to(outside)
    (root / "chain1.json").symlink_to("sub/chain2.json")
    (root / "sub/chain2.json").symlink_to("../out_link.json")
    (root / "loop1.json").symlink_to("loop2.json")
    (root / "loop2.json").symlink_to("loop1.json")
    (root / "null.json").symlink_to("/dev/null")  # (a link to /dev/zero: see the subprocess test)
    os.mkfifo(root / "fifo.json")
    return root, outside


SEGMENTS = (
    "..", ".", "sub", "ok.json", "in_link.json", "out_link.json", "out_dir", "secret.json",
    "chain1.json", "chain2.json", "loop1.json", "null.json", "fifo.json", "outside", "root", "",
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=5), absolute=st.booleans())
def test_generated_paths_never_leave_the_root(
    maze: tuple[Path, Path], parts: list[str], absolute: bool
) -> None:
    root, outside = maze
    rel = ("/" if absolute else "") + "/".join(parts)
    if absolute and parts[0] == "outside":
        rel = str(outside / "/".join(parts[1:]))
    with unblocked(root / "fifo.json"):
        try:
            content = DataFiles(root).file(rel, "json")
        except (OSError, ValueError) as err:
            assert SECRET not in str(err)
            return
    assert content == "inside", rel


# --- provenance ------------------------------------------------------------------------------------


def test_provenance_says_when_it_stops_hashing(tmp_path: Path, shop: tuple[Path, Path, Path]) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(5):
        (folder / f"f{i}.txt").write_text(str(i), encoding="utf-8")
    (folder / "out.txt").symlink_to(shop[2] / "secret.txt")
    notes: list[str] = []
    files = hash_tree(folder, limit=3, notes=notes)
    assert len(files) == 3 and "out.txt" not in files
    assert any("stopped at 3 files; 3 more not hashed" in n for n in notes), notes
    notes.clear()
    files = hash_tree(folder, notes=notes)
    assert len(files) == 5 and notes == [
        f"{folder}: out.txt not hashed: leaves its folder {folder} (it resolves to {shop[2] / 'secret.txt'})"
    ]
    body = run_provenance(tmp_path / "run", {"spec_dir": str(shop[0]), "data_root": str(shop[1])})
    assert body.hash_notes == ()  # everything hashed: nothing to say


def test_devices_are_refused_without_reading() -> None:
    from engine.util.safepaths import read_contained

    for name in ("zero", "null", "urandom"):
        with pytest.raises(OSError, match="is a device or socket, not a regular file"):
            read_contained("/dev", name, 1024)
