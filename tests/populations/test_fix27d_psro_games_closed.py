"""PSRO's run code closes the games it builds to look at (its checks, the game's name for a
run's rows, a resume's players): they were left open, and a game may hold a renderer, a
subprocess or a device's memory until ``Game.close`` (``games.core``)."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

import games
from games.openspiel import OpenSpielGame
from populations.experiment import ExperimentConfig, GameConfig, PopulationConfig
from populations.psro import PSROConfig

GAME = "fix27d/closed_kuhn"
BUILT: dict[int, str] = {}
"""Games of :data:`GAME` built and not closed yet: id -> who built it, the file that called
``games.make`` (the first frame outside ``games/``) and that file's functions on the stack,
outermost first (``psro_run.py:check_oracle_config/_made``)."""
EVER: list[str] = []
"""Who built each game of :data:`GAME`, open or closed."""


@games.register(GAME)
class ClosedKuhn(OpenSpielGame):
    """Kuhn poker that keeps count of its open copies and who built them."""

    def __init__(self, **kwargs):
        super().__init__("kuhn_poker", **kwargs)
        games_dir = Path(games.__file__).parent
        frames = traceback.extract_stack()[:-1]
        caller = next(f for f in reversed(frames) if Path(f.filename).parent != games_dir)
        names = [f.name for f in frames if f.filename == caller.filename]
        BUILT[id(self)] = f"{Path(caller.filename).name}:{'/'.join(names)}"
        EVER.append(BUILT[id(self)])

    def close(self) -> None:
        BUILT.pop(id(self), None)
        super().close()


@pytest.fixture(autouse=True)
def _fresh():
    BUILT.clear()
    EVER.clear()


def _cfg(**population) -> ExperimentConfig:
    return ExperimentConfig(game=GameConfig(name=GAME),
                            population=PopulationConfig(kind="psro", **population))


def test_check_oracle_config_closes_the_game_it_checks_stop_nash_conv_on():
    from populations.psro_run import check_oracle_config

    spec = games.make("openspiel/kuhn_poker").spec
    check_oracle_config(_cfg(oracle="exact", psro=PSROConfig(stop_nash_conv=0.1)), spec)
    (who,) = EVER  # the check ran
    assert who.startswith("psro_run.py:check_oracle_config"), who
    assert BUILT == {}, BUILT


def test_a_refused_oracle_closes_the_game_its_list_of_oracles_was_decided_on():
    from populations.psro_run import check_oracle_config

    spec = games.make("openspiel/kuhn_poker").spec
    with pytest.raises(ValueError, match=r"oracles that play it: \['auto', 'exact',"):
        check_oracle_config(_cfg(oracle="maddpg", psro=PSROConfig(payoffs="sampled")), spec)
    # the refusal's list asked whether exact tools serve the game
    (who,) = EVER
    assert who.startswith("psro_run.py:check_oracle_config/") and "/exact" in who, who
    assert BUILT == {}, BUILT


def test_a_psro_run_closes_every_game_psro_run_builds(tmp_path):
    from populations.experiment import run_experiment

    cfg = ExperimentConfig(
        game=GameConfig(name=GAME), eval_episodes=2, num_envs=2, progress=False,
        population=PopulationConfig(
            kind="psro", oracle="rl", oracle_frames=64, iterations=2,
            psro=PSROConfig(payoffs="sampled", episodes_per_entry=2, num_envs=2,
                            nash_conv=False)))
    run_experiment(cfg, tmp_path / "run")
    own = [who for who in EVER if who.startswith("psro_run.py:")]
    # at least the run's name for its rows, and each iteration's recorded matches' (2)
    assert len([w for w in own if "_record_matches" in w]) == 2, EVER
    assert len(own) >= 3, EVER
    left = sorted(who for who in BUILT.values() if who.startswith("psro_run.py:"))
    assert left == [], left
    # and each RL oracle's training copies (num_envs games per best response) once trained
    responses = [who for who in EVER if who.startswith("psro.py:") and "best_response" in who]
    assert len(responses) >= 2 * 2 * 2, EVER  # 2 iterations x 2 players x num_envs=2
    left = [who for who in BUILT.values() if "best_response" in who]
    assert left == [], left


def test_a_resume_closes_the_game_it_reads_the_seats_from(tmp_path):
    from populations.psro_run import _resumed_players

    psro_cfg = PSROConfig(players="auto")
    kept = _resumed_players(psro_cfg, tmp_path, GAME, {}, {"player_0", "player_1"})
    assert kept == psro_cfg
    (who,) = EVER
    assert who.startswith("psro_run.py:_resumed_players"), who
    assert BUILT == {}, BUILT
