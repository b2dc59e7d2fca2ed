"""An OpenSpiel game's spec name is a game string that makes the same game again:
``games.make(g.spec.name)`` (a league records it; selfplay-eval, the payoff table and exact
exploitability make the game from it). Where no game string can say a parameter, the game
is refused when made, in one line, rather than when its name is used later."""

import logging

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


@pytest.mark.parametrize("name, kwargs, message", [
    # OpenSpiel reads history=4 back as the integer 4 ("Wrong type for parameter history")
    ("start_at(game=tic_tac_toe())", {"history": "4"},
     r"^openspiel/start_at: history='4' cannot be written in an OpenSpiel game string \(it "
     r"reads back as 4\), so the game could not be made again from its name; accepted: "),
    ("efg_game", {"filename": "COMMA"}, r"^openspiel/efg_game: filename='.*a,b\.efg' cannot"),
])
def test_a_parameter_no_game_string_can_say_is_refused_when_made(tmp_path, name, kwargs,
                                                                  message):
    efg = tmp_path / "a,b.efg"
    efg.write_text(pyspiel.get_kuhn_poker_efg_data())
    kwargs = {k: str(efg) if v == "COMMA" else v for k, v in kwargs.items()}
    logging.disable(logging.WARNING)  # C++ lines of a failed load go to the log
    try:
        with pytest.raises(games.GameError, match=message):
            games.make(f"openspiel/{name}", **kwargs)
    finally:
        logging.disable(logging.NOTSET)
