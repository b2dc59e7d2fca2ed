"""A league resumed after its checkpoints were deleted (walk 21): ``no checkpoint in R:
starting from scratch``, it trained every generation again and replaced the published
snapshots (v0000.pt...) and their database rows, the run's history thrown away without a
word. Now the resume is refused in one line, nothing changed, while the database holds what
only a checkpointed league records (generation 0 is recorded before the first checkpoint,
and a stop inside it still resumes: test_walk21_first_generation); ``resume_override``
starts the run over."""

from __future__ import annotations

import hashlib
import logging
import shutil
import sqlite3
from pathlib import Path

import pytest

import games
from marl.mappo import MAPPO
from populations import run_folder
from populations.league import League
from populations.members import MAPPOMember
from populations.run_folder import RunFolderError, refuse_lost_history
from tests.populations.test_interrupts_league import _league, _tables
from tests.populations.test_league import _kuhn


def _resume(run_dir: Path, override: bool = False) -> None:
    """``_league``'s league resumed (``override``: with resume_override)."""
    cfg = _kuhn(frames_per_generation=64, eval_episodes=1)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, run_dir, resume=True, members=members, resume_override=override)
    try:
        league.run()
    finally:
        league.close()


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _status(run_dir: Path) -> list[tuple[str, str | None]]:
    db = sqlite3.connect(run_dir / "league.db")
    try:
        return db.execute("SELECT status, error FROM runs ORDER BY id").fetchall()
    finally:
        db.close()


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("lost") / "run"
    _league(run)
    return run


def _copy(finished: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    return run


def test_a_finished_league_without_its_checkpoints_is_not_started_over(finished, tmp_path):
    run = _copy(finished, tmp_path)
    shutil.rmtree(run / "checkpoints")
    (run / "checkpoints").mkdir()
    tables, snapshots, status = _tables(run), _files(run / "snapshots"), _status(run)
    with pytest.raises(RunFolderError) as err:
        _resume(run)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"{run / 'checkpoints'} has no checkpoint but league.db holds "
                           "generation 2's snapshots"), line
    assert "nothing was changed" in line
    assert "pass resume_override=True to start the run over" in line  # the API's words
    # nothing changed: the run's rows, its snapshot files, its status ('finished')
    assert _tables(run) == tables and _files(run / "snapshots") == snapshots
    assert _status(run) == status == [("finished", None)]


def test_the_checkpoints_folder_gone_too_is_refused(finished, tmp_path):
    run = _copy(finished, tmp_path)
    shutil.rmtree(run / "checkpoints")
    with pytest.raises(RunFolderError, match="has no checkpoint but league.db holds"):
        _resume(run)
    assert not (run / "checkpoints").exists()


def test_resume_override_starts_the_run_over(finished, tmp_path, caplog):
    run = _copy(finished, tmp_path)
    shutil.rmtree(run / "checkpoints")
    with caplog.at_level(logging.WARNING, logger="populations.run_folder"):
        _resume(run, override=True)
    assert "starting the run over" in caplog.text
    assert _status(run) == [("finished", None)]
    assert (run / "checkpoints").is_dir()


def test_the_league_cli_spells_its_own_override(finished, tmp_path):
    run = _copy(finished, tmp_path)
    shutil.rmtree(run / "checkpoints")
    with run_folder.spelled(run_folder.HYDRA_WORDS), pytest.raises(RunFolderError) as err:
        _resume(run)
    assert "set resume_override=true to start the run over" in str(err.value)


def test_training_metrics_alone_are_history(tmp_path):
    """Killed while generation 1 trained, before its snapshot: its metrics (step > 0) were
    recorded after the first checkpoint, so a resume without checkpoints is refused too."""
    run = tmp_path / "run"
    _league(run)
    shutil.rmtree(run / "checkpoints")
    db = sqlite3.connect(run / "league.db")
    try:  # what the database held in generation 1's training: v0s, g0000 matches, metrics
        db.execute("DELETE FROM ratings WHERE snapshot_id IN (SELECT id FROM snapshots "
                   "WHERE version > 0)")
        db.execute("DELETE FROM payoffs")
        db.execute("DELETE FROM matches WHERE key NOT LIKE 'g0000/%'")
        db.execute("DELETE FROM generations")
        db.execute("DELETE FROM snapshots WHERE version > 0")
        db.commit()
        steps = [s for (s,) in db.execute("SELECT DISTINCT step FROM metrics WHERE step > 0")]
    finally:
        db.close()
    assert steps
    with pytest.raises(RunFolderError, match=r"league.db holds metrics up to step \d+"):
        _resume(run)


def test_the_rule_alone():
    refuse_lost_history("R/checkpoints", None)  # nothing recorded: a fresh start loses nothing
    refuse_lost_history("R/checkpoints", "")
    refuse_lost_history("R/checkpoints", "metrics up to step 9", override=True)
    with pytest.raises(RunFolderError) as err:
        refuse_lost_history("R/checkpoints", "metrics up to step 9",
                            replaced="its metrics")
    assert str(err.value) == (
        "R/checkpoints has no checkpoint but league.db holds metrics up to step 9: a resume "
        "would start the run over; nothing was changed; restore the checkpoints, or pass "
        "resume_override=True to start the run over (its metrics are replaced)")


def test_selfplay_train_refuses_in_one_line_and_changes_nothing(tmp_path, monkeypatch, capsys):
    """The walker's command: a finished two-generation league, ``rm R/checkpoints/*``, the
    same command with resume=true logged 'starting from scratch', trained both generations
    again and replaced v0000.pt-v0002.pt and their rows."""
    from tests.populations.test_walk18_cli_more import _train

    run = tmp_path / "R"
    argv = ["game=kuhn", "num_envs=2", "eval_episodes=1", "progress=false", "logger=csv",
            "population=self_play", "population.frames_per_generation=64",
            "population.generations=2", f"hydra.run.dir={run}"]
    _train(argv, monkeypatch, tmp_path)
    for ckpt in (run / "checkpoints").iterdir():
        ckpt.unlink()
    kept = {p: _files(run / p) for p in ("snapshots", "checkpoints")}
    tables, csv = _tables(run), (run / "metrics.csv").read_bytes()
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        _train([*argv, "resume=true"], monkeypatch, tmp_path)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"selfplay-train: {run / 'checkpoints'} has no checkpoint but "
                          "league.db holds generation 2's snapshots"), err
    assert "set resume_override=true to start the run over" in err
    assert {p: _files(run / p) for p in kept} == kept
    assert _tables(run) == tables and (run / "metrics.csv").read_bytes() == csv
    assert _status(run) == [("finished", None)]
