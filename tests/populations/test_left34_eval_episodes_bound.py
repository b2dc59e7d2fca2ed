"""``selfplay-eval --episodes 100000000000000`` was taken and played until killed: the flag is
bounded as ``selfplay-train``'s ``eval_episodes`` (10**6), refused in one line naming the
range before torch or the files load, in the words a value that is no integer gets."""

from __future__ import annotations

import pytest

from populations.eval_cli import eval_main

RANGE = "an integer from 1 to 1000000 (10**6: each match is a row of the database)"


def _fails(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        eval_main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    return err.rstrip("\n")


@pytest.mark.parametrize("episodes", [10**14, 10**6 + 1, 0])
@pytest.mark.parametrize("game", [["--game", "openspiel/kuhn_poker"], []])
def test_episodes_past_the_bound_are_refused_with_the_range(episodes, game, tmp_path, capsys):
    for name in ("a.pt", "b.pt"):
        (tmp_path / name).write_bytes(b"")  # exist; never read
    db = tmp_path / "r.db"
    err = _fails([*game, "--db", str(db), "--episodes", str(episodes),
                  str(tmp_path / "a.pt"), str(tmp_path / "b.pt")], capsys)
    assert err == f"selfplay-eval: --episodes {episodes}: expected {RANGE}"
    assert not db.exists()


def test_episodes_given_no_integer_say_the_same_range(tmp_path, capsys):
    err = _fails(["--db", str(tmp_path / "r.db"), "--episodes", "ten", "a.pt", "b.pt"], capsys)
    assert err.startswith(f"selfplay-eval: argument --episodes: 'ten': expected {RANGE}"), err
