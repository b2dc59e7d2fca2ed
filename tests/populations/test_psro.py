"""PSRO: exact best responses converge on Kuhn poker, the meta-Nash of rock-paper-scissors
is uniform, payoffs grow incrementally and exactly, runs are deterministic, the recorder
sees everything, and one RL-oracle iteration beats uniform play."""

import numpy as np
import pytest
import torch

import games
from marl.train import RandomPolicy
from populations import exploitability as ex
from populations import meta_solvers as ms
from populations.psro import (
    PSRO,
    ExactBestResponse,
    NullRecorder,
    PSROConfig,
    PSRORecorder,
    RLOracle,
    RLOracleConfig,
    SampledPayoffs,
    new_entry_blocks,
)

KUHN, RPS = "openspiel/kuhn_poker", "openspiel/matrix_rps"


@ms.register_meta_solver("prd_test")
def prd_test(payoffs: np.ndarray, full_game: ms.FullGame | None = None) -> list[np.ndarray]:
    return ms.projected_replicator_dynamics(payoffs, ms.PRDConfig(iterations=3_000, dt=1e-2))


class ListRecorder:
    def __init__(self) -> None:
        self.members: list[tuple[str, str]] = []
        self.payoffs: list[tuple[int, ...]] = []
        self.iterations: list[tuple[int, float | None]] = []

    def on_member(self, name, agent, policy):
        self.members.append((name, agent))

    def on_payoffs(self, payoffs):
        assert not np.isnan(payoffs).any()
        self.payoffs.append(payoffs.shape)

    def on_iteration(self, iteration, meta_strategy, nash_conv, seconds):
        assert seconds >= 0 and set(meta_strategy) == {"player_0", "player_1"}
        self.iterations.append((iteration, nash_conv))


def first_action_policy(game: str):
    tree = ex.game_tree(game)
    mats = {}
    for agent in tree.agents:
        legal = tree.players[tree.player(agent)].legal
        mats[agent] = np.eye(legal.shape[1])[legal.argmax(1)]
    return ex.tabular_policy(tree, mats)


def test_psro_exact_kuhn_converges_and_records():
    rec = ListRecorder()
    assert isinstance(rec, PSRORecorder) and isinstance(NullRecorder(), PSRORecorder)
    psro = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(meta_solver="nash"), recorder=rec)
    results = psro.run(8)
    nash_convs = [r.nash_conv for r in results]
    assert nash_convs[0] == pytest.approx(5 / 6)  # uniform + best response to uniform
    assert min(nash_convs) < 0.01
    assert nash_convs[-1] < 0.01
    assert [i for i, _ in rec.iterations] == list(range(8))
    assert len(rec.members) == 2 * 9 and rec.members[-1] == ("psro/player_1/8", "player_1")
    assert rec.payoffs[0] == (2, 1, 1) and rec.payoffs[-1] == (2, 9, 9)
    # The exact mixture policy has the NashConv PSRO reported, and plays in a VectorGame.
    mix = psro.mixture_policy()
    assert ex.nash_conv(KUHN, mix).nash_conv == pytest.approx(nash_convs[-1], abs=1e-12)
    assert ex.expected_returns(psro.tree, psro.mixture_matrices())[0] == pytest.approx(
        -1 / 18, abs=0.01
    )


def test_incremental_payoffs_equal_full_recomputation():
    psro = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(meta_solver="uniform"))
    psro.run(4)
    full = psro.estimator.block([np.arange(k) for k in psro.payoffs.shape[1:]])
    np.testing.assert_allclose(psro.payoffs, full, atol=1e-12)
    np.testing.assert_allclose(psro.payoffs.sum(0), 0.0, atol=1e-12)  # zero-sum


@pytest.mark.parametrize(
    ("old", "new"), [((2, 2), (3, 3)), ((1, 2, 3), (2, 2, 5)), ((0, 0), (1, 1)), ((2, 3), (2, 3))]
)
def test_new_entry_blocks_cover_each_new_entry_once(old, new):
    count = np.zeros(new, int)
    for index in new_entry_blocks(old, new):
        count[np.ix_(*index)] += 1
    expected = np.ones(new, int)
    expected[tuple(slice(0, k) for k in old)] = 0
    np.testing.assert_array_equal(count, expected)


def test_three_player_kuhn_with_replicator_dynamics():
    game = "openspiel/kuhn_poker(players=3)"
    psro = PSRO(game, ExactBestResponse(game), PSROConfig(meta_solver="prd_test"))
    results = psro.run(3)
    assert psro.payoffs.shape == (3, 4, 4, 4) and not np.isnan(psro.payoffs).any()
    full = psro.estimator.block([np.arange(4)] * 3)
    np.testing.assert_allclose(psro.payoffs, full, atol=1e-12)
    assert results[-1].nash_conv < results[0].nash_conv


def test_rps_meta_nash_is_uniform():
    start = first_action_policy(RPS)  # rock
    psro = PSRO(RPS, ExactBestResponse(RPS), initial={a: start for a in ("player_0", "player_1")})
    psro.run(2)  # rock -> paper -> scissors
    for agent in ("player_0", "player_1"):
        np.testing.assert_allclose(psro.meta_strategy[agent], [1 / 3] * 3, atol=1e-7)
    assert psro.nash_conv() == pytest.approx(0.0, abs=1e-7)
    # From uniform play the mixture stays uniform and unexploitable.
    psro = PSRO(RPS, ExactBestResponse(RPS))
    psro.run(3)
    np.testing.assert_allclose(psro.mixture_matrices()[0], [[1 / 3] * 3], atol=1e-7)
    assert psro.nash_conv() == pytest.approx(0.0, abs=1e-7)


def test_psro_is_deterministic():
    a = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(seed=3))
    b = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(seed=3))
    ra, rb = a.run(4), b.run(4)
    np.testing.assert_array_equal(a.payoffs, b.payoffs)
    for x, y in zip(ra, rb, strict=True):
        assert x.nash_conv == y.nash_conv
        for agent in x.meta_strategy:
            np.testing.assert_array_equal(x.meta_strategy[agent], y.meta_strategy[agent])


def test_sampled_payoffs_estimate_the_exact_ones():
    spec = games.make(KUHN).spec
    exact = PSRO(
        KUHN,
        ExactBestResponse(KUHN),
        initial={a: RandomPolicy(spec, seed=1) for a in spec.agent_ids},
    )
    exact.run(1)
    est = SampledPayoffs(KUHN, episodes=3000, num_envs=128, seed=0)
    for members in exact.members.values():
        for m in members:
            est.add_member(m)
    sampled = est.block([np.arange(2), np.arange(2)])
    np.testing.assert_allclose(sampled, exact.payoffs, atol=0.1)
    assert not np.allclose(sampled, exact.payoffs, atol=1e-6)  # really sampled


def test_config_errors_name_the_choices():
    with pytest.raises(ValueError, match="unknown meta-solver 'nsah'.*nash"):
        PSROConfig(meta_solver="nsah")
    with pytest.raises(ValueError, match="payoffs='exakt'.*exact.*sampled"):
        PSROConfig(payoffs="exakt")
    with pytest.raises(ValueError, match="OpenSpiel game.*sampled"):
        PSRO("matrix/climbing", ExactBestResponse(KUHN))
    NullRecorder().on_iteration(0, {}, None, 0.0)


def test_rl_oracle_one_iteration_beats_uniform():
    torch.manual_seed(0)
    oracle = RLOracle(KUHN, RLOracleConfig(frames=3_000, num_envs=16))
    psro = PSRO(KUHN, oracle, PSROConfig(seed=0))
    psro.iteration()
    U = psro.payoffs  # member 0: uniform; member 1: the RL best response to uniform
    # Exact best responses to uniform would gain 0.375 (player 0) and 0.542 (player 1).
    assert U[0][1, 0] > U[0][0, 0] + 0.15
    assert U[1][0, 1] > U[1][0, 0] + 0.15
    assert psro.members["player_0"][1].policy.meta.kind == "mappo"
