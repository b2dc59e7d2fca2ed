"""A resume re-publishes a version it had published before a kill. Its learner may have been
rebuilt with a setting a resume may change (a seed, a device): the weights are the same, so
the recorded snapshot, which played that version's matches, is kept (session 37: the store
refused it as "other weights", and the run could not resume)."""
from __future__ import annotations

from pathlib import Path

import pytest

import games
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from populations.db import LeagueDB
from populations.store import PolicyStore, StoreError

KUHN = "openspiel/kuhn_poker"


def _store(tmp_path: Path) -> tuple[PolicyStore, LeagueDB]:
    db = LeagueDB(tmp_path / "league.db")
    return PolicyStore(tmp_path / "snapshots", db, db.create_run("mine", game=KUHN)), db


def test_the_same_weights_under_another_seed_keep_the_recorded_version(tmp_path: Path) -> None:
    store, db = _store(tmp_path)
    policy = ValueDecomp(games.make(KUHN).spec, ValueDecompConfig(), seed=0).policy()
    first = store.publish("main", policy, version=0)
    policy.seed = 7  # what a resume with another seed rebuilds: the same weights
    again = store.publish("main", policy, version=0)
    assert again.id == first.id
    assert store.verify(store.get(first.id)).sha256 == first.sha256
    assert store.load(first.id).seed == 0  # the recorded snapshot, untouched
    db.close()


def test_other_weights_name_the_next_free_version(tmp_path: Path) -> None:
    store, db = _store(tmp_path)
    spec = games.make(KUHN).spec
    store.publish("main", ValueDecomp(spec, ValueDecompConfig(), seed=0).policy(), version=0)
    store.publish("main", ValueDecomp(spec, ValueDecompConfig(), seed=1).policy(), version=2)
    with pytest.raises(StoreError, match=r"v0000 is published with other weights .*"
                                         r"\(version=None: v0003\)"):
        store.publish("main", ValueDecomp(spec, ValueDecompConfig(), seed=5).policy(), version=0)
    db.close()


def test_a_runs_own_publish_replaces_a_version_it_trained_again(tmp_path: Path, caplog) -> None:
    # a resume from an older checkpoint (the newest damaged or removed) trains the version
    # again; the run goes on with the new weights and says what the recorded matches were
    store, db = _store(tmp_path)
    spec = games.make(KUHN).spec
    first = store.publish("main", ValueDecomp(spec, ValueDecompConfig(), seed=0).policy(),
                          version=1)
    with caplog.at_level("WARNING", logger="populations.store"):
        again = store.publish("main", ValueDecomp(spec, ValueDecompConfig(), seed=5).policy(),
                              version=1, retrained=True)
    assert again.id == first.id and again.sha256 != first.sha256
    assert store.verify(again).sha256 == again.sha256
    assert [r.getMessage() for r in caplog.records] == [
        "snapshot main v0001 is published again with other weights (this run trained it again "
        "from an older checkpoint); the matches recorded for it were played by the weights it "
        "replaces"]
    db.close()
