"""``--shard I/N``: the slices are disjoint, cover the selection, and a shard run records its shard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from engine.domains.registry import plugins
from engine.run.runner import run
from engine.run.shard import Shard, parse_shard, shard_names, shard_scenarios, split
from engine.spec.loader import load_domain
from engine.util.errors import UsageError
from tests.runtime_helpers import run_options
from tests.unit.scale.helpers import NAMES, SHOP, SHOP_RUN, hashes


def test_parse_shard_accepts_one_based_slices_only() -> None:
    assert parse_shard("1/4") == Shard(1, 4) and parse_shard(" 4 / 4 ") == Shard(4, 4)
    assert str(parse_shard("2/3")) == "2/3"
    for bad in ("0/4", "5/4", "1/0", "1", "a/b", "1/2/3", "-1/2", ""):
        with pytest.raises(UsageError, match=r"expected I/N with 1 <= I <= N \(shards are numbered from 1\)"):
            parse_shard(bad)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 50])
def test_shards_are_disjoint_and_cover_the_selection(count: int) -> None:
    names = [f"domain__{k}_{j}" for k in range(10) for j in range(5)]  # 50 names, in no sorted order
    slices = [shard_names(names, Shard(i, count)) for i in range(1, count + 1)]
    flat = [n for part in slices for n in part]
    assert len(flat) == len(set(flat)) == 50 and set(flat) == set(names)  # disjoint and covering
    assert max(map(len, slices)) - min(map(len, slices)) <= 1  # balanced
    # the rule depends on the names only: another order of the same selection, the same slices
    assert [shard_names(list(reversed(names)), Shard(i, count)) for i in range(1, count + 1)] == slices


def test_shard_scenarios_slices_the_loaded_scenarios() -> None:
    scenarios = load_domain(*SHOP, plugins=plugins()).scenarios
    parts = [[s.name for s in shard_scenarios(scenarios, Shard(i, 2))] for i in (1, 2)]
    assert parts == [["mock__cancel_order", "mock__shipped_refusal"], ["mock__late_delivery_credit"]]
    with pytest.raises(UsageError, match=r"--shard 4/4: the selection has 3 scenario\(s\)"):
        shard_scenarios(scenarios, Shard(4, 4))
    # shard 1 of 4 is not empty, but shard 4/4 can never run: 1/4 could never be merged
    with pytest.raises(UsageError, match=r"--shard 1/4: .* shards 4\.\.4 of 4 are empty and this one could"):
        shard_scenarios(scenarios, Shard(1, 4))


def test_split_deals_every_job_once() -> None:
    parts = split(list(range(11)), 3)
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8]]
    assert split([1], 4) == [[1]]


def test_bad_shard_on_the_command_line_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = cli.main([*SHOP_RUN, "--shard", "0/2", "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("evalctl: --shard '0/2': expected I/N") and not out.exists()


def test_a_shard_run_says_it_is_a_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main([*SHOP_RUN, "--shard", "2/2", "--no-progress", "--output-dir", str(tmp_path / "s")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[-1].startswith("shard 2/2 of the selection: `evalctl merge` combines")
    code = cli.main([*SHOP_RUN, "--no-progress", "--output-dir", str(tmp_path / "whole")])
    assert code == 0 and "of the selection" not in capsys.readouterr().out


async def test_a_shard_run_records_its_shard_and_a_resume_keeps_it(tmp_path: Path) -> None:
    opts = run_options(*SHOP, trials=2, shard="2/3", output_dir=tmp_path, progress=False)
    report = await run(opts)
    want = sorted(NAMES)[1]
    assert sorted(hashes(tmp_path)) == [f"{want}/trial_1", f"{want}/trial_2"] and len(report.outcomes) == 2
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["settings"]["shard"] == "2/3" and record["args"]["shard"] == "2/3"
    assert record["scenarios"] == [want]
    assert report.summary is not None and report.summary.results == 2 and not report.summary.missing
    (tmp_path / want / "trial_1" / "metrics.json").unlink()
    again = await run(run_options(*SHOP, trials=2, resume=tmp_path, progress=False))
    assert len(again.outcomes) == 1 and again.skipped == 1 and len(hashes(tmp_path)) == 2
    with pytest.raises(UsageError, match=r"was made with --shard 2/3; this resume says --shard 1/3"):
        await run(run_options(*SHOP, trials=2, resume=tmp_path, shard="1/3",
                              explicit=frozenset({"shard"}), progress=False))  # fmt: skip
