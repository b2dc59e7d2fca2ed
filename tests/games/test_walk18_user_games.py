"""A user's own game, written as README's "Add your own game" shows, that breaks the contract:
the errors name the game, where in the episode, the method and the user's own line (a
user-path walk found tracebacks, numpy's words and messages that differed by path)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import games
from tests import subprocs

AGENTS = ("r0", "b0")


class Tug(games.Game):
    """Two players pull a rope at once (simultaneous); first to 2 wins, 4 rounds at most.

    ``bug`` picks a defect that shows at step ``after`` (0: at the first reset)."""

    def __init__(self, bug: str = "", after: int = 1, rounds: int = 4) -> None:
        self.bug, self.after, self.rounds = bug, after, rounds
        self.spec = games.GameSpec(
            name="walk18_tug",
            agents=tuple(games.AgentSpec(a, role="puller", team=a) for a in AGENTS),
            obs_shapes={a: (3,) for a in AGENTS},
            action_spaces={a: games.ActionSpace("discrete", n=3) for a in AGENTS},
            max_steps=rounds, zero_sum=True, simultaneous=True, state_shape=(2,))
        self.rng = np.random.default_rng(0)

    def _broken(self, bug: str) -> bool:
        return self.bug == bug and self.t >= self.after

    def _reset(self, seed):
        if seed is not None or self.bug == "reseed":  # "reseed": fresh entropy on reset(None)
            self.rng = np.random.default_rng(seed)
        self.t, self.pos = 0, int(self.rng.integers(-1, 2))
        self.wind = float(self.rng.random())  # a draw no two fresh RNGs repeat
        if self._broken("reset"):
            raise RuntimeError("reset exploded")

    def _step(self, actions):
        self.t += 1
        if self._broken("step"):
            raise RuntimeError("physics exploded")
        if self._broken("unpack"):
            (agent,) = actions  # a turn-based habit: ValueError, too many values to unpack
        self.pos += int(np.sign(actions["r0"] - actions["b0"]))
        won = abs(self.pos) >= 2
        winner = "r0" if self.pos > 0 else "b0"
        rewards = {a: (1.0 if a == winner else -1.0) if won else 0.0 for a in AGENTS}
        cut = not won and self.t >= self.rounds
        return games.Transition(rewards, {a: won for a in AGENTS}, {a: cut for a in AGENTS})

    def acting_agents(self):
        return () if abs(self.pos) >= 2 or self.t >= self.rounds else AGENTS

    def observe(self, agent):
        if self._broken("observe"):
            return {"pos": self.pos}["position"]  # KeyError in the user's own line
        obs = np.array([self.pos / 2, self.t / self.rounds, self.wind], np.float32)
        return np.concatenate([obs, obs]) if self._broken("shape") else obs

    def legal_actions(self, agent):
        if self._broken("nolegal") and agent == "b0":
            return []
        return [0, 1, 2]

    def action_text(self, agent, action):
        return ("rest", "pull", "heave")[action]

    def text_observation(self, agent):
        return f"You are {agent}. Rope at {self.pos}, round {self.t + 1}/{self.rounds}."

    def state(self):
        return np.array([self.pos / 2, self.t / self.rounds], np.float32)


games.register("walk18_tug")(Tug)


def _play(game: games.Game, steps: int = 8) -> None:
    ts = game.reset(0)
    for _ in range(steps):
        if ts.done:
            ts = game.reset(None)
        ts = game.step({a: 1 for a in ts.acting})


def test_tug_is_a_correct_game():
    games.check_game(games.make("walk18_tug"))


# ------------------------------------------------------- 1. the game's own exceptions
@pytest.mark.parametrize(("bug", "after", "where", "method", "error"), [
    ("reset", 0, "reset(seed=0)", "_reset", "RuntimeError: reset exploded"),
    ("step", 1, "step 0", "_step", "RuntimeError: physics exploded"),
    ("unpack", 1, "step 0", "_step", "ValueError: too many values to unpack (expected 1)"),
    ("observe", 1, "step 1", "observe", "KeyError: 'position'"),
])
def test_a_games_own_exception_names_game_step_method_and_line(bug, after, where, method,
                                                                error):
    """``selfplay-train imports=[broken] game.name=push_raise`` ended in a traceback; a
    ValueError in the game (``(agent,) = actions``) in ``selfplay-train: too many values to
    unpack (expected 1)``, naming nothing."""
    game = games.make("walk18_tug", bug=bug, after=after)
    with pytest.raises(games.GameCodeError) as info:
        _play(game)
    msg = str(info.value)
    assert msg.startswith(f"{game.spec.name} {where}: {method} raised {error} (at {__file__}:"), msg
    assert "\n" not in msg
    assert isinstance(info.value, games.GameError)  # one line on every CLI (a ValueError)
    assert info.value.method == method and info.value.__cause__ is info.value.error


def test_a_games_own_exception_inside_a_vector_game_is_one_line():
    vg = games.VectorGame("walk18_tug", 3, bug="step", after=2)
    vg.reset()
    with pytest.raises(games.GameCodeError, match=r"^walk18_tug\(.*\) step 1: _step raised "
                       r"RuntimeError: physics exploded \(at .*test_walk18_user_games.py:\d+ "
                       r"in _step\)"):
        for _ in range(3):
            vg.step({a: np.ones(3, np.int64) for a in AGENTS})


def test_game_errors_and_interrupts_pass_through_unchanged():
    class Refuses(Tug):
        def _step(self, actions):
            raise games.GameError("walk18: refused on purpose")

    class Interrupted(Tug):
        def _step(self, actions):
            raise KeyboardInterrupt

    game = Refuses()
    with pytest.raises(games.GameError, match="^walk18: refused on purpose$") as info:
        _play(game)
    assert type(info.value) is games.GameError
    with pytest.raises(KeyboardInterrupt):
        _play(Interrupted())
    # illegal actions are the contract's own errors, not the game's
    game = Tug()
    game.reset(0)
    with pytest.raises(games.IllegalActionError, match=r"^walk18_tug: illegal action 7"):
        game.step({"r0": 7, "b0": 0})


# --------------------------------------------------------- 2. wrong-shaped observations
def test_an_observation_of_the_wrong_shape_names_game_agent_and_step():
    """``could not broadcast input array from shape (8,) into shape (4,)``, from the batch
    that stacked it, named neither the game nor the agent."""
    game = games.make("walk18_tug", bug="shape", after=1)
    with pytest.raises(games.GameError, match=r"^walk18_tug\(.*\) step 1: obs of r0 has shape "
                       r"\(6,\), expected \(3,\)$"):
        _play(game)
    vg = games.VectorGame("walk18_tug", 2, bug="shape", after=1)
    vg.reset()
    with pytest.raises(games.GameError, match=r"^walk18_tug\(.*\) step 1: obs of r0 has shape"):
        vg.step({a: np.ones(2, np.int64) for a in AGENTS})


def test_observations_as_lists_or_shapes_given_as_lists_still_pass():
    class ListObs(Tug):
        def observe(self, agent):
            return super().observe(agent).tolist()

    game = ListObs()
    game.spec = dataclasses.replace(game.spec, obs_shapes={a: [3] for a in AGENTS})
    _play(game)


# ------------------------------------------------------- 3. no legal action for an agent
def test_an_acting_agent_without_legal_actions_is_one_message_on_every_path():
    """It read ``illegal action np.int64(1) for b0; legal: []``, an IndexError or an LLM
    sampler's ``a cannot be empty``, depending on who acted for the agent."""
    game = games.make("walk18_tug", bug="nolegal", after=1)
    with pytest.raises(games.GameError, match=r"^walk18_tug\(.*\) step 1: b0 must act but has "
                       "no legal action$"):
        _play(game)


def test_an_overridden_legal_mask_with_no_legal_action_is_refused_too():
    class OwnMask(Tug):
        def legal_mask(self, agent):
            return np.zeros(3, bool) if self.t >= 1 and agent == "b0" else np.ones(3, bool)

    with pytest.raises(games.GameError,
                       match="^walk18_tug step 1: b0 must act but has no legal action$"):
        _play(OwnMask())


def test_an_illegal_numpy_action_is_shown_as_a_number():
    game = games.make("walk18_tug")
    game.reset(0)
    with pytest.raises(games.IllegalActionError,
                       match=r"^walk18_tug: illegal action 5 for r0; legal: \[0, 1, 2\]$"):
        game.step({"r0": np.int64(5), "b0": np.int64(0)})
    with pytest.raises(games.IllegalActionError, match=r"illegal action 1.5 for r0; legal"):
        game.step({"r0": np.float64(1.5), "b0": np.int64(0)})


# ------------------------------------------- 10. check_game names the seed and the step
@pytest.mark.parametrize(("bug", "after", "where", "detail"), [
    ("step", 2, r"seed \d+ step 1", r"_step raised RuntimeError: physics exploded \(at "),
    ("reset", 0, r"seed 0 reset\(seed=0\)", r"_reset raised RuntimeError: reset exploded \(at "),
    ("shape", 1, r"seed \d+ step 1", r"obs of r0 has shape \(6,\), expected \(3,\)$"),
    ("nolegal", 1, r"seed \d+ step 1", "b0 must act but has no legal action$"),
])
def test_check_game_names_seed_and_step_of_what_the_game_raised(bug, after, where, detail):
    """check_game let the game's own exception escape as it was, with no seed nor step."""
    game = Tug(bug=bug, after=after)
    with pytest.raises(games.GameCheckError, match=f"^walk18_tug {where}: {detail}"):
        games.check_game(game)


def test_check_game_names_the_method_it_called_itself():
    class BadText(Tug):
        def text_observation(self, agent):
            return "pos " + self.pos  # TypeError: str + int

    with pytest.raises(games.GameCheckError, match=r"^walk18_tug seed 0 step 0: "
                       r"text_observation raised TypeError: .* \(at .*test_walk18_user_games"):
        games.check_game(BadText())


# ------------------------------------------------------------- 4. ActionSpace is checked
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"kind": "discreet", "n": 3}, r"ActionSpace kind='discreet'; accepted: 'discrete' \(with n\) "
                                   "or 'continuous'"),
    ({"kind": "box", "shape": (2,)}, "ActionSpace kind='box'; accepted:"),
    ({"kind": "discrete", "n": 0}, r"ActionSpace\('discrete', n=0\); accepted: an integer n >= 1"),
    ({"kind": "discrete", "n": 2.5}, r"ActionSpace\('discrete', n=2.5\); accepted: an integer"),
    ({"kind": "discrete"}, r"ActionSpace\('discrete', n=0\)"),
    ({"kind": "continuous"}, r"ActionSpace\('continuous', shape=\(\)\); accepted: a tuple of "
                             r"integers >= 1"),
    ({"kind": "continuous", "shape": [2]}, r"ActionSpace.*shape=\[2\]\); accepted: a tuple"),
    ({"kind": "continuous", "shape": (2,), "low": 1.0, "high": -1.0},
     r"ActionSpace\('continuous', low=1.0, high=-1.0\); accepted: numbers with low < high"),
    ({"kind": "continuous", "shape": (2,), "low": 0.0, "high": 0.0}, "ActionSpace.*low < high"),
    ({"kind": "continuous", "shape": (2,), "low": "a", "high": 1.0}, "ActionSpace.*low < high"),
])
def test_an_action_space_no_learner_can_use_is_refused_in_one_line(kwargs, message):
    """``ActionSpace("discreet", n=3)`` was a TypeError in check_game and a KeyError traceback
    in selfplay-eval; ``"box"`` passed as continuous; ``low > high`` reached numpy's words."""
    with pytest.raises(games.GameError, match=f"^{message}"):
        games.ActionSpace(**kwargs)


def test_every_action_space_the_repo_builds_is_accepted():
    ok = [games.ActionSpace("discrete", n=np.int64(4)),
          games.ActionSpace("continuous", shape=(2, 3), low=-np.inf, high=np.inf),
          games.ActionSpace("continuous", shape=(np.int64(2),), low=-2, high=3)]
    assert [s.discrete for s in ok] == [True, False, False]


def test_a_misspelt_kind_stops_games_make_in_one_line():
    class Misspelt(Tug):
        def __init__(self):
            super().__init__()
            self.spec = dataclasses.replace(
                self.spec, action_spaces={a: games.ActionSpace("discreet", n=3) for a in AGENTS})

    games.register("walk18_misspelt")(Misspelt)
    with pytest.raises(games.GameError, match="^ActionSpace kind='discreet'"):
        games.make("walk18_misspelt")


# ------------------------------------------- 11. reset(None) continues the seeded stream
def test_check_game_finds_a_game_that_reseeds_from_the_os_on_reset_none():
    """``self.rng = np.random.default_rng(seed)`` in ``_reset`` draws fresh OS entropy on
    VectorGame's auto-reset ``reset(None)``: two runs with one seed differed, and check_game,
    which replayed seeded episodes only, passed the game."""
    with pytest.raises(games.GameCheckError, match=r"^walk18_tug: reset\(seed=0\), an episode, "
                       r"then episodes from reset\(None\) did not replay: reset\(None\) must "
                       r"continue .* make a new RNG only when seed is not None"):
        games.check_game(Tug(bug="reseed"))
    games.check_game(Tug())  # `if seed is not None:` keeps the stream: passes


def test_same_seed_same_vector_run_once_reset_none_continues_the_stream():
    def run(bug):
        vg = games.VectorGame(lambda: Tug(bug=bug), 2, seed=3)
        vg.reset()
        rng, seen = np.random.default_rng(0), []
        for _ in range(30):
            vs = vg.step({a: rng.integers(0, 3, 2) for a in AGENTS})
            seen.append(vs.obs["r0"].tobytes())
        return seen

    assert run("") == run("")
    assert run("reseed") != run("reseed")  # what check_game now finds


def test_a_pettingzoo_env_whose_reset_none_reseeds_from_the_os_replays():
    """PettingZoo's hanabi (through shimmy) reseeds from OS entropy on ``reset(seed=None)``:
    the adapter passes it seeds drawn from the stream ``reset(seed)`` started."""
    game = games.make("pettingzoo/pettingzoo.classic.hanabi_v5", players=2, hand_size=2,
                      max_information_tokens=3, max_life_tokens=1, colors=2, ranks=2)

    def run():
        seen = [game.reset(0).obs]
        for _ in range(3):
            seen.append(game.reset(None).obs)
        return [{a: o.tobytes() for a, o in obs.items()} for obs in seen]

    assert run() == run()


# ------------------------------------------------------------- 5, 6. registering a name
def test_register_without_a_name_says_how_to_use_it():
    """``@games.register`` above a class: ``AttributeError: type object ... has no attribute
    'startswith'``."""
    with pytest.raises(games.GameError, match=r'^games.register needs a name, got NoName: use '
                       r'@games.register\("name"\)'):
        @games.register
        class NoName(Tug):
            pass


def test_a_user_game_cannot_shadow_a_built_in_tool_task_from_python():
    """``@games.register("tool/relay")`` silently replaced the built-in task: games.tool
    registers its tasks when first imported, after the user's module had taken the name (the
    command lines refused it). A fresh process: this one may have imported games.tool."""
    import sys

    code = (
        "import sys, games\n"
        "assert 'games.tool' not in sys.modules  # import games stays light\n"
        "try:\n"
        "    games.register('tool/relay')(type('Relay', (), {}))\n"
        "except games.GameError as err:\n"
        "    print(err)\n"
        "print(games.make('tool/relay').__class__.__name__)\n"
    )
    out = subprocs.run([sys.executable, "-c", code], capture_output=True, text=True,
                        check=True).stdout.splitlines()
    assert out == ["game name 'tool/relay' is already registered (by games.tool.relay.RelayTask)"
                   "; register yours under another name", "RelayTask"]


# ---------------------------------------- 7. a registered name the game does not call itself
def test_a_game_registered_under_another_name_than_its_spec_name_is_warned_once(caplog):
    """alias.py registered ``push2`` with its copied spec.name ``push``: snapshots and the
    runs table recorded ``push`` while ``push2`` was played, silently. A warning, not a
    refusal: a factory may rightly return a game named otherwise (an adapter's game)."""
    import logging

    @games.register("walk18_tug2")
    class Tug2(Tug):  # spec.name is still "walk18_tug"
        pass

    with caplog.at_level(logging.WARNING, logger="games.registry"):
        games.make("walk18_tug2")
        games.make("walk18_tug2", rounds=3)
    assert caplog.messages == [
        "the game registered as 'walk18_tug2' says spec.name='walk18_tug': snapshots, run "
        "records and selfplay-eval will name it 'walk18_tug', another registered game; set "
        "spec.name='walk18_tug2' in the game"]
    caplog.clear()

    @games.register("walk18_kuhn")
    def kuhn():
        return games.make("openspiel/kuhn_poker")

    with caplog.at_level(logging.WARNING, logger="games.registry"):
        games.make("walk18_kuhn")
        games.make("walk18_tug", rounds=3)
    assert caplog.messages == []


# ------------------------------------- 8. a PettingZoo env that declares no teams: one warning
def test_a_pettingzoo_function_game_without_teams_is_warned_about_once_by_its_full_name(
        tmp_path, monkeypatch, caplog):
    """mypz.py's ``holdem``: ``pettingzoo/mypz declares no teams`` 67 times a run (every copy
    and match builds the env), without ``:holdem``, and 'not zero-sum' even when
    ``zero_sum=true`` was given."""
    import logging

    (tmp_path / "walk18_pz_sides.py").write_text(
        "import games\n"
        "def holdem():\n"
        "    e = games.to_pettingzoo(games.make('matrix/climbing'))\n"
        "    e.metadata = {'name': 'mine', 'render_modes': [], 'is_parallelizable': True}\n"
        "    return e\n"
        "def other():\n"
        "    return holdem()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="games.pettingzoo"):
        for _ in range(3):
            games.make("pettingzoo/walk18_pz_sides:holdem", zero_sum=True)
        games.make("pettingzoo/walk18_pz_sides:other")
    said = [m for m in caplog.messages if "declares no teams" in m]
    assert said == [
        "pettingzoo/walk18_pz_sides:holdem declares no teams (metadata['teams']) and is not a "
        "known PettingZoo game: every agent is its own team and zero_sum=True as given; pass "
        "teams=... to games.make to say otherwise",
        "pettingzoo/walk18_pz_sides:other declares no teams (metadata['teams']) and is not a "
        "known PettingZoo game: every agent is its own team and the game is not zero-sum; pass "
        "teams=... and zero_sum=... to games.make to say otherwise"]


# --------------------------------------- 9. an export keeps its global state for a round trip
def test_an_exported_game_with_a_state_keeps_it_through_a_round_trip(tmp_path, monkeypatch):
    """to_pettingzoo defined state() but no state_space: ``pettingzoo/roundtrip:push_env``
    had no state_shape, so centralized critics got none."""
    env = games.to_pettingzoo(Tug())
    assert env.state_space.shape == (2,) and env.state_space.dtype == np.float32
    (tmp_path / "walk18_roundtrip.py").write_text(
        "import games\n"
        "def tug_env():\n"
        "    return games.to_pettingzoo(games.make('walk18_tug'))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    back = games.make("pettingzoo/walk18_roundtrip:tug_env")
    assert back.spec.state_shape == (2,)
    back.reset(0)
    assert back.state().shape == (2,)
    games.check_game(back, episodes=3)
