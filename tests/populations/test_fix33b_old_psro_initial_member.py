"""An old PSRO run's initial members (before f949086: ``psro-<player>-0``, a random policy of
every seat) play ``selfplay-eval``'s seatings as their player's seats, as the run played them:
they were refused ("holds the seats [...]: give members that together hold every seat"). The
files are written as the old code wrote them: an all-seat ``RandomPolicy`` published by the
run's ``PolicyStore`` under the member name (its ``.json`` sidecar)."""

from __future__ import annotations

import games
from marl.core import PolicyMeta, load_policy
from marl.train import RandomPolicy
from populations.db import LeagueDB
from populations.eval_cli import eval_main
from populations.eval_notes import held_seats
from populations.psro_config import psro_players
from populations.store import PolicyStore

KUHN = "openspiel/kuhn_poker"


def _old_run(tmp_path, game, players, **kwargs):
    """The member files of an old PSRO run on ``game``: the initial ones of every seat each
    (``psro-<player>-0``), then one of its player's seats each (``psro-<player>-1``, as the
    run's best responses)."""
    spec = games.make(game, **kwargs).spec
    db = LeagueDB(tmp_path / "league.db")
    try:
        store = PolicyStore(tmp_path / "snapshots", db, db.create_run("psro", game=game))
        first = [store.publish(f"psro-{p}-0", RandomPolicy(spec, seed=0)).path for p in players]
        seats = psro_players(spec, "auto")
        later = [store.publish(f"psro-{p}-1", RandomPolicy(PolicyMeta.from_spec(
            "random", spec, seats[p]))).path for p in players]
    finally:
        db.close()
    assert all(load_policy(p).meta.agents == spec.agent_ids for p in first)
    return spec, first, later


def test_old_initial_members_play_their_players_seats(tmp_path, capsys):
    _, first, later = _old_run(tmp_path, KUHN, ["player_0", "player_1"])
    eval_main(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "2",
               *first, *later])
    out = capsys.readouterr()
    assert "holds the seats" not in out.err, out.err
    for name in ("psro-player_0-0", "psro-player_1-0", "psro-player_0-1", "psro-player_1-1"):
        assert name in out.out, out.out


def test_old_initial_members_alone_play_the_round_robin(tmp_path, capsys):
    """Files of every seat only: each plays every side, as before."""
    _, first, _ = _old_run(tmp_path, KUHN, ["player_0", "player_1"])
    eval_main(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes", "2", *first])
    out = capsys.readouterr()
    assert "psro-player_0-0" in out.out and "psro-player_1-0" in out.out, out.out


def test_a_team_players_old_initial_member_holds_the_teams_seats(tmp_path):
    kw = {"teams": [["player_0", "player_2"], ["player_1"]]}
    game = "openspiel/kuhn_poker(players=3)"
    spec, first, _ = _old_run(tmp_path, game, ["team_0", "team_1"], **kw)
    held = [held_seats(p, load_policy(p).meta, spec) for p in first]
    assert held == [["player_0", "player_2"], ["player_1"]]


def test_other_files_keep_their_seats(tmp_path):
    spec = games.make(KUHN).spec
    db = LeagueDB(tmp_path / "league.db")
    try:
        store = PolicyStore(tmp_path / "snapshots", db, db.create_run("psro", game=KUHN))
        later = store.publish("psro-player_0-1", RandomPolicy(spec)).path  # not the initial
        league = store.publish("main", RandomPolicy(spec)).path
    finally:
        db.close()
    for path in (later, league):
        assert held_seats(path, load_policy(path).meta, spec) == ["player_0", "player_1"]
