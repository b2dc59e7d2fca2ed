"""A user's game whose ``observe`` (or ``state``) breaks only at the end of an episode: VectorGame
asks every agent's final observation there, outside the guard of ``reset``/``step``, so a
KeyError from the user's file came out as a traceback (exit 1, the run folder left behind and
the rerun refused), a wrong shape as numpy's "could not broadcast (11,) into (12,)", one of
shape ``(1,)`` broadcast silently; and ``check_game`` passed both (it never asked observe at a
terminal state). Now each is one line naming the game, the step, the agent, what was expected
and the user's line, and check_game asks every agent's final observation and state."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import games
from tests import subprocs

# A turn-based race of 4 moves (2 each, p0 first); ``bug`` breaks observe/state only once the
# episode is over (or, with "gone", the final observation of p1, who leaves after its move).
USER_GAME = '''
import numpy as np
import games

AGENTS = ("p0", "p1")


class Race(games.Game):
    def __init__(self, bug: str = "", name: str = "walk23_race") -> None:
        self.bug = bug
        self.spec = games.GameSpec(
            name=name, agents=tuple(games.AgentSpec(a, role=a, team=a) for a in AGENTS),
            obs_shapes={a: (2,) for a in AGENTS},
            action_spaces={a: games.ActionSpace("discrete", n=2) for a in AGENTS},
            max_steps=4, state_shape=(3,))
        self.rng = np.random.default_rng(0)

    def _reset(self, seed):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t, self.score, self.gone = 0, {a: 0.0 for a in AGENTS}, set()
        self.bonus = float(self.rng.random())

    def _step(self, actions):
        ((agent, action),) = actions.items()
        self.score[agent] += action + self.bonus
        self.t += 1
        if self.bug == "gone" and agent == "p1":
            self.gone.add("p1")  # p1 leaves after its first move; p0 plays on
        over = self.t >= 4
        rewards = {a: 0.0 for a in AGENTS}
        if over:
            lead = self.score["p0"] - self.score["p1"]
            rewards = {"p0": float(np.sign(lead)), "p1": -float(np.sign(lead))}
        left = {a: over or (a in self.gone and agent == a) for a in AGENTS}
        return games.Transition(rewards, left, {a: False for a in AGENTS})

    def over(self):
        return self.t >= 4

    def acting_agents(self):
        if self.over():
            return ()
        agent = AGENTS[self.t % 2]
        if agent in self.gone:
            agent = "p0"
        return (agent,)

    def observe(self, agent):
        if self.bug == "termobs" and self.over():
            return {"p0": 0.0}[agent + "_score"]  # the user's line: KeyError at the end only
        if self.bug == "gone" and agent in self.gone:
            raise RuntimeError("p1 has left the table")
        obs = np.array([self.score[agent] / 4, self.t / 4], np.float32)
        if self.bug == "termshape" and self.over():
            return np.append(obs, 1.0).astype(np.float32)
        if self.bug == "termscalar" and self.over():
            return obs[:1]
        if self.bug == "termnan" and self.over():
            return np.full(2, np.nan, np.float32)
        return obs

    def legal_actions(self, agent):
        return [0, 1]

    def action_text(self, agent, action):
        return ("walk", "run")[action]

    def text_observation(self, agent):
        return f"{agent}: score {self.score[agent]:.2f} after {self.t} moves"

    def state(self):
        if self.bug == "termstate" and self.over():
            raise IndexError("no state after the race")
        if self.bug == "stateshape" and self.t >= 1:
            return np.zeros(4, np.float32)
        return np.array([self.score["p0"], self.score["p1"], self.t], np.float32)


games.register("walk23_race")(Race)
games.register("walk23_race_termobs")(lambda: Race("termobs", "walk23_race_termobs"))
'''

AGENTS = ("p0", "p1")


@pytest.fixture()
def user_game(tmp_path, monkeypatch):
    """The module of ``USER_GAME``, written in ``tmp_path`` and imported (its file's path)."""
    path = tmp_path / "walk23_usergame.py"
    path.write_text(USER_GAME)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("walk23_usergame", None)
    importlib.import_module("walk23_usergame")
    yield str(path)
    sys.modules.pop("walk23_usergame", None)


def _vector_play(vg: games.VectorGame, steps: int = 5) -> None:
    vs = vg.reset()
    for _ in range(steps):
        vs = vg.step({a: np.ones(vg.num_envs, np.int64) * vs.acting[a] for a in AGENTS})


def test_the_correct_race_passes_and_plays(user_game):
    games.check_game(games.make("walk23_race"))
    vg = games.VectorGame("walk23_race", 2, with_state=True)
    _vector_play(vg)


def test_an_observe_that_raises_at_the_end_is_one_line_naming_agent_step_and_line(user_game):
    vg = games.VectorGame("walk23_race", 3, bug="termobs")
    with pytest.raises(games.GameCodeError) as info:
        _vector_play(vg)
    msg = str(info.value)
    assert msg.startswith("walk23_race(bug='termobs') step 4: observe('p0') at the end of its "
                          "episode raised KeyError: 'p0_score' (at " + user_game + ":"), msg
    assert "in observe)" in msg and "\n" not in msg
    assert info.value.method == "observe" and isinstance(info.value.error, KeyError)


@pytest.mark.parametrize(("bug", "got"), [("termshape", "(3,)"), ("termscalar", "(1,)")])
def test_a_final_observation_of_the_wrong_shape_names_game_step_and_agent(user_game, bug, got):
    """(3,): numpy's "could not broadcast input array from shape (3,) into shape (2,)";
    (1,): broadcast into both features without a word."""
    vg = games.VectorGame("walk23_race", 2, bug=bug)
    with pytest.raises(games.GameContractError, match=(
            rf"^walk23_race\(bug='{bug}'\) step 4: obs of p0 has shape \{got[:-1]}\), expected "
            r"\(2,\)$")):
        _vector_play(vg)


def test_a_state_that_raises_at_the_end_is_one_line(user_game):
    vg = games.VectorGame("walk23_race", 2, bug="termstate", with_state=True)
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race\(bug='termstate'\) step 4: state\(\) at the end of the episode raised "
            r"IndexError: no state after the race \(at .*walk23_usergame.py:\d+ in state\)")):
        _vector_play(vg)


def test_a_state_of_the_wrong_shape_at_any_step_names_the_game(user_game):
    vg = games.VectorGame("walk23_race", 2, bug="stateshape", with_state=True)
    with pytest.raises(games.GameContractError, match=(
            r"^walk23_race\(bug='stateshape'\) step 1: state\(\) returned shape \(4,\), "
            r"expected spec.state_shape \(3,\)$")):
        _vector_play(vg)


def test_the_final_observation_of_one_agent_that_left_is_guarded_too(user_game):
    vg = games.VectorGame("walk23_race", 2, bug="gone")
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race\(bug='gone'\) step 2: observe\('p1'\) at the end of its episode "
            r"raised RuntimeError: p1 has left the table \(at .*walk23_usergame.py:\d+")):
        _vector_play(vg)


def test_a_text_view_that_raises_in_a_vector_game_is_one_line(user_game):
    class Mute(sys.modules["walk23_usergame"].Race):
        def text_observation(self, agent):
            raise LookupError("no words")

    vg = games.VectorGame(Mute, 2, with_text=True)
    with pytest.raises(games.GameCodeError, match=(
            r"^walk23_race step 0: text_observation\('p0'\) raised LookupError: no words \(at "
            r".*test_walk23_terminal_observe.py:\d+ in text_observation\)")):
        vg.reset()


@pytest.mark.parametrize(("bug", "detail"), [
    ("termobs", r"step 4: observe\('p0'\) at the end of its episode raised KeyError: 'p0_score'"),
    ("termshape", r"step 4: obs of p0 has shape \(3,\), expected \(2,\)$"),
    ("termscalar", r"step 4: obs of p0 has shape \(1,\), expected \(2,\)$"),
    ("termnan", r"step 4: obs of p0 is not finite \(at the end of its episode: its final "
                r"observation\)$"),
    ("termstate", r"step 4: state\(\) at the end of the episode raised IndexError"),
    ("gone", r"step 2: observe\('p1'\) at the end of its episode raised RuntimeError"),
])
def test_check_game_asks_every_agents_final_observation_and_state(user_game, bug, detail):
    """check_game passed "termobs" and "termshape" (20 episodes): it never asked observe(a)
    of every agent at a terminal state, nor state()."""
    with pytest.raises(games.GameCheckError, match=rf"^walk23_race\(bug='{bug}'\) seed 0 {detail}"):
        games.check_game(games.make("walk23_race", bug=bug))


def test_selfplay_train_says_it_in_one_line_and_the_rerun_is_not_refused(user_game, tmp_path):
    """The same command again was refused: "already holds a run; set resume=true"."""
    args = [sys.executable, "-m", "populations.cli", "imports=[walk23_usergame]",
            "game.name=walk23_race_termobs", "frames=64", "num_envs=2", "progress=false",
            "logger=none", "hydra.run.dir=runs/r1"]
    for _ in range(2):
        res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert res.returncode == 2, res.stderr
        lines = res.stderr.strip().splitlines()
        assert lines[-1].startswith(
            "selfplay-train: walk23_race_termobs step 4: observe('p0') at the end of its episode "
            f"raised KeyError: 'p0_score' (at {user_game}:"), lines
        assert "Traceback" not in res.stderr
        assert not (tmp_path / "runs").exists()
