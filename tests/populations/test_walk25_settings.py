"""Settings and messages a user-path walk found (walk 25).

* ``population.keep_checkpoints`` could not be set (``Key 'keep_checkpoints' not in
  'PopulationConfig'``): only the league's own ``LeagueConfig`` had it, and a league with
  replay buffers writes checkpoints of hundreds of MB each.
* ``llm=hf llm.model=/path/to/your/model`` (README's example, the path missing) was refused
  after Hydra made the run folder and torch loaded (37-65 s under load).
* a truncated ``league.db`` was told "keeps its checkpoints: ... it resumes from the last one
  with: <resume command>", a command that needs that same database.
* ``selfplay-eval`` on a snapshot of one whole side (a population=none run's) ended its seat
  refusal with "give the --game-kwargs it was trained with", though no argument explains it.
* ``population=none`` on a one-team game logged nothing of the seats that train.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.populations.test_cli_inputs import ADVERSARY, _eval, _policy
from tests.populations.test_walk18_cli_more import TINY, _train


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="configs", version_base=None):
        return compose(config_name="config", overrides=overrides)


# ----------------------------------------------------------------- population.keep_checkpoints
def test_keep_checkpoints_is_a_population_setting():
    from populations.train_overrides import to_experiment

    exp = to_experiment(_compose(["population=self_play", "game=kuhn",
                                  "population.keep_checkpoints=5"]))
    assert exp.population.keep_checkpoints == 5
    assert to_experiment(_compose(["game=kuhn"])).population.keep_checkpoints == 3


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_keep_checkpoints_below_one_is_refused(value):
    from populations.experiment_config import PopulationConfig

    with pytest.raises(ValueError, match=rf"^keep_checkpoints={value!r}; expected an integer "
                                         r">= 1 \(the newest checkpoints kept on disk\)$"):
        PopulationConfig(keep_checkpoints=value)


def test_keep_checkpoints_zero_is_one_line_before_the_folder(tmp_path, monkeypatch, capsys):
    run = tmp_path / "r"
    with pytest.raises(SystemExit) as exit_:
        _train([*TINY, "population.keep_checkpoints=0", f"hydra.run.dir={run}"], monkeypatch,
               tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == ("selfplay-train: bad config: population.keep_checkpoints=0; expected an "
                   "integer >= 1 (the newest checkpoints kept on disk)"), err
    assert not run.exists()


def test_keep_checkpoints_reaches_the_league_and_may_change_on_resume(tmp_path, monkeypatch):
    run = tmp_path / "r"
    league = ["population=self_play", "game=kuhn", "population.frames_per_generation=16",
              "num_envs=4", "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1",
              "eval_episodes=1", "progress=false", "logger=csv", f"hydra.run.dir={run}"]
    _train([*league, "population.generations=3", "population.keep_checkpoints=3"],
           monkeypatch, tmp_path)
    assert len(list((run / "checkpoints").glob("ckpt_*.pt"))) == 3
    _train([*league, "population.generations=4", "population.keep_checkpoints=1",
            "resume=true"], monkeypatch, tmp_path)
    assert len(list((run / "checkpoints").glob("ckpt_*.pt"))) == 1
    with sqlite3.connect(run / "league.db") as db:  # the resume trained generation 4
        assert db.execute("SELECT MAX(version) FROM snapshots").fetchone() == (4,)


def test_keep_checkpoints_holds_for_a_single_run(tmp_path, monkeypatch):
    run = tmp_path / "r"
    _train([*TINY, "frames=400", "checkpoint_every_s=0", "population.keep_checkpoints=1",
            f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert len(list((run / "checkpoints").glob("ckpt_*.pt"))) == 1


# ----------------------------------------------------------------- llm.model given as a path
@pytest.mark.parametrize("model, why", [("/path/to/your/model", "no such directory"),
                                        ("./no/such/model", "no such directory"),
                                        ("~/no/such/model/here", "no such directory")])
def test_a_model_path_that_is_not_there_is_refused_before_the_run(model, why):
    from populations.command_line import CLIError
    from populations.train_overrides import to_experiment

    cfg = _compose(["experiment=kuhn_llm_selfplay", "llm=hf", f"llm.model='{model}'"])
    with pytest.raises(CLIError, match=rf"llm\.model={model!r} could not be loaded \({why}\); "
                                       "give 'tiny', a local model directory or a hub name"):
        to_experiment(cfg)


def test_a_folder_without_config_json_is_refused_early(tmp_path):
    from llm_agents.settings import LLMConfig

    with pytest.raises(ValueError, match=r"could not be loaded \(no config.json in it\)"):
        LLMConfig(model=str(tmp_path))


def test_a_hub_name_still_goes_to_the_loader():
    from llm_agents.settings import LLMConfig, missing_model_folder

    assert LLMConfig(model="org/name").model == "org/name"
    assert missing_model_folder("org/name") is None and missing_model_folder("tiny") is None


def test_the_readme_example_fails_before_the_run_folder(tmp_path, monkeypatch, capsys):
    run = tmp_path / "r"
    with pytest.raises(SystemExit) as exit_:
        _train(["experiment=kuhn_llm_selfplay", "llm=hf", "llm.model=/path/to/your/model",
                f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "bad config: llm.model='/path/to/your/model' could not be loaded (no such " \
           "directory)" in err, err
    assert not run.exists()


# ----------------------------------------------------------------- a damaged league.db
@pytest.mark.parametrize("damage", ["truncate", "overwrite"])
def test_a_damaged_database_is_not_told_to_resume(damage, tmp_path, monkeypatch, capsys):
    run = tmp_path / "r"
    args = [*TINY, "checkpoint_every_s=0", f"hydra.run.dir={run}"]
    _train(args, monkeypatch, tmp_path)
    assert list((run / "checkpoints").glob("ckpt_*.pt"))
    db = run / "league.db"
    if damage == "truncate":
        with open(db, "r+b") as f:
            f.truncate(db.stat().st_size // 3)
    else:
        db.write_bytes(b"\x00not sqlite\x00" * 400)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        _train([*args, "resume=true"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.endswith(f"; {db} is damaged (truncated or overwritten): restore it from a "
                         "copy, or start a new run in another folder"), line
    assert "resume=true" not in line and "keeps its checkpoints" not in line


# ----------------------------------------------------------------- selfplay-eval seat refusal
def test_one_whole_side_is_refused_without_the_arguments_tail(tmp_path, capsys):
    # a population=none snapshot (the adversaries) of a file naming its game bare: its seats
    # are a whole team whatever the game's arguments, so they are not the cause
    a = _policy(tmp_path / "a.pt", ADVERSARY, ("adversary_0",), ADVERSARY)
    code, _, err = _eval([a, "--exploit", "--exploit-frames", "100", "--exploit-seeds", "1",
                          "--db", str(tmp_path / "r.db")], capsys)
    line = err.strip().splitlines()[-1]
    assert code == 2, err
    assert line.startswith("selfplay-eval: a holds the seats ['adversary_0'] of "), err
    assert line.endswith("a league's snapshots hold every seat): train with population=self_play "
                         "(or fsp, pfsp) for snapshots that play every side"), line


def test_part_of_a_team_still_names_the_arguments(tmp_path, capsys):
    # two of simple_tag's three adversaries (trained with num_adversaries=2, not recorded)
    tag = "pettingzoo/mpe2.simple_tag_v3"
    a = _policy(tmp_path / "a.pt", tag, ("adversary_0", "adversary_1"), tag,
                num_adversaries=2)
    code, _, err = _eval([a, "--exploit", "--exploit-frames", "100", "--exploit-seeds", "1",
                          "--db", str(tmp_path / "r.db")], capsys)
    assert code == 2 and err.rstrip().endswith("give the --game-kwargs it was trained with"), err


# ----------------------------------------------------------------- population=none's seats
def test_a_one_team_game_logs_the_seats_that_train(tmp_path, monkeypatch):
    args = ["game.name=openspiel/tiny_bridge_2p", "frames=64", "num_envs=4",
            "mappo.rollout_steps=4", "mappo.epochs=1", "mappo.minibatches=1",
            "eval_episodes=1", "progress=false", "logger=csv"]
    _train([*args, f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, Path(tmp_path))
    log = (tmp_path / "r" / "cli.log").read_text()  # the run's log, as Hydra writes it
    assert "population=none: mappo trains every seat of the game's one team 'team' " \
           "(player_0, player_1)" in log, log


def test_the_league_module_takes_keep_checkpoints(tmp_path, capsys):
    from populations.league_cli import main

    run = tmp_path / "bad"
    with pytest.raises(SystemExit) as stop:  # refused as typed, before the folder is made
        main(["--run-dir", str(run), "--game", "openspiel/kuhn_poker", "--keep-checkpoints", "0"])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and not run.exists() and "\n" not in err, err
    assert "--keep-checkpoints 0" in err, err
    run = tmp_path / "one"
    main(["--run-dir", str(run), "--game", "openspiel/kuhn_poker", "--generations", "3",
          "--frames-per-generation", "64", "--num-envs", "4", "--eval-episodes", "2",
          "--keep-checkpoints", "1"])
    assert len(list((run / "checkpoints").glob("*.pt"))) == 1
