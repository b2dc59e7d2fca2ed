"""walk40a's findings on selfplay-eval and on names spelt wrong:

- M4: a pair (or a seating) whose episodes all came out the same is said to be one game
  replayed: two greedy VDN snapshots on pentago printed 'win rate 1.00 (95% Wilson [0.94,
  1.00]) over 64 pairs' from 128 matches of 2 distinct return tuples, and more --episodes
  only narrowed the interval; PSRO seatings on matrix_rpsw printed '-1.000 ± 0.000'.
- L11: a key of --game-kwargs the recorded game does not take names --game-kwargs (OpenSpiel's
  "'foo' unknown" was blamed on the file, with the advice to give --game).
"""

from __future__ import annotations

import pytest

import games
from marl import registry
from populations.db import MatchRow
from populations.eval_notes import one_game_note, same_every_time
from tests.populations.eval_cli_run import run_eval

RPS = "openspiel/matrix_rps"
NOTE = "came out the same (identical returns)"


def _policy(path, algo, game=RPS, agents=None, seed=0):
    spec = games.make(game).spec
    return str(registry.get(algo).build(spec, agents=agents, seed=seed).policy().save(path))


def test_same_every_time_needs_two_alike_episodes():
    a, b = {"p0": 1.0, "p1": -1.0}, {"p0": -1.0, "p1": 1.0}
    assert same_every_time([a, dict(a), dict(a)])
    assert not same_every_time([a])  # one episode: nothing counted twice
    assert not same_every_time([a, a, b])
    note = one_game_note("all 8 pairs", 8, greedy=True)
    assert "played by its argmax" in note and "one game 8 times" in note
    assert "if the policies act deterministically" in one_game_note("x", 8, greedy=False)


def test_greedy_snapshots_in_a_game_without_chance_are_said_to_replay_one_game(tmp_path,
                                                                               capsys):
    files = [_policy(tmp_path / f"{n}.pt", "vdn", seed=i) for i, n in enumerate("ab")]
    code, out, err = run_eval([*files, "--db", str(tmp_path / "r.db"), "--episodes", "16"],
                              capsys)
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "vs b: win rate" in line)
    assert "over 16 pairs" in lines[at]  # the Wilson line is kept, the note under it
    assert lines[at + 1].strip() == (
        f"note: all 16 pairs {NOTE}; every policy is played by its argmax, so unless the game "
        "draws chance they replayed one game 16 times: the interval, counting them as 16 "
        "independent outcomes, is not informative (more --episodes only narrow it)"), out


@pytest.mark.parametrize("algo, game", [("mappo", RPS),  # sampled actions: games differ
                                        ("vdn", "openspiel/kuhn_poker")])  # chance deals
def test_pairs_whose_episodes_differ_get_no_note(algo, game, tmp_path, capsys):
    files = [_policy(tmp_path / f"{n}.pt", algo, game, seed=i) for i, n in enumerate("ab")]
    code, out, err = run_eval([*files, "--db", str(tmp_path / "r.db"), "--episodes", "32"],
                              capsys)
    assert code == 0, err
    assert "vs b: win rate" in out and NOTE not in out, out


def test_seatings_that_replay_one_game_are_said_to(tmp_path, capsys):
    game = "openspiel/matrix_rpsw"
    files = [_policy(tmp_path / "p0.pt", "vdn", game, ("player_0",)),
             _policy(tmp_path / "p1.pt", "vdn", game, ("player_1",), seed=1),
             _policy(tmp_path / "m1.pt", "mappo", game, ("player_1",), seed=2)]
    code, out, err = run_eval([*files[:2], "--db", str(tmp_path / "a.db"), "--episodes", "8"],
                              capsys)
    assert code == 0, err
    assert out.splitlines()[-1].startswith(f"note: every seating's 8 episodes {NOTE}; every "
                                           "policy is played by its argmax"), out
    code, out, err = run_eval([*files, "--db", str(tmp_path / "b.db"), "--episodes", "8"],
                              capsys)
    assert code == 0, err  # the MAPPO seating samples: only the greedy one is named
    assert out.splitlines()[-1].startswith(f"note: the episodes of seating p0 vs p1 {NOTE}; "
                                           "every policy is played by its argmax"), out


def test_seatings_note_counts_each_seating_apart():
    from populations.eval_notes import seatings_note

    class DB:
        def matches(self, run_id, prefix):
            same, other = {"p0": 1.0, "p1": -1.0}, {"p0": 0.0, "p1": 0.0}
            return [MatchRow(f"seat/0/e{e:04d}", "g", {}, same) for e in range(3)] + [
                MatchRow(f"seat/1/e{e:04d}", "g", {}, same if e else other) for e in range(3)]

    note = seatings_note(DB(), 1, [("a", "x"), ("b", "x")], {"a": "vdn", "b": "vdn", "x": "ppo"})
    assert note is not None and note.startswith(f"note: the episodes of seating a vs x {NOTE}")
    assert "if the policies act deterministically" in note  # x's kind is not played greedily


def test_an_unknown_game_kwarg_on_the_recorded_game_names_game_kwargs(tmp_path, capsys):
    game = "openspiel/kuhn_poker"
    files = [_policy(tmp_path / f"{n}.pt", "mappo", game) for n in "ab"]
    code, _, err = run_eval([*files, "--game-kwargs", '{"foo": 1}',
                             "--db", str(tmp_path / "r.db")], capsys)
    assert code == 2
    assert err.strip() == (f"selfplay-eval: --game-kwargs on the game the files record ({game}):"
                           f" bad parameter for {game}: 'foo' unknown; accepted: ['players']")
    assert not (tmp_path / "r.db").exists()
