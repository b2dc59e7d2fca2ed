"""``selfplay-eval`` on a run's snapshots (``<member>/v0000.pt`` in each member's folder):
files of one name were one player, so the round robin played no match and said nothing."""

import pytest

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    spec = games.make(KUHN).spec
    root = tmp_path_factory.mktemp("snapshots")
    paths = []
    for member in ("main", "exploiter"):
        (root / member).mkdir()
        paths.append(registry.get("mappo").build(spec).policy().save(root / member / "v0000.pt"))
    return [str(p) for p in paths]


def test_files_of_one_name_are_players_of_their_own(snapshots, tmp_path, capsys):
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "2",
                            *snapshots], capsys)
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if "  elo " in line}
    assert set(rows) == {"main_v0000", "exploiter_v0000"}
    assert all("pairs 0" not in row for row in rows.values())


def test_one_policy_without_exploit_is_a_one_line_error(snapshots, tmp_path, capsys):
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), snapshots[0]], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "two or more policy files" in lines[0]
    assert not (tmp_path / "r.db").exists()


def test_exploit_turns_on_progress_lines(snapshots, tmp_path, capsys, monkeypatch):
    """--exploit trains for minutes; its progress (populations.approx_exploit logs each
    response and seed) was not shown: selfplay-eval set up no logging (300 s, one line)."""
    import logging

    calls = []
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: calls.append(kw))
    run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--exploit", "--exploit-frames",
           "0", snapshots[0]], capsys)  # refused, after the logging is set up
    assert [c["level"] for c in calls] == [logging.INFO]
    calls.clear()
    run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), snapshots[0]], capsys)
    assert calls == []  # a plain round robin stays as quiet as it was


def test_player_names_made_from_paths_are_valid_member_names():
    """``a.pt a.pt`` gave ``_a`` twice and folders with spaces ``run 1_v0``: both refused as
    member names after the evaluation database had been created."""
    from populations.eval_files import policy_names
    from populations.store import _NAME

    names = policy_names(["a.pt", "a.pt", "run 1/v0.pt", "run 2/v0.pt", "x/-é!.pt"])
    assert list(names) == ["a", "a_2", "run_1_v0", "run_2_v0", "policy"]
    assert all(_NAME.match(n) for n in names)


def test_a_policy_of_one_side_is_refused_before_the_database(tmp_path, capsys):
    """A ``population=none`` snapshot (its first team's seats only) died in the first match
    with ``KeyError: 'player_1'`` after the eval database was made."""
    spec = games.make(KUHN).spec
    one = registry.get("mappo").build(spec, agents=("player_0",)).policy().save(tmp_path / "a.pt")
    full = registry.get("mappo").build(spec).policy().save(tmp_path / "b.pt")
    db = tmp_path / "r.db"
    code, _, err = run_eval(["--game", KUHN, "--db", str(db), str(one), str(full)], capsys)
    assert code == 2 and not db.exists()
    assert err.strip() == (
        "selfplay-eval: a holds the seats ['player_0'] of openspiel/kuhn_poker, not "
        "['player_1']: matches here play each policy on every side (a population=none run "
        "trains its first team only, a PSRO member plays its own seat; a league's snapshots "
        "hold every seat): train with population=self_play (or fsp, pfsp) for snapshots that "
        "play every side")  # a PSRO run's psro-player_0-1 named only population=none


@pytest.mark.parametrize(("extra", "message"), [
    (["--game", "openspiel/leduc_poker"],
     "main_v0000 was trained on openspiel/kuhn_poker (observations of shape (11,) for "
     "player_0); openspiel/leduc_poker gives (30,)"),
    (["--game", KUHN, "--episodes", "0"],
     "--episodes 0: expected an integer from 1 to 1000000 (10**6: each match is a row of the "
     "database)"),
    (["--game", KUHN, "--game-kwargs", '{"players": 3}'],  # named the seats as the game's
     "main_v0000 was trained on openspiel/kuhn_poker (seats ['player_0', 'player_1']), not "
     "on openspiel/kuhn_poker(players=3) (seats ['player_0', 'player_1', 'player_2']): "
     "evaluate it on its own game"),
])
def test_a_policy_of_another_game_or_no_episodes_is_refused(snapshots, tmp_path, capsys,
                                                            extra, message):
    """Kuhn snapshots on Leduc died with 'could not broadcast input array from shape (8,30)
    into shape (8,11)' after the database was made; --episodes 0 printed ratings of None."""
    db = tmp_path / "r.db"
    code, _, err = run_eval([*extra, "--db", str(db), *snapshots], capsys)
    assert code == 2 and not db.exists()
    assert err.strip() == f"selfplay-eval: {message}"


def test_an_evaluation_run_ends_finished_or_interrupted(snapshots, tmp_path, capsys, monkeypatch):
    """selfplay-eval left its run 'running' in the database (the dashboard showed a live
    run), also after Ctrl-C."""
    from populations import evaluation
    from populations.db import LeagueDB

    db_path = tmp_path / "r.db"
    args = ["--game", KUHN, "--db", str(db_path), "--episodes", "2", *snapshots]
    assert run_eval(args, capsys)[0] == 0

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluation, "evaluate_pairs", interrupted)  # in the round robin
    code, _, err = run_eval(args, capsys)
    last = err.strip().splitlines()[-1]
    assert code == 130 and last.startswith("selfplay-eval: interrupted after 0 of 1 pairings"), \
        err  # and what the database kept (49f3d20)
    db = LeagueDB(str(db_path))
    assert [db.run_status(r) for r in (1, 2)] == ["finished", "interrupted"]
    db.close()


def test_one_policy_with_exploit_prints_no_empty_rating_row(snapshots, tmp_path, capsys,
                                                              monkeypatch):
    """One policy and --exploit played no match, yet printed the rating table first:
    '  v0006  elo None  mu None ± None  matches 0' above the NashConv estimate."""
    import populations.eval_runs as eval_runs

    monkeypatch.setattr(eval_runs, "run_exploit", lambda *a, **k: print("exploit ran"))
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--exploit",
                            snapshots[0]], capsys)
    assert code == 0, err
    assert out.strip() == "exploit ran"
