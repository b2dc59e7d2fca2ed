"""walk38c's values that ``selfplay-train`` took without a word or refused without saying what
to write: a replay smaller than its batch (trained to the end with no update, exit 0), a list
given to a config group (``algo=[mappo,vdn]`` trained vdn), ``~key`` (the schema's default
taken silently, or OmegaConf's "does not support deletion"), ``game.kwargs=null``, Ray-only
``runner.*`` keys beside ``runner=local``, ``WANDB_MODE=disabled`` naming a wandb folder
that holds no metrics, and a read-only open of a linked league.db making ``-wal``/``-shm``
beside the link's target."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from populations.command_line import CLIError
from populations.train_overrides import check_command_line
from tests.populations.user_modules import train_here

SMALL = ["game=kuhn", "frames=64", "num_envs=2", "eval_episodes=2", "progress=false"]


def _refused(*args: str) -> str:
    with pytest.raises(CLIError) as err:
        check_command_line(list(args))
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message, message
    return message


def _failed(argv: list[str], monkeypatch, tmp_path, capsys) -> str:
    """``selfplay-train argv`` through its main: its one line (exit 2), no run folder left."""
    run = tmp_path / "runs" / "x"
    with pytest.raises(SystemExit) as stop:
        train_here([*argv, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert len(err) == 1 and err[0].startswith("selfplay-train: "), err
    assert not (tmp_path / "runs").exists()
    return err[0].removeprefix("selfplay-train: ")


# ------------------------------------------------ M1: a replay that never holds a batch
@pytest.mark.parametrize("algo, size, batch", [("vdn", 10, 128), ("qmix", 100, 128),
                                               ("maddpg", 255, 256)])
def test_a_replay_smaller_than_its_batch_is_refused_before_the_run(
        algo, size, batch, monkeypatch, tmp_path, capsys):
    """Before: rc 0, the run trained to its end and never updated (a replay learner updates
    once its buffer holds batch_size transitions; it holds at most buffer_size)."""
    line = _failed([*SMALL, f"algo={algo}", f"{algo}.buffer_size={size}",
                    f"{algo}.learning_starts=0"], monkeypatch, tmp_path, capsys)
    assert line == (f"bad config: {algo}.buffer_size={size} < {algo}.batch_size={batch}: the "
                    "learner would never update (it draws batch_size transitions from a replay "
                    "holding at most buffer_size); expected buffer_size >= batch_size"), line


def test_the_python_api_refuses_it_too_and_equal_sizes_pass():
    from marl.configs import MADDPGConfig, ValueDecompConfig

    with pytest.raises(ValueError, match=r"^ValueDecompConfig.buffer_size=10 < batch_size=128"):
        ValueDecompConfig(buffer_size=10)
    with pytest.raises(ValueError, match=r"^MADDPGConfig.buffer_size=8 < batch_size=16: "):
        MADDPGConfig(buffer_size=8, batch_size=16)
    ValueDecompConfig(buffer_size=128, batch_size=128)
    MADDPGConfig(buffer_size=16, batch_size=16)
    check_command_line(["game=kuhn", "algo=vdn", "vdn.buffer_size=64", "vdn.batch_size=64"])


def test_a_learner_built_from_a_changed_config_refuses_it():
    import games
    from marl.configs import ValueDecompConfig
    from marl.value_decomp import ValueDecomp

    cfg = ValueDecompConfig(mixer="vdn", hidden=(8,))
    cfg.buffer_size = 10  # after __post_init__: the learner validates again
    vg = games.VectorGame("openspiel/kuhn_poker", 2, seed=0)
    try:
        with pytest.raises(ValueError, match=r"buffer_size=10 < batch_size=128"):
            ValueDecomp(vg.spec, cfg)
    finally:
        vg.close()


# ------------------------------------------------ M2: a list given to a config group
@pytest.mark.parametrize("group, options", [("algo", "mappo,vdn"), ("game", "kuhn,rps"),
                                            ("population", "none"), ("logger", "csv,none")])
def test_a_list_of_options_for_a_config_group_is_refused(group, options):
    """Before: Hydra loaded every option and the last one's settings won (vdn trained)."""
    first = options.split(",")[0]
    line = _refused("game=kuhn", f"{group}=[{options}]")
    assert line.startswith(f"{group}=[{options}]: the config group {group} takes one option "
                           "(a list loads each one and the last one's settings win); write "
                           f"{group}={first}"), line


def test_the_list_is_refused_through_main_before_the_run(monkeypatch, tmp_path, capsys):
    line = _failed([*SMALL, "algo=[mappo,vdn]"], monkeypatch, tmp_path, capsys)
    assert line == ("algo=[mappo,vdn]: the config group algo takes one option (a list loads "
                    "each one and the last one's settings win); write algo=mappo or algo=vdn; "
                    "or train each in turn: -m algo=mappo,vdn"), line


# ------------------------------------------------ L1: ~key
@pytest.mark.parametrize("arg, words", [
    ("~seed", "~seed: a setting cannot be deleted (the run would take the schema's default "
              "without a word); write seed=<value>"),
    ("~frames", "~frames: a setting cannot be deleted"),
    ("~game", "~game: a config group's option cannot be deleted (the run would take the "
              "schema's defaults without a word); write game=<option> (climbing, kuhn, "),
    ("~experiment", "~experiment: a config group's option cannot be deleted"),
    ("~algo", "~algo: a config group's option cannot be deleted"),
    ("~mappo", "~mappo: a section cannot be deleted (the run would take the schema's defaults "
               "without a word); set its keys (mappo.<key>=<value>), or leave it"),
    ("~mappo.lr", "~mappo.lr: a setting of the mappo section cannot be deleted; write "
                  "mappo.lr=<value> (selfplay-train ... --cfg job shows its value)"),
    ("~mappo.net.hidden", "~mappo.net.hidden: a setting of the mappo section cannot be "
                          "deleted; write mappo.net.hidden=<value>"),
    ("~game.kwargs", "~game.kwargs: a setting of the game section cannot be deleted; write "
                     "game.kwargs={}"),
    ("~population.generations", "~population.generations: a setting of the population "
                                "section cannot be deleted"),
])
def test_deleting_a_setting_says_what_to_write(arg, words):
    """Before: ~seed, ~game, ~experiment took the schema's defaults without a word; ~mappo.lr
    and ~game.kwargs said "MAPPOConfig (DictConfig) does not support deletion"."""
    assert _refused(arg).startswith(words)


def test_deletions_that_mean_something_still_pass():
    check_command_line(["game=kuhn", "~game.kwargs.players"])  # drops one argument
    check_command_line(["~game", "game.name=openspiel/kuhn_poker"])  # the CLI writes it so
    check_command_line(["~hydra.searchpath"])


def test_a_deleted_seed_is_refused_through_main(monkeypatch, tmp_path, capsys):
    line = _failed([*SMALL, "~seed"], monkeypatch, tmp_path, capsys)
    assert line.startswith("~seed: a setting cannot be deleted"), line


# ------------------------------------------------ L3: game.kwargs=null
def test_null_game_kwargs_names_the_empty_mapping(monkeypatch, tmp_path, capsys):
    """Before: "field 'game.kwargs' is not Optional", and no accepted form."""
    line = _failed([*SMALL, "game.kwargs=null"], monkeypatch, tmp_path, capsys)
    assert line == ("game.kwargs=null: a game's arguments are a mapping, not null; write "
                    "game.kwargs={} for none (the game's own defaults)"), line


# ------------------------------------------------ L4: runner keys a run does not read
def _notes(overrides: list[str], runner: str = "local", kind: str = "none",
           rollout_workers: int = 0) -> list[str]:
    from populations.experiment import ExperimentConfig
    from populations.experiment_config import PopulationConfig, RunnerConfig
    from populations.train_overrides import unused_overrides

    exp = ExperimentConfig(population=PopulationConfig(kind=kind),
                           runner=RunnerConfig(kind=runner, rollout_workers=rollout_workers))
    return unused_overrides(exp, overrides)


def test_ray_only_runner_keys_beside_runner_local_are_warned():
    """Before: runner.workers=4 runner.address=nohost:1 with runner=local, nothing said."""
    assert _notes(["runner.workers=4", "runner.address=nohost:1"]) == [
        "runner.workers=4 is not used with runner.kind=local: only runner=ray reads it",
        "runner.address=nohost:1 is not used with runner.kind=local: only runner=ray reads it"]
    assert _notes(["runner.rollout_workers=2"]) == []  # read by a local run too


def test_league_learner_keys_outside_a_league_are_warned():
    (note,) = _notes(["runner.learners=2"], runner="ray", kind="psro")
    assert note.startswith("runner.learners=2 is not used with population.kind=psro: only a "
                           "league's Ray learner actors read it (population="), note
    assert _notes(["runner.learners=2", "runner.workers=3"], runner="ray", kind="league") == []
    # a single run on Ray without rollout workers: the one line naming them all, as before
    (note,) = _notes(["runner.address=nohost:1"], runner="ray")
    assert note.startswith("runner=ray is not used by a population=none run") and \
        "(runner.address=nohost:1 unused too)" in note, note


# ------------------------------------------------ L10: WANDB_MODE=disabled
def test_a_disabled_wandb_summary_names_the_database(monkeypatch, tmp_path, capsys):
    """Before: ``metrics : <run>/wandb``, a folder holding only last_step and run_id."""
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    run = tmp_path / "run"
    train_here([*SMALL, "logger=wandb", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("metrics    :"))
    assert line == (f"metrics    : {run / 'league.db'} (WANDB_MODE=disabled: wandb recorded "
                    "nothing; the metrics are in the database, selfplay-dashboard shows them)")
    with sqlite3.connect(run / "league.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] > 0


# ------------------------------------------------ sec38: a read-only open of a link
def _wal_database(path: Path) -> None:
    from populations.db import LeagueDB

    LeagueDB(path).close()  # a league database, in WAL mode
    assert not os.path.exists(f"{path}-wal")


def test_a_read_only_open_of_a_linked_database_is_refused_and_writes_nothing(tmp_path):
    """Before: the open went through the link and SQLite made ``victim.db-shm`` and
    ``-wal`` beside the target, outside the run folder (a refused resume did it)."""
    from populations.db import LeagueDB, LeagueDBError

    outside = tmp_path / "outside"
    outside.mkdir()
    _wal_database(outside / "victim.db")
    link = tmp_path / "run" / "league.db"
    link.parent.mkdir()
    link.symlink_to(outside / "victim.db")
    with pytest.raises(LeagueDBError, match=r"league database file .* is a link \(to "):
        LeagueDB(link, readonly=True)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.db"]
    LeagueDB(link, immutable=True).close()  # immutable (the dashboard's): makes no file
    assert sorted(p.name for p in outside.iterdir()) == ["victim.db"]


# ------------------------------------------------ L7: a game preset of the user's own
def test_a_bad_argument_of_a_users_game_preset_names_its_file(monkeypatch, tmp_path, capsys):
    """Before: ``bad parameter for openspiel/kuhn_poker: 'playerz' unknown`` without the file
    that set it, where a section's refusal names it (``bad config: myconf/...yaml: ...``)."""
    (tmp_path / "myconf" / "game").mkdir(parents=True)
    (tmp_path / "myconf" / "game" / "bad_game.yaml").write_text(
        "# @package _global_\ngame:\n  name: openspiel/kuhn_poker\n  kwargs:\n    playerz: 2\n")
    args = ["--config-dir", "myconf", "game=bad_game", *SMALL[1:]]
    line = _failed(args, monkeypatch, tmp_path, capsys)
    assert line == ("myconf/game/bad_game.yaml: bad parameter for openspiel/kuhn_poker: "
                    "'playerz' unknown; accepted: ['players']"), line
    # given on the command line, it is the line's own: no file named
    line = _failed([*args, "game.kwargs.playerz=3"], monkeypatch, tmp_path, capsys)
    assert line.startswith("bad parameter for openspiel/kuhn_poker: 'playerz' unknown"), line


# ------------------------------------------------ L2: the keys listed once each
def test_an_unknown_top_level_key_lists_each_key_once(monkeypatch, tmp_path, capsys):
    """Before: ``..., population, runner, logger, llm, maddpg, mappo, vdn, qmix``: the
    learners' sections, fields of the experiment too, were listed a second time."""
    line = _failed([*SMALL, "+newkey=1"], monkeypatch, tmp_path, capsys)
    head = ("newkey: not a key of the experiment nor the section of a registered learner; "
            "keys of the config: ")
    assert line.startswith(head), line
    keys = line.removeprefix(head).split(", ")
    assert len(keys) == len(set(keys)) and {"seed", "mappo", "llm", "logger"} <= set(keys), keys
