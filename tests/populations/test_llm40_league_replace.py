"""``dataclasses.replace(LeagueConfig(...), game=...)`` gives the new game its own arguments
(llm40). ``LeagueConfig`` fills ``game_kwargs=None`` in with the default game's
``max_cycles=25``, and ``replace`` passes every field on, so the new game silently got the old
game's arguments (``openspiel/kuhn_poker`` with ``max_cycles=25``). Arguments the user gave are
the user's and stay; only those the config filled in follow the game."""

import dataclasses
import json
import pickle

import pytest

import games
from populations.league import DEFAULT_GAME_KWARGS, LeagueConfig

KUHN = "openspiel/kuhn_poker"
SPREAD = "pettingzoo/mpe2.simple_spread_v3"


@pytest.mark.parametrize("game", [KUHN, SPREAD])
def test_replacing_the_game_gives_the_new_game_its_own_defaults(game):
    cfg = dataclasses.replace(LeagueConfig(), game=game)
    assert cfg.game_kwargs == {}  # was {'max_cycles': 25}
    assert cfg == LeagueConfig(game=game)
    games.make(cfg.game, **cfg.game_kwargs)  # kuhn takes no max_cycles


def test_replacing_it_back_gives_the_default_game_its_defaults_again():
    there = dataclasses.replace(LeagueConfig(), game=KUHN)
    back = dataclasses.replace(there, game=LeagueConfig.game)
    assert back.game_kwargs == DEFAULT_GAME_KWARGS == {"max_cycles": 25}


def test_replacing_other_fields_keeps_the_game_arguments():
    cfg = dataclasses.replace(LeagueConfig(), num_envs=4, generations=2)
    assert cfg.game_kwargs == {"max_cycles": 25}
    mine = LeagueConfig(game=SPREAD, game_kwargs={"N": 2})
    assert dataclasses.replace(mine, seed=3).game_kwargs == {"N": 2}


def test_arguments_the_user_gave_stay_with_a_new_game():
    cfg = LeagueConfig(game_kwargs={"max_cycles": 10})
    assert dataclasses.replace(cfg, game=SPREAD).game_kwargs == {"max_cycles": 10}


def test_the_filled_in_arguments_are_a_plain_mapping_everywhere():
    cfg = LeagueConfig()
    assert dataclasses.asdict(cfg)["game_kwargs"] == {"max_cycles": 25}
    assert json.loads(json.dumps(dataclasses.asdict(cfg)["game_kwargs"])) == {"max_cycles": 25}
    again = pickle.loads(pickle.dumps(cfg))  # a Ray actor's copy
    assert again == cfg and dataclasses.replace(again, game=KUHN).game_kwargs == {}
