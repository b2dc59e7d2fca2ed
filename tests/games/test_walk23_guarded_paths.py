"""What a user's game is asked outside ``reset``/``step`` beyond VectorGame (the PettingZoo
export's final observations, state and render; the LLM rollout's text views, legal texts and
graphs; the tiny tokenizer's corpus) goes through ``Game.observe_checked``/``state_checked``/
``guarded``: a bug of the game is one line naming the game, the step, the call and the user's
line (was the game's own traceback). And ``Game.step`` refuses a reward that is not one real
number in one line naming the game, the step, the agent and the value (a string reward was a
numpy traceback from VectorGame's return sum)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

import games
from tests import subprocs
from tests.games import test_walk23_terminal_observe as terminal

user_game = terminal.user_game  # the Race module of test_walk23_terminal_observe, as a fixture

# A simultaneous game of 2 rounds; ``bug`` breaks observe/state only once it is over, or gives
# a reward of another kind than a float.
DUEL = '''
import numpy as np
import games

AGENTS = ("a", "b")


class Duel(games.Game):
    def __init__(self, bug: str = "", reward=1.0) -> None:
        self.bug, self.reward = bug, reward
        self.spec = games.GameSpec(
            name="walk23_duel", agents=tuple(games.AgentSpec(a, a, a) for a in AGENTS),
            obs_shapes={a: (1,) for a in AGENTS},
            action_spaces={a: games.ActionSpace("discrete", n=2) for a in AGENTS},
            max_steps=2, simultaneous=True, state_shape=(1,))

    def _reset(self, seed):
        self.t = 0

    def _step(self, actions):
        self.t += 1
        rewards = {"a": self.reward if self.bug == "reward" else 1.0, "b": 0.0}
        return games.Transition(rewards, {a: self.t >= 2 for a in AGENTS},
                                {a: False for a in AGENTS})

    def acting_agents(self):
        return () if self.t >= 2 else AGENTS

    def observe(self, agent):
        if self.bug == "termobs" and self.t >= 2:
            return {}[agent]  # the user's line: KeyError at the end only
        return np.array([self.t], np.float32)

    def legal_actions(self, agent):
        return [0, 1]

    def text_observation(self, agent):
        if self.bug == "text":
            raise LookupError("no words")
        return f"round {self.t}"

    def state(self):
        if self.bug == "termstate" and self.t >= 2:
            raise IndexError("no state after the duel")
        return np.array([self.t], np.float32)


games.register("walk23_duel")(Duel)
games.register("walk23_strrew")(lambda: Duel("reward", "1.0"))
'''


@pytest.fixture()
def duel(tmp_path, monkeypatch):
    """The module of ``DUEL``, written in ``tmp_path`` and imported (its file's path)."""
    path = tmp_path / "walk23_duel.py"
    path.write_text(DUEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("walk23_duel", None)
    __import__("walk23_duel")
    yield str(path)
    sys.modules.pop("walk23_duel", None)


def _mute(base: type) -> type:
    class Mute(base):
        def text_observation(self, agent):
            raise LookupError("no words")

    return Mute


# ------------------------------------------------------------------ rewards
@pytest.mark.parametrize(("reward", "shown"), [
    ("1.0", r"str, expected a float scalar \(a real number\): got '1\.0'"),
    (None, r"NoneType, expected a float scalar \(a real number\): got None"),
    (True, r"bool, expected a float scalar \(a real number\): got True"),
    (np.ones(2, np.float32), r"ndarray of shape \(2,\), expected a float scalar \(a real "
                             r"number\): got array\(\[1\., 1\.\], dtype=float32\)"),
])
def test_a_reward_that_is_not_a_real_number_is_one_line(duel, reward, shown):
    """A string reward was a numpy traceback from VectorGame's return sum."""
    vg = games.VectorGame("walk23_duel", 2, bug="reward", reward=reward)
    with pytest.raises(games.GameContractError, match=(
            rf"^walk23_duel\(bug='reward',reward=.*\) step 1: reward of a is {shown}$")):
        vg.reset()
        vg.step({a: np.zeros(2, np.int64) for a in ("a", "b")})


@pytest.mark.parametrize("reward", [1, np.float32(0.5), np.int64(2), np.array(0.25), 1.5,
                                    float("nan")])
def test_real_rewards_pass_and_nan_is_left_to_the_trainers_guard(duel, reward):
    game = games.make("walk23_duel", bug="reward", reward=reward)
    game.reset(0)
    ts = game.step({"a": 0, "b": 1})
    assert ts.rewards["a"] is reward


def test_selfplay_train_says_a_string_reward_in_one_line(duel, tmp_path):
    args = [sys.executable, "-m", "populations.cli", "imports=[walk23_duel]",
            "game.name=walk23_strrew", "frames=64", "num_envs=2", "progress=false",
            "logger=none", "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "selfplay-train: walk23_duel step 1: reward of a is str, expected a float scalar (a "
        "real number): got '1.0'"), res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists()  # nothing recorded: the rerun is not refused


# ------------------------------------------------------------------ PettingZoo export
def test_the_parallel_export_asks_final_observations_through_the_contract(duel):
    env = games.to_pettingzoo(games.make("walk23_duel", bug="termobs"))
    env.reset(seed=0)
    env.step({"a": 0, "b": 0})
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_duel\(bug='termobs'\) step 2: observe\('a'\) at the end of its episode "
            r"raised KeyError: 'a' \(at .*walk23_duel.py:\d+ in observe\)")):
        env.step({"a": 0, "b": 0})


def test_the_parallel_exports_state_and_render_are_guarded(duel):
    env = games.to_pettingzoo(games.make("walk23_duel", bug="termstate"))
    env.reset(seed=0)
    env.step({"a": 0, "b": 0})
    env.step({"a": 0, "b": 0})
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_duel\(bug='termstate'\) step 2: state\(\) raised IndexError: no state "
            r"after the duel \(at .*walk23_duel.py:\d+ in state\)")):
        env.state()
    env = games.to_pettingzoo(games.make("walk23_duel", bug="text"))
    env.reset(seed=0)
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_duel\(bug='text'\) step 0: text_observation\('a'\) raised LookupError: "
            r"no words \(at .*walk23_duel.py:\d+")):
        env.render()


def test_the_aec_export_asks_an_ended_agents_observation_through_the_contract(user_game):
    env = games.to_pettingzoo(games.make("walk23_race", bug="termobs"))
    env.reset(seed=0)
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race\(bug='termobs'\) step 4: observe\('p0'\) at the end of its episode "
            r"raised KeyError: 'p0_score' \(at .*walk23_usergame.py:\d+ in observe\)")):
        for _ in env.agent_iter(max_iter=20):
            _, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else 1)


def test_the_aec_exports_render_is_guarded(user_game):
    env = games.to_pettingzoo(_mute(sys.modules["walk23_usergame"].Race)())
    env.reset(seed=0)
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race step 0: text_observation\('p0'\) raised LookupError: no words")):
        env.render()


# ------------------------------------------------------------------ LLM agents
def test_the_llm_rollouts_views_are_guarded(user_game):
    from llm_agents.rollout import RolloutEngine, vecstep_of

    game = _mute(sys.modules["walk23_usergame"].Race)()
    ts = game.reset(0)
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race step 0: text_observation\('p0'\) raised LookupError: no words \(at "
            r".*test_walk23_guarded_paths.py:\d+ in text_observation\)")):
        vecstep_of([game], [ts])
    # the engine's request asks the views before its model reads them: a stand-in engine
    engine = SimpleNamespace(
        team=SimpleNamespace(model_for=lambda role: SimpleNamespace(tokenizer=None),
                             binding=lambda role: SimpleNamespace(prompt="")),
        builder=SimpleNamespace(request=None))
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race step 0: text_observation\('p0'\) raised LookupError: no words")):
        RolloutEngine._request(engine, game, "p0")


def test_the_tiny_tokenizers_corpus_is_guarded(user_game):
    from llm_agents.tiny import game_corpus

    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race step 0: text_observation\('p0'\) raised LookupError: no words")):
        game_corpus(_mute(sys.modules["walk23_usergame"].Race)(), episodes=1)


# ------------------------------------------------------------------ OpenSpiel exact tools
# A user's pyspiel game (Kuhn poker whose observer breaks once a bet is made): the lockstep
# sampler's memo and the exact tools ask its views through the adapter, outside reset/step.
PYSPIEL_GAME = '''
import pyspiel
from open_spiel.python.games import kuhn_poker as kp

_TYPE = pyspiel.GameType(
    short_name="python_walk23_kuhn", long_name="walk23 kuhn",
    dynamics=kp._GAME_TYPE.dynamics, chance_mode=kp._GAME_TYPE.chance_mode,
    information=kp._GAME_TYPE.information, utility=kp._GAME_TYPE.utility,
    reward_model=kp._GAME_TYPE.reward_model, max_num_players=2, min_num_players=2,
    provides_information_state_string=True, provides_information_state_tensor=True,
    provides_observation_string=True, provides_observation_tensor=True,
    parameter_specification={})


class Observer(kp.KuhnPokerObserver):
    def set_from(self, state, player):
        if len(state.bets) >= 1:
            raise KeyError("no tensor after a bet")  # the user's line
        return super().set_from(state, player)


class Game(kp.KuhnPokerGame):
    def __init__(self, params=None):
        pyspiel.Game.__init__(self, _TYPE, kp._GAME_INFO, params or dict())

    def make_py_observer(self, iig_obs_type=None, params=None):
        return Observer(iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False), params)


if "python_walk23_kuhn" not in pyspiel.registered_names():
    pyspiel.register_game(_TYPE, Game)
'''
KUHN_LINE = (r"^openspiel/python_walk23_kuhn step 0: observe\('player_1'\) at history \[0, 1, 0\] "
             r"raised KeyError: 'no tensor after a bet' \(at .*walk23_kuhn.py:\d+ in set_from\)")


@pytest.fixture()
def user_kuhn(tmp_path, monkeypatch):
    (tmp_path / "walk23_kuhn.py").write_text(PYSPIEL_GAME)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("walk23_kuhn", None)
    __import__("walk23_kuhn")
    yield "openspiel/python_walk23_kuhn"
    sys.modules.pop("walk23_kuhn", None)


def test_the_lockstep_memos_views_are_guarded(user_kuhn):
    from populations.lockstep import HistoryMemo

    memo = HistoryMemo(games.make(user_kuhn))
    nodes = np.zeros(1, np.int64)
    with pytest.raises(games.GameCodeError, match=KUHN_LINE):
        for a in (0, 1, 0):  # deal 0, deal 1, player_0 passes: player_1's view
            nodes = memo.step(nodes, np.array([a]))


def test_the_exact_tools_views_are_guarded(user_kuhn):
    from populations.exploitability import game_tree

    with pytest.raises(games.GameCodeError, match=KUHN_LINE):
        game_tree(user_kuhn)
