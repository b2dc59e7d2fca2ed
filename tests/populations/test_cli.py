"""selfplay-train (Hydra): every shipped experiment composes and runs at a tiny budget,
sweeps make one folder per job, config mistakes fail at startup, wandb writes offline."""

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from populations.experiment import ExperimentConfig, run_experiment
from tests import subprocs
from tests.subprocs import Ahead, run_together, wanted

EXPERIMENTS = sorted(p.stem for p in (Path(__file__).parents[2] / "configs" / "experiment").glob(
    "*.yaml"))
# the smallest budget each population kind finishes in
TINY = ["frames=400", "num_envs=4", "eval_episodes=2", "population.generations=1",
        "population.frames_per_generation=400", "population.iterations=2",
        "population.oracle_frames=400", "progress=false",
        "logger=none", "llm.iterations=1", "llm.grpo.group_size=2", "llm.grpo.groups_per_step=2",
        "llm.corpus_episodes=20"]


def _compose(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return compose(config_name="config", overrides=overrides)


def test_shipped_experiments_are_listed():
    assert {"kuhn_psro", "spread_mappo_gnn", "tag_pfsp_league", "main", "kuhn_llm_selfplay",
            "tool_team_llm", "mixed_league"} <= set(EXPERIMENTS)
    assert set(EXPERIMENTS) >= RUN_ELSEWHERE


RUN_ELSEWHERE = {"mixed_algo_league"}
"""Shipped experiments another test composes and runs the same way at small settings, with
this test's checks and more (test_mixed_league: every kind's members train and are rated)."""


@pytest.mark.parametrize("name", [e for e in EXPERIMENTS if e not in RUN_ELSEWHERE])
def test_experiment_composes_and_runs_end_to_end(name, tmp_path):
    cfg = _compose([f"experiment={name}", *TINY])
    exp = OmegaConf.to_object(cfg)
    assert isinstance(exp, ExperimentConfig) and exp.experiment == name
    summary = run_experiment(exp, tmp_path / name)
    db = sqlite3.connect(summary.database)
    count = lambda table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: E731
    assert count("members") >= 1
    assert count("snapshots") >= 1
    assert count("matches") >= 1
    assert count("metrics") >= 1
    assert summary.table
    # the dashboard lists runs by experiment: every league was recorded as 'league'
    assert db.execute("SELECT experiment FROM runs").fetchall() == [(name,)]


def _cli_job(args, cwd, env=None):
    """``selfplay-train args`` in ``cwd``: keyword arguments of ``subprocess.run``."""
    return dict(args=[sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


def _cli(args, cwd, env=None, check=True):
    return subprocs.run(**_cli_job(args, cwd, env), check=check)


def test_cli_cfg_job_prints_the_composed_config(tmp_path):
    out = _cli(["experiment=kuhn_psro", "--cfg", "job"], tmp_path).stdout
    assert "name: openspiel/kuhn_poker" in out and "kind: psro" in out


def test_multirun_makes_one_folder_per_job(tmp_path):
    out = _cli(["-m", "experiment=kuhn_psro", "seed=0,1", "population.iterations=1",
                "eval_episodes=2", "logger=none"], tmp_path)
    assert out.returncode == 0, out.stderr
    dbs = sorted((tmp_path / "multirun").rglob("league.db"))
    assert len(dbs) == 2 and dbs[0].parent != dbs[1].parent


CONFIG_MISTAKES = [
    ("mappo.lrr=0.1", "Key 'lrr' not in 'MAPPOConfig'"),
    ("mappo.lr=fast", "mappo.lr=fast; expected a finite number > 0"),
    ("algo=alphazero", "Could not find 'algo/alphazero'"),
    ("mappo.adv_norm=agentwise", "mappo.adv_norm='agentwise' unknown; choose one of"),
    ("population.matchmaking.rule=elo",
     "population.matchmaking.rule='elo' unknown; choose one of"),
    ("llm.team=solo", "llm.team='solo' unknown; choose one of ['shared', 'per_role']"),
    ("llm.grpo.adv_norm=agentwise", "llm.grpo.adv_norm='agentwise' unknown; choose one of"),
    ("population.members=[mappo,nope]",
     "population.members=['mappo', 'nope']: 'nope' unknown; choose from"),
]
CONFIG_ERRORS = [
    ("num_envs=0", "num_envs=0; expected an integer >= 1"),
    ("device=gpu", "device='gpu' unknown; choose one of cpu, cuda"),
    ("mappo.net.init=bogus", "bad config: mappo.net.init='bogus' unknown; choose one of"),
    ("maddpg.tau=5", "bad config: maddpg.tau=5.0; expected a number in (0, 1]"),
    ("game.name=openspiel/kuhn_pokr", "kuhn_pokr"),
    ("game.name=chesss", "unknown game 'chesss'; registered:"),
    ("game=chess", "Available options in 'game': climbing, kuhn"),
    ("mappo.lrr=0.1", "Key 'lrr' not in 'MAPPOConfig'"),
    ("algo=alphazero", "Could not find 'algo/alphazero'"),
    ("imports=[no_such_module]", "cannot import 'no_such_module'"),
    ("game.kwargs.cards=4", "cards"),  # no "+" needed: game.kwargs is open
    ("--fast", "unrecognized arguments: --fast"),
    ("seed=[1,", "no viable alternative at input '[1,'"),
]


def _startup_args(override):
    return [override, "frames=1"] + (["game=kuhn"] if override.startswith("game.kwargs") else [])


@pytest.fixture(scope="module")
def startup_runs(request, tmp_path_factory):
    """``selfplay-train <override> frames=1``, each in its own empty folder, for the two tests
    below (an override both list runs once): started ahead, two at a time."""
    overrides = wanted(request, "startup_runs", lambda item: item.callspec.params["override"])
    ahead = Ahead({o: _cli_job(_startup_args(o), tmp_path_factory.mktemp("startup"))
                   for o in overrides})
    yield lambda override: (ahead.result(override), ahead.jobs[override]["cwd"])
    ahead.close()


@pytest.mark.parametrize(("override", "message"), CONFIG_MISTAKES)
def test_config_mistakes_fail_at_startup(override, message, startup_runs):
    res, cwd = startup_runs(override)
    assert res.returncode != 0
    assert message in res.stderr + res.stdout
    assert not list(cwd.rglob("league.db"))  # nothing ran


@pytest.mark.parametrize("override", ["game=chess"])
def test_unknown_group_option_lists_the_choices(override, startup_runs):
    res, _ = startup_runs(override)  # the run test_config_errors_... checks too
    assert "Available options in 'game'" in res.stderr and "kuhn" in res.stderr


def test_wandb_logger_writes_offline_run_files(tmp_path):
    res = _cli(["experiment=kuhn_psro", "population.iterations=1", "eval_episodes=2",
                "logger=wandb"], tmp_path, env={"WANDB_MODE": "offline"})
    assert "wandb" in res.stdout
    runs = list(tmp_path.rglob("offline-run-*"))
    assert runs, res.stdout + res.stderr
    assert list(runs[0].glob("*.wandb"))


# ------------------------------------------------------------------ one-line user errors
def _one_line_failure(res, *messages):
    """A user error: exit 2, one line on stderr naming it, no traceback."""
    err = res.stderr.strip()
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert len(err.splitlines()) == 1, err
    for m in messages:
        assert m in err, err
    return err


@pytest.mark.parametrize(("override", "message"), CONFIG_ERRORS)
def test_config_errors_are_one_line_exit_2_and_make_no_run_folder(override, message,
                                                                   startup_runs):
    res, cwd = startup_runs(override)
    _one_line_failure(res, "selfplay-train: ", message)
    assert not list(cwd.iterdir())  # not even an empty run folder


BROKEN_GAME = '''
import numpy as np
import games

@games.register("broken_at_reset")
class Broken(games.Game):
    def __init__(self):
        agents = tuple(games.AgentSpec(a, role=a, team=a) for a in ("a", "b"))
        self.spec = games.GameSpec(
            name="broken_at_reset", agents=agents, obs_shapes={"a": (1,), "b": (1,)},
            action_spaces={a: games.ActionSpace("discrete", n=2) for a in ("a", "b")},
            max_steps=2, simultaneous=True)
    def _reset(self, seed):
        raise games.GameError("broken_at_reset: the board cannot be set up")
    def _step(self, actions): ...
    def acting_agents(self): return ("a", "b")
    def observe(self, agent): return np.zeros(1, np.float32)
    def legal_actions(self, agent): return [0, 1]
    def text_observation(self, agent): return ""
'''


def test_error_found_at_run_time_removes_the_new_run_folder(tmp_path):
    (tmp_path / "brokengame.py").write_text(BROKEN_GAME)
    res = _cli(["imports=[brokengame]", "game.name=broken_at_reset", "frames=64",
                "progress=false", "logger=none", "hydra.run.dir=runs/x/y"], tmp_path, check=False)
    _one_line_failure(res, "selfplay-train: broken_at_reset: the board cannot be set up")
    assert not (tmp_path / "runs").exists()  # the run folder Hydra made, and its parents


def test_failed_resume_keeps_the_folder_it_did_not_create(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    res = _cli(["resume=true", f"hydra.run.dir={run}", "game=kuhn", "frames=64"], tmp_path,
               check=False)
    _one_line_failure(res, "selfplay-train: ")
    assert (run / "notes.txt").read_text() == "mine"


# ------------------------------------------------------------ game.name starts from defaults
def test_game_name_drops_the_default_presets_kwargs(tmp_path):
    name, preset, explicit = run_together(
        _cli_job(["game.name=openspiel/liars_dice", "--cfg", "job"], tmp_path),
        _cli_job(["experiment=tag_pfsp_league", "game.name=openspiel/kuhn_poker", "--cfg", "job"],
                 tmp_path),
        _cli_job(["game=mpe_spread", "--cfg", "job"], tmp_path))
    for res in (name, preset, explicit):
        res.check_returncode()
    game = OmegaConf.create(name.stdout).game
    assert game.name == "openspiel/liars_dice" and dict(game.kwargs) == {}
    assert dict(OmegaConf.create(preset.stdout).game.kwargs) == {}
    # a preset chosen explicitly keeps its arguments
    assert dict(OmegaConf.create(explicit.stdout).game.kwargs) == {"N": 3, "max_cycles": 25}


@pytest.mark.parametrize(
    ("overrides", "kwargs"),
    [
        (["game.kwargs={}"], {}),
        (["game.kwargs={}", "game.kwargs.N=2"], {"N": 2}),
        (["game.kwargs={max_cycles: 10}"], {"max_cycles": 10}),
        (["game.kwargs.max_cycles=10"], {"N": 3, "max_cycles": 10}),  # one key: merged
    ],
)
def test_game_kwargs_dict_replaces_the_presets(overrides, kwargs):
    from populations.command_line import game_overrides
    from populations.train_overrides import prepare

    exp = prepare(_compose(game_overrides(overrides)), overrides)
    assert exp.game.name == "pettingzoo/mpe2.simple_spread_v3"
    assert exp.game.kwargs == kwargs


def test_game_name_runs_from_its_own_defaults(tmp_path):
    res = _cli(["game.name=openspiel/liars_dice", "frames=64", "num_envs=4", "eval_episodes=2",
                "progress=false", "logger=none", "hydra.run.dir=run"], tmp_path)
    assert res.returncode == 0
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    assert db.execute("SELECT game FROM runs").fetchone()[0] == "openspiel/liars_dice"


# --------------------------------------------------------------------------- startup
def _fresh_python(code, cwd):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=True).stdout


def test_help_reads_files_only(tmp_path):
    out = _fresh_python(
        "import sys; sys.argv = ['selfplay-train', '--help']\n"
        "from populations.cli import train_main; train_main()\n"
        "print('heavy:', sorted(m for m in ('torch', 'marl', 'populations.experiment') "
        "if m in sys.modules))", tmp_path)
    assert "game " in out and "kuhn" in out and "imports=" in out
    assert "heavy: []" in out


def test_mappo_does_not_import_torch_geometric(tmp_path):
    """Heavy packages load where they are used: a GNN encoder, a Ray runner, an LLM, wandb."""
    out = _fresh_python("import sys, marl.mappo, populations.experiment, populations.runners\n"
                        "print(sorted(m for m in ('torch_geometric', 'transformers', 'ray', "
                        "'wandb', 'torch._dynamo') if m in sys.modules))", tmp_path)
    assert out.strip() == "[]"


# ------------------------------------------------------------------ selfplay-eval errors
def _eval_job(args, cwd):
    return dict(args=[sys.executable, "-c",
                      "from populations.eval_cli import eval_main; eval_main()", *args], cwd=cwd,
                capture_output=True, text=True, timeout=300)


def _eval(args, cwd):
    return subprocs.run(**_eval_job(args, cwd))


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    import games
    from marl import registry

    spec = games.make("openspiel/kuhn_poker").spec
    return registry.get("mappo").build(spec).policy().save(
        tmp_path_factory.mktemp("pol") / "a.pt")


EVAL_CASES = ["missing", "truncated", "garbage", "bad_meta", "json", "json_list"]


def _eval_case(case, policy_file, folder):
    """``selfplay-eval`` on a broken policy file (or bad ``--game-kwargs``) in ``folder``."""
    pol = folder / "p.pt"
    kwargs = "{}"
    if case == "bad_meta":  # a policy file whose metadata lacks its keys
        import torch

        from marl.core import POLICY_FORMAT

        torch.save({"format": POLICY_FORMAT, "meta": {"kind": "mappo"}, "payload": {}}, pol)
    elif case == "truncated":
        data = policy_file.read_bytes()
        pol.write_bytes(data[: len(data) // 2])
    elif case == "garbage":
        pol.write_bytes(b"not a policy" * 20)
    elif case in ("json", "json_list"):
        pol = policy_file
        kwargs = "{players: 2" if case == "json" else "[2]"
    return _eval_job(["--game", "openspiel/kuhn_poker", "--db", str(folder / "r.db"),
                      "--game-kwargs", kwargs, str(pol), str(pol)], folder)


@pytest.fixture(scope="module")
def eval_runs(request, policy_file, tmp_path_factory):
    """The cases below, each in its own folder: started ahead, two at a time."""
    cases = wanted(request, "eval_runs", lambda item: item.callspec.params["case"])
    ahead = Ahead({c: _eval_case(c, policy_file, tmp_path_factory.mktemp("eval"))
                   for c in cases})
    yield lambda case: (ahead.result(case), ahead.jobs[case]["cwd"])
    ahead.close()


@pytest.mark.parametrize("case", EVAL_CASES)
def test_eval_errors_are_one_line_and_write_no_database(case, eval_runs):
    res, folder = eval_runs(case)
    err = _one_line_failure(res, "selfplay-eval: ")
    assert ("--game-kwargs" in err) == case.startswith("json")
    assert not (folder / "r.db").exists()


def test_eval_import_brings_a_users_game(tmp_path):
    (tmp_path / "brokengame.py").write_text(BROKEN_GAME)
    missing, found = run_together(
        _eval_job(["--import", "nosuchmodule", "--game", "x", "--db", "r.db", "a.pt"], tmp_path),
        _eval_job(["--import", "brokengame", "--game", "broken_at_reset", "--db", "r.db",
                   "a.pt"], tmp_path))
    _one_line_failure(missing, "selfplay-eval: --import: cannot import 'nosuchmodule'")
    _one_line_failure(found, "selfplay-eval: ", "a.pt")  # the game was found: the file is not


# ------------------------------------------------------------- python -m populations.league
def _league_job(args, cwd):
    return dict(args=[sys.executable, "-m", "populations.league", *args], cwd=cwd,
                capture_output=True, text=True, timeout=600)


def _league(args, cwd):
    return subprocs.run(**_league_job(args, cwd))


def test_league_cli_errors_are_one_line(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    game, envs = run_together(
        _league_job(["--run-dir", "run", "--game", "chesss"], tmp_path / "a"),
        _league_job(["--run-dir", "run", "--num-envs", "many"], tmp_path / "b"))
    _one_line_failure(game, "python -m populations.league: unknown game 'chesss'")
    assert not (tmp_path / "a" / "run").exists()
    _one_line_failure(envs,
                      "argument --num-envs: 'many': expected an integer from 1 to 1000000000")
    assert not (tmp_path / "b" / "run").exists()


def test_league_cli_missing_database_next_to_checkpoints(tmp_path):
    small = ["--game", "openspiel/kuhn_poker", "--generations", "1", "--frames-per-generation",
             "64", "--num-envs", "4", "--eval-episodes", "1"]
    assert _league(["--run-dir", "run", *small], tmp_path).returncode == 0
    (tmp_path / "run" / "league.db").unlink()
    res = _league(["--run-dir", "run", "--resume", *small], tmp_path)
    _one_line_failure(res, "python -m populations.league: ")
    assert list((tmp_path / "run" / "checkpoints").iterdir())  # nothing of value removed


# ---------------------------------------------------------------------- entry points
def test_entry_point_games_load_without_imports(tmp_path):
    """An installed package's ``selfplay.games`` entry point (a dist-info folder on the path,
    as ``pip install`` writes it) makes its game known to the CLI and ``games.make``."""
    site = tmp_path / "site"
    (site / "brokengame_pkg-0.1.dist-info").mkdir(parents=True)
    (site / "brokengame.py").write_text(BROKEN_GAME)
    (site / "brokengame_pkg-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: brokengame-pkg\nVersion: 0.1\n")
    (site / "brokengame_pkg-0.1.dist-info" / "entry_points.txt").write_text(
        "[selfplay.games]\nbroken = brokengame\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    out, res = run_together(
        dict(args=[sys.executable, "-c", "import games; print(games.registered())"],
             cwd=tmp_path, env={**os.environ, **env}),
        _cli_job(["game.name=broken_at_reset", "frames=64", "hydra.run.dir=run",
                  "progress=false"], tmp_path, env=env))
    out.check_returncode()
    assert "broken_at_reset" in out.stdout
    _one_line_failure(res, "broken_at_reset: the board cannot be set up")  # found, then ran
    (site / "brokengame.py").write_text("raise RuntimeError('plugin broken')\n")
    res = _cli(["frames=64"], tmp_path, env=env, check=False)
    _one_line_failure(res, "entry point broken = 'brokengame' (selfplay.games) failed to load: "
                      "RuntimeError: plugin broken")


# ------------------------------------------------------------------------ progress bar
def test_progress_bar_shows_each_sides_return_in_self_play(capsys):
    import games
    from marl import registry
    from marl.train import train

    spec = games.make("openspiel/kuhn_poker").spec
    learner = registry.get("mappo").build(spec, seed=0)
    res = train(learner, games.VectorGame("openspiel/kuhn_poker", 8, seed=0), 8 * 25 * 2,
                progress=True)
    assert set(res.side_returns) == {"player_0", "player_1"}
    assert np.allclose(np.add(res.side_returns["player_0"], res.side_returns["player_1"]), 0)
    err = capsys.readouterr().err
    assert "player_0=" in err and "player_1=" in err and "ret=0.00" not in err


def test_train_resume_without_database_next_to_checkpoints(tmp_path):
    league = ["game=kuhn", "population=self_play", "population.generations=1",
              "population.frames_per_generation=64", "num_envs=4", "eval_episodes=1",
              "progress=false", "logger=none", "hydra.run.dir=run"]
    _cli(league, tmp_path)
    (tmp_path / "run" / "league.db").unlink()
    res = _cli([*league, "resume=true"], tmp_path, check=False)
    _one_line_failure(res, "selfplay-train: ", "league.db")
    assert list((tmp_path / "run" / "checkpoints").iterdir())  # kept: it holds checkpoints


def test_meta_solver_and_learner_entry_points(tmp_path):
    """``selfplay.meta_solvers`` load on a name the registry does not know; every
    ``selfplay.*`` group loads when a CLI starts (a learner registers on import)."""
    site = tmp_path / "site"
    info = site / "myplugins-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[selfplay.meta_solvers]\nfirst = my_solvers\n\n[selfplay.learners]\nmine = my_learner\n")
    (site / "my_solvers.py").write_text(
        "import numpy as np\nfrom populations.meta_solvers import register_meta_solver\n"
        "@register_meta_solver('first_member')\n"
        "def first_member(payoffs, full_game=None):\n"
        "    return [np.eye(k)[0] for k in payoffs.shape[1:]]\n")
    (site / "my_learner.py").write_text(
        "import pathlib\npathlib.Path('learner_loaded').write_text('yes')\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out, cfg = run_together(
        dict(args=[sys.executable, "-c", "import numpy as np\n"
                   "from populations.meta_solvers import get_meta_solver\n"
                   "print(get_meta_solver('first_member')(np.zeros((2, 3, 2))))"],
             cwd=tmp_path, env=env),
        _cli_job(["--cfg", "job"], tmp_path, env={"PYTHONPATH": str(site)}))
    out.check_returncode()
    assert "array([1., 0., 0.])" in out.stdout
    cfg.check_returncode()
    assert (tmp_path / "learner_loaded").read_text() == "yes"


def test_sweep_job_error_leaves_no_sweep_folder(tmp_path):
    res = _cli(["-m", "num_envs=0", "seed=0,1", "frames=64"], tmp_path, check=False)
    _one_line_failure(res, "selfplay-train: bad config: num_envs=0")
    assert not list(tmp_path.iterdir())


def test_sweep_over_an_unknown_option_leaves_no_sweep_folder(tmp_path):
    res = _cli(["-m", "algo=mappo,ipo", "frames=64"], tmp_path, check=False)
    _one_line_failure(res, "selfplay-train: In 'config': Could not find 'algo/ipo'; Available "
                           "options in 'algo': ippo, ")
    assert not list(tmp_path.iterdir())


def test_an_interrupted_sweep_resumes_into_its_job_folders(tmp_path):
    """``-m ... resume=true hydra.sweep.dir=D`` wrote into new ``..,resume=True,..`` folders
    ("holds no run"), so a sweep stopped by Ctrl-C could not be resumed; a job it never
    reached (its folder made by Hydra, nothing in it) starts there."""
    args = ["-m", "seed=0,1", "game=kuhn", "frames=64", "num_envs=4", "eval_episodes=2",
            "progress=false", "logger=none", "hydra.sweep.dir=sw"]
    assert _cli(args, tmp_path).returncode == 0
    jobs = sorted((tmp_path / "sw").iterdir())
    jobs = [j for j in jobs if j.is_dir()]
    assert len(jobs) == 2 and all("resume" not in j.name for j in jobs)
    for p in jobs[1].iterdir():  # job 1 as if Ctrl-C came before it started
        if p.name != ".hydra":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    res = _cli([*args, "resume=true"], tmp_path, check=False)
    assert res.returncode == 0, res.stderr
    assert sorted(j for j in (tmp_path / "sw").iterdir() if j.is_dir()) == jobs
    assert "already finished" in res.stderr + res.stdout
    assert (jobs[1] / "snapshots" / "mappo" / "v0000.pt").is_file()
    bad = _cli(["-m", "seed=0", "game=kuhn", "frames=64", "resume=true",
                "hydra.sweep.dir=typo"], tmp_path, check=False)  # a sweep never started
    assert bad.returncode == 2 and "holds no run" in bad.stderr
