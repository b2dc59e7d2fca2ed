"""The league and policy store used as a Python library (session 37's walk, api37b).

- A ``League`` refused at its start (a device this machine lacks, a matchmaking rule given
  as a dict, a game of one team, NashConv on a game it cannot walk) wrote ``league.db`` (the
  run marked failed) and ``snapshots/`` first: the corrected rerun in the same folder was
  refused with "already holds a league; pass resume=True", and the resume it pointed to with
  "cannot resume ... with other settings". Every check now runs before the folder is written.
- ``LeagueConfig(game=<another game>)`` took the default game's ``{"max_cycles": 25}`` and
  failed with "bad parameter ...: 'max_cycles' unknown".
- ``store.load("1")`` said "unknown snapshot id 1" of an id that exists.
- ``store.publish(m, p, version=0)`` replaced a published (maybe rated) version's weights;
  publishing the same content again (a resume) still keeps the one row.
- ``ExperimentConfig(frames="100")`` said ``frames=100; expected an integer >= 1``.

Real leagues on Kuhn poker, real SQLite; nothing mocked.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

import games
import marl.core
from marl.mappo import MAPPO
from populations.db import LeagueDB, LeagueDBError
from populations.league import League, LeagueConfig
from populations.matchmaking import MatchmakingConfig
from populations.store import PolicyStore, StoreError

KUHN = "openspiel/kuhn_poker"


def _cfg(**kw: object) -> LeagueConfig:
    base = dict(game=KUHN, game_kwargs={}, generations=1, frames_per_generation=64, num_envs=4,
                eval_episodes=1)
    return LeagueConfig(**{**base, **kw})


def _written(run_dir: Path) -> list[str]:
    """What a league wrote in its folder besides its lock (which blocks nothing)."""
    return sorted(p.name for p in run_dir.iterdir() if p.name != ".lock") \
        if run_dir.is_dir() else []


REFUSED = {
    "device_mps": (lambda: _cfg(device="mps"), "device='mps'"),
    "one_team_game": (lambda: _cfg(game="matrix/climbing"), "needs two teams"),
    "nash_conv_not_openspiel": (
        lambda: _cfg(game=LeagueConfig.game, game_kwargs={"max_cycles": 5}, nash_conv=True),
        "nash_conv=True"),
}
if not torch.cuda.is_available():
    REFUSED["device_cuda"] = (lambda: _cfg(device="cuda"), "CUDA is not available")


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_league_writes_nothing(tmp_path: Path, case: str) -> None:
    make, words = REFUSED[case]
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=words):
        League(make(), run_dir)
    assert _written(run_dir) == []


def test_matchmaking_dict_refused_by_the_config() -> None:
    with pytest.raises(ValueError, match=r"matchmaking=\{'rule': 'pfsp'\}; expected a "
                                         r"MatchmakingConfig"):
        _cfg(matchmaking={"rule": "pfsp"})


def test_corrected_rerun_after_a_refusal_starts(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError):
        League(_cfg(device="mps"), run_dir)
    league = League(_cfg(), run_dir)  # was: FileExistsError "already holds a league"
    try:
        table = league.run()
    finally:
        league.close()
    assert {(row["member"], row["version"]) for row in table} == {("main", 0), ("main", 1)}
    assert LeagueDB(run_dir / "league.db", readonly=True).run_status(league.run_id) == \
        "finished"


def test_default_game_kwargs_follow_the_default_game() -> None:
    assert LeagueConfig().game_kwargs == {"max_cycles": 25}
    assert LeagueConfig(game=KUHN).game_kwargs == {}  # was: 'max_cycles' unknown
    assert LeagueConfig(game=KUHN, game_kwargs={"players": 2}).game_kwargs == {"players": 2}
    assert LeagueConfig(game=LeagueConfig.game, game_kwargs={}).game_kwargs == {}


def test_league_on_another_game_with_default_kwargs_runs(tmp_path: Path) -> None:
    cfg = LeagueConfig(game=KUHN, generations=1, frames_per_generation=64, num_envs=4,
                       eval_episodes=1)
    league = League(cfg, tmp_path / "run")
    try:
        assert len(league.run()) == 2
    finally:
        league.close()


def _store(tmp_path: Path) -> tuple[PolicyStore, LeagueDB]:
    db = LeagueDB(tmp_path / "league.db")
    run_id = db.create_run("mine", game=KUHN)
    return PolicyStore(tmp_path / "snapshots", db, run_id), db


def _policy(seed: int) -> marl.core.Policy:
    return MAPPO(games.make(KUHN).spec, seed=seed).policy()


def test_store_refuses_an_id_that_is_not_an_integer(tmp_path: Path) -> None:
    store, db = _store(tmp_path)
    row = store.publish("main", _policy(0))
    assert store.load(row.id).meta.game == row.game
    with pytest.raises(StoreError, match=r"snapshot id '1' is not an integer"):
        store.load(str(row.id))
    with pytest.raises(StoreError, match=r"^a SnapshotRow \(main v0000\) is not a snapshot id; "
                                         r"pass its \.id \(\d+\)$"):
        store.get(row)
    db.close()


def test_publish_refuses_other_weights_for_a_published_version(tmp_path: Path) -> None:
    store, db = _store(tmp_path)
    first = store.publish("main", _policy(0))
    with pytest.raises(StoreError, match=r"snapshot main v0000 is published with other "
                                         r"weights"):
        store.publish("main", _policy(5), version=0)
    assert store.verify(store.get(first.id)).sha256 == first.sha256  # the file is untouched
    assert len(store.snapshots("main")) == 1
    db.close()


def test_publish_again_with_the_same_content_keeps_one_row(tmp_path: Path) -> None:
    store, db = _store(tmp_path)
    policy = _policy(0)
    first = store.publish("main", policy, version=0)
    again = store.publish("main", policy, version=0)  # a resume's re-publish
    loaded = store.publish("main", store.load(first.id), version=0)  # same tensors, reloaded
    assert again.id == loaded.id == first.id
    assert store.verify(store.get(first.id)).sha256 == first.sha256
    assert len(store.snapshots("main")) == 1
    db.close()


def test_db_add_snapshot_refuses_another_file_for_a_version(tmp_path: Path) -> None:
    store, db = _store(tmp_path)
    row = store.publish("main", _policy(0))
    args = (row.member_id, 0, row.path, row.kind, row.game, row.roles)
    assert db.add_snapshot(*args, sha256=row.sha256) == row.id  # the same file: one row
    with pytest.raises(LeagueDBError, match=r"snapshot version 0 of member id \d+ is recorded "
                                            r"with SHA-256"):
        db.add_snapshot(*args, sha256="0" * 64)
    db.close()


def test_experiment_config_names_a_string_count_as_typed() -> None:
    from populations.experiment import ExperimentConfig

    with pytest.raises(ValueError, match=r"^frames='100'; expected an integer >= 1$"):
        ExperimentConfig(frames="100")
    with pytest.raises(ValueError, match=r"^seed='3'; expected an integer"):
        ExperimentConfig(seed="3")


def test_league_config_replace_keeps_working() -> None:
    cfg = dataclasses.replace(LeagueConfig(game=KUHN), generations=2)
    assert cfg.game_kwargs == {} and cfg.generations == 2
    assert isinstance(_cfg(matchmaking=MatchmakingConfig(rule="fsp")).matchmaking,
                      MatchmakingConfig)


def test_new_league_failing_after_its_database_leaves_no_database(tmp_path: Path) -> None:
    """A failure after ``league.db`` is made (here the planted ``snapshots`` link the store
    refuses; on Ray, a cluster that does not start) removes the new run's database: the rerun
    once the cause is gone starts, not "already holds a league"."""
    run_dir, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run_dir.mkdir()
    elsewhere.mkdir()
    (run_dir / "snapshots").symlink_to(elsewhere)
    with pytest.raises(StoreError, match="link"):
        League(_cfg(), run_dir)
    assert _written(run_dir) == ["snapshots"]  # the user's link, nothing of the league
    (run_dir / "snapshots").unlink()
    league = League(_cfg(), run_dir)
    league.close()
    assert (run_dir / "league.db").is_file()
