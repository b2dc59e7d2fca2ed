"""An OpenSpiel game's spec name is a game string that makes the same game again:
``games.make(g.spec.name)`` (a league records it; selfplay-eval, the payoff table and exact
exploitability make the game from it). Where no game string can say a parameter, the game
is still made, as before f03d153, with a warning; making a game from that name is refused."""

import logging

import numpy as np
import pyspiel
import pytest

import games


def _same_again(name, **kwargs):
    made = games.make(name, **kwargs)
    again = games.make(made.spec.name)
    assert again.spec == made.spec
    assert again.pyspiel_game.get_parameters() == made.pyspiel_game.get_parameters()
    return made.spec.name


@pytest.mark.parametrize("name, kwargs, spec_name", [
    ("matrix_rps", {}, "matrix_rps"),
    ("matrix_rps()", {}, "matrix_rps()"),
    ("goofspiel(num_cards=4)", {}, "goofspiel(num_cards=4)"),
    ("goofspiel", {"num_cards": 4, "points_order": "descending"},
     "goofspiel(num_cards=4,points_order=descending)"),
    ("misere(game=kuhn_poker())", {}, "misere(game=kuhn_poker())"),
    ("repeated_game(stage_game=matrix_rps())", {"num_repetitions": 2},
     "repeated_game(num_repetitions=2,stage_game=matrix_rps())"),
    ("start_at(game=tic_tac_toe())", {"history": "4;5"},
     "start_at(game=tic_tac_toe(),history=4;5)"),
    ("deep_sea", {"unscaled_move_cost": 1e-5}, "deep_sea(unscaled_move_cost=0.00001)"),
    # every digit: OpenSpiel's own str(game) writes 15 (0.333333333333333, another game)
    ("bargaining", {"discount": 1 / 3}, "bargaining(discount=0.3333333333333333)"),
])
def test_openspiel_spec_names_make_the_same_game(name, kwargs, spec_name):
    assert _same_again(f"openspiel/{name}", **kwargs) == f"openspiel/{spec_name}"


def test_an_nfg_file_game_is_named_by_its_file(tmp_path):
    """nfg_game with game.kwargs.filename loads a matrix game that calls itself
    'matrix_nfg()' (OpenSpiel's str of it), a name games.make refused ('unknown OpenSpiel
    game matrix_nfg'): the spec names nfg_game and its file."""
    nfg = tmp_path / "rps.nfg"
    nfg.write_text(pyspiel.game_to_nfg_string(pyspiel.load_game("matrix_rps")))
    assert _same_again("openspiel/nfg_game", filename=str(nfg)) == \
        f"openspiel/nfg_game(filename={nfg})"
    assert _same_again(f"openspiel/nfg_game(filename={nfg})") == \
        f"openspiel/nfg_game(filename={nfg})"


# OpenSpiel's own one-round universal_poker (Kuhn's betting): its per-round strings
# firstPlayer='1', maxRaises='1', numBoardCards='0' read back from a game string as ints
_ONE_ROUND = {"betting": "limit", "numPlayers": 2, "numRounds": 1, "blind": "1 1",
              "firstPlayer": "1", "maxRaises": "1", "numBoardCards": "0", "numSuits": 1,
              "numRanks": 3, "numHoleCards": 1, "stack": "10 10"}


def _files(tmp_path, folder):
    """An .efg and an .nfg file in ``tmp_path/folder``."""
    where = tmp_path / folder
    where.mkdir()
    (where / "kuhn.efg").write_text(pyspiel.get_kuhn_poker_efg_data())
    (where / "rps.nfg").write_text(pyspiel.game_to_nfg_string(pyspiel.load_game("matrix_rps")))
    return where


@pytest.mark.parametrize("name, kwargs, key, value, spec_name", [
    ("universal_poker", _ONE_ROUND, "firstPlayer", "'1'",
     "universal_poker(betting=limit,blind=1 1,firstPlayer=1,maxRaises=1,numBoardCards=0,"
     "numHoleCards=1,numPlayers=2,numRanks=3,numRounds=1,numSuits=1,stack=10 10)"),
    # OpenSpiel reads history=4 back as the integer 4 ("Wrong type for parameter history")
    ("start_at(game=tic_tac_toe())", {"history": "4"}, "history", "'4'",
     "start_at(game=tic_tac_toe(),history=4)"),
    ("nfg_game", {"filename": "DIR/rps.nfg"}, "filename", "'DIR/rps.nfg'",
     "nfg_game(filename=DIR/rps.nfg)"),
    ("efg_game", {"filename": "DIR/kuhn.efg"}, "filename", "'DIR/kuhn.efg'",
     "efg_game(filename=DIR/kuhn.efg)"),
])
def test_a_parameter_no_game_string_can_say_still_makes_the_game(tmp_path, caplog, name,
                                                                 kwargs, key, value,
                                                                 spec_name):
    """Made, played and named as before f03d153 (which refused these at make time, so runs
    started before could not resume), with one warning; only making a game from that name,
    which would fail or make another game, is refused, in one line naming the value."""
    where = str(_files(tmp_path, "a=b,c"))
    kwargs = {k: v.replace("DIR", where) if isinstance(v, str) else v for k, v in kwargs.items()}
    value, spec_name = value.replace("DIR", where), spec_name.replace("DIR", where)
    with caplog.at_level(logging.WARNING, logger="games.openspiel"):
        made = games.make(f"openspiel/{name}", **kwargs)
        again = games.make(f"openspiel/{name}", **kwargs)  # a VectorGame's copies: warned once
    assert made.spec == again.spec and made.spec.name == f"openspiel/{spec_name}"
    games.check_game(made, episodes=2)
    warned = [r.getMessage() for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warned) == 1 and f"{key}={value} cannot be written" in warned[0]
    with pytest.raises(games.GameError) as err:
        games.make(made.spec.name)
    said = str(err.value)
    assert "\n" not in said and f"its {key}={value} cannot be written" in said
    assert "accepted: that game made from its game string and game.kwargs" in said


def test_the_refusal_says_which_characters_a_game_string_reads_back(tmp_path, caplog):
    """'(' and ')' read back where they pair up (and shield ',' and '='): a file in such a
    folder is named so that its name makes it again; the refusal said no '(' or ')'."""
    where = _files(tmp_path, "run(a=1,b)")
    for file in ("rps.nfg", "kuhn.efg"):
        kind = file.split(".")[1]
        assert _same_again(f"openspiel/{kind}_game", filename=str(where / file)) == \
            f"openspiel/{kind}_game(filename={where / file})"
    for folder in ("x,y", "x(y"):  # an unpaired '(': "Missing closing bracket" read back
        with caplog.at_level(logging.WARNING, logger="games.openspiel"):
            made = games.make("openspiel/nfg_game",
                              filename=str(_files(tmp_path, folder) / "rps.nfg"))
        with pytest.raises(games.GameError) as err:
            games.make(made.spec.name)
        accepted = str(err.value).split("accepted: ", 1)[1]
        assert "'(' or ')'" not in accepted and "closes each '(' it opens" in accepted
        assert "',' or '=' only inside parentheses" in accepted


@pytest.mark.parametrize("name, kwargs, spec_name", [
    # a wrapped game's float parameter given as an int: 'Expected type: kDouble, got kInt'
    ("misere(game=deep_sea(unscaled_move_cost=2))", {},
     "misere(game=deep_sea(unscaled_move_cost=2))"),
    ("start_at(game=deep_sea(unscaled_move_cost=2))", {"history": "1;0"},
     "start_at(game=deep_sea(unscaled_move_cost=2.0),history=1;0)"),
    # a numpy float (a config's value) is the float it holds: refused at make time before
    ("deep_sea", {"unscaled_move_cost": np.float64(0.5)}, "deep_sea(unscaled_move_cost=0.5)"),
])
def test_wrapped_and_numpy_parameters(name, kwargs, spec_name):
    assert _same_again(f"openspiel/{name}", **kwargs) == f"openspiel/{spec_name}"
