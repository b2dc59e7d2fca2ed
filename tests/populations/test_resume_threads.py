"""A resume may run at another ``torch_threads`` (README, Resume): it trains on with nothing
lost, but from the first update its sums round otherwise (measured on simple_spread, 1 vs 2
threads: MAPPO, MADDPG and QMIX runs differ from their first update on), so its numbers after
the checkpoint are not those of the run kept at its thread count. The resume says so in one
line instead of silently."""

import logging

import pytest

import populations.experiment as experiment
from populations.experiment import run_experiment
from tests.populations.test_single_resume import (
    TINY,
    _exp,
    _kill_after_first_checkpoint,
    _Killed,
)


def _notes(caplog):
    return [r.getMessage() for r in caplog.records if "torch_threads" in r.getMessage()]


def test_a_resume_at_another_thread_count_says_its_numbers_differ(tmp_path, monkeypatch,
                                                                   caplog):
    with monkeypatch.context() as m:
        _kill_after_first_checkpoint(m, at_call=2)
        with pytest.raises(_Killed):
            run_experiment(_exp(*TINY), tmp_path)
    # what runs after the note is not the point (and 2 threads on a busy 2-core machine
    # take seconds): the resumes stop there
    monkeypatch.setattr(experiment, "_run_experiment", lambda cfg, run_dir: None)
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        run_experiment(_exp(*TINY, "resume=true", "torch_threads=2"), tmp_path)
        assert _notes(caplog) == [
            "resuming with torch_threads=2 (the run had 1): training goes on, but its numbers "
            "from here on differ from the run kept at 1 (sums round otherwise)"]
        caplog.clear()
        run_experiment(_exp(*TINY, "resume=true"), tmp_path)  # the run's own count
        assert _notes(caplog) == []


def test_the_league_cli_resume_at_another_thread_count_says_so(tmp_path, caplog):
    """``python -m populations.league --resume`` of a league made at another
    ``torch_threads`` (the library's LeagueConfig; the CLI runs at 1) said nothing: the
    same line as selfplay-train's now (9a056e8); a finished league's resume none."""
    import torch

    from populations import league, league_cli
    from populations.db import LeagueDB

    args = ["--run-dir", str(tmp_path / "run"), "--game", "openspiel/kuhn_poker",
            "--generations", "1", "--frames-per-generation", "16", "--num-envs", "4",
            "--eval-episodes", "1"]
    cfg = league.LeagueConfig(game="openspiel/kuhn_poker", game_kwargs={}, generations=1,
                              frames_per_generation=16, num_envs=4, eval_episodes=1,
                              torch_threads=2)
    threads = torch.get_num_threads()
    try:
        made = league.League(cfg, tmp_path / "run")
        made.close()  # recorded, not run: the CLI's resume trains its generation
    finally:
        torch.set_num_threads(threads)
    db = LeagueDB(tmp_path / "run" / "league.db")
    db.set_run_status(db.run_id("league"), "interrupted")
    db.close()
    with caplog.at_level(logging.INFO):
        league_cli.main([*args, "--resume"])
        assert _notes(caplog) == [
            "resuming with torch_threads=1 (the run had 2): training goes on, but its numbers "
            "from here on differ from the run kept at 2 (sums round otherwise)"]
        caplog.clear()
        league_cli.main([*args, "--resume"])  # finished: nothing left to train
        assert _notes(caplog) == []


def test_the_note_compares_with_the_count_that_trained_the_checkpoint(tmp_path, monkeypatch,
                                                                        caplog):
    """settings.json keeps the first session's torch_threads (a may-change key is not
    rewritten), so a second resume at the new count repeated 'the run had 1' though its
    checkpoint was trained at 2, and a resume back at 1 said nothing. Each checkpoint now
    records the count that trained it (``ckpt_<step>.pt.threads``): the note compares with
    the newest one's."""
    from populations.checkpoint import checkpoint_threads, read_checkpoint, save_checkpoint

    with monkeypatch.context() as m:
        _kill_after_first_checkpoint(m, at_call=2)
        with pytest.raises(_Killed):
            run_experiment(_exp(*TINY), tmp_path)
    folder = tmp_path / experiment.CHECKPOINTS
    assert checkpoint_threads(folder) == 1
    newest = read_checkpoint(max(folder.glob("ckpt_*.pt")))  # the hash still verifies
    # a session at torch_threads=2 trained on and saved the newest checkpoint
    path = save_checkpoint(folder, newest["step"] + 1, newest, torch_threads=2)
    assert read_checkpoint(path)["step"] == newest["step"] and checkpoint_threads(folder) == 2
    hashed = path.with_name(path.name + ".sha256").read_text()  # sha256sum -c reads it (CT-4)
    assert hashed == f"{hashed.split()[0]}  {path.name}\n"
    monkeypatch.setattr(experiment, "_run_experiment", lambda cfg, run_dir: None)
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        run_experiment(_exp(*TINY, "resume=true", "torch_threads=2"), tmp_path)
        assert _notes(caplog) == []  # trained at 2, resumed at 2
        run_experiment(_exp(*TINY, "resume=true", "torch_threads=1"), tmp_path)
        assert _notes(caplog) == [
            "resuming with torch_threads=1 (the run had 2): training goes on, but its numbers "
            "from here on differ from the run kept at 2 (sums round otherwise)"]


def test_a_league_resume_compares_with_its_newest_checkpoints_count(tmp_path, monkeypatch,
                                                                      caplog):
    """League._open's note (the league CLI's and selfplay-train's leagues) compared with the
    count the league was made with, though a later session at another count may have trained
    its newest checkpoint (``ckpt_<step>.pt.threads``): made at 2, trained on at 1, resumed at
    1 said 'the run had 2'."""
    import dataclasses

    import torch

    from populations import league
    from populations.db import LeagueDB

    cfg = league.LeagueConfig(game="openspiel/kuhn_poker", game_kwargs={}, generations=2,
                              frames_per_generation=16, num_envs=4, eval_episodes=1,
                              torch_threads=2)
    threads = torch.get_num_threads()
    monkeypatch.setattr(league.League, "_restore", lambda self: None)  # the count is the point
    try:
        league.League(cfg, tmp_path).close()
        db = LeagueDB(tmp_path / "league.db")
        db.set_run_status(db.run_id("league"), "interrupted")
        db.close()
        (tmp_path / "checkpoints").mkdir()
        (tmp_path / "checkpoints" / "ckpt_000002.pt").write_bytes(b"trained at 1")
        (tmp_path / "checkpoints" / "ckpt_000002.pt.threads").write_text("1\n")
        with caplog.at_level(logging.INFO):
            league.League(dataclasses.replace(cfg, torch_threads=1), tmp_path,
                          resume=True).close()
            assert _notes(caplog) == []
            league.League(cfg, tmp_path, resume=True).close()  # back at 2
            assert _notes(caplog) == [
                "resuming with torch_threads=2 (the run had 1): training goes on, but its "
                "numbers from here on differ from the run kept at 1 (sums round otherwise)"]
    finally:
        torch.set_num_threads(threads)


def test_a_league_experiment_resume_says_it_once(tmp_path, caplog):
    """selfplay-train's league (population=self_play ...) noted the count twice: once in
    run_experiment and once in League._open, the same comparison written in two places; one
    helper now (populations.checkpoint.note_resume_threads), said by the league alone, and
    nothing for a finished league (no generation left to train)."""
    from populations.db import LeagueDB

    league = ["game=kuhn", "population=self_play", "population.generations=1",
              "population.frames_per_generation=16", "num_envs=4", "eval_episodes=1",
              "progress=false", "logger=none",
              # one small update a generation: the resumes at 2 threads train one, and the
              # note, not what it learns, is the point
              "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1"]
    run_experiment(_exp(*league), tmp_path)
    with caplog.at_level(logging.INFO):
        run_experiment(_exp(*league, "resume=true", "torch_threads=2"), tmp_path)
        assert _notes(caplog) == []  # finished: nothing trains at 2
        # killed while generation 1 trained: its status, and generation 0's checkpoint the
        # newest (the note is decided from the checkpoint: generation 1 is left to train)
        db = LeagueDB(tmp_path / "league.db")
        db.set_run_status(db.run_id("league"), "interrupted")
        db.close()
        for later in (tmp_path / "checkpoints").glob("ckpt_00000[23].pt*"):
            later.unlink()
        run_experiment(_exp(*league, "resume=true", "torch_threads=2"), tmp_path)
        assert _notes(caplog) == [
            "resuming with torch_threads=2 (the run had 1): training goes on, but its numbers "
            "from here on differ from the run kept at 1 (sums round otherwise)"]
        # finished again (generation 1 trained at 2); population.generations may change on a
        # resume: resumed with more, it trains them at 1 and said nothing (the note was
        # decided from the run's status before the checkpoint was loaded)
        caplog.clear()
        run_experiment(_exp(*league[:2], "population.generations=2", *league[3:],
                            "resume=true"), tmp_path)
        assert _notes(caplog) == [
            "resuming with torch_threads=1 (the run had 2): training goes on, but its numbers "
            "from here on differ from the run kept at 2 (sums round otherwise)"]
