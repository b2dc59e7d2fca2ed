"""``selfplay-eval`` without ``--game`` plays the game the policy files record.

Every policy file names the game it was trained on (``meta.game``, with its arguments), yet
``selfplay-eval a.pt b.pt --db r.db`` was refused: "the following arguments are required:
--game". The name comes from a file, so it is checked as untrusted before it is made: all
files must agree, a file naming no game asks for ``--game``, and a name that would read a
file or import and call a module the user did not name is refused.
"""

import dataclasses
import sqlite3

import pytest

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"
LEDUC = "openspiel/leduc_poker"


def _policy(path, game, recorded=None):
    """A policy file of ``game``; ``recorded``: the game name its file holds instead."""
    pol = registry.get("mappo").build(games.make(game).spec).policy()
    if recorded is not None:
        pol.meta = dataclasses.replace(pol.meta, game=recorded)
    return str(pol.save(path))


def test_the_game_the_files_record_is_played(tmp_path, capsys):
    a, b = _policy(tmp_path / "a.pt", KUHN), _policy(tmp_path / "b.pt", KUHN)
    db = tmp_path / "r.db"
    code, out, err = run_eval([a, b, "--db", str(db), "--episodes", "2"], capsys)
    assert code == 0, err
    assert f"selfplay-eval: note: no --game given: playing {KUHN}, the game the policy files " \
        "record" in err.splitlines(), err
    rows = {line.split()[0] for line in out.splitlines() if "  elo " in line}
    assert rows == {"a", "b"}, out
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT game FROM runs").fetchall() == [(KUHN,)]


def test_files_of_two_games_are_refused_naming_both(tmp_path, capsys):
    a, b = _policy(tmp_path / "a.pt", KUHN), _policy(tmp_path / "b.pt", LEDUC)
    code, _, err = run_eval([a, b, "--db", str(tmp_path / "r.db")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert f"a {KUHN}, b {LEDUC}" in lines[0] and "--game" in lines[0], lines
    assert not (tmp_path / "r.db").exists()


def test_a_file_that_records_no_game_asks_for_game(tmp_path, capsys):
    a, b = _policy(tmp_path / "a.pt", KUHN), _policy(tmp_path / "b.pt", KUHN, recorded="")
    code, _, err = run_eval([a, b, "--db", str(tmp_path / "r.db")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("selfplay-eval: b records no game") and "--game" in lines[0]


@pytest.mark.parametrize("recorded, said", [
    # a PettingZoo name imports its module and calls its function with the name's arguments
    ("pettingzoo/os:system(command='touch {marker}')", "whose module os is neither"),
    ("pettingzoo/subprocess.getoutput(cmd='touch {marker}')", "whose module subprocess."),
    # OpenSpiel's file games read the file the name gives
    ("openspiel/nfg_game(filename='{marker}')", "which reads a file"),
])
def test_a_recorded_name_that_runs_code_or_reads_a_file_is_not_made(recorded, said, tmp_path,
                                                                       capsys):
    marker = tmp_path / "ran"
    a = _policy(tmp_path / "a.pt", KUHN, recorded=recorded.format(marker=marker))
    b = _policy(tmp_path / "b.pt", KUHN, recorded=recorded.format(marker=marker))
    code, _, err = run_eval([a, b, "--db", str(tmp_path / "r.db")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert said in lines[0] and "give the game with --game" in lines[0], lines
    assert not marker.exists()
    assert not (tmp_path / "r.db").exists()


def test_an_unknown_recorded_name_is_one_escaped_line(tmp_path, capsys):
    name = "\x1b[2Jno_such_game"
    a = _policy(tmp_path / "a.pt", KUHN, recorded=name)
    b = _policy(tmp_path / "b.pt", KUHN, recorded=name)
    code, _, err = run_eval([a, b, "--db", str(tmp_path / "r.db")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("selfplay-eval: a records the game \\x1b[2Jno_such_game: "
                               "unknown game"), lines
    assert "\x1b" not in err


def test_a_given_game_is_still_played_over_the_recorded_one(tmp_path, capsys):
    # the recorded name is only the default: --game plays the game given (a note says so)
    a = _policy(tmp_path / "a.pt", KUHN, recorded="openspiel/kuhn_poker(players=2)")
    b = _policy(tmp_path / "b.pt", KUHN)
    code, _, err = run_eval([a, b, "--game", KUHN, "--db", str(tmp_path / "r.db"),
                          "--episodes", "1"], capsys)
    assert code == 0, err
    assert "no --game given" not in err
