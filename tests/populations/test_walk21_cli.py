"""``selfplay-train`` / ``selfplay-eval`` messages that walk 21 found: out-of-memory and
overflow errors while a run starts (a traceback, exit 1, the run folder left behind), a hint
said twice, ``runner=ray`` unused without a word, the closing table's ``eval_ci95`` printed
``None``, and small messages (a file given as the run folder, a path as a module, a config
group set to null, an empty or new ``--db``)."""

from __future__ import annotations

import pytest

from tests.populations.eval_cli_run import run_eval
from tests.populations.test_eval_names import snapshots  # noqa: F401
from tests.populations.test_walk18_cli_more import _train
from tests.populations.test_walk19_experiment import _refused, own_learner  # noqa: F401

SMALL = ["game=kuhn", "frames=64", "num_envs=2", "eval_episodes=2", "progress=false"]


def _failed(argv: list[str], monkeypatch, tmp_path, capsys) -> str:
    """``selfplay-train argv`` in this process into ``tmp_path/runs/x``: its one line on stderr
    (exit 2), after checking that no run folder is left."""
    run = tmp_path / "runs" / "x"
    with pytest.raises(SystemExit) as stop:
        _train([*argv, f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert len(err) == 1 and err[0].startswith("selfplay-train: "), err
    assert not (tmp_path / "runs").exists(), list(run.iterdir())
    return err[0].removeprefix("selfplay-train: ")


# ------------------------------------------------- 1. out of memory, overflowing sizes
def test_an_overflowing_size_in_the_first_update_is_one_line_and_no_folder(
        tmp_path, monkeypatch, capsys):
    """Before: ``RuntimeError: Storage size calculation overflowed`` in a traceback (exit 1),
    the folder left with league.db, settings.json and snapshots. (A bound on minibatches may
    refuse it earlier, in the config: one line and no folder all the same.)"""
    line = _failed([*SMALL, f"mappo.minibatches={10**20}"], monkeypatch, tmp_path, capsys)
    assert "minibatches" in line, line


@pytest.mark.parametrize("error", [
    "can't allocate memory: you tried to allocate 220000000000 bytes",
    "Storage size calculation overflowed with sizes=[-1]",
    "CUDA out of memory. Tried to allocate 20.00 GiB",
    MemoryError, OverflowError])
def test_memory_and_overflow_errors_while_training_name_what_failed(
        error, tmp_path, monkeypatch, capsys):
    import marl.mappo_update

    def update(learner):
        if isinstance(error, str):
            raise RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. {error}")
        raise error("cannot fit")

    monkeypatch.setattr(marl.mappo_update, "ppo_update", update)
    line = _failed([*SMALL, "mappo.minibatches=4"], monkeypatch, tmp_path, capsys)
    kind = "RuntimeError" if isinstance(error, str) else error.__name__
    assert line.startswith(f"out of memory or a size too large: {kind}: "), line
    assert "enforce fail" not in line, line
    assert "test_walk21_cli.py:" in line, line  # where it was raised
    assert "lower the run's sizes (a replay buffer_size" in line, line  # none given


def test_a_learner_built_out_of_memory_says_to_lower_its_sizes(tmp_path, monkeypatch, capsys):
    """Before: the learner's build error alone (LearnerBuildError), no word of sizes. (The
    buffer is refused above 10**9 now; a size under every bound may still not fit.)"""
    import marl.value_decomp

    def init(self, *args, **kwargs):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
                           "can't allocate memory: you tried to allocate 22000000000 bytes")

    monkeypatch.setattr(marl.value_decomp.ValueDecomp, "__init__", init)
    line = _failed([*SMALL, "algo=vdn", "vdn.buffer_size=500000000"], monkeypatch, tmp_path,
                   capsys)
    assert line.startswith("learner vdn could not be built: RuntimeError: DefaultCPUAllocator: "
                           "can't allocate memory: you tried to allocate 22000000000 bytes (at "),\
        line
    assert "test_walk21_cli.py:" in line, line
    assert "lower the sizes given (vdn.buffer_size=500000000)" in line, line


def test_other_runtime_errors_stay_tracebacks(tmp_path, monkeypatch):
    import marl.mappo_update

    def update(learner):
        raise RuntimeError("a bug")

    monkeypatch.setattr(marl.mappo_update, "ppo_update", update)
    with pytest.raises(SystemExit) as stop:  # Hydra's report of a bug: its traceback
        _train([*SMALL, f"hydra.run.dir={tmp_path / 'r'}"], monkeypatch, tmp_path)
    assert stop.value.code == 1


# ------------------------------------------------- 2. a hint said once
@pytest.mark.parametrize(("override", "line"), [
    ("+walk19_algo.lrr=0.5", "walk19_algo.lrr: Key 'lrr' not in 'OwnConfig'; nearest: "
                             "walk19_algo.lr"),
    ("+walk19_algo.net.widht=4", "walk19_algo.net.widht: Key 'widht' not in 'OwnNet'; "
                                 "nearest: walk19_algo.net.width"),
])
@pytest.mark.usefixtures("own_learner")
def test_an_own_learners_unknown_key_names_the_nearest_once(
        override, line, tmp_path, monkeypatch, capsys):
    """Before: ``...; nearest: my_algo.lr; nearest: lr``: the error raised ``from None`` in an
    OmegaConf ``except`` block still had that error as its context, whose hint was added."""
    from tests.populations.test_walk19_experiment import MODULE as OWN

    said = _refused([f"imports=[{OWN}]", "algo=walk19_algo", override, "game=kuhn",
                     "frames=64", "progress=false"], monkeypatch, tmp_path, capsys)
    assert said == line


def test_one_line_adds_the_hint_of_a_context_not_suppressed():
    """A preset's unknown key: Hydra raises its error unchained, inside OmegaConf's
    ``except`` (``__context__``, not suppressed): its hint is still added."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from populations.cli_common import one_line
    from populations.experiment import GameConfig

    cfg = OmegaConf.structured(GameConfig)
    try:
        try:
            cfg.nmae  # noqa: B018
        except OmegaConfBaseException:
            raise ValueError("nmae is unknown") from None
    except ValueError as err:
        assert one_line(err) == "nmae is unknown"
        err.__suppress_context__ = False
        assert one_line(err) == "nmae is unknown; nearest: name", one_line(err)


# ------------------------------------------------- 3. runner=ray in a run that does not use it
def _exp(**kwargs):
    from populations.experiment import ExperimentConfig, GameConfig

    return ExperimentConfig(game=GameConfig("openspiel/kuhn_poker"), **kwargs)


def test_runner_ray_in_a_single_run_without_rollout_workers_is_warned():
    """Before: no word; the run trained in this process, ``runner.address`` never tried."""
    from populations.experiment_config import RunnerConfig
    from populations.train_overrides import unused_overrides

    exp = _exp(runner=RunnerConfig(kind="ray", address="127.0.0.1:1"))
    notes = unused_overrides(exp, ["runner=ray", "runner.address=127.0.0.1:1"])
    assert len(notes) == 1, notes
    assert notes[0].startswith(
        "runner=ray is not used by a population=none run without runner.rollout_workers: "
        "mappo trains and evaluates in this process (runner.address=127.0.0.1:1 unused too)"), \
        notes


@pytest.mark.parametrize(("runner", "overrides"), [
    ({"kind": "ray", "rollout_workers": 2}, ["runner=ray", "runner.rollout_workers=2"]),
    ({"kind": "local"}, []),
])
def test_runner_ray_where_it_is_used_is_not_warned(runner, overrides):
    from populations.experiment_config import RunnerConfig
    from populations.train_overrides import unused_overrides

    assert unused_overrides(_exp(runner=RunnerConfig(**runner)), overrides) == []


# ------------------------------------------------- 4. the closing table's eval_ci95
def _closing(rows, capsys) -> str:
    from pathlib import Path

    from populations.cli import print_summary
    from populations.experiment import RunSummary

    run = Path("/nowhere/run")
    print_summary(RunSummary(run, run / "league.db", run / "snapshots", None, rows))
    return capsys.readouterr().out


ROW = {"member": "mappo", "version": 1, "frames": 100, "seconds": 0.2, "final_return": -0.1}


@pytest.mark.parametrize(("eval_return", "cell"), [(1.0, "under 2 episodes"),
                                                   (None, "not recorded")])
def test_eval_ci95_without_an_interval_says_why(eval_return, cell, capsys):
    """Before: ``None`` under ``eval_episodes=1`` (the interval needs two episodes)."""
    out = _closing([{**ROW, "eval_return": eval_return, "eval_ci95": None}], capsys)
    (row,) = [line for line in out.splitlines() if line.lstrip().startswith("mappo")]
    assert row.endswith(f"  {cell}") and "None" not in out, out


def test_eval_ci95_has_a_legend_line(capsys):
    out = _closing([{**ROW, "eval_return": 0.5, "eval_ci95": 0.25}], capsys)
    assert ("\neval_ci95: half-width of the 95 % confidence interval of eval_return (Student's "
            "t over the evaluation episodes; the evaluation's noise, not the spread between "
            "seeds)\n") in out, out


# ------------------------------------------------- 5. small messages
@pytest.mark.parametrize("below", ["", "/run"])
def test_a_file_as_the_run_folder_says_it_is_a_file(below, tmp_path, monkeypatch, capsys):
    """Before: ``[Errno 17] File exists: '.../afile'`` (``[Errno 20] Not a directory``)."""
    (tmp_path / "afile").write_text("x")
    value = f"{tmp_path / 'afile'}{below}"
    import populations.cli as cli

    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    with pytest.raises(SystemExit) as stop:
        _train([*SMALL, f"hydra.run.dir={value}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and started == [] and len(err) == 1, err
    line = err[0]
    assert line == (f"selfplay-train: hydra.run.dir={value}: {tmp_path / 'afile'} is a file, "
                    "not a folder; give the run's folder"), line
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.parametrize("name", ["../x", "mods/games.py", "x.py", "/abs/x"])
def test_a_path_in_imports_says_a_module_name_is_needed(name, tmp_path, monkeypatch, capsys):
    """Before: ``TypeError: the 'package' argument is required to perform a relative import
    for '../x'`` (``No module named 'x'`` for x.py)."""
    line = _refused([f"imports=[{name}]", *SMALL], monkeypatch, tmp_path, capsys)
    assert line.startswith(f"imports: {name!r} is a path; give a module name importable from "
                           f"{tmp_path} (mypkg.games for mypkg/games.py)"), line


def test_a_path_in_evals_import_says_a_module_name_is_needed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_eval(["--game", "openspiel/kuhn_poker", "--db", "r.db", "--import", "../x",
                          "a.pt", "b.pt"], capsys)
    assert code == 2 and err.startswith(
        "selfplay-eval: --import: '../x' is a path; give a module name"), err
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("group", ["experiment", "algo"])
def test_a_config_group_set_to_null_names_it_and_its_options(group, tmp_path, monkeypatch,
                                                             capsys):
    """Before: ``Config group override must be a string or a list. Got NoneType``."""
    from populations.config_groups import group_options

    line = _refused([f"{group}=null", *SMALL], monkeypatch, tmp_path, capsys)
    assert line == f"{group}=null: the config group {group} needs one of its options: " \
                   f"{', '.join(group_options()[group])}", line


def test_an_empty_db_is_refused(tmp_path, monkeypatch, capsys):
    """Before: the empty value named the working folder ('.')."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_eval(["--game", "openspiel/kuhn_poker", "--db", "", "a.pt", "b.pt"], capsys)
    assert code == 2 and err.strip() == (
        "selfplay-eval: --db is empty (an unset shell variable?); give the league database "
        "file to write, e.g. --db eval.db"), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("snapshots")
def test_a_db_in_new_folders_is_noted(request, tmp_path, capsys):
    """Before: ``--db /nonexist/x.db`` made /nonexist silently (a mistyped folder too)."""
    paths = request.getfixturevalue("snapshots")
    db = tmp_path / "new" / "deeper" / "r.db"
    code, _, err = run_eval(["--game", "openspiel/kuhn_poker", "--db", str(db), "--episodes", "1",
                          *paths], capsys)
    assert code == 0, err
    notes = [line for line in err.splitlines() if "note: --db" in line]
    assert notes == [f"selfplay-eval: note: --db {db} makes the new folder {tmp_path / 'new'}"
                     " (and the folders in it)"], err
    code, _, err = run_eval(["--game", "openspiel/kuhn_poker", "--db", str(db), "--episodes", "1",
                          *paths], capsys)
    assert code == 0 and "note: --db" not in err, err  # the folder is there now


# ------------------------------------------------- 6. a league's members under its table
def _league_db(path):
    """Two members of two snapshots each; main's untrained v0 rated highest (it tops the
    table), its newest v1 won 6 of 8 pairs against exploiter's v1."""
    from populations.db import LeagueDB

    db = LeagueDB(path)
    run = db.create_run("default", experiment="default", game="openspiel/kuhn_poker")
    ids = {}
    for member in ("main", "exploiter"):
        mid = db.add_member(run, member, "mappo", ["player_0", "player_1"])
        for v in (0, 1):
            ids[member, v] = db.add_snapshot(mid, v, path.parent / f"{member}{v}.pt", "mappo",
                                             "openspiel/kuhn_poker", ["player_0", "player_1"])
    db.add_ratings(run, 1, [(ids["main", 0], 1010.0, 27.0, 7.0, 4),
                            (ids["main", 1], 1005.0, 26.0, 6.0, 8),
                            (ids["exploiter", 0], 990.0, 24.0, 7.0, 4),
                            (ids["exploiter", 1], 995.0, 23.5, 6.0, 8)])
    db.set_payoffs(run, [(ids["main", 1], ids["exploiter", 1], 0.5, 0.75, 8, False),
                         (ids["exploiter", 1], ids["main", 1], -0.5, 0.25, 8, False)])
    return db, run


def test_a_league_table_is_followed_by_each_members_newest_snapshot(tmp_path, capsys):
    """Before: only every snapshot by mu, members interleaved (main's untrained v0 first),
    and no win rate."""
    from populations.cli import print_summary
    from populations.experiment import RunSummary, league_table

    db, run = _league_db(tmp_path / "league.db")
    table = league_table(db, run)
    db.close()
    assert table[0]["member"] == "main" and table[0]["version"] == 0
    print_summary(RunSummary(tmp_path, tmp_path / "league.db", tmp_path / "snapshots", None,
                             table))
    out = capsys.readouterr().out
    block = out[out.index("each member's newest rated snapshot"):].splitlines()
    assert block[0] == (
        "each member's newest rated snapshot (best mu first): its mu, and its win rate over "
        "the role-swapped "
        "pairs it played (a draw counts 1/2) with the 95 % Wilson interval, as the dashboard "
        "shows them:")
    rows = [line.split() for line in block[1:4]]
    assert rows == [["member", "version", "mu", "win_rate", "95", "%", "interval", "pairs"],
                    ["main", "1", "26.00", "0.75", "[0.41,", "0.93]", "8"],
                    ["exploiter", "1", "23.50", "0.25", "[0.07,", "0.59]", "8"]], block


def test_a_single_runs_table_has_no_member_block(tmp_path, capsys):
    out = _closing([{**ROW, "eval_return": 0.5, "eval_ci95": 0.25}], capsys)
    assert "each member's newest" not in out
