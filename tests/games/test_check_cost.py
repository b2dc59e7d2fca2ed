"""check_game's cost on games with many legal actions or long episodes.

Parsing every legal action's text through ``Game.parse_action`` cost n^2 action texts a
step (openspiel/hex, 121 actions: 29,000 a step; y and battleship took over a minute):
the default parser is now checked for every action in O(n). Long episodes (VMAS, pursuit,
laser_tag) are bounded by ``step_budget``, with a warning saying what was checked."""

import numpy as np
import pytest

import games


class _Wide(games.Game):
    """One player picks one of ``n`` actions ``length`` times; every action is legal."""

    def __init__(self, n: int = 120, length: int = 2, texts=None):
        self.n, self.length, self.texts, self.calls = n, length, texts, 0
        self.spec = games.GameSpec(
            name="wide", agents=(games.AgentSpec("p0", "p0", "p0"),),
            obs_shapes={"p0": (1,)}, action_spaces={"p0": games.ActionSpace("discrete", n=n)},
            max_steps=length)

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        over = self.t == self.length
        return games.Transition({"p0": 0.0}, {"p0": over}, {"p0": False})

    def acting_agents(self):
        return () if self.t == self.length else ("p0",)

    def observe(self, agent):
        return np.array([self.t], dtype=np.float32)

    def legal_actions(self, agent):
        return range(self.n)

    def text_observation(self, agent):
        return f"step {self.t}"

    def action_text(self, agent, action):
        self.calls += 1
        return self.texts[action] if self.texts else f"move {action}"


def test_action_texts_are_checked_in_linear_time():
    game = _Wide(n=120, length=2)
    games.check_game(game, episodes=1)
    # 2 steps of 120 actions: 29,000 action texts a step before (every text parsed, bare and
    # tagged, each parse building all 120 texts); now a few passes over the 120
    assert game.calls < 2 * 120 * 12, game.calls


def test_texts_equal_but_for_spacing_are_named():
    # since be0373d case tells actions apart (chess's Bxc3 and bxc3), spacing does not
    texts = [f"move {i}" for i in range(40)]
    texts[30] = "move7"  # the same as action 7's once spacing is ignored
    with pytest.raises(games.GameCheckError,
                       match=r"'move 7' and 'move7' are the same once spacing is ignored"):
        games.check_game(_Wide(n=40, texts=texts), episodes=1)


@pytest.mark.parametrize(("bad", "message"), [
    ("", r"text of action 17 of p0 is '', expected a non-empty text"),  # review GW-2
    ("   ", r"text of action 17 of p0 is '   ', expected a non-empty text"),
    (17, r"text of action 17 of p0 is int 17, expected str"),  # GW-3: was AttributeError
])
def test_empty_or_non_text_action_texts_are_named(bad, message):
    # parse_action("") returned the action with an empty text: an empty reply made a move
    texts = [f"move {i}" for i in range(40)]
    texts[17] = bad
    with pytest.raises(games.GameCheckError, match=message):
        games.check_game(_Wide(n=40, texts=texts), episodes=1)


@pytest.mark.parametrize("bad", ["x </action> y", "<action>move 2</action>"])
def test_every_text_still_parses_back(bad):
    # a text that is not sampled for a real parse_action call must still be checked
    texts = [f"move {i}" for i in range(40)]
    texts[17] = bad
    with pytest.raises(games.GameCheckError, match="did not parse"):
        games.check_game(_Wide(n=40, texts=texts), episodes=1)


def test_an_overridden_parser_is_called_for_every_action():
    class Picky(_Wide):
        def parse_action(self, agent, text):
            action = super().parse_action(agent, text)
            return 0 if action == 17 else action  # wrong for one action only

    with pytest.raises(games.GameCheckError, match="'move 17' did not parse"):
        games.check_game(Picky(n=40), episodes=1)


def test_long_episodes_stop_at_the_step_budget():
    game = _Wide(n=2, length=300)
    # a UserWarning (review GW-1), not a log record that a passing user's test never shows
    with pytest.warns(UserWarning, match=r"checked 4 of 20 episodes \(1200 steps.*"
                      r"step_budget=None checks all 20"):
        report = games.check_game(game, episodes=20)
    assert (report.episodes, report.steps, report.budget_reached) == (4, 1200, True)
    full = games.check_game(game, episodes=5, step_budget=None)
    assert (full.episodes, full.steps, full.budget_reached) == (5, 1500, False)
    short = games.check_game(games.make("openspiel/kuhn_poker"), episodes=20)
    assert short.episodes == 20 and not short.budget_reached


@pytest.mark.parametrize("budget", [0, -5, 2.5, True])
def test_a_bad_step_budget_is_refused(budget):
    with pytest.raises(games.GameError, match=rf"step_budget={budget!r}; accepted: an integer"):
        games.check_game(_Wide(n=2), step_budget=budget)
