"""Examples run as a user runs them, so they cannot rot.

``examples/public_goods`` is a user's own package (its own ``pyproject.toml``, a game written
against the public ``games`` API only); it is launched through ``selfplay-train`` from its
folder, as its README section says, for one learner, a league and PSRO with sampled payoffs.
"""

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests import subprocs
from tests.subprocs import Ahead, run_together, wanted

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_GOODS = ROOT / "examples" / "public_goods"


def test_nim_example_runs():
    out = subprocs.run(
        [sys.executable, str(ROOT / "examples" / "nim.py")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert "CheckReport(episodes=20" in out
    assert "rewards: {'player_0': -1.0, 'player_1': 1.0}" in out
    # the text an LLM agent reads names only the legal takes ("1 stones left; take 1 to 3")
    assert "You are player_1. 1 stone left; take 1. -> take 1" in out


def test_act_with_policy_example_runs():
    """The README's way to act with a saved policy (``marl.play``): whole episodes, a GNN+GRU
    policy stepped by hand on VMAS, and one PettingZoo env's observation dicts."""
    out = subprocs.run(
        [sys.executable, str(ROOT / "examples" / "act_with_policy.py"), "--frames", "40"],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout
    assert "spread MLP: 4 episodes, mean returns {'agent_0': -" in out
    assert "vmas GNN+GRU: inputs ('graph',), episode returns {'agent_0': [-" in out
    assert "spread MLP on games.to_pettingzoo: returns {'agent_0': -" in out


def test_public_goods_package_declares_its_entry_point():
    import tomllib

    meta = tomllib.loads((PUBLIC_GOODS / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["selfplay.games"] == {"public_goods": "public_goods"}


def _train_job(args, run_dir):
    """``selfplay-train`` in the example's folder (its package importable from there only)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return dict(args=[sys.executable, "-m", "populations.cli", "imports=[public_goods]",
                      "game.name=public_goods", "progress=false", "logger=none",
                      "eval_episodes=2", "num_envs=4", f"hydra.run.dir={run_dir}", *args],
                cwd=PUBLIC_GOODS, capture_output=True, text=True, timeout=600, env=env)


def _database(res, run_dir):
    assert res.returncode == 0, res.stdout + res.stderr
    return sqlite3.connect(run_dir / "league.db")


def _train(args, run_dir):
    return _database(subprocs.run(**_train_job(args, run_dir)), run_dir)


def _count(db, table):
    return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


PUBLIC_GOODS_RUNS = {
    "single": ["frames=400"],
    "league": ["population=self_play", "population.generations=1",
               "population.frames_per_generation=200"],
    "psro": ["population=psro", "population.oracle=rl", "population.oracle_frames=200",
             "population.iterations=1", "population.psro.payoffs=sampled",
             "population.psro.meta_solver=prd", "population.psro.episodes_per_entry=4",
             "population.psro.num_envs=4"],
}
BAD_ARGUMENTS = ["game.kwargs.rounds=0", "game.kwargs.players=4"]
RUN_OF_TEST = {"test_public_goods_trains_from_the_cli": "single",
               "test_public_goods_league_from_the_cli": "league",
               "test_public_goods_psro_with_sampled_payoffs_from_the_cli": "psro"}


def _bad_job(kwargs, run_dir):
    return dict(args=[sys.executable, "-m", "populations.cli", "imports=[public_goods]",
                      "game.name=public_goods", kwargs, f"hydra.run.dir={run_dir}"],
                cwd=PUBLIC_GOODS, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def public_goods(request, tmp_path_factory):
    """The example's CLI runs below, each with its own run folder: started ahead, two at a
    time. Yields ``name -> (CompletedProcess, run folder)``."""
    names = wanted(request, "public_goods", lambda item: RUN_OF_TEST.get(item.originalname)
                   or item.callspec.params["kwargs"])
    folders = {name: tmp_path_factory.mktemp("pg") / "run" for name in names}
    jobs = {name: _train_job(PUBLIC_GOODS_RUNS[name], folders[name])
            if name in PUBLIC_GOODS_RUNS else _bad_job(name, folders[name]) for name in names}
    ahead = Ahead(jobs)
    yield lambda name: (ahead.result(name), folders[name])
    ahead.close()


def test_public_goods_trains_from_the_cli(public_goods):
    db = _database(*public_goods("single"))
    assert db.execute("SELECT game FROM runs").fetchone()[0] == "public_goods"
    assert _count(db, "matches") == 2 and _count(db, "metrics") >= 1


def test_public_goods_league_from_the_cli(public_goods):
    db = _database(*public_goods("league"))
    assert _count(db, "snapshots") >= 2 and _count(db, "matches") >= 1  # v0, v1 rated


def test_public_goods_psro_with_sampled_payoffs_from_the_cli(public_goods):
    db = _database(*public_goods("psro"))
    assert _count(db, "psro_iterations") == 1
    players = {r[0].rsplit("-", 1)[0] for r in db.execute("SELECT name FROM members")}
    # population.psro.players=auto: the two citizens are one team (village), so PSRO's
    # players are the teams, each village member playing both citizen seats
    assert players == {"psro-village", "psro-steward"}


def test_installed_public_goods_needs_no_imports(tmp_path):
    """``pip install`` of the example package: its ``selfplay.games`` entry point makes the
    game known to ``selfplay-train`` from any folder, with no ``imports``."""
    shutil.copytree(PUBLIC_GOODS, tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(tmp_path / "site"),
                    str(tmp_path / "src")], check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    res = subprocs.run(
        [sys.executable, "-m", "populations.cli", "game.name=public_goods", "frames=200",
         "num_envs=4", "eval_episodes=2", "progress=false", "logger=none", "hydra.run.dir=run"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    assert db.execute("SELECT game FROM runs").fetchone()[0] == "public_goods"


@pytest.mark.slow
def test_public_goods_league_with_ray_workers(tmp_path):
    """Ray actors are other processes: they find the game through the variables the CLI sets
    (``SELFPLAY_IMPORTS``, ``PYTHONPATH``), not through the driver's imports."""
    db = _train(["population=self_play", "population.generations=1",
                 "population.frames_per_generation=200", "runner=ray", "runner.workers=1"],
                tmp_path / "ray")
    assert _count(db, "matches") >= 1


@pytest.mark.parametrize("kwargs", BAD_ARGUMENTS)
def test_public_goods_bad_arguments_fail_in_one_line(kwargs, public_goods):
    res, run_dir = public_goods(kwargs)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "public_goods" in res.stderr and not run_dir.exists()


OPENSPIEL_GAME = ROOT / "examples" / "openspiel_game"


def test_users_openspiel_python_game_gets_the_exact_tools(tmp_path):
    """The README's route to exact payoffs and NashConv for a user's game: write it as an
    OpenSpiel Python game (``pyspiel.register_game``) and name it ``openspiel/<name>``."""
    code = ("import high_card, games, pyspiel\n"
            "from populations.exploitability import nash_conv\n"
            "from marl.train import RandomPolicy\n"
            "from open_spiel.python import policy\n"
            "from open_spiel.python.algorithms import exploitability\n"
            "spec = games.make('openspiel/high_card').spec\n"
            "ours = nash_conv('openspiel/high_card', RandomPolicy(spec, seed=0)).nash_conv\n"
            "g = pyspiel.load_game('high_card')\n"
            "print(ours, exploitability.nash_conv(g, policy.UniformRandomPolicy(g)))\n")
    exact, res = run_together(
        dict(args=[sys.executable, "-c", code], cwd=OPENSPIEL_GAME, timeout=300),
        dict(args=[sys.executable, "-m", "populations.cli", "imports=[high_card]",
                   "experiment=kuhn_psro", "game.name=openspiel/high_card",
                   "population.iterations=3", "eval_episodes=2", "progress=false",
                   "logger=none", f"hydra.run.dir={tmp_path / 'psro'}"], cwd=OPENSPIEL_GAME))
    exact.check_returncode()
    out = exact.stdout.split()
    assert float(out[0]) == pytest.approx(float(out[1])) and float(out[0]) > 0.1
    assert res.returncode == 0, res.stderr
    db = sqlite3.connect(tmp_path / "psro" / "league.db")
    nash_conv = [r[0] for r in db.execute(
        "SELECT nash_conv FROM psro_iterations ORDER BY iteration")]
    assert len(nash_conv) == 3 and nash_conv[0] > 0 and nash_conv[-1] == pytest.approx(0, abs=1e-9)
