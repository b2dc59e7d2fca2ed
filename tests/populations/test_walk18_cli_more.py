"""More findings of user-path walk 18 in ``selfplay-train``, ``selfplay-demo`` and the league
CLI: resume commands that paste, early refusals, damaged checkpoints, the demo's stops."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.populations.user_modules import train_here

# the name 48 test modules import this helper by (7f3ee98 moved it to user_modules.train_here)
_train = train_here

# a tiny single run; the game's name holds parentheses and quotes (shell and Hydra quoting)
TINY = ['game.name="openspiel/kuhn_poker(players=2)"', "frames=200", "num_envs=4",
        "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1", "eval_episodes=1",
        "progress=false", "logger=csv"]


def ctrl_c_after_the_run(monkeypatch):
    """Runs in this process are stopped by Ctrl-C once they have run (and recorded their
    settings), as a user's Ctrl-C would stop them; returns what lets runs go on again."""
    import populations.experiment as experiment

    real = experiment.run_experiment

    def stopped(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt  # Ctrl-C once the run has recorded its settings

    monkeypatch.setattr(experiment, "run_experiment", stopped)
    return lambda: monkeypatch.setattr(experiment, "run_experiment", real)


def _pasted(command: str) -> list[str]:
    """The words a shell gives ``selfplay-train`` for ``command`` pasted."""
    words = shlex.split(command)
    assert words[0] == "selfplay-train", command
    return words[1:]


def test_the_summarys_resume_command_pasted_resumes_the_run(tmp_path, monkeypatch, capsys):
    # before: 'checkpoints: <run>/checkpoints (resume=true hydra.run.dir=<run>)': pasted,
    # 'cannot continue with other settings (game.name=... (run) vs ... (now); frames=...)'
    run = tmp_path / "my run"
    train_here([*TINY, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("checkpoints:")]
    command = line.split(" (", 1)[1].removesuffix(")")
    words = _pasted(command)
    assert words[-2:-1] == ["resume=true"] and words[-1].startswith("hydra.run.dir=")
    train_here(words, monkeypatch, tmp_path)  # accepted: a finished run's summary again
    out = capsys.readouterr().out
    assert f"run folder : {run}" in out


def test_ctrl_cs_resume_command_pasted_resumes_the_run(tmp_path, monkeypatch, capsys):
    # before: 'interrupted; <run> resumes with resume=true hydra.run.dir=<run>', refused
    # when pasted as the summary's was
    go_on = ctrl_c_after_the_run(monkeypatch)
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        train_here([*TINY, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert stop.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("selfplay-train: interrupted; ") and "resumes with: " in err, err
    words = _pasted(err.split("resumes with: ", 1)[1])
    go_on()
    train_here(words, monkeypatch, tmp_path)
    assert f"run folder : {run}" in capsys.readouterr().out


def test_resume_command_leaves_out_the_game_reset_the_cli_adds():
    from populations.command_line import resume_command

    run = Path("/r/run")
    assert resume_command(run, ["~game", "game.name=openspiel/kuhn_poker", "seed=1"]) == \
        "selfplay-train game.name=openspiel/kuhn_poker seed=1 resume=true hydra.run.dir=/r/run"
    # typed by the user before another place: kept (it is not where the CLI puts it)
    assert shlex.split(resume_command(run, ["~game", "seed=1", "game.name=x"]))[1] == "~game"
    # a sweep job's task overrides spell it '~game=null' (Hydra's multirun)
    assert resume_command(run, ["~game=null", "game.name=openspiel/kuhn_poker"]) == \
        "selfplay-train game.name=openspiel/kuhn_poker resume=true hydra.run.dir=/r/run"
    # the old resume's own switches are not repeated
    assert resume_command(run, ["resume=true", "resume_override=true", "seed=1"]) == \
        "selfplay-train seed=1 resume=true hydra.run.dir=/r/run"


def _no_huge_batches(monkeypatch):
    """Building more than BLOCK stepped copies fails at once here (it took minutes of memory
    growth, then the kernel's kill), so a missing early refusal fails fast."""
    import games
    from populations.seeds import BLOCK

    real = games.VectorGame

    def built(game, num_envs, *args, **kwargs):
        if num_envs > BLOCK:
            raise RuntimeError(f"built {num_envs} copies")
        return real(game, num_envs, *args, **kwargs)

    monkeypatch.setattr(games, "VectorGame", built)


def test_more_copies_than_a_seed_block_of_a_stepped_game_are_refused_before_the_folder(
        tmp_path, monkeypatch, capsys):
    # before: num_envs=100000000 made the run folder, filled the memory for ~2 minutes and
    # was killed (exit 137, no message), the folder's run left 'running'
    _no_huge_batches(monkeypatch)
    with pytest.raises(SystemExit) as stop:
        train_here(["game=kuhn", "num_envs=100000000"], monkeypatch, tmp_path)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("selfplay-train: num_envs=100000000: at most "
                                              "65536 copies of openspiel/kuhn_poker"), err
    assert "vmas" in err
    assert not (tmp_path / "runs").exists()


def test_a_natively_batched_game_may_take_more_copies_than_a_seed_block():
    import games
    from populations.experiment import ExperimentConfig, GameConfig, check_experiment
    from populations.experiment_config import check_copies

    check_copies(10**6, games.make("vmas/navigation"))  # one tensor batch: allowed
    check_experiment(ExperimentConfig(game=GameConfig("vmas/navigation"), num_envs=10**6))
    with pytest.raises(ValueError, match=r"^num_envs=65537: at most 65536 copies"):
        check_experiment(ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"),
                                          num_envs=65537))
    check_experiment(ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"), num_envs=65536))


def test_a_league_refuses_more_copies_than_a_seed_block_of_a_stepped_game(tmp_path, capsys):
    from populations.league import LeagueConfig
    from populations.league_cli import main

    with pytest.raises(ValueError, match=r"^num_envs=70000: at most 65536 copies"):
        LeagueConfig(game="openspiel/kuhn_poker", game_kwargs={}, num_envs=70000)
    assert LeagueConfig(game="vmas/navigation", game_kwargs={}, num_envs=70000).num_envs == 70000
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        main(["--run-dir", str(run), "--game", "openspiel/kuhn_poker", "--num-envs", "70000"])
    assert stop.value.code == 2 and not run.exists()
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--num-envs 70000: at most 65536 copies" in err, err


@pytest.mark.parametrize("override, message", [
    # before: the run folder was made, then 'generations=0; expected an integer >= 1' (its
    # key not named), while -1 was refused early as 'expected an integer >= 0'
    ("population.generations=0", "bad config: population.generations=0; expected an integer "
                                 ">= 1"),
    ("population.generations=-1", "bad config: population.generations=-1; expected an "
                                  "integer >= 1"),
    # before: refused after the folder, in LeagueConfig's words (ray_learners=...)
    ("runner.learners=-1", "bad config: runner.learners=-1; expected an integer >= 0"),
    ("runner.max_learner_restarts=-1", "bad config: runner.max_learner_restarts=-1; expected "
                                       "an integer >= 0"),
])
def test_population_and_runner_counts_are_refused_early_by_their_key(override, message,
                                                                      tmp_path, monkeypatch,
                                                                      capsys):
    import populations.experiment as experiment

    def no_run(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(experiment, "run_experiment", no_run)
    with pytest.raises(SystemExit) as stop:
        train_here(["population=self_play", "game=kuhn", override], monkeypatch, tmp_path)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"selfplay-train: {message}", err
    assert not (tmp_path / "runs").exists()


def test_an_asynchronous_league_without_ray_is_refused_before_the_folder(tmp_path, monkeypatch,
                                                                          capsys):
    # before: the folder was made, then "sync=False (asynchronous members) needs
    # runner='ray'; got runner='local'" (the Python API's words)
    import populations.experiment as experiment

    def no_run(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(experiment, "run_experiment", no_run)
    with pytest.raises(SystemExit) as stop:
        train_here(["population=self_play", "game=kuhn", "population.sync=false"], monkeypatch,
                   tmp_path)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("selfplay-train: population.sync=false (asynchronous members) needs "
                          "runner=ray; got runner=local"), err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("flag", ["--generations", "--frames-per-generation", "--eval-episodes",
                                  "--num-envs"])
def test_the_league_cli_names_its_flag(flag, tmp_path, capsys):
    # before: 'python -m populations.league: generations=0; expected an integer >= 1'
    from populations.league_cli import main

    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        main(["--run-dir", str(run), "--game", "openspiel/kuhn_poker", flag, "0"])
    assert stop.value.code == 2 and not run.exists()
    err = capsys.readouterr().err.strip()
    # cli36: the whole range, as a value that is no integer gets it
    most = {"--generations": 10**6, "--frames-per-generation": 10**12,
            "--eval-episodes": 10**6, "--num-envs": 10**9}[flag]
    assert err == f"python -m populations.league: {flag} 0; expected an integer from 1 to {most}", \
        err


def test_a_run_whose_every_checkpoint_is_damaged_names_each_once_and_what_to_do(
        tmp_path, monkeypatch, capsys):
    # before: 'no readable checkpoint in <run>/checkpoints: checkpoint <path> is damaged: its
    # SHA-256 differs from the one recorded in <name>.sha256; checkpoint <path> is damaged:
    # ...' once per file, and no next step
    import sqlite3

    run = tmp_path / "run"
    args = [*TINY, "checkpoint_every_s=0", f"hydra.run.dir={run}"]
    train_here(args, monkeypatch, tmp_path)
    with sqlite3.connect(run / "league.db") as db:  # as a killed run leaves it
        db.execute("UPDATE runs SET status = 'interrupted'")
    files = sorted((run / "checkpoints").glob("ckpt_*.pt"))
    assert len(files) == 3
    for path in files:
        data = bytearray(path.read_bytes())
        data[100] ^= 0xFF
        path.write_bytes(bytes(data))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        train_here([*args, "resume=true"], monkeypatch, tmp_path)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"selfplay-train: no readable checkpoint in {run / 'checkpoints'}: ")
    assert err.count("is damaged") == 1 and err.count(str(run)) == 1, err
    for path in files:
        assert err.count(path.name) == 1, err
    # not "delete the checkpoints and resume": the run's recorded matches and ratings would
    # be read beside snapshots trained again under the same names (review)
    assert err.endswith("this run cannot go on: start a new run folder (what it recorded "
                        "stays readable here)"), err


def test_damaged_checkpoints_read_through_the_python_api_name_each_file_in_one_line(tmp_path):
    from marl.core import CheckpointError
    from populations.checkpoint import load_latest

    folder = tmp_path / "checkpoints"
    folder.mkdir()
    (folder / "ckpt_000001.pt").write_bytes(b"garbage")
    (folder / "ckpt_000002.pt").write_bytes(b"")
    with pytest.raises(CheckpointError) as err:
        load_latest(folder)
    assert "start a new run folder" in str(err.value) and "\n" not in str(err.value)
    assert "ckpt_000002.pt" in str(err.value) and "ckpt_000001.pt" in str(err.value)
    # garbage without a hash file: torch's advice to load it with weights_only=False (which
    # runs a file's code) is not passed on
    assert "weights_only" not in str(err.value) and "not a checkpoint of tensors" in str(err.value)


# selfplay-demo, sending itself SIGTERM once its first pairing printed its line
DEMO_SIGTERM = """
import os, signal, sys
from populations import demo
real = demo.play
def play(*args, **kwargs):
    if demo.play.calls:
        os.kill(os.getpid(), signal.SIGTERM)
    demo.play.calls += 1
    return real(*args, **kwargs)
play.calls = 0
demo.play = play
demo.main(["--episodes", "2", "--num-envs", "2"])
"""


def test_selfplay_demo_stopped_by_sigterm_says_so_in_one_line(tmp_path):
    # before: exit 143 and nothing printed (Ctrl-C printed 'selfplay-demo: interrupted')
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    res = subprocess.run([sys.executable, "-c", DEMO_SIGTERM], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 143, res.stderr
    assert res.stderr.strip() == "selfplay-demo: terminated (SIGTERM)", res.stderr
    assert res.stdout.count("episodes in") == 1  # the first pairing's line, then the stop


def test_selfplay_demo_bounds_its_episodes(capsys):
    # before: --episodes 99999999 was accepted and ran for minutes without a line printed
    from populations import demo

    with pytest.raises(SystemExit) as stop:
        demo.main(["--episodes", "99999999"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"selfplay-demo: argument --episodes: 99999999: expected an integer from 1 "
                   f"to {demo.MAX_EPISODES} (see --help)"), err
    with pytest.raises(SystemExit):
        demo.main(["--help"])
    assert f"1 to {demo.MAX_EPISODES}" in " ".join(capsys.readouterr().out.split())
