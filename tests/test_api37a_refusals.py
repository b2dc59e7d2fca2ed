"""Session 37's library walk (api37a): a policy meets another game's shapes, integer
advantages, an LLM snapshot in a fresh process, devices torch does not take, MAPPO called out
of order, a PettingZoo actor given no seat, a tokenizer of another game, budgets that play
nothing, a bare OpenSpiel name and a misspelt seat. Each was silent or a raw error."""
from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import games
from marl.advantages import normalize_advantages
from marl.configs import NetConfig
from marl.core import Learner, load_policy, resolve_device
from marl.mappo import MAPPO, MAPPOConfig
from marl.play import PettingZooActor
from marl.train import RandomPolicy, evaluate, train
from populations import exploitability as ex

KUHN, LEDUC = "openspiel/kuhn_poker", "openspiel/leduc_poker"
ROOT = Path(__file__).resolve().parents[1]


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


@pytest.fixture(scope="module")
def kuhn3_policy():
    return MAPPO(games.make(KUHN, players=3).spec, MAPPOConfig(), seed=0).policy()


@pytest.fixture(scope="module")
def leduc_policy():
    return MAPPO(games.make(LEDUC).spec, MAPPOConfig(), seed=0).policy()


# ------------------------------------------------------------ H1: a policy on another game
def test_nash_conv_refuses_a_three_player_policy_on_two_player_kuhn(kuhn3_policy):
    with pytest.raises(ValueError) as err:
        ex.nash_conv(KUHN, kuhn3_policy)  # was 0.91: observations padded 11 -> 17
    assert one_line(err) == (
        "nash_conv: the mappo policy for seat 'player_0' was trained on "
        "openspiel/kuhn_poker(players=3) (observation shape (17,), 2 actions) but "
        "openspiel/kuhn_poker gives 'player_0' observation shape (11,), 2 actions; play it on "
        "the game it was trained on")


def test_evaluate_and_act_refuse_another_games_shapes(kuhn3_policy, leduc_policy):
    vg = games.VectorGame(KUHN, 4, seed=0)
    with pytest.raises(ValueError, match=r"^evaluate: the mappo policy for seat 'player_0' was "
                                         r"trained on openspiel/leduc_poker .*3 actions\) but "
                                         r"openspiel/kuhn_poker gives") as err:
        evaluate(vg, {"player_0": leduc_policy, "player_1": leduc_policy}, 4)
    one_line(err)
    vs = vg.reset()
    for pol, trained in ((kuhn3_policy, r"\(17,\), 2 actions"), (leduc_policy, r"\(30,\), 3")):
        with pytest.raises(ValueError, match=rf"trained on .*{trained}.* but is given "
                                             r"observation shape \(11,\), 2 actions"):
            pol.act("player_0", vs)  # was: 3p played padded, leduc a torch size error


def test_train_refuses_an_opponent_and_a_learner_of_another_game(leduc_policy):
    spec = games.make(KUHN).spec
    vg = games.VectorGame(KUHN, 4, seed=0)
    with pytest.raises(ValueError, match=r"^train: opponents: the mappo policy for seat "
                                         r"'player_1' was trained on openspiel/leduc_poker"):
        train(MAPPO(spec, MAPPOConfig(), agents=("player_0",)), vg, 64,
              opponents={"player_1": leduc_policy}, progress=False)
    with pytest.raises(ValueError, match=r"^train: the MAPPO learner for seat 'player_0' was "
                                         r"trained on openspiel/leduc_poker"):
        train(MAPPO(games.make(LEDUC).spec, MAPPOConfig()), vg, 64, progress=False)


def test_a_policy_of_its_own_game_still_plays_everywhere():
    """The checks pass what fits: a trained-shape policy, a seat-dict, random play."""
    spec = games.make(KUHN).spec
    pol = MAPPO(spec, MAPPOConfig(), seed=0).policy()
    assert 0 < ex.nash_conv(KUHN, pol).nash_conv < 5
    rnd = RandomPolicy(spec)
    assert ex.nash_conv(KUHN, {"player_0": pol, "player_1": rnd}).nash_conv > 0
    assert evaluate(games.VectorGame(KUHN, 4, seed=0), {"player_0": pol, "player_1": rnd},
                    2).episodes == 2


def test_approx_nash_conv_refuses_another_games_policy(leduc_policy):
    with pytest.raises(ValueError, match=r"^approx_nash_conv: the mappo policy for seat "
                                         r"'player_0' was trained on openspiel/leduc_poker"):
        ex.approx_nash_conv(KUHN, leduc_policy)


def test_approx_exploits_own_approx_nash_conv_refuses_it_too(leduc_policy):
    # README's approximate NashConv snippet imports it from populations.approx_exploit
    from populations.approx_exploit import approx_nash_conv
    with pytest.raises(ValueError, match=r"^approx_nash_conv: the mappo policy for seat "
                                         r"'player_0' was trained on openspiel/leduc_poker"):
        approx_nash_conv(KUHN, {"player_0": leduc_policy, "player_1": leduc_policy})


# ------------------------------------------------------------------ L3: names and seat keys
def test_nash_conv_refuses_a_bare_openspiel_name_as_games_make_does():
    rnd = RandomPolicy(games.make(KUHN).spec)
    with pytest.raises(games.UnknownGameError) as made:
        games.make("kuhn_poker")
    with pytest.raises(games.UnknownGameError) as err:
        ex.nash_conv("kuhn_poker", rnd)
    assert one_line(err) == ("unknown game 'kuhn_poker'; an OpenSpiel game is named with its "
                             "prefix: 'openspiel/kuhn_poker'")
    assert "unknown game 'kuhn_poker'" in str(made.value)


def test_nash_conv_names_a_misspelt_seat_and_the_seats():
    rnd = RandomPolicy(games.make(KUHN).spec)
    with pytest.raises(ValueError) as err:
        ex.nash_conv(KUHN, {"player_0": rnd, "p1": rnd})
    assert one_line(err) == ("nash_conv: openspiel/kuhn_poker has no seat 'p1'; its seats: "
                             "['player_0', 'player_1']")


# ----------------------------------------------------------------------- H2: advantages
@pytest.mark.parametrize("values, said", [
    (torch.tensor([1, 2, 3]), "values are torch.int64"),  # was tensor([-1, 0, 1])
    (torch.tensor([True, False]), "values are torch.bool"),
    ([1.0, 2.0], "values is a list"),
])
def test_normalize_advantages_refuses_values_that_are_not_floating(values, said):
    with pytest.raises(TypeError) as err:
        normalize_advantages("global", values)
    assert one_line(err).startswith(said)
    assert "float32" in str(err.value)
    assert normalize_advantages("global", torch.tensor([1.0, 2.0, 3.0])).advantages.dtype \
        == torch.float32


# ------------------------------------------------------------------- M2: LLM snapshot load
def test_an_llm_snapshot_loads_in_a_fresh_process(tmp_path):
    from llm_agents import ActionConfig, GRPOConfig, MultiTurnGRPO, Team
    from llm_agents.tiny import build_model, build_tokenizer, game_corpus

    tok = build_tokenizer(game_corpus(KUHN, 5))
    cfg = GRPOConfig(group_size=2, groups_per_step=1, action=ActionConfig(mode="score"),
                     device="cpu")
    path = MultiTurnGRPO(Team.shared(build_model(tok), tok), KUHN, cfg).policy().save(
        tmp_path / "llm.pt")
    code = (f"import marl.core, llm_agents; p = marl.core.load_policy({str(path)!r}); "
            "print(type(p).__name__, p.meta.game)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["LLMPolicy", KUHN]
    bare = subprocess.run([sys.executable, "-c", code.replace(", llm_agents", "")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    # marl names no package above it: llm_agents's declaration of 'llm' is read from the
    # installed package (llm40; was "unknown policy kind 'llm'", import llm_agents for 'llm')
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.split() == ["LLMPolicy", KUHN]


def test_an_unknown_kind_says_how_a_kind_registers(tmp_path):
    path = RandomPolicy(games.make(KUHN).spec).save(tmp_path / "r.pt")
    data = torch.load(path, weights_only=True)
    data["meta"]["kind"] = "nope"
    torch.save(data, path)
    from marl.core import PolicyLoadError

    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    text = one_line(err)
    assert "unknown policy kind 'nope'" in text
    assert "import llm_agents for 'llm'" in text and "@register_policy" in text


# ------------------------------------------------------------------------------ M4: devices
# (hint41: the nearest accepted name ends the line when one is near)
@pytest.mark.parametrize("device, hint", [("mps", ""), ("gpu", "; did you mean 'cuda'?"),
                                          ("cuda:x", "; did you mean 'cuda'?")])
def test_resolve_device_refuses_what_it_does_not_take(device, hint):
    with pytest.raises(ValueError) as err:
        resolve_device(device)
    assert one_line(err) == (f"device={device!r} unknown; choose one of cpu, cuda, cuda:N (N a "
                             f"GPU index), auto{hint}")
    with pytest.raises(ValueError, match="unknown; choose one of cpu, cuda"):
        MAPPO(games.make(KUHN).spec, MAPPOConfig(), device=device)
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


# ------------------------------------------------------------------------ M5: out of order
def test_mappo_out_of_order_says_so_as_the_replay_learners_do():
    spec = games.make(KUHN).spec
    vs = games.VectorGame(KUHN, 4, seed=0).reset()
    for algo in ("mappo", "ippo"):
        net = NetConfig(critic="local" if algo == "ippo" else "auto")
        learner = MAPPO(spec, MAPPOConfig(net=net))
        with pytest.raises(RuntimeError, match=r"^update\(\) called before any act\(\)/"
                                               r"observe\(\): the rollout is empty"):
            learner.update()
        with pytest.raises(RuntimeError, match=r"^observe\(\) called without a preceding "
                                               r"act\(\)$"):
            learner.observe(vs)


# -------------------------------------------------------------------- M6: PettingZooActor
def test_pettingzoo_actor_refuses_observations_that_name_no_seat(tmp_path):
    path = MAPPO(games.make(KUHN).spec, MAPPOConfig(), seed=0).policy().save(tmp_path / "p.pt")
    actor = PettingZooActor(path)
    env = games.to_pettingzoo(games.make(KUHN))
    env.reset(seed=0)
    obs, *_ = env.last()  # the AEC env's {"observation", "action_mask"}
    for given, got in ((obs, "a dict with keys ['action_mask', 'observation']"),
                       (obs["observation"], "a ndarray")):
        with pytest.raises(TypeError) as err:
            actor.act(given)  # was {}: no action, no error
        assert one_line(err).startswith("PettingZooActor.act takes {seat: observation}")
        assert f"got {got}, which names no seat of ['player_0', 'player_1']" in str(err.value)
    assert set(actor.act({env.agent_selection: obs})) == {env.agent_selection}
    assert actor.act({}) == {}


# --------------------------------------------------------------------- M10: unknown tokens
def test_a_tokenizer_of_another_game_is_warned_once(caplog):
    from llm_agents import ActionConfig, GRPOConfig, MultiTurnGRPO, Team
    from llm_agents.tiny import build_model, build_tokenizer, game_corpus

    cfg = GRPOConfig(group_size=2, groups_per_step=1, action=ActionConfig(mode="score"),
                     device="cpu")
    kuhn_tok = build_tokenizer(game_corpus(KUHN, 20))
    trainer = MultiTurnGRPO(Team.shared(build_model(kuhn_tok), kuhn_tok), LEDUC, cfg)
    with caplog.at_level(logging.WARNING, logger="llm_agents.trainer"):
        trainer.step()
        trainer.step()
    told = [r.getMessage() for r in caplog.records if "unknown token" in r.getMessage()]
    assert len(told) == 1 and "\n" not in told[0], told
    assert "% of the prompt tokens are its tokenizer's unknown token" in told[0]
    caplog.clear()
    tok = build_tokenizer(game_corpus(LEDUC, 20))  # its own game's words: nothing said
    own = MultiTurnGRPO(Team.shared(build_model(tok), tok), LEDUC, cfg)
    with caplog.at_level(logging.WARNING, logger="llm_agents.trainer"):
        own.step()
    assert not [r for r in caplog.records if "unknown token" in r.getMessage()]


# ----------------------------------------------------------------- L2: budgets of nothing
def test_train_and_evaluate_refuse_budgets_that_play_nothing():
    spec = games.make(KUHN).spec
    vg = games.VectorGame(KUHN, 4, seed=0)
    with pytest.raises(ValueError) as err:
        train(MAPPO(spec, MAPPOConfig()), vg, -5, progress=False)
    assert one_line(err) == ("train: frames=-5; expected an integer >= 0 (the frames to "
                             "train)")
    rnd = RandomPolicy(spec)
    with pytest.raises(ValueError) as err:
        evaluate(vg, {"player_0": rnd, "player_1": rnd}, 0)  # was NaN and a RuntimeWarning
    assert one_line(err).startswith("evaluate: episodes=0; expected an integer >= 1")
    assert train(MAPPO(spec, MAPPOConfig()), vg, 0, progress=False).frames == 0


# ------------------------------------------------------------------------ L4: docstrings
def test_public_names_of_the_walk_have_docstrings():
    import llm_agents

    for f in (llm_agents.available_modes, Learner.save, Learner.load, RandomPolicy.act,
              RandomPolicy.action_probs):
        assert f.__doc__, f
    assert np is not None


def test_policy_player_refuses_another_game_or_opponent(leduc_policy):
    from marl.play import PolicyPlayer

    with pytest.raises(ValueError, match=r"^PolicyPlayer: the mappo policy for seat 'player_0' "
                                         r"was trained on openspiel/leduc_poker"):
        PolicyPlayer(leduc_policy, num_envs=2, game=KUHN)
    kuhn = MAPPO(games.make(KUHN).spec, MAPPOConfig(), seed=0).policy()
    with pytest.raises(ValueError, match=r"^PolicyPlayer: the mappo policy for seat 'player_1' "
                                         r"was trained on openspiel/leduc_poker"):
        PolicyPlayer(kuhn, num_envs=2, opponents={"player_1": leduc_policy})
