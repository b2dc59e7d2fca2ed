"""Walk 26 leftovers the coordinator landed after the helpers' reports.

* ``experiment=tool_team_llm population=self_play`` was refused with a hint to group the
  cooperative task's seats into teams (``game.kwargs.teams=...``), which only trained a
  league of draws: it is refused as cooperative, before the run folder.
* ``'llm.role_prompts={reader: ..., writer: ...}'`` (README's form for your own task's
  roles) was always refused by Hydra (``Key 'reader' is not in struct``).
"""

from __future__ import annotations

import pytest

from tests.populations.test_fix26g_llm_runs import FAST, _refused
from tests.populations.test_walk18_cli_more import _train


def test_a_league_on_a_cooperative_task_is_refused_as_cooperative(monkeypatch, tmp_path,
                                                                   capsys):
    line = _refused(["experiment=tool_team_llm", "population=self_play"], monkeypatch,
                    tmp_path, capsys)
    assert "is cooperative" in line and "groups its seats" not in line, line


def test_role_prompts_for_the_games_roles_are_taken_without_a_plus(monkeypatch, tmp_path,
                                                                   capsys):
    """Kuhn's roles are player_0/player_1: the mapping form reaches the run (a misspelled
    key is refused by the role check, not by Hydra's struct)."""
    line = _refused([*FAST, "progress=false", "llm.role_prompts={player_0: a, plyer_1: b}"],
                    monkeypatch, tmp_path, capsys)
    assert "llm.role_prompts has role 'plyer_1'" in line, line
    run = tmp_path / "ok"
    _train([*FAST, "progress=false", "frames=1", "llm.role_prompts={player_0: a, player_1: b}",
            f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert (run / "league.db").exists()


def test_a_sweep_whose_learner_seed_matches_one_seed_runs_that_job(tmp_path, monkeypatch,
                                                                     capsys):
    """vdn.seed=1 is refused unless seed=1: of -m seed=0,1 job 1 can run. The sweep check
    grouped jobs apart from their seed and refused 'all 2 jobs' from job 0's check
    (review of f4cdfeb)."""
    with pytest.raises(SystemExit) as exit_:
        _train(["-m", "algo=vdn", "game=kuhn", "vdn.seed=1", "seed=0,1", "frames=200",
                "eval_episodes=2", "logger=none", "progress=false",
                f"hydra.sweep.dir={tmp_path / 'sweep'}"], monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("selfplay-train: job 0 (seed=0) cannot run: "), err
    assert "vdn.seed=1" in err[-1] and err[-1].endswith("drop it from the sweep"), err


def test_psro_counts_take_numpy_integers():
    """PSROConfig checked isinstance(n, int) (8719f11): np.int64(4) was refused, where every
    other count takes numpy integers (marl.configs.is_integer)."""
    import numpy as np

    from populations.psro_config import PSROConfig

    cfg = PSROConfig(num_envs=np.int64(4), episodes_per_entry=np.int64(8))
    assert cfg.num_envs == 4
    with pytest.raises(ValueError, match=r"population.psro.num_envs=2.5; expected an integer"):
        PSROConfig(num_envs=2.5)


def test_league_seed_is_bounded_and_named_as_the_flag(tmp_path, capsys):
    """LeagueConfig took seed=2**63 (which crashed a league after its first checkpoint, as an
    experiment's seed= is bounded for), and python -m populations.league --seed -1 named the
    Python field 'seed=-1' where every other count names its flag."""
    from populations import league_cli
    from populations.league import LeagueConfig

    with pytest.raises(ValueError, match=r"seed=4611686018427387904; expected an integer from "
                                         r"0 to 4611686018427387903"):
        LeagueConfig(game="openspiel/kuhn_poker", seed=2**62)
    with pytest.raises(SystemExit) as stop:
        league_cli.main(["--run-dir", str(tmp_path / "r"), "--game", "openspiel/kuhn_poker",
                         "--seed", "-1"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--seed -1" in err and "Traceback" not in err, err


def test_the_losses_panel_leaves_per_role_gradient_norms_to_their_panel(tmp_path):
    """An LLM team logs losses/grad_norm/<role>: the Losses panel drew them beside pg_loss
    (its pattern left out only a key ending in grad_norm) (walk 26c)."""
    from populations.dashboard import queries
    from populations.db import LeagueDB

    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", experiment="default", game="g")
    db.log_metrics(run, 100, {"losses/pg_loss": 0.1, "losses/grad_norm": 2.0,
                              "losses/grad_norm/scout": 1.0, "llm/losses/grad_norm/solver": 3.0})
    panels = {p["title"]: {s["key"] for s in p["series"]}
              for p in queries.learner_panels(db, run)["panels"]}
    db.close()
    assert panels["Losses"] == {"losses/pg_loss"}
    assert {"losses/grad_norm/scout", "llm/losses/grad_norm/solver"} <= panels["Gradient norm"]
