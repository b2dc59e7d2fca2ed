"""A user's mistake with a game or a VectorGame is refused in one line that names the bad
value, before the game's code runs (session 37, walker 37b).

Before: a seed of another type reached the game's RNG and came out as a GameCodeError
blaming the game (``reset(seed=0): _reset raised TypeError``, the str shown without quotes);
``step(0)`` was "step raised TypeError" at games/core.py; a wrong agent id was a bare
``tuple.index(x): x not in tuple`` (OpenSpiel), a KeyError (matrix, PettingZoo, VMAS, tool
tasks) or an answer for nobody (matrix and tool ``observe``); ``games.make(3)`` an
AttributeError; ``VectorGame(..., "4")`` a TypeError; action arrays shorter than
``num_envs`` stepped copies 0-2 and then raised IndexError on copy 3, leaving the batch
broken (the next correct step said "expected actions for ['player_1']"), and longer ones
passed silently.
"""

import numpy as np
import pytest

import games
from games import GameError, IllegalActionError, VectorGame

KUHN = "openspiel/kuhn_poker"
AGENT_GAMES = [KUHN, "openspiel/tic_tac_toe", "matrix/climbing", "tool/lookup",
               "pettingzoo/mpe2.simple_spread_v3"]


@pytest.mark.parametrize("seed", ["0", 1.5, True, -1, np.float64(2.0)])
def test_reset_refuses_a_seed_that_is_not_an_int_at_least_zero(seed):
    g = games.make(KUHN)
    with pytest.raises(GameError) as info:
        g.reset(seed=seed)
    assert type(info.value) is GameError  # not a GameCodeError: the game is not to blame
    assert str(info.value) == (f"openspiel/kuhn_poker: reset(seed={seed!r}); accepted: None "
                               "or an integer >= 0")


def test_reset_takes_numpy_integers_and_none():
    g = games.make(KUHN)
    one = g.reset(seed=np.int64(3)).obs
    assert all((one[a] == g.reset(seed=3).obs[a]).all() for a in one)
    assert g.reset(seed=None).acting


@pytest.mark.parametrize("actions", [0, [0], "player_0", None])
def test_step_refuses_what_is_not_a_dict_and_leaves_the_game_as_it_was(actions):
    g = games.make(KUHN)
    g.reset(seed=0)
    with pytest.raises(IllegalActionError) as info:
        g.step(actions)
    assert str(info.value) == (f"openspiel/kuhn_poker: step({actions!r}); accepted: a dict of "
                               "agent id -> action, agents ('player_0', 'player_1')")
    assert g.step({"player_0": 0}).acting == ("player_1",)


@pytest.mark.parametrize("name", AGENT_GAMES)
@pytest.mark.parametrize("method", ["observe", "legal_actions", "legal_mask", "text_observation",
                                    "legal_action_texts", "final_legal_mask", "observe_checked",
                                    "final_legal_checked"])
def test_a_wrong_agent_id_is_named_with_the_games_agents(name, method):
    g = games.make(name, **({"N": 2} if name.startswith("pettingzoo") else {}))
    g.reset(seed=0)
    with pytest.raises(GameError) as info:
        getattr(g, method)("nobody")
    assert type(info.value) is GameError
    assert str(info.value) == (f"unknown agent 'nobody' in {g.spec.name}; agents: "
                               f"{g.spec.agent_ids}")


@pytest.mark.parametrize("name", [KUHN, "matrix/climbing"])
def test_action_text_and_parse_action_name_a_wrong_agent_too(name):
    g = games.make(name)
    g.reset(seed=0)
    for call in (lambda: g.action_text("nobody", 0), lambda: g.parse_action("nobody", "x"),
                 lambda: g.observe(agent=0)):
        with pytest.raises(GameError, match=r"^unknown agent .* in .*; agents: \("):
            call()


def test_the_agent_check_keeps_the_games_own_errors_and_names():
    g = games.make(KUHN)
    assert type(g).observe.__name__ == "observe"
    g.reset(seed=0)
    assert g.observe("player_1").shape == g.spec.obs_shapes["player_1"]


def test_make_refuses_a_name_that_is_not_a_str():
    with pytest.raises(GameError) as info:
        games.make(3)
    assert str(info.value) == ("games.make(3): the game's name must be a str, e.g. "
                               "'openspiel/kuhn_poker'")


@pytest.mark.parametrize("copies", ["4", 2.0, True, None])
def test_vector_game_refuses_a_copies_count_that_is_not_an_int(copies):
    with pytest.raises(GameError) as info:
        VectorGame(KUHN, copies, seed=0)
    assert str(info.value) == f"num_envs must be >= 1 (an integer), got {copies!r}"


def test_vector_game_refuses_zero_copies_and_a_bad_seed():
    with pytest.raises(GameError, match=r"^num_envs must be >= 1 \(an integer\), got 0$"):
        VectorGame(KUHN, 0, seed=0)
    with pytest.raises(GameError, match=r"^VectorGame seed='1'; accepted: None or an integer "
                                        r">= 0$"):
        VectorGame(KUHN, 2, seed="1")
    assert VectorGame(KUHN, np.int64(2), seed=np.int64(1)).reset().done.shape == (2,)


def test_vector_game_refuses_a_game_instead_of_its_name_or_factory():
    with pytest.raises(GameError, match=r"^VectorGame\(<OpenSpielGame openspiel/kuhn_poker>, "
                                        r"\.\.\.\): accepted: a game's name or a factory"):
        VectorGame(games.make(KUHN), 2)


def _kuhn4():
    vg = VectorGame(KUHN, 4, seed=0)
    vg.reset()
    return vg


@pytest.mark.parametrize("n", [3, 6])
def test_vector_step_refuses_arrays_of_another_length_before_stepping_a_copy(n):
    vg = _kuhn4()
    with pytest.raises(IllegalActionError) as info:
        vg.step({"player_0": np.zeros(n, dtype=np.int64)})
    assert str(info.value) == (f"openspiel/kuhn_poker: actions['player_0'] holds {n} actions, "
                               "expected one per copy: 4 (num_envs)")
    vs = vg.step({"player_0": np.zeros(4, dtype=np.int64)})  # nothing was stepped
    assert vs.acting["player_1"].all() and not vs.acting["player_0"].any()


def test_vector_step_refuses_a_scalar_a_missing_agent_and_an_unknown_one():
    vg = _kuhn4()
    with pytest.raises(IllegalActionError, match=r"actions\['player_0'\] is 0, expected an array "
                                                 r"of 4 actions \(one per copy\)$"):
        vg.step({"player_0": 0})
    with pytest.raises(IllegalActionError, match=r"^openspiel/kuhn_poker: no actions for "
                                                 r"player_0, which acts in copies \[0, 1, 2, 3\]"):
        vg.step({"player_1": np.zeros(4, dtype=np.int64)})
    with pytest.raises(IllegalActionError, match=r"^openspiel/kuhn_poker: actions for unknown "
                                                 r"agents \['player_9'\]; agents: \('player_0'"):
        vg.step({"player_0": np.zeros(4, dtype=np.int64), "player_9": np.zeros(4)})
    vs = vg.step({"player_0": np.zeros(4, dtype=np.int64), "player_1": np.zeros(4)})
    assert vs.acting["player_1"].all()  # an agent not acting anywhere may be given zeros


def test_vector_step_of_a_stepped_simultaneous_game_checks_every_agent():
    vg = VectorGame("matrix/climbing", 3, seed=0)
    vg.reset()
    with pytest.raises(IllegalActionError, match=r"actions\['agent_1'\] holds 2 actions"):
        vg.step({"agent_0": np.zeros(3, dtype=np.int64), "agent_1": np.zeros(2, dtype=np.int64)})
    assert vg.step({a: np.zeros(3, dtype=np.int64) for a in vg.spec.agent_ids}).done.all()


def test_a_step_refused_part_way_says_so_until_reset():
    """An illegal action in copy 2 after copies 0-1 stepped: the copies are apart, and the next
    step says why instead of refusing correct actions for the agent it no longer expects."""
    vg = _kuhn4()
    with pytest.raises(IllegalActionError, match=r"illegal action 5 for player_0"):
        vg.step({"player_0": np.array([0, 0, 5, 0])})
    with pytest.raises(GameError, match=r"^openspiel/kuhn_poker: VectorGame.step\(\) after a step "
                                        r"refused at copy 2 \(copies 0-1 had stepped\); call "
                                        r"reset\(\)$"):
        vg.step({"player_0": np.zeros(4, dtype=np.int64)})
    vg.reset()
    assert vg.step({"player_0": np.zeros(4, dtype=np.int64)}).acting["player_1"].all()
    with pytest.raises(IllegalActionError):  # refused at copy 0: nothing stepped, no reset needed
        vg.step({"player_1": np.array([7, 0, 0, 0])})
    assert vg.step({"player_1": np.ones(4, dtype=np.int64)}).acting["player_0"].any()


def test_a_missing_agent_in_many_copies_is_shown_short():
    vg = VectorGame(KUHN, 12, seed=0)
    vg.reset()
    with pytest.raises(IllegalActionError, match=r"acts in copies \[0, 1, 2, 3, 4, 5, 6, 7, "
                                                 r"\.\.\.\]$"):
        vg.step({})
