"""The algo x game matrix, derived from the capabilities learners declare: every shipped
``algo`` preset on every shipped ``game`` preset, composed as ``selfplay-train`` composes
(Hydra, the typed schema) with default settings and a tiny budget, run in process. A
compatible pair trains (at least one update) and records its snapshot and matches; an
incompatible one is refused in one line before any run folder exists (and the command line
says so in one line, exit 2)."""

import dataclasses
import functools
import os
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401 - registers the schema the configs compose over
from marl import registry
from marl.registry import IncompatibleError
from populations.experiment import ExperimentConfig, GameConfig, run_experiment
from populations.loggers import LoggerConfig
from tests import subprocs

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
ALGOS = sorted(p.stem for p in (CONFIGS / "algo").glob("*.yaml"))
GAMES = sorted(p.stem for p in (CONFIGS / "game").glob("*.yaml"))
TINY = ["num_envs=2", "frames=8", "eval_episodes=1", "progress=false", "logger=none",
        "mappo.rollout_steps=2", "mappo.epochs=1", "mappo.minibatches=1",
        *(f"{s}.{k}=4" for s in ("vdn", "qmix", "maddpg") for k in ("learning_starts",
                                                                     "batch_size")),
        "llm.iterations=1", "llm.grpo.group_size=2", "llm.grpo.groups_per_step=1",
        "llm.corpus_episodes=4"]


def _prepared(algo: str, game: str) -> ExperimentConfig:
    overrides = [f"algo={algo}", f"game={game}", *TINY]
    if "max_cycles" in (CONFIGS / "game" / f"{game}.yaml").read_text():
        overrides.append("game.kwargs.max_cycles=4")  # MPE: short episodes, same game
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    assert isinstance(exp, ExperimentConfig)
    return exp


@functools.cache
def _game_preset(game: str) -> tuple[str, dict]:
    """The game preset's name and kwargs, composed once per preset (a compose takes ~0.3 CPU
    s, and the matrix asks each preset once per algo)."""
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=[f"game={game}"])
    return cfg.game.name, OmegaConf.to_container(cfg.game.kwargs)


def _game(game: str) -> games.Game:
    name, kwargs = _game_preset(game)
    return games.make(name, **kwargs)


def _spec(game: str) -> games.GameSpec:
    return _game(game).spec


@functools.cache
def _algo_name(preset: str) -> str:
    with initialize_config_module(config_module="configs", version_base=None):
        return str(compose(config_name="config", overrides=[f"algo={preset}"]).algo)


def test_every_algo_preset_names_a_registered_learner():
    import llm_agents.learner  # noqa: F401 - populations registers llm_grpo this way

    assert {_algo_name(a) for a in ALGOS} <= set(registry.names())


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("algo", ALGOS)
def test_algo_game_pair(algo, game, tmp_path):
    name = _algo_name(algo)
    g = _game(game)
    if not registry.compatible(name, g.spec, text_views=not callable(getattr(g, "batched", None))):
        run_dir = tmp_path / "run"
        with pytest.raises(IncompatibleError) as err:
            run_experiment(_prepared(algo, game), run_dir)
        msg = str(err.value)
        assert "\n" not in msg and f"algo={name}" in msg and "algos that play it" in msg
        assert not run_dir.exists()  # refused before the run folder was made
        return
    summary = run_experiment(_prepared(algo, game), tmp_path / "run")
    db = sqlite3.connect(summary.database)
    updates = db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    snaps = db.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0]
    matches = db.execute("SELECT COUNT(*) FROM matches").fetchone()[0]
    db.close()
    assert updates >= 1 and snaps >= 1 and matches >= 1, (updates, snaps, matches)


def test_incompatible_pair_from_the_command_line_is_one_line(tmp_path):
    # from the test zygote (tests.subprocs): the property is the CLI's refusal, not its imports
    res = subprocs.run([sys.executable, "-m", "populations.cli", "algo=maddpg", "game=kuhn"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(CONFIGS.parent)})
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "algo=maddpg cannot play openspiel/kuhn_poker" in lines[0]
    assert "turn-based" in lines[0] and "no joint action" in lines[0] and "'vdn'" in lines[0]
    assert not (tmp_path / "runs").exists()


@dataclass(frozen=True)
class _TinyPPOConfig:
    rollout_steps: int = 2  # steps per copy between updates


def _tiny_ppo(spec, cfg, agents=None, device="cpu", seed=0):
    from marl.mappo import MAPPO, MAPPOConfig

    return MAPPO(spec, MAPPOConfig(rollout_steps=cfg.rollout_steps, epochs=1, minibatches=1),
                 agents=agents, device=device, seed=seed)


def test_a_learner_registered_by_user_code_runs_as_an_experiment(tmp_path):
    """One decorator in the user's module is all an experiment needs (no schema field: its
    config's defaults), and the capability check applies to it like to any learner."""
    from marl.mappo import MAPPO, MAPPO_CAPABILITIES

    registry.register_learner("tiny_ppo", config=_TinyPPOConfig, policy="mappo",
                              capabilities=MAPPO_CAPABILITIES, factory=_tiny_ppo)(MAPPO)
    try:
        cfg = ExperimentConfig(algo="tiny_ppo", game=GameConfig("openspiel/kuhn_poker"),
                               frames=16, num_envs=2, eval_episodes=1, progress=False,
                               logger=LoggerConfig(kind="none"))
        summary = run_experiment(cfg, tmp_path / "run")
        assert summary.table[0]["member"] == "tiny_ppo"
        turn_based_only = dataclasses.replace(MAPPO_CAPABILITIES, simultaneous=False)
        registry.register_learner("tiny_ppo_tb", config=_TinyPPOConfig, policy="mappo",
                                  capabilities=turn_based_only, factory=_tiny_ppo)(MAPPO)
        with pytest.raises(IncompatibleError, match="turn-based games only"):
            registry.check_compatible("tiny_ppo_tb", _spec("rps"))
    finally:
        registry._LEARNERS.pop("tiny_ppo", None)
        registry._LEARNERS.pop("tiny_ppo_tb", None)
