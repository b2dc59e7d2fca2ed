"""OpenSpiel chance nodes are drawn with OpenSpiel's probabilities (mut39 m31: a uniform draw
passed every test, since the games tested had uniform chance).

2048's new tile is a 2 (0.9) or a 4 (0.1) on a uniformly chosen empty cell: non-uniform.
Its history is replayed on a fresh pyspiel state, and each chance outcome must be the one
numpy's ``Generator.choice`` draws with OpenSpiel's probabilities from the seed's stream.
"""

import numpy as np
import pyspiel

import games


def _replayed_draws_match(game, seed, steps, policy_rng):
    game.reset(seed)
    for _ in range(steps):
        if game.pyspiel_state.is_terminal():
            break
        (agent,) = game.acting_agents()
        legal = list(game.legal_actions(agent))
        ts = game.step({agent: legal[int(policy_rng.integers(len(legal)))]})
        if ts.done:
            break
    history = game.pyspiel_state.history()
    ref = np.random.default_rng(seed)
    state = pyspiel.load_game("2048").new_initial_state()
    chance = 0
    for action in history:
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            p = np.asarray(probs, dtype=np.float64)
            assert p.max() > p.min()  # the point: a non-uniform chance node
            assert action == outcomes[ref.choice(len(p), p=p / p.sum())]
            chance += 1
        state.apply_action(action)
    return chance


def test_2048_tiles_are_drawn_with_openspiels_probabilities():
    game = games.make("openspiel/2048")
    policy_rng = np.random.default_rng(0)
    draws = sum(_replayed_draws_match(game, seed, 30, policy_rng) for seed in range(8))
    assert draws > 100


def test_2048_tile_values_follow_their_probabilities():
    """Many first boards: a 4 tile is ~1 in 10 (uniform over the outcomes: ~1 in 2)."""
    game = games.make("openspiel/2048")
    fours = tiles = 0
    for seed in range(400):
        game.reset(seed)
        state = pyspiel.load_game("2048").new_initial_state()
        for action in game.pyspiel_state.history():
            probs = dict(state.chance_outcomes())
            fours += probs[action] < 0.05  # the 4-tile outcomes carry 0.1 / cells
            tiles += 1
            state.apply_action(action)
    assert tiles == 800
    assert 0.05 < fours / tiles < 0.15
