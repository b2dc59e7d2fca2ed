"""OpenSpiel counts and sizes have an upper limit, checked before the game is loaded
(osbounds35).

A game name read from a file is untrusted text: ``openspiel/goofspiel(num_cards=1000000000)``
and ``openspiel/liars_dice(numdice=1000000000)`` made ``games.make`` hang (over 20 s):
``check_params`` checked only lower limits. A count or size now accepts up to ten times its
default or 100 (a length such as a horizon a hundred times or 10,000; a few sizes whose cost
grows as a power have their own limits), refused in one line naming the value and the range,
by ``games.make`` and ``selfplay-eval`` (a snapshot's recorded name: exit 2, no database).
"""

from __future__ import annotations

import pytest

import games
from games.limits import HINT
from tests.games.crafted_snapshots import eval_refusal, refused

# a hang guard, not a speed claim: each of these refusals comes before anything is built
# (before the bounds the values here hung games.make, or ran until killed)
pytestmark = pytest.mark.timeout(300)

BIG = 1000000000


def _line(game: str, arg: str, value: object, low: int, high: int) -> str:
    return (f"bad parameter for openspiel/{game}: {arg}={value} is too large; accepted: an "
            f"integer in [{low}, {high}] ({HINT})")  # the switch that lifts it (bounds36)


CASES = [
    ("goofspiel", {"num_cards": BIG}, _line("goofspiel", "num_cards", BIG, 1, 130)),
    ("liars_dice", {"numdice": BIG}, _line("liars_dice", "numdice", BIG, 1, 100)),
    ("hex", {"board_size": 111}, _line("hex", "board_size", 111, 1, 110)),
    ("gomoku", {"dims": 4}, _line("gomoku", "dims", 4, 1, 3)),
    ("blotto", {"coins": 21}, _line("blotto", "coins", 21, 1, 20)),
    ("markov_soccer", {"horizon": BIG}, _line("markov_soccer", "horizon", BIG, 1, 100000)),
]


@pytest.mark.parametrize(("game", "kwargs", "line"), CASES)
def test_a_size_above_its_bound_is_refused_before_loading(game, kwargs, line):
    with pytest.raises(games.GameError) as info:
        games.make(f"openspiel/{game}", **kwargs)
    assert str(info.value) == line


def test_the_bound_is_checked_in_the_game_string_too():
    with pytest.raises(games.GameError) as info:
        games.make(f"openspiel/goofspiel(num_cards={BIG})")
    assert str(info.value) == CASES[0][2]


def test_the_bound_is_checked_in_a_game_inside_the_game():
    with pytest.raises(games.GameError) as info:
        games.make(f"openspiel/misere(game=goofspiel(num_cards={BIG}))")
    assert str(info.value) == CASES[0][2]
    games.make("openspiel/misere(game=goofspiel(num_cards=4))").reset(seed=0)


@pytest.mark.parametrize(("game", "kwargs"), [
    ("goofspiel", {"num_cards": 130}),
    ("liars_dice", {"numdice": 100}),
    ("hex", {"board_size": 110}),
    ("goofspiel", {"num_cards": 4, "players": 2}),
    ("liars_dice", {"dice_sides": 3}),
    ("quoridor", {"board_size": 5}),
    ("deep_sea", {"size": 3}),
    ("dark_hex", {"num_rows": 3, "num_cols": 3}),
    ("leduc_poker", {"players": 2}),
    ("markov_soccer", {"horizon": 100000}),
])
def test_the_largest_accepted_and_the_shipped_values_still_build(game, kwargs):
    env = games.make(f"openspiel/{game}", **kwargs)
    env.reset(seed=0)


@pytest.mark.parametrize("preset", ["kuhn", "leduc", "tictactoe", "rps"])
def test_the_shipped_openspiel_presets_are_accepted(preset):
    from pathlib import Path

    import yaml

    cfg = yaml.safe_load((Path(__file__).parents[2] / "configs" / "game" / f"{preset}.yaml")
                         .read_text())["game"]
    env = games.make(cfg["name"], **(cfg.get("kwargs") or {}))
    env.reset(seed=0)


@pytest.mark.parametrize(("name", "line"), [
    (f"openspiel/goofspiel(num_cards={BIG})", CASES[0][2]),
    (f"openspiel/liars_dice(numdice={BIG})", CASES[1][2]),
])
def test_selfplay_eval_refuses_a_snapshot_recording_a_too_large_size(tmp_path, capsys,
                                                                     monkeypatch, name, line):
    monkeypatch.chdir(tmp_path)
    small = name.split("(", 1)[0]
    assert eval_refusal(tmp_path, capsys, games.make(small).spec, name) == refused(name, line)
