"""A league made before members were recorded by their learner (a67094e) recorded an IPPO
member as its snapshots' policy kind, ``mappo``, and the row's first write won (INSERT OR
IGNORE): resumed, every version, new ones too, still read MAPPO in the summary and on the
dashboard. A publish naming the learner now corrects a row that still holds the policy
kind; a row that names its learner keeps it."""

import games
from marl.mappo import MAPPO
from populations.db import LeagueDB
from populations.store import PolicyStore


def _kinds(db, run):
    return {m["name"]: m["kind"] for m in db.members(run)}


def test_an_old_rows_policy_kind_becomes_the_learners_name(tmp_path):
    policy = MAPPO(games.make("openspiel/kuhn_poker").spec).policy()
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    store = PolicyStore(tmp_path / "snapshots", db, run)
    store.publish("ippo", policy, version=0)  # as before a67094e: the policy's kind
    store.publish("main", policy, version=0, algo="mappo")
    assert _kinds(db, run) == {"ippo": "mappo", "main": "mappo"}
    store.publish("ippo", policy, version=1, algo="ippo")  # the resumed league
    assert _kinds(db, run) == {"ippo": "ippo", "main": "mappo"}
    # the snapshots stay the policies they load as
    assert {s.kind for s in store.snapshots()} == {"mappo"}


def test_a_row_naming_its_learner_keeps_it(tmp_path):
    policy = MAPPO(games.make("openspiel/kuhn_poker").spec).policy()
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("league")
    store = PolicyStore(tmp_path / "snapshots", db, run)
    store.publish("ippo", policy, version=0, algo="ippo")
    store.publish("ippo", policy, version=1)  # a publish without the learner's name
    assert _kinds(db, run) == {"ippo": "ippo"}
    db.add_member(run, "fresh", "vdn", ["player_0"])  # no snapshots: as recorded
    db.add_member(run, "fresh", "mappo", ["player_0"])
    assert _kinds(db, run)["fresh"] == "vdn"


def test_the_member_protocol_leaves_algo_optional():
    """The league reads ``algo`` with getattr (a member without one shows its kind), but the
    Protocol declared ``algo: str``, so a type checker refused every Member class written
    without it (README's ``League(cfg, dir, members=[...])``)."""
    import typing

    from populations.members import Member

    assert "algo" not in typing.get_type_hints(Member)
    assert {"name", "kind", "opponents", "latest_only"} <= set(typing.get_type_hints(Member))
    assert "algo" in (Member.__doc__ or "")  # still documented, as optional
