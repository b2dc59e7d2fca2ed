"""``LeagueConfig``'s ``game_kwargs`` is a plain dict again (review 40, L3): 4bb3cc2 marked
arguments it filled in with a dict subclass, so ``yaml.safe_dump(dataclasses.asdict(cfg))``
raised RepresenterError and ``OmegaConf.create(dataclasses.asdict(cfg))``
UnsupportedValueType, which worked before. The mark is now kept beside the arguments, out of
``asdict``, ``fields``, ``repr`` and ``==``, and ``dataclasses.replace`` still carries it
(tests/populations/test_llm40_league_replace.py)."""

import dataclasses
import pickle

import yaml
from omegaconf import OmegaConf

from populations.league import LeagueConfig

KUHN = "openspiel/kuhn_poker"


def test_asdict_of_a_league_config_dumps_to_yaml_and_omegaconf():
    settings = dataclasses.asdict(LeagueConfig())
    assert type(LeagueConfig().game_kwargs) is dict
    assert yaml.safe_load(yaml.safe_dump(settings))["game_kwargs"] == {"max_cycles": 25}
    assert OmegaConf.create(settings).game_kwargs == {"max_cycles": 25}


def test_the_mark_is_no_setting():
    """What a run records (asdict), the fields a CLI derives from, repr and == are as before
    4bb3cc2: a config filled in and one given the same arguments are the same settings."""
    filled, given = LeagueConfig(), LeagueConfig(game_kwargs={"max_cycles": 25})
    assert dataclasses.asdict(filled) == dataclasses.asdict(given)
    assert filled == given and repr(filled) == repr(given)
    assert [f.name for f in dataclasses.fields(LeagueConfig)][:2] == ["game", "game_kwargs"]
    assert not any(f.name.startswith("_") for f in dataclasses.fields(LeagueConfig))
    assert dataclasses.replace(given, game=KUHN).game_kwargs == {"max_cycles": 25}  # given


def test_replacing_the_game_and_the_arguments_together_keeps_the_arguments():
    cfg = dataclasses.replace(LeagueConfig(), game=KUHN, game_kwargs={"players": 3})
    assert cfg.game_kwargs == {"players": 3}
    same_game = dataclasses.replace(LeagueConfig(), game_kwargs={"max_cycles": 5})
    assert dataclasses.replace(same_game, game=KUHN).game_kwargs == {"max_cycles": 5}


def test_a_pickled_copy_keeps_the_mark():
    again = pickle.loads(pickle.dumps(LeagueConfig()))  # a Ray actor's copy
    assert type(again.game_kwargs) is dict
    assert dataclasses.replace(again, game=KUHN).game_kwargs == {}
