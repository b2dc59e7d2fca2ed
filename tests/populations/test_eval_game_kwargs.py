"""``selfplay-eval`` names the game a policy was trained on with its kwargs.

PettingZoo names dropped their kwargs, so a policy trained on simple_spread with N=2 and
evaluated without --game-kwargs was refused as holding 'the seats ... of
pettingzoo/mpe2.simple_spread_v3, not [agent_2]' (one name for two games), and one trained
with max_cycles=5 played max_cycles=25 without a word.
"""

import games
from marl import registry

ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"
SPREAD = "pettingzoo/mpe2.simple_spread_v3"


def _eval(args, capsys):
    from populations.eval_cli import eval_main

    try:
        eval_main(args)
        code = 0
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, out.err


def _policy(path, game, **kwargs):
    spec = games.make(game, **kwargs).spec
    return str(registry.get("mappo").build(spec).policy().save(path))


def test_other_kwargs_of_the_same_seats_are_said(tmp_path, capsys):
    a = _policy(tmp_path / "a.pt", ADVERSARY, max_cycles=5)
    b = _policy(tmp_path / "b.pt", ADVERSARY, max_cycles=5)
    code, err = _eval([a, b, "--game", ADVERSARY, "--db", str(tmp_path / "x.db"),
                       "--episodes", "1"], capsys)
    assert code == 0, err
    assert (f"selfplay-eval: note: a was trained on {ADVERSARY}(max_cycles=5); it plays "
            f"{ADVERSARY} here") in err.splitlines()
    code, err = _eval([a, b, "--game", ADVERSARY, "--game-kwargs", '{"max_cycles": 5}',
                       "--db", str(tmp_path / "y.db"), "--episodes", "1"], capsys)
    assert code == 0 and "note" not in err, err


def test_other_seats_name_both_games(tmp_path, capsys):
    a = _policy(tmp_path / "a.pt", SPREAD, N=2)
    b = _policy(tmp_path / "b.pt", SPREAD, N=2)
    code, err = _eval([a, b, "--game", SPREAD, "--db", str(tmp_path / "x.db")], capsys)
    assert code == 2
    assert err.startswith(f"selfplay-eval: a was trained on {SPREAD}(N=2) (seats "
                          f"['agent_0', 'agent_1']), not on {SPREAD} (seats "), err


def test_a_working_folder_module_is_found_under_a_name_with_kwargs(tmp_path, monkeypatch):
    from populations.cli_common import game_modules

    (tmp_path / "mypz_kw.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    # a snapshot's name of a user's env module holds its kwargs: mypz_kw(N=2)
    assert game_modules("pettingzoo/mypz_kw(N=2)") == ["mypz_kw"]
    assert game_modules("pettingzoo/mypz_kw:make_env(N=2)") == ["mypz_kw"]
