"""A league's untrained snapshots (generation 0) play each other, as every later
generation's new snapshots do: before, ``g0000`` had no matches, so the v0s of a
three-member league never met (their ratings rested on fewer pairs, the dashboard's
cross-play table had empty cells among them, alpha-Rank left them out)."""

import sqlite3

import pytest

from populations import run_folder
from populations.runners import LocalRunner
from tests.populations.test_interrupts_league import _league, _signal_in, _tables


def _pairs(run_dir, prefix):
    db = sqlite3.connect(run_dir / "league.db")
    try:
        keys = [k for (k,) in db.execute("SELECT key FROM matches")]
    finally:
        db.close()
    return {k.rsplit("/", 2)[0] for k in keys if k.startswith(prefix)}  # pair/side/episode


def test_the_untrained_snapshots_play_each_other(tmp_path):
    _league(tmp_path / "run")
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    try:
        v0 = dict(db.execute("SELECT m.name, s.id FROM snapshots s JOIN members m ON "
                             "s.member_id = m.id WHERE s.version = 0"))
        rated = db.execute("SELECT DISTINCT snapshot_id FROM ratings WHERE step = 0").fetchall()
    finally:
        db.close()
    assert _pairs(tmp_path / "run", "g0000/") == {f"g0000/{v0['b']}-{v0['a']}"}
    assert sorted(s for (s,) in rated) == sorted(v0.values())  # rated at step 0


def test_a_stop_inside_generation_0s_evaluation_resumes_to_the_same_tables(
        tmp_path, monkeypatch, whole):
    """SIGTERM while the v0 pair plays: no checkpoint yet, the run stops; the resume
    publishes the same v0s, skips the recorded pair and ends with the uninterrupted run's
    tables."""
    _signal_in(monkeypatch, LocalRunner, "play",
               lambda r, jobs: jobs[0].key.startswith("g0000/"))
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _league(tmp_path / "run")
    assert _pairs(tmp_path / "run", "g0000/")  # the pair at hand was recorded
    _league(tmp_path / "run", resume=True)
    assert _tables(tmp_path / "run") == whole


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    run = tmp_path_factory.mktemp("league") / "whole"
    _league(run)
    return _tables(run)


def test_a_league_keeps_at_least_one_checkpoint():
    """``LeagueConfig(keep_checkpoints=0)`` deleted every checkpoint as it was written (its
    resume is now refused as a run whose checkpoints were lost)."""
    from tests.populations.test_league import _kuhn

    with pytest.raises(ValueError, match=r"keep_checkpoints=0; expected an integer >= 1"):
        _kuhn(keep_checkpoints=0)
