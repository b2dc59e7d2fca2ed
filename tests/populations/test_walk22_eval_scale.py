"""``selfplay-eval`` found by walk 22: a game without two teams refused only after the
database was written, a note of ~1,700 characters for a game of other seats, and a round
robin of many files with no progress and one stdout line per pair (780 at 40 files)."""

import sqlite3
import subprocess
import sys

import pytest

import games
from marl import registry
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_eval_names import KUHN

COORDINATION = "openspiel/matrix_coordination"  # one team: player_0 and player_1
KUHN3 = "openspiel/kuhn_poker(players=3)"  # three teams, one a seat


def _snapshots(root, game, count, **kwargs):
    spec = games.make(game, **kwargs).spec
    return [str(registry.get("mappo").build(spec, seed=k).policy().save(
        root / f"m{k}" / "v0000.pt")) for k in range(count)]


@pytest.fixture(scope="module")
def kuhn3(tmp_path_factory):
    return _snapshots(tmp_path_factory.mktemp("kuhn3"), "openspiel/kuhn_poker", 2, players=3)


@pytest.fixture(scope="module")
def kuhn(tmp_path_factory):
    return _snapshots(tmp_path_factory.mktemp("kuhn"), KUHN, 3)


def _nothing_written(tmp_path):
    assert not (tmp_path / "r.db").exists()
    assert not (tmp_path / "eval_snapshots").exists()


def test_a_one_team_game_plays_each_file_alone(tmp_path, capsys):
    """Before: 'pair evaluation needs a two-team game; ... has ('team',)' from the first
    match, after a failed run row and the files' copies in eval_snapshots/r.db/run0001/;
    then refused up front. Each file now plays alone (tests/populations/
    test_fix26f_eval_alone.py): its mean return with an interval."""
    paths = _snapshots(tmp_path, COORDINATION, 2)
    code, out, err = run_eval(["--game", COORDINATION, "--db", str(tmp_path / "r.db"),
                            "--episodes", "2", *paths], capsys)
    assert code == 0, err
    assert len([ln for ln in out.splitlines() if "  return " in ln]) == 2, out


def test_three_teams_recorded_by_the_files_are_refused_before_the_database(
        kuhn3, tmp_path, capsys):
    for extra in ([], ["--exploit"]):  # --exploit of two files plays the round robin too
        code, _, err = run_eval(["--db", str(tmp_path / "r.db"), "--episodes", "1", *extra,
                              *kuhn3], capsys)
        assert code == 2, err
        assert err.splitlines()[-1] == (
            f"selfplay-eval: a round robin plays pairs of policies on the two teams of a game; "
            f"{KUHN3} has 3 teams ('player_0', 'player_1', 'player_2'): give one policy file "
            "with --exploit (its approximate NashConv, on a game of any number of teams) or a "
            "game of two teams"), err
        _nothing_written(tmp_path)


EARLY = """
import sys
from populations.eval_cli import eval_main
try:
    eval_main(["--game", "openspiel/kuhn_poker", "--pairs", "-1", "--db", "r.db", "a.pt", "b.pt"])
except SystemExit as stop:
    print(stop.code)
print("torch" in sys.modules)
"""


def test_a_file_of_another_game_is_named_as_one_first(kuhn, tmp_path, capsys):
    """Kuhn files on a one-team game: the seats are the first thing wrong."""
    code, _, err = run_eval(["--game", COORDINATION, "--db", str(tmp_path / "r.db"), *kuhn],
                         capsys)
    assert code == 2 and err.splitlines()[-1].startswith(
        f"selfplay-eval: m0_v0000 was trained on {KUHN} (observations of shape"), err
    _nothing_written(tmp_path)


def test_a_game_of_other_seats_is_summarized_in_a_short_note():
    """A snapshot of vmas/football(ai_red_agents=False) on vmas/football: the note held the
    whole agents tuples and obs-shape and action-space dicts, one line of 1,722 characters."""
    from populations.eval_notes import game_notes

    notes = game_notes("a", "vmas/football(ai_red_agents=False)",
                       games.make("vmas/football").spec)
    assert notes[0] == ("a was trained on vmas/football(ai_red_agents=False); it plays "
                        "vmas/football here")
    assert notes[1] == (
        "a's game differs here in ai_red_agents (False in training, the default here), agents "
        "(6 in training, 3 here; agent_red_0, agent_red_1, agent_red_2 only in training; "
        "teams ('blue', 'red') in training, ('team',) here), state_shape ((336,) in "
        "training, (168,) here)"), notes[1]
    spread = games.make("pettingzoo/mpe2.simple_spread_v3", N=2).spec
    notes = game_notes("a", "pettingzoo/mpe2.simple_spread_v3(N=3)", spread)
    assert all(len(n) < 400 for n in notes), notes
    assert "obs_shapes (agent_0, agent_1: (18,) in training, (12,) here)" in notes[1], notes


def test_many_differing_seats_stay_short():
    from populations.eval_notes import field_differs

    trained = {f"agent_{k}": (k + 100,) for k in range(50)}
    here = {f"agent_{k}": (k,) for k in range(50)}
    text, none = field_differs("obs_shapes", trained, here)
    assert none is None and len(text) < 200, text
    assert text == ("agent_0, agent_1, agent_2, agent_3 and 46 more differ; agent_0: (100,) "
                    "in training, (0,) here"), text
    was, now = field_differs("state_shape", tuple(range(500)), (1,))
    assert len(was) <= 60 and was.endswith("...") and now == "(1,)", was


def _pair_lines(out):
    return [ln for ln in out.splitlines() if " vs " in ln]


def test_a_few_files_print_every_pair(kuhn, tmp_path, capsys):
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "1",
                            *kuhn], capsys)
    assert code == 0, err
    assert len(_pair_lines(out)) == 3, out
    assert "each pair (the first against the second" in out
    assert "\r" not in err  # not a terminal: no bar


def test_pairs_over_the_bound_print_the_neighbours_in_the_table(kuhn, tmp_path, capsys):
    """Before: one line per pair whatever their number (780 lines at 40 files, ~80,000 at
    400); now at most --pairs (default 45: 10 files), else those of policies next to each
    other in the ratings table."""
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "1",
                            "--pairs", "2", *kuhn], capsys)
    assert code == 0, err
    table = [ln.split()[0] for ln in out.splitlines() if "  elo " in ln]
    lines = _pair_lines(out)
    assert [ln.split()[0] for ln in lines] == table[:2], out
    assert [ln.split()[2].rstrip(":") for ln in lines] == table[1:], out
    assert ("each pair of policies next to each other in the table (2 of 3 pairs; --pairs 3 "
            "prints every pair; the database holds them all):") in out, out
    with sqlite3.connect(tmp_path / "r.db") as conn:  # every pair played and recorded
        assert conn.execute("SELECT COUNT(*) FROM payoffs").fetchone()[0] == 6
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r2.db"), "--episodes",
                            "1", "--pairs", "0", *kuhn], capsys)
    assert code == 0 and _pair_lines(out) == [] and "each pair" not in out, out
    assert len([ln for ln in out.splitlines() if "  elo " in ln]) == 3, out


def test_a_negative_pairs_bound_is_refused_before_torch(tmp_path):
    for name in ("a.pt", "b.pt"):
        (tmp_path / name).write_bytes(b"")
    run = subprocess.run([sys.executable, "-c", EARLY], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.stdout.split() == ["2", "False"], run.stdout + run.stderr
    assert run.stderr.splitlines() == [
        "selfplay-eval: --pairs -1: expected an integer >= 0 (the most pairs printed one a "
        "line; 0: none)"], run.stderr


def test_a_terminal_gets_a_bar_of_pairs_and_the_records_keep_their_seeds(
        kuhn, tmp_path, capsys, monkeypatch):
    """No progress at all before (22.7 s CPU at 40 files, minutes at hundreds). The pairs
    are played one at a time for the bar; each keeps the seed of the one-call round robin
    (--seed plus 7,919 per pairing, in the order of the files)."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "2",
                            "--seed", "5", *kuhn], capsys)
    assert code == 0, err
    assert "selfplay-eval round robin:" in err and "0/3 [" in err, err
    with sqlite3.connect(tmp_path / "r.db") as conn:
        ids = dict(conn.execute("SELECT m.name, s.id FROM snapshots s JOIN members m ON "
                                "s.member_id = m.id"))
        seeds = dict(conn.execute("SELECT key, seed FROM matches"))
    order = [ids[n] for n in ("m0_v0000", "m1_v0000", "m2_v0000")]
    pairs = [(order[0], order[1]), (order[0], order[2]), (order[1], order[2])]
    assert len(seeds) == 12, seeds
    for i, (a, b) in enumerate(pairs):
        for key in (f"{side}/e{e:04d}" for side in ("ab", "ba") for e in range(2)):
            assert seeds[f"rr/{a}-{b}/{key}"] == 5 + 7919 * i, (i, key, seeds)


def test_on_ray_the_bar_advances_by_two_pairs_per_worker(kuhn, tmp_path, capsys, monkeypatch):
    """A runner of workers (Ray's) plays a call's jobs at once: a call per pair would keep
    all but two of them idle."""
    from populations import runners

    calls = []

    class Workers(runners.LocalRunner):
        workers = [0, 1]

        def play(self, jobs):
            calls.append(len(jobs))
            return super().play(jobs)

    monkeypatch.setattr(runners, "make_runner", lambda kind, **kw: Workers())
    paths = [*kuhn, *_snapshots(tmp_path, KUHN, 3)]  # 6 files, 15 pairs
    code, _, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "1",
                          *paths], capsys)
    assert code == 0, err
    assert calls == [8, 8, 8, 6], calls  # 2 jobs a pair, 4 pairs a call
