"""Mixed-algorithm leagues: learners of different algorithms (MAPPO, MADDPG, VDN/QMIX) as
members of one league on a competitive MPE game. Each trains against the others' snapshots
(``Learner.seat_mask``), and every member's snapshots are rated on one scale."""

import sqlite3
from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401 - registers the schema the configs compose over
from marl.maddpg import MADDPGConfig
from marl.mappo import MAPPOConfig
from marl.value_decomp import ValueDecompConfig
from populations.experiment import (
    ExperimentConfig,
    GameConfig,
    PopulationConfig,
    _league_config,
    _league_members,
    league_algos,
    league_table,
)
from populations.league import League
from populations.loggers import LoggerConfig

TAG = GameConfig("pettingzoo/mpe2.simple_tag_v3", {"max_cycles": 10})
OFF_POLICY = dict(batch_size=32, learning_starts=100)


def _config(members: list[str], game: GameConfig = TAG) -> ExperimentConfig:
    return ExperimentConfig(
        experiment="mixed", num_envs=4, eval_episodes=2, progress=False,
        logger=LoggerConfig(kind="none"), game=game,
        mappo=MAPPOConfig(rollout_steps=25),
        maddpg=MADDPGConfig(**OFF_POLICY),
        vdn=ValueDecompConfig(mixer="vdn", **OFF_POLICY),
        qmix=ValueDecompConfig(mixer="qmix", **OFF_POLICY),
        population=PopulationConfig(kind="league", generations=2, frames_per_generation=200,
                                    members=members))


def test_every_registered_step_learner_can_join_a_league():
    for algo in ("mappo", "ippo", "maddpg", "vdn", "qmix"):
        assert algo in league_algos() and f"{algo}_exploiter" in league_algos()


def test_mixed_league_rates_every_member_on_one_scale(tmp_path):
    """MAPPO, MADDPG and VDN in one league on simple_tag (adversaries against a good agent):
    2 generations, every snapshot rated, members meet each other in evaluation matches, and
    in training each learner played copies where another policy held a team. (QMIX: the
    simple_adversary test and the shipped preset.)"""
    value_decomp = "vdn"
    cfg = _config(["mappo", "maddpg", value_decomp])
    members = _league_members(cfg, tmp_path)
    assert [m.name for m in members] == ["mappo", "maddpg", value_decomp]
    league = League(_league_config(cfg), tmp_path / "run", members=members)
    try:
        league.run()
        db, run = league.db, league.run_id
        table = league_table(db, run)
        assert {r["member"] for r in table} == {"mappo", "maddpg", value_decomp}
        for name in ("mappo", "maddpg", value_decomp):
            assert [s.version for s in league.store.snapshots(name)] == [0, 1, 2]
        assert all(r["mu"] is not None and r["pairs"] > 0 for r in table)  # all rated
        member_of = {s.id: s.member for s in db.snapshots(run)}
        pairs = {frozenset({member_of[s] for s in m.seats.values()}) for m in db.matches(run)}
        for a, b in (("mappo", "maddpg"), ("mappo", value_decomp), ("maddpg", value_decomp)):
            assert frozenset({a, b}) in pairs, (a, b, pairs)
        for key in ("mappo/losses/pg_loss", "maddpg/losses/critic_loss",
                    f"{value_decomp}/losses/td_loss"):
            assert db.metric(run, key), key  # every member trained in the league
    finally:
        league.close()
    for m in members[1:]:  # off-policy members stored copies where an opponent held a team
        seated = m.learner.buffer.data["seated"][: len(m.learner.buffer)].numpy()
        assert seated.any(1).all()  # a copy nobody of the learner's played is never stored
        assert (~seated).any(), m.name
        assert seated.all(1).any(), m.name  # and self-play copies


def test_mixed_league_on_simple_adversary(tmp_path):
    """The other competitive MPE game: one adversary against two good agents."""
    adversary = GameConfig("pettingzoo/mpe2.simple_adversary_v3", {"max_cycles": 10})
    cfg = _config(["maddpg", "qmix"], adversary)
    league = League(_league_config(cfg), tmp_path / "run",
                    members=_league_members(cfg, tmp_path))
    try:
        league.run()
        table = league_table(league.db, league.run_id)
        assert {(r["member"], r["version"]) for r in table} == {
            (m, v) for m in ("maddpg", "qmix") for v in range(3)}
        assert all(np.isfinite(r["mu"]) for r in table)
    finally:
        league.close()


def _compose(overrides: list[str]):
    with initialize_config_module(config_module="configs", version_base=None):
        return compose(config_name="config", overrides=overrides)


def test_mixed_algo_league_preset_runs_through_selfplay_train(tmp_path):
    """The shipped preset, composed as ``selfplay-train experiment=mixed_algo_league``
    composes it, at small settings: MAPPO+GNN, MADDPG, QMIX and LLM-team snapshots in one
    league table."""
    from populations.experiment import run_experiment

    cfg = OmegaConf.to_object(_compose([
        "experiment=mixed_algo_league", "num_envs=4", "eval_episodes=2", "progress=false",
        "logger=none", "population.generations=1", "population.frames_per_generation=200",
        "mappo.rollout_steps=25", "llm.iterations=1", "llm.grpo.group_size=2",
        "llm.grpo.groups_per_step=2", "llm.corpus_episodes=10", "game.kwargs.max_cycles=5",
        "llm.tiny.n_layer=1", "llm.tiny.n_embd=32", "llm.tiny.n_head=2",
        *(f"{s}.{k}=32" for s in ("vdn", "qmix", "maddpg")
          for k in ("learning_starts", "batch_size"))]))
    assert isinstance(cfg, ExperimentConfig) and cfg.experiment == "mixed_algo_league"
    summary = run_experiment(cfg, tmp_path / "run")
    kinds = {r["kind"] for r in summary.table}
    assert {"mappo", "maddpg", "llm"} <= kinds and kinds & {"vdn", "qmix"}
    assert all(r["mu"] is not None for r in summary.table)
    db = sqlite3.connect(Path(summary.database))
    # what test_cli's run of every shipped experiment checks (it leaves this one to here)
    count = lambda table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: E731
    assert count("members") >= 1 and count("snapshots") >= 1 and count("metrics") >= 1
    assert count("matches") > 0
