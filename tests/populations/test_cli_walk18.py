"""Findings of user-path walk 18 in the command lines (``populations/cli.py``): what a new
researcher meets on the path README describes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import games
from marl.mappo import MAPPO, MAPPOConfig
from populations.store import file_sha256
from tests.populations.test_walk18_cli_more import _train  # in-process selfplay-train


def _policies(folder: Path, seed: int) -> list[str]:
    """Two Kuhn MAPPO policies (every seat) saved as ``folder/v0000.pt`` and ``v0001.pt``,
    their weights drawn from ``seed``: a run's snapshot names, other weights per seed."""
    spec = games.make("openspiel/kuhn_poker").spec
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(2):
        path = folder / f"v{k:04d}.pt"
        MAPPO(spec, MAPPOConfig(), seed=seed + k).policy().save(path)
        paths.append(str(path))
    return paths


def _eval(db: Path, files: list[str]) -> None:
    from populations.eval_cli import eval_main

    eval_main(["--game", "openspiel/kuhn_poker", "--db", str(db), "--episodes", "1", *files])


def _recorded(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT path, sha256 FROM snapshots ORDER BY id").fetchall()


def test_evaluations_beside_each_other_keep_their_own_snapshot_files(tmp_path, capsys):
    # before: every selfplay-eval wrote eval_snapshots/<name>/v0000.pt beside its --db, so a
    # second evaluation (into another database in the folder, or the same one) of files
    # with the same names (a run's v0000.pt, v0001.pt) overwrote the first one's files: its
    # rows then named files holding other weights than their recorded SHA-256
    first = _policies(tmp_path / "run_a", seed=0)
    second = _policies(tmp_path / "run_b", seed=10)
    _eval(tmp_path / "a.db", first)
    _eval(tmp_path / "b.db", second)
    _eval(tmp_path / "a.db", second)  # the same database, a second evaluation run
    capsys.readouterr()
    rows = _recorded(tmp_path / "a.db") + _recorded(tmp_path / "b.db")
    assert len(rows) == 6
    for path, sha in rows:
        assert file_sha256(tmp_path / path) == sha, path
    assert len({path for path, _ in rows}) == 6  # each evaluation's files its own


def _old_run(tmp_path: Path, experiment: str, stamp: str) -> Path:
    run = tmp_path / "runs" / experiment / stamp
    run.mkdir(parents=True)
    (run / "settings.json").write_text(json.dumps({"experiment": experiment}))
    return run


@pytest.mark.parametrize("experiment", [None, "kuhn_psro"])
def test_resume_without_a_run_folder_names_the_folder_to_give(experiment, monkeypatch,
                                                               tmp_path, capsys):
    # before: 'resume=true but runs/default/<now> holds no run ...: check the folder name':
    # the folder was the one Hydra had just named after the clock (and made, then removed),
    # so no resume=true without hydra.run.dir could ever go on, and nothing said so
    name = experiment or "default"
    _old_run(tmp_path, name, "2026-01-01_10-00-00")
    newest = _old_run(tmp_path, name, "2026-01-02_09-00-00")
    (tmp_path / "runs" / name / "2026-01-03_08-00-00").mkdir()  # holds no run
    before = sorted((tmp_path / "runs" / name).iterdir())
    argv = ["resume=true", "frames=64"] + ([f"experiment={experiment}"] if experiment else [])
    with pytest.raises(SystemExit) as exit_:
        _train(argv, monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert len(err.splitlines()) == 1, err
    assert "resume=true" in err and "hydra.run.dir=" in err, err
    # absolute, as a run's resume line: pastes from any folder (fix34d; was relative)
    assert err.endswith(f"the newest run there: hydra.run.dir={newest.resolve()}"), err
    assert sorted((tmp_path / "runs" / name).iterdir()) == before  # no folder made


def test_resume_without_a_run_folder_and_no_run_yet(monkeypatch, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        _train(["resume=true", "frames=64"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert len(err.splitlines()) == 1, err
    assert "hydra.run.dir=" in err and "no run" in err, err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.json"))


def test_resume_override_without_a_folder_still_starts_a_new_run(monkeypatch, tmp_path,
                                                                  capsys):
    # resume_override=true: 'or starts a new run in an empty folder' (README) stays so
    _train(["resume=true", "resume_override=true", "frames=64", "eval_episodes=1",
            "game=kuhn", "logger=none"], monkeypatch, tmp_path)
    runs = list((tmp_path / "runs" / "default").iterdir())
    assert len(runs) == 1 and (runs[0] / "settings.json").is_file()


@pytest.mark.parametrize("override", [
    "game.name=openspiel/dark_hex(num_rows=3,num_cols=3)",
    "game.kwargs.ops=[+,-]x",
])
def test_an_unparsable_override_is_named_with_its_own_quoting(override, monkeypatch, tmp_path,
                                                              capsys):
    # before: 'mismatched input '(' expecting <EOF>; ... (a value holding ( ) [ ] , = or
    # spaces needs quotes: 'game.name="openspiel/goofspiel(num_cards=4)"')': neither the
    # override Hydra could not read (among several) nor its own quoting was named
    from hydra.core.override_parser.overrides_parser import OverridesParser

    with pytest.raises(SystemExit) as exit_:
        _train(["frames=64", override, "seed=1"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1, err
    key, _, value = override.partition("=")
    fix = f'{key}="{value}"'
    assert f"in {override}:" in err and f"'{fix}'" in err, err
    OverridesParser.create().parse_overrides([fix])  # the suggested spelling parses
    assert list(tmp_path.iterdir()) == []


def test_a_swept_game_string_is_quoted_value_by_value():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from populations.cli_common import quoting_hint

    hint = quoting_hint("game.name=openspiel/goofspiel(num_cards=4),openspiel/kuhn_poker")
    fix = 'game.name="openspiel/goofspiel(num_cards=4)",openspiel/kuhn_poker'
    assert f"'{fix}'" in hint
    (parsed,) = OverridesParser.create().parse_overrides([fix])
    values = [getattr(v, "text", v) for v in parsed.value().list]  # QuotedString: its text
    assert values == ["openspiel/goofspiel(num_cards=4)", "openspiel/kuhn_poker"]


def test_a_sweep_resumed_without_its_folder_names_the_folder_to_give(monkeypatch, tmp_path,
                                                                    capsys):
    # before: '-m ... resume=true' without hydra.sweep.dir made multirun/default/<now>/0_.../,
    # said that job 0 'holds no run ...: check the folder name' and ended the sweep
    root = tmp_path / "multirun" / "default"
    for stamp in ("2026-01-01_10-00-00", "2026-01-02_09-00-00"):
        (root / stamp / "0_frames=64").mkdir(parents=True)
        (root / stamp / "0_frames=64" / "settings.json").write_text("{}")
    (root / "2026-01-03_08-00-00").mkdir()  # a sweep that ran no job
    before = sorted(root.iterdir())
    with pytest.raises(SystemExit) as exit_:
        _train(["-m", "frames=64", "resume=true"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert len(err.splitlines()) == 1, err
    # absolute, as a sweep's resume line (215fb51): pastes from any folder (fix34d)
    newest = (root / "2026-01-02_09-00-00").resolve()
    assert err.endswith(f"the newest sweep there: hydra.sweep.dir={newest}"), err
    assert sorted(root.iterdir()) == before


def test_a_summary_table_cut_short_says_how_many_rows_it_left_out(capsys):
    # before: the closing table printed its first 20 rows and nothing more: experiment=
    # kuhn_psro (make run's second half, 26 members) showed player_1's members 0-6 only
    from populations.cli import print_summary
    from populations.experiment import RunSummary

    run = Path("/nowhere/run")
    rows = [{"member": f"psro-player_{a}-{k}", "seat": f"player_{a}", "meta_weight": 0.0}
            for a in (0, 1) for k in range(13)]
    print_summary(RunSummary(run, run / "league.db", run / "snapshots", None, rows))
    out = capsys.readouterr().out
    shown = [line for line in out.splitlines() if "psro-player_" in line]
    assert len(shown) == 20
    (more,) = [line for line in out.splitlines() if "more rows" in line]
    assert "6 more rows" in more and "dashboard" in more and "league.db" in more
