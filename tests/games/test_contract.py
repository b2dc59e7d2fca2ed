"""check_game over every adapter and built-in game, and check_game catching broken games."""

import numpy as np
import pytest

import games
from games import GameCheckError  # public, as the README names it

GAMES = [
    ("openspiel/kuhn_poker", {}),
    ("openspiel/leduc_poker", {}),
    ("openspiel/tic_tac_toe", {}),
    ("openspiel/goofspiel", {"num_cards": 4}),
    ("openspiel/goofspiel(num_cards=3)", {}),
    ("openspiel/matrix_rps", {}),
    ("pettingzoo/mpe2.simple_spread_v3", {"N": 3}),
    ("pettingzoo/mpe2.simple_spread_v3", {"N": 2, "continuous_actions": True}),
    ("pettingzoo/mpe2.simple_tag_v3", {}),
    ("pettingzoo/mpe2.simple_adversary_v3", {}),
    ("pettingzoo/mpe2.simple_reference_v3", {}),
    ("pettingzoo/pettingzoo.classic.tictactoe_v3", {}),
    ("pettingzoo/pettingzoo.classic.connect_four_v3", {}),
    ("nim", {"stones": 9}),
    ("matrix/climbing", {}),
    ("matrix/penalty", {"k": -50.0, "repeats": 3}),
]


@pytest.fixture(autouse=True, scope="module")
def _register_example():
    import nim  # noqa: F401  (examples/nim.py registers "nim")


@pytest.mark.parametrize(("spec", "kwargs"), GAMES, ids=[g[0] + str(g[1]) for g in GAMES])
def test_check_game(spec, kwargs):
    game = games.make(spec, **kwargs)
    report = games.check_game(game, episodes=15, seed=3)
    assert report.episodes == 15
    assert report.steps >= 15
    if game.spec.zero_sum:
        assert abs(sum(report.mean_returns.values())) < 1e-6


def test_spec_facts():
    kuhn = games.make("openspiel/kuhn_poker").spec
    assert kuhn.zero_sum and not kuhn.simultaneous and kuhn.max_steps == 3
    assert kuhn.roles == ("player_0", "player_1")
    goof = games.make("openspiel/goofspiel", num_cards=4).spec
    assert goof.simultaneous and goof.max_steps == 4
    tag = games.make("pettingzoo/mpe2.simple_tag_v3").spec
    assert tag.roles == ("adversary", "agent")
    assert tag.teams == ("adversary", "good")
    assert tag.has_entity_graph and tag.state_shape is not None
    listener = games.make("pettingzoo/mpe2.simple_speaker_listener_v4").spec
    assert set(listener.roles) == {"speaker", "listener"}


def test_same_seed_same_episode_across_instances():
    def rollout(seed):
        g = games.make("openspiel/leduc_poker")
        ts, out = g.reset(seed), []
        while not ts.done:
            (a,) = ts.acting
            out.append(g.text_observation(a))
            ts = g.step({a: int(np.flatnonzero(ts.legal[a])[0])})
        return out, ts.rewards

    assert rollout(5) == rollout(5)
    assert any(rollout(5)[0] != rollout(s)[0] for s in range(6, 12))  # chance differs


def test_openspiel_text_views():
    g = games.make("openspiel/kuhn_poker")
    ts = g.reset(seed=1)
    assert g.legal_action_texts("player_0") == ["Pass", "Bet"]
    assert g.parse_action("player_0", "I think I should <action> bet </action>") == 1
    assert ts.obs["player_0"].shape == (11,)


def test_parse_action_errors_name_legal_texts():
    g = games.make("openspiel/kuhn_poker")
    g.reset(seed=0)
    with pytest.raises(games.InvalidAction, match=r"'fold'.*legal: \['Pass', 'Bet'\]"):
        g.parse_action("player_0", "fold")


def test_illegal_action_names_agent_action_and_legal_set():
    g = games.make("openspiel/tic_tac_toe")
    g.reset(seed=0)
    g.step({"player_0": 4})
    match = r"illegal action 4 for player_1; legal: \[0, 1, 2, 3, 5"
    with pytest.raises(games.IllegalActionError, match=match):
        g.step({"player_1": 4})
    assert g.acting_agents() == ("player_1",)  # unchanged
    with pytest.raises(games.IllegalActionError, match="expected actions for"):
        g.step({"player_0": 0})


def test_continuous_action_bounds():
    g = games.make("pettingzoo/mpe2.simple_spread_v3", N=2, continuous_actions=True)
    ts = g.reset(seed=0)
    ok = {a: np.full(5, 0.5, np.float32) for a in ts.acting}
    with pytest.raises(games.IllegalActionError, match="outside"):
        g.step({**ok, "agent_0": np.full(5, 2.0, np.float32)})
    with pytest.raises(games.IllegalActionError, match="shape"):
        g.step({**ok, "agent_0": np.zeros(3, np.float32)})
    g.step(ok)


def test_unknown_game_lists_names_and_prefixes():
    import nim  # noqa: F401

    with pytest.raises(games.UnknownGameError,  # a user's forgotten import is named too
                       match=r"unknown game 'chess'.*nim.*openspiel/.*imports=\[module\]"):
        games.make("chess")
    with pytest.raises(games.UnknownGameError, match="did you mean.*kuhn_poker"):
        games.make("openspiel/kuhn_pokr")
    with pytest.raises(games.UnknownGameError, match="cannot import PettingZoo module"):
        games.make("pettingzoo/mpe2.simple_nothing_v9")


def test_bad_kwargs_name_accepted_parameters():
    with pytest.raises(games.GameError, match=r"accepted: \['players'\]"):
        games.make("openspiel/kuhn_poker", cards=4)
    with pytest.raises(games.GameError, match=r"bad arguments.*accepted: \[.*'N'"):
        games.make("pettingzoo/mpe2.simple_spread_v3", agents=3)
    match = r"bad arguments for game 'nim'.*\['stones', 'max_take'\]"
    with pytest.raises(games.GameError, match=match):
        games.make("nim", piles=3)


# ---------------------------------------------------------------- check_game must fail
class _Flawed(games.Game):
    """A Nim variant that breaks one rule at a time, chosen by ``flaw``."""

    def __init__(self, flaw: str):
        import nim

        self.inner = nim.Nim(stones=6)
        self.spec = self.inner.spec
        self.flaw = flaw
        self.resets = 0

    def _reset(self, seed):
        self.inner._reset(seed)
        self.resets += 1
        if self.flaw == "nondeterministic":  # ignores the seed: depends on how often it was reset
            # consecutive resets always differ, so the replay check must see it (an unseeded
            # random pile matched its replay by chance in 1 of 64 CI runs)
            self.inner.pile = 3 + self.resets % 4

    def _step(self, actions):
        tr = self.inner._step(actions)
        if self.flaw == "not_zero_sum":
            tr.rewards["player_0"] += 0.5
        if self.flaw == "unflagged_end" and not self.inner.acting_agents():
            tr.terminated = {a: False for a in tr.terminated}  # ended, but for no agent
        if self.flaw == "lazy_truncated":  # no time limit, so it names nobody (a common shortcut)
            tr.truncated = {}
        if self.flaw == "array_reward":  # a 1-element array: sums and isfinite accept it
            tr.rewards = {a: np.array([r]) for a, r in tr.rewards.items()}
        return tr

    def acting_agents(self):
        return self.inner.acting_agents()

    def observe(self, agent):
        obs = self.inner.observe(agent)
        if self.flaw == "float64":
            return obs.astype(np.float64)
        if self.flaw == "obs_shape":
            return obs[:-1]
        return obs

    def legal_actions(self, agent):
        if self.flaw == "wrong_mask":
            return [0]
        return self.inner.legal_actions(agent)

    def legal_mask(self, agent):
        if self.flaw == "wrong_mask":
            return self.inner.legal_mask(agent)
        if self.flaw == "mask_shape":
            return super().legal_mask(agent)[:-1]
        return super().legal_mask(agent)

    def action_text(self, agent, action):
        return "same" if self.flaw == "dup_text" else self.inner.action_text(agent, action)

    def text_observation(self, agent):
        return self.inner.text_observation(agent)


@pytest.mark.parametrize(
    ("flaw", "message"),
    [
        ("float64", "not float32"),
        ("nondeterministic", "did not replay identically"),
        ("not_zero_sum", "zero-sum game returns sum to"),  # checked at the episode end
        ("wrong_mask", "mask != legal_actions"),
        ("dup_text", "not unique"),
        ("array_reward", r"reward of player_\d is ndarray of shape \(1,\), expected a float"),
        ("obs_shape", r"obs of player_\d has shape \(\d+,\), expected \(\d+,\)"),
        ("mask_shape", r"mask of player_\d is bool of shape \(2,\), expected bool of shape \(3,\)"),
        ("unflagged_end", r"\['player_0', 'player_1'\] neither terminated nor truncated"),
        ("lazy_truncated", r"truncated must name every agent"),
    ],
)
def test_check_game_catches_broken_games(flaw, message):
    with pytest.raises(GameCheckError, match=message):
        games.check_game(_Flawed(flaw), episodes=5)


def test_check_game_catches_accepted_illegal_action():
    import nim

    class Lenient(nim.Nim):
        def step(self, actions):  # skips validation: accepts anything
            return self._timestep(self._step(dict(actions)))

    with pytest.raises(GameCheckError, match="was accepted"):
        games.check_game(Lenient(stones=5), episodes=2)


def test_pettingzoo_time_limit_truncates_the_waiting_seat_too():
    # max_steps cut a turn-based game: only the seat to move was truncated, the waiting one
    # ended with neither flag, which MAPPO reads as terminated (no bootstrap)
    game = games.make("pettingzoo/pettingzoo.classic.connect_four_v3", max_steps=3)
    ts = game.reset(seed=0)
    while not ts.done:
        ts = game.step({a: int(np.flatnonzero(ts.legal[a])[0]) for a in ts.acting})
    assert ts.truncated == {"player_0": True, "player_1": True}
    assert not any(ts.terminated.values())
    games.check_game(game, episodes=2)


def test_a_legal_action_outside_the_action_space_is_named_in_one_line():
    # was a bare IndexError from reset (openspiel/chat_game lists action 2 of its 2)
    import nim

    class Broken(nim.Nim):
        def legal_actions(self, agent):
            return [*super().legal_actions(agent), self.max_take]  # one past the last id

    with pytest.raises(games.GameError, match=r"^nim: legal actions \[3\] of player_0 are "
                       r"outside its 3 actions \(ids 0\.\.2\); the game cannot be played$"):
        Broken(stones=5).reset(seed=0)


def test_a_negative_legal_action_is_refused_too():
    # numpy wrapped -1 to the last action, silently (review MX-1)
    import nim

    class Negative(nim.Nim):
        def legal_actions(self, agent):
            return [-1, *super().legal_actions(agent)]

    with pytest.raises(games.GameError, match=r"^nim: legal actions \[-1\] of player_0"):
        Negative(stones=5).reset(seed=0)
