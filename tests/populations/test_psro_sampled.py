"""Sampled PSRO payoffs in lockstep (populations.lockstep): the estimates are unbiased with
the variance of independent episodes (checked against exact payoffs and second moments on
Kuhn and Leduc), agree with episodes played through VectorGame, see the views the game
adapter gives, do not depend on the block an entry is computed in, and fall back to playing
episodes where the memo does not apply."""

import logging
import sqlite3

import numpy as np
import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from marl.actor_critic import NetConfig
from marl.core import Policy
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import RandomPolicy
from populations import exploitability as ex
from populations import lockstep
from populations.experiment import run_experiment
from populations.lockstep import LockstepSampler, memoryless
from populations.payoffs import SampledPayoffs
from populations.psro import PSRO, ExactBestResponse, GreedyPolicy, Member, PSROConfig

KUHN, LEDUC = "openspiel/kuhn_poker", "openspiel/leduc_poker"


def _members(game: str) -> tuple[ex.GameTree, dict[str, list[Member]]]:
    """Three members a seat: uniform play, always the first legal action, and the exact best
    response to the other seat's uniform play (deterministic and stochastic, with chance)."""
    tree = ex.game_tree(game)
    out: dict[str, list[Member]] = {}
    for p, agent in enumerate(tree.agents):
        legal = tree.players[p].legal
        uniform = ex.uniform_matrix(tree, agent)
        br = ex.best_response(tree, p, {1 - p: ex.uniform_matrix(tree, tree.agents[1 - p])})
        mats = [uniform, np.eye(legal.shape[1])[legal.argmax(1)], br.matrix]
        out[agent] = [Member(f"m/{agent}/{k}", agent, ex.tabular_policy(tree, {agent: m}), m)
                      for k, m in enumerate(mats)]
    return tree, out


def _moments(tree: ex.GameTree, members: dict[str, list[Member]]) -> tuple[np.ndarray, ...]:
    """Exact ``[P, K0, K1]`` mean and variance of each seat's return per profile."""
    reals = [np.stack([ex.realization(tree, p, m.matrix[None])[0] for m in members[a]])
             for p, a in enumerate(tree.agents)]
    term = tree.terminals
    mean = np.einsum("zq,az,bz->qab", term.chance[:, None] * term.returns, *reals)
    second = np.einsum("zq,az,bz->qab", term.chance[:, None] * term.returns**2, *reals)
    return mean, second - mean**2


def _estimator(game: str, members, episodes: int, seed: int = 0, **kw) -> SampledPayoffs:
    est = SampledPayoffs(game, episodes=episodes, num_envs=64, seed=seed, **kw)
    for agent in est.spec.agent_ids:
        for m in members[agent]:
            est.add_member(m)
    return est


@pytest.mark.parametrize("game, episodes", [(KUHN, 4000), (LEDUC, 2000)])
def test_lockstep_means_have_the_exact_mean_and_variance(game, episodes):
    """Each entry's z-score against its exact mean and standard error: their squares summed
    over the 9 profiles of seat 0 follow chi-square(9) (p < 1e-4 above 37), and a sampler
    that drew episodes together (too little spread) or biased some entry would leave it."""
    tree, members = _members(game)
    est = _estimator(game, members, episodes)
    assert est.sampler is not None  # the lockstep path, not VectorGame
    mean, var = _moments(tree, members)
    sampled = est.block([np.arange(3), np.arange(3)])
    z = (sampled[0] - mean[0]) / np.sqrt(var[0] / episodes)
    assert (z**2).sum() < 37.0, z
    np.testing.assert_allclose(sampled[0], -sampled[1])  # zero-sum: both seats' returns
    # 20 independent seeds of one entry: their spread is that of independent episodes
    spread = [_estimator(game, members, 500, seed=s).block([np.array([0]), np.array([2])])[0]
              for s in range(20)]
    ratio = np.var(spread, ddof=1) / (var[0, 0, 2] / 500)
    assert 0.35 < ratio < 2.0, ratio  # chi-square(19)/19 stays within with p > 0.995


def test_lockstep_agrees_with_episodes_played_through_vector_game():
    """The same entries played through VectorGame (the path every other game takes) and in
    lockstep: equal within their joint sampling error."""
    tree, members = _members(KUHN)
    index = [np.arange(3), np.arange(3)]
    fast = _estimator(KUHN, members, 2000).block(index)
    played = _estimator(KUHN, members, 2000, lockstep=False)
    assert played.sampler is None
    slow = played.block(index)
    _, var = _moments(tree, members)
    z = (fast[0] - slow[0]) / np.sqrt(2 * var[0] / 2000)
    assert (z**2).sum() < 37.0, z


def test_entries_do_not_depend_on_their_block_and_seeds_repeat():
    """An entry computed alone, in a block, or after other blocks has one value (a resumed
    PSRO recomputes its empirical game in other blocks); the same seed repeats it, another
    seed does not."""
    _, members = _members(KUHN)
    whole = _estimator(KUHN, members, 300).block([np.arange(3), np.arange(3)])
    parts = _estimator(KUHN, members, 300)
    for i in (2, 0, 1):
        row = parts.block([np.array([i]), np.arange(3)])
        np.testing.assert_array_equal(row[:, 0], whole[:, i])
    again = _estimator(KUHN, members, 300).block([np.arange(3), np.arange(3)])
    np.testing.assert_array_equal(again, whole)
    other = _estimator(KUHN, members, 300, seed=1).block([np.arange(3), np.arange(3)])
    assert not np.array_equal(other, whole)


def test_memo_views_are_the_game_adapters():
    """Every information state the episodes reach shows the policies what the exact tools'
    enumeration (the game adapter's code) shows there: tensor, legal mask, texts."""
    tree, members = _members(LEDUC)
    sampler = LockstepSampler(LEDUC)
    for p, agent in enumerate(tree.agents):
        sampler.add_member(p, members[agent][0].policy)
    sampler.payoffs(np.zeros((1, 2), np.int64), [0], 50_000)
    for p in range(2):
        seen, info = sampler.memo.views[p], tree.players[p]
        assert len(seen) == len(info)  # uniform play reaches every state of Leduc
        for s, text in enumerate(seen.texts):
            t = info.texts.index(text)
            np.testing.assert_array_equal(seen.obs[s], info.obs[t])
            np.testing.assert_array_equal(seen.legal[s], info.legal[t])
            assert seen.legal_text[s] == info.legal_text[t]


def test_histories_rebuilt_from_their_actions_give_the_same_payoffs(monkeypatch):
    """Past ``KEEP_STATES`` histories the memo keeps no pyspiel state and replays a history's
    actions to expand it: the payoffs are the same as with every state kept."""
    _, members = _members(LEDUC)
    index = [np.arange(3), np.arange(3)]
    kept = _estimator(LEDUC, members, 400).block(index)
    monkeypatch.setattr(lockstep, "KEEP_STATES", 3)
    est = _estimator(LEDUC, members, 400)
    np.testing.assert_array_equal(est.block(index), kept)
    assert len(est.sampler.memo.states) == 3 and est.sampler.memo.n > 1000


class FirstLegal(Policy):
    """Plays the first legal action; its ``action_probs`` raises NotImplementedError (as a
    greedy wrapper of a continuous policy does), which only shows when it is asked."""

    def __init__(self, spec):
        self.meta = RandomPolicy(spec).meta

    def act(self, agent, vs, greedy=False):
        return vs.legal[agent].argmax(1)

    def action_probs(self, agent, vs):
        raise NotImplementedError("first-legal policies have no action probabilities")

    def payload(self):
        return {}

    @classmethod
    def from_payload(cls, meta, payload):
        raise NotImplementedError


def test_members_the_memo_cannot_take_are_played(caplog):
    """A recurrent policy (a GRU state per copy), a policy without action probabilities and
    a memo over its budget are played through VectorGame; the values stay right."""
    tree, members = _members(KUHN)
    spec = games.make(KUHN).spec
    rnn = MAPPO(spec, MAPPOConfig(net=NetConfig(critic="local", recurrent=True)),
                agents=("player_1",), seed=0).policy()
    ff = MAPPO(spec, MAPPOConfig(net=NetConfig(critic="local")), agents=("player_1",),
               seed=0).policy()
    assert not memoryless(rnn) and memoryless(ff) and memoryless(GreedyPolicy(ff))
    members["player_1"] = members["player_1"][:2] + [
        Member("rnn", "player_1", rnn), Member("first", "player_1", FirstLegal(spec))]
    est = _estimator(KUHN, members, 1000)
    assert est.lockstep["player_1"] == [True, True, False, True]
    values = est.block([np.arange(3), np.arange(4)])
    assert est.lockstep["player_1"] == [True, True, False, False]  # asked, it refused
    assert np.isfinite(values).all()
    # member 3 plays member 1's moves (through VectorGame, with its own draws)
    mean, var = _moments(tree, {"player_0": members["player_0"],
                                "player_1": members["player_1"][:2]})
    z = (values[0][:, [0, 1, 3]] - mean[0][:, [0, 1, 1]]) / np.sqrt(
        var[0][:, [0, 1, 1]] / 1000)
    assert (z**2).sum() < 42.0, z  # chi-square(9)
    # a memo over its budget: played from then on, with a warning
    small = _estimator(KUHN, {a: m[:2] for a, m in members.items()}, 1000)
    small.sampler = LockstepSampler(KUHN, max_cells=3 * 12)
    for p, agent in enumerate(spec.agent_ids):
        for m in members[agent][:2]:
            small.sampler.add_member(p, m.policy)
    with caplog.at_level(logging.WARNING, logger="populations.payoffs"):
        got = small.block([np.arange(2), np.arange(2)])
    assert small.sampler is None and "histories met; playing episodes" in caplog.text
    z = (got[0] - mean[0][:2, :2]) / np.sqrt(var[0][:2, :2] / 1000)
    assert (z**2).sum() < 27.0, z  # chi-square(4)


def test_games_without_a_memo_play_episodes():
    """Simultaneous-move and non-OpenSpiel games take the VectorGame path."""
    for game in ("openspiel/matrix_rps", "matrix/climbing"):
        est = SampledPayoffs(game, episodes=8, num_envs=4)
        assert est.sampler is None
        spec = est.spec
        for agent in spec.agent_ids:
            est.add_member(Member(f"r/{agent}", agent, RandomPolicy(spec, seed=1)))
        assert est.block([np.arange(1)] * len(spec.agent_ids)).shape == (2, 1, 1)


def test_sampled_psro_kuhn_reaches_a_low_nash_conv():
    """Plain PSRO (Nash meta-strategy, exact best responses) with 1,000 sampled episodes an
    entry, as OpenSpiel's psro_v2 runs it: its exact NashConv falls from 0.833 below 0.05
    within 15 iterations (sampling noise keeps it above 0)."""
    psro = PSRO(KUHN, ExactBestResponse(KUHN),
                PSROConfig(meta_solver="nash", payoffs="sampled", episodes_per_entry=1000))
    nash_conv = [r.nash_conv for r in psro.run(15)]
    assert nash_conv[0] == pytest.approx(5 / 6)
    assert min(nash_conv[-5:]) < 0.05, nash_conv


def _experiment(run_dir, iterations, resume=False):
    overrides = ["experiment=kuhn_psro", "eval_episodes=2", "progress=false", "logger=none",
                 "population.psro.meta_solver=nash", "population.psro.response_target=meta",
                 "population.psro.payoffs=sampled", "population.psro.episodes_per_entry=200",
                 f"population.iterations={iterations}", f"resume={str(resume).lower()}"]
    with initialize_config_module(config_module="configs", version_base=None):
        exp = OmegaConf.to_object(compose(config_name="config", overrides=overrides))
    db = sqlite3.connect(run_experiment(exp, run_dir).database)
    try:
        return (db.execute("SELECT iteration, meta_strategy, nash_conv FROM psro_iterations "
                           "ORDER BY iteration").fetchall(),
                db.execute("SELECT row_snapshot, col_snapshot, value, count, exact FROM payoffs "
                           "ORDER BY row_snapshot, col_snapshot").fetchall())
    finally:
        db.close()


def test_resumed_sampled_psro_equals_an_uninterrupted_run(tmp_path):
    """Sampled payoffs: a run stopped after 2 iterations and resumed to 4 records the
    payoffs, meta-strategies and NashConv of an uninterrupted run (the resumed run samples
    its empirical game in one block, the uninterrupted one in eight); payoff rows say they
    are sampled, with their episode count."""
    whole = _experiment(tmp_path / "whole", 4)
    _experiment(tmp_path / "split", 2)
    assert _experiment(tmp_path / "split", 4, resume=True) == whole
    iterations, payoffs = whole
    assert len(iterations) == 4 and len(payoffs) == 2 * 5 * 5
    assert {(count, exact) for *_, count, exact in payoffs} == {(200, 0)}
