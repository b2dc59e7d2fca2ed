"""Learning with tiny random-init models on CPU (fixed seeds), each measured against its own
starting point in the same test, and an LLM member rated against a MAPPO member."""

import logging

import pytest

import games
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.opponents import OpponentPool
from llm_agents.team import Team
from llm_agents.trainer import GRPOConfig, MultiTurnGRPO
from marl.actor_critic import NetConfig
from marl.advantages import AdvantageConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from populations.db import LeagueDB
from populations.evaluation import round_robin
from populations.exploitability import nash_conv
from populations.runners import LocalRunner
from populations.store import PolicyStore

from .conftest import COMPACT, KUHN, RELAY

log = logging.getLogger(__name__)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.benchmark),
                                  pytest.param(2, marks=pytest.mark.benchmark)])
def test_free_generation_learns_to_name_legal_actions(kuhn_tok, make_model, seed):
    """Random init says mostly garbage; invalid output costs 3 chips (more than a poker hand
    can win), so GRPO learns the format first. Holds on 3 seeds (model init and trainer
    seed; 1 and 2 are benchmarks): 0.007 -> 0.999, 0.005 -> 0.999, 0.006 -> 0.997 with seeds
    0, 1, 2."""
    action = ActionConfig(mode="generate", sampling=SamplingConfig(max_new_tokens=2),
                          invalid_penalty=-3.0)
    cfg = GRPOConfig(group_size=8, groups_per_step=16, adv_norm="global", lr=2e-3,
                     minibatch_turns=512, action=action, prompt=COMPACT, device="cpu", seed=seed)
    trainer = MultiTurnGRPO(Team.shared(make_model(kuhn_tok, seed), kuhn_tok), KUHN, cfg)
    before = trainer.evaluate(512)["charts/legal_rate"]
    trainer.train(150)
    after = trainer.evaluate(512)["charts/legal_rate"]
    log.info("legal-action rate (seed %d) %.3f -> %.3f", seed, before, after)
    assert before < 0.1
    assert after > 0.95


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.benchmark),
                                  pytest.param(2, marks=pytest.mark.benchmark)])
def test_kuhn_self_play_in_scoring_mode_halves_exact_exploitability(kuhn_tok, make_model,
                                                                     seed):
    """One model in both seats; advantages centered per (deal group, role) without std
    scaling, an entropy bonus (an entropy-regularized game, as in magnetic mirror descent)
    and a decaying learning rate so the last iterate settles near the equilibrium. 200
    iterations of 16 groups (128 episodes): with 32 groups (this code, 6 Dec) seed 0 ended
    at 0.690 -> 0.185 in 58 s of CPU; with 16 it ends 0.690 -> 0.178, 0.666 -> 0.151,
    0.664 -> 0.133, 0.665 -> 0.145, 0.711 -> 0.202, 0.667 -> 0.178, 0.669 -> 0.154 with
    seeds 0-6 (bounds 0.33-0.36; 1 and 2 are benchmarks) in ~31 s. 8 groups: seed 0 0.318,
    too close. With 32 groups seeds 0-6 had ended 0.156 0.196 0.144 0.226 0.230 0.176 0.146
    (at 55558e3), and 300 iterations gave 0.130, 0.256, 0.110 on seeds 0-2: the rate
    decays over the run, so a shorter run is not the first part of a longer one.

    The last iterate is noisy: the entropy-regularized equilibrium (agent logit QRE at
    temperature 0.2, computed by hand for Kuhn) has NashConv 0.087; a run ends 0.0-0.3 above
    it. Seed 0 (32 groups) with every weight scaled by 1 + 1e-6 * N(0, 1) (3 draws): 0.177,
    0.188, 0.162 (bound 0.345), so the suite's seed stands rounding; with an experiment that
    changed the gradients by ~2e-7 (35b0dbc's gradient-pass prompt dedupe, since undone by
    55558e3) seeds 0-6 ended at 0.132 0.355 0.089 0.140 0.385 0.156 0.156: seeds 1 and 4
    missed the bound there."""
    iterations = 200
    cfg = GRPOConfig(group_size=8, groups_per_step=16, adv_norm="group_role",
                     advantage=AdvantageConfig(scale=False), ent_coef=0.2, lr=6e-4,
                     lr_decay_iterations=iterations, minibatch_turns=1024,
                     action=ActionConfig(mode="score"), prompt=COMPACT, device="cpu", seed=seed)
    trainer = MultiTurnGRPO(Team.shared(make_model(kuhn_tok, seed), kuhn_tok), KUHN, cfg)
    before = nash_conv(KUHN, trainer.policy()).nash_conv
    trainer.train(iterations)
    after = nash_conv(KUHN, trainer.policy()).nash_conv
    log.info("NashConv (seed %d) %.3f -> %.3f", seed, before, after)
    assert before > 0.6  # random init: near-uniform play, tilted towards one token
    assert after < 0.5 * before


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.benchmark),
                                  pytest.param(2, marks=pytest.mark.benchmark)])
def test_cooperative_relay_team_success_rises(multi_tok, make_model, seed):
    """Scout and solver, one model each: relay A, call the calculator, answer its result.
    The claim holds on 3 seeds (model inits and trainer seed; seeds 1 and 2 are benchmarks):
    success 0.30 -> 0.79, 0.32 -> 0.83, 0.29 -> 0.57 measured with seeds 0, 1, 2."""
    team = Team.per_role({"scout": (make_model(multi_tok, 1 + 10 * seed), multi_tok),
                          "solver": (make_model(multi_tok, 2 + 10 * seed), multi_tok)},
                         {"scout": "send A", "solver": "compute with the calculator"})
    cfg = GRPOConfig(group_size=8, groups_per_step=16, adv_norm="group_role", lr=1e-3,
                     minibatch_turns=512, action=ActionConfig(mode="score"), prompt=COMPACT,
                     device="cpu", seed=seed)
    trainer = MultiTurnGRPO(team, "tool/relay", cfg, game_kwargs={"tool/relay": RELAY})
    before = trainer.evaluate(256)["charts/success_rate"]
    trainer.train(60)
    after = trainer.evaluate(256)["charts/success_rate"]
    log.info("relay success (seed %d) %.3f -> %.3f", seed, before, after)
    assert after > before + 0.25


def test_llm_and_mappo_members_play_rated_matches_in_one_league(tmp_path, kuhn_tok, make_model):
    spec = games.make(KUHN).spec
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("mixed", game=KUHN)
    store = PolicyStore(tmp_path / "policies", db, run)
    mappo = MAPPO(spec, MAPPOConfig(net=NetConfig(critic="local"), rollout_steps=16), seed=0)
    train(mappo, games.VectorGame(KUHN, 16, seed=0), frames=1_000, progress=False)
    classic = store.publish("mappo", mappo.policy())
    pool = OpponentPool([load_policy(classic.path)], prob=0.5)  # league play vs the classic
    cfg = GRPOConfig(group_size=4, groups_per_step=8, lr=1e-3, action=ActionConfig(mode="score"),
                     prompt=COMPACT, device="cpu")
    trainer = MultiTurnGRPO(Team.shared(make_model(kuhn_tok), kuhn_tok), KUHN, cfg,
                            opponents=pool)
    first = store.publish("llm", trainer.policy())
    seen = set()
    for _ in range(3):  # some groups meet the MAPPO member, the others are self-play
        batch = trainer.collect()
        seen |= {kind for e in batch.episodes for kind in e.seats.values()}
        trainer.update(batch)
    assert seen == {"team", "mappo"}
    latest = store.publish("llm", trainer.policy())
    assert [s.kind for s in store.snapshots()] == ["mappo", "llm", "llm"]
    ratings = round_robin(db, run, LocalRunner(), spec, KUHN, {}, [classic, first, latest],
                          episodes=8)
    matches = db.matches(run)
    assert len(matches) == 3 * 2 * 8
    mixed = [m for m in matches if set(m.seats.values()) == {classic.id, latest.id}]
    assert len(mixed) == 16 and all(abs(sum(m.returns.values())) < 1e-9 for m in mixed)
    assert set(ratings.elo) == {classic.id, first.id, latest.id}
    assert set(db.latest_ratings(run)) == {classic.id, first.id, latest.id}
    pairs = {(p["row_snapshot"], p["col_snapshot"]) for p in db.payoffs(run)}
    assert (latest.id, classic.id) in pairs and (classic.id, latest.id) in pairs
    db.close()


@pytest.mark.benchmark
def test_lookup_team_success_rises_with_longer_training(multi_tok, make_model):
    """The harder tool task (four dependent steps): a longer run than the default suite's."""
    team = Team.shared(make_model(multi_tok), multi_tok,
                       {"composer": "ask, then answer", "querier": "look up, then tell"})
    cfg = GRPOConfig(group_size=8, groups_per_step=16, adv_norm="group_role", lr=1e-3,
                     minibatch_turns=1024, action=ActionConfig(mode="score"), prompt=COMPACT,
                     device="cpu", seed=0)
    kw = {"tool/lookup": {"num_keys": 4}}
    trainer = MultiTurnGRPO(team, "tool/lookup", cfg, game_kwargs=kw)
    before = trainer.evaluate(256)["charts/success_rate"]
    trainer.train(200)
    after = trainer.evaluate(256)["charts/success_rate"]
    log.info("lookup success %.3f -> %.3f", before, after)
    assert after > before + 0.2
