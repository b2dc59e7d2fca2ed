"""game=NAME's hint names what would play (rfix34b, review of fix34a L3).

Before: ``selfplay-train game=openspiel/kuhn_poker``, the commonest slip, got no hint (the
slash stopped the line's pattern), and ``game=kuhnn``, a typo of the preset ``kuhn``, was
told "is named by game.name=kuhnn", which then fails as an unknown game.
"""

from __future__ import annotations

import pytest

from tests.populations.user_modules import refused_line as _refused


@pytest.mark.parametrize(("option", "told"), [
    ("openspiel/kuhn_poker", "; openspiel/kuhn_poker is a game's name, not a preset: "
                             "game.name=openspiel/kuhn_poker plays it"),
    ("openspiel/goofspiel(num_cards=4)",
     "; openspiel/goofspiel(num_cards=4) is a game's name, not a preset: "
     """'game.name="openspiel/goofspiel(num_cards=4)"' plays it"""),
    ("pettingzoo/mpe2.simple_spread_v3", "; pettingzoo/mpe2.simple_spread_v3 is a game's "
                                         "name, not a preset: game.name=pettingzoo/mpe2."
                                         "simple_spread_v3 plays it"),
    ("kuhnn", "; nearest: game=kuhn"),
    ("tictac", "; nearest: game=tictactoe"),
])
def test_a_games_name_or_a_typo_is_told_what_plays(option, told, tmp_path, monkeypatch,
                                                   capsys):
    monkeypatch.chdir(tmp_path)
    value = f'"{option}"' if "(" in option else option  # as a shell passes 'game="..."'
    line = _refused([f"game={value}"], monkeypatch, capsys)
    assert line.startswith(f"selfplay-train: In 'config': Could not find 'game/{option}'; "
                           "Available options in 'game': climbing, kuhn, "), line
    assert line.endswith(told), line
    assert f"game.name={option.partition('(')[0]}" not in line or "not a preset" in line
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "runs").exists()
