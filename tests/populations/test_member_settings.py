"""Two members of one algo with different settings in one league: ``population.members``
takes ``{name, algo, <its section>: {...}}`` beside algo names. Before, a league could hold
one member per algo, each with the run's one section (``[mappo, mappo]``: "repeat an algo";
a mapping: refused by the schema), so MLP against GNN MAPPO could not be trained together."""

from __future__ import annotations

import json
import sqlite3

import pytest
import torch

from marl import registry
from populations.experiment import league_member_specs
from tests import subprocs
from tests.populations.test_walk19_experiment import _composed, _refused

TAG = ["population=pfsp", "game=mpe_tag", "population.generations=1",
       "population.frames_per_generation=256", "num_envs=2", "eval_episodes=2",
       "progress=false"]  # fmt: skip
GNN = "{name:gnn,algo:mappo,mappo:{net:{encoder:gnn,critic:gnn},lr:0.001}}"


def test_a_named_member_trains_with_its_own_settings_over_the_runs(tmp_path, monkeypatch):
    exp = _composed([*TAG, f"population.members=[mappo,{GNN}]", "mappo.lr=0.002",
                     "mappo.epochs=3"], monkeypatch, tmp_path)
    (plain, mname, _, mcfg), (spec, gname, _, gcfg) = league_member_specs(exp)
    assert (mname, gname) == ("mappo", "gnn") and spec.algo == "mappo"
    assert (mcfg.net.encoder, mcfg.net.critic, mcfg.lr) == ("mlp", "auto", 0.002)
    # its own values over the run's section; the rest (epochs=3) from the command line
    assert (gcfg.net.encoder, gcfg.net.critic, gcfg.lr, gcfg.epochs) == ("gnn", "gnn", 0.001, 3)
    assert exp.mappo.net.encoder == "mlp"  # the run's section is left as it was


def test_mlp_and_gnn_mappo_train_and_are_rated_in_one_league(tmp_path):
    """From ``selfplay-train``: each member's snapshots are its own network (the GNN one
    reads entity graphs), both rated in ``league.db``. One pass of one minibatch per update
    (``mappo.epochs=1 mappo.minibatches=1``, both members: the run's section beneath): what
    a snapshot reads and who is rated do not depend on how many gradient steps it took, and
    the default 10 x 4 took ~8 of the child's ~18 s CPU."""
    import sys

    run = tmp_path / "run"
    done = subprocs.run(
        [sys.executable, "-m", "populations.cli", *TAG, f"population.members=[mappo,{GNN}]",
         "mappo.epochs=1", "mappo.minibatches=1", f"hydra.run.dir={run}"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    inputs = {m: torch.load(run / "snapshots" / m / "v0001.pt", weights_only=True)["meta"]
              ["inputs"] for m in ("mappo", "gnn")}  # fmt: skip
    assert inputs == {"mappo": ["obs"], "gnn": ["graph"]}
    with sqlite3.connect(run / "league.db") as db:
        members = db.execute("SELECT name, kind FROM members ORDER BY id").fetchall()
        rated = db.execute("SELECT DISTINCT m.name FROM ratings r JOIN snapshots s ON "
                           "r.snapshot_id = s.id JOIN members m ON s.member_id = m.id").fetchall()
    assert members == [("mappo", "mappo"), ("gnn", "mappo")]
    assert sorted(n for (n,) in rated) == ["gnn", "mappo"]
    saved = json.loads((run / "settings.json").read_text())
    assert saved["population"]["members"][1]["mappo"]["net"]["encoder"] == "gnn"


def test_a_members_list_of_mappings_in_a_preset_composes(tmp_path, monkeypatch):
    folder = tmp_path / "myconfigs" / "experiment"
    folder.mkdir(parents=True)
    (folder / "mine.yaml").write_text(
        "# @package _global_\npopulation:\n  members:\n    - mappo\n    - name: gnn\n"
        "      algo: mappo\n      mappo:\n        net: {encoder: gnn, critic: gnn}\n")
    exp = _composed([f"hydra.searchpath=[file://{tmp_path / 'myconfigs'}]", "experiment=mine",
                     *TAG], monkeypatch, tmp_path)
    assert [c.net.encoder for *_, c in league_member_specs(exp)] == ["mlp", "gnn"]


@pytest.mark.parametrize(("members", "line"), [
    ("[mappo,mappo]", "bad config: population.members=['mappo', 'mappo']: "
     "population.members[0] and population.members[1] are both named 'mappo'; give each its "
     "own name, e.g. {name: mappo_2, algo: mappo}"),
    ("[mappo,{algo:mappo,qmix:{lr:1}}]", "bad config: population.members[1].qmix: not "
     "mappo's section; a member takes algo, name and mappo: {...} (its settings)"),
    ("[mappo,{name:g,algo:mappo,mappo:{lrr:1}}]", "population.members[1].mappo.lrr: Key "
     "'lrr' not in 'MAPPOConfig'; nearest: mappo.lr"),
    ("[mappo,{name:g,algo:mappo,mappo:{lr:-1}}]", "population.members[1].mappo.lr=-1.0; "
     "expected a finite number > 0"),
    ("[mappo,{name:'../x',algo:mappo}]", "bad config: population.members[1].name='../x': "
     "expected a letter, then up to 63 letters, digits, '_' or '-' (it names the member's "
     "folder)"),
    ("[mappo,{name:g}]", "bad config: population.members[1]={name: g}: needs algo: <a "
     "learner's name>, e.g. {name: gnn, algo: mappo, mappo: {net: {encoder: gnn}}}"),
    ("[mappo,{name:g,algo:mappo,mappo:3}]", "bad config: population.members[1].mappo=3: a "
     "learner's section takes settings by key (mappo: {lr: 0.001}); the keys of a member are "
     "algo, name and its learner's section"),
    ("[mappo,3]", "bad config: population.members[1]=3: a member is an algo's name (mappo) "
     "or a mapping {name: ..., algo: ..., <algo's section>: {...}}"),
])
def test_bad_member_entries_are_one_line_before_the_folder(members, line, tmp_path,
                                                           monkeypatch, capsys):
    got = _refused([*TAG, f"population.members={members}"], monkeypatch, tmp_path, capsys)
    assert got == line, got


def test_a_members_settings_the_game_cannot_use_name_the_member(tmp_path, monkeypatch,
                                                                capsys):
    got = _refused(["population=pfsp", "game=kuhn", "progress=false",
                    "population.members=[mappo,{name:g,algo:mappo,mappo:{net:{encoder:gnn}}}]"],
                   monkeypatch, tmp_path, capsys)
    assert got.startswith("population.members[1]: algo=mappo cannot play openspiel/kuhn_poker"
                          ": a gnn encoder or critic needs entity graphs"), got


def test_an_llm_team_member_takes_its_own_llm_settings(tmp_path, monkeypatch):
    exp = _composed(["population=pfsp", "game=kuhn", "progress=false",
                     "population.members=[mappo,llm_grpo,{name:llm2,algo:llm_grpo,"
                     "llm:{grpo:{group_size:2}}}]"], monkeypatch, tmp_path)
    listed = league_member_specs(exp)
    assert [n for _, n, _, _ in listed] == ["mappo", registry.get("llm_grpo").policy, "llm2"]
    assert [c.grpo.group_size for *_, c in listed[1:]] == [exp.llm.grpo.group_size, 2]


@pytest.mark.parametrize(("members", "key"), [
    ("[vdn,{name:v2,algo:vdn,vdn:{seed:5}}]", "population.members[1].vdn.seed=5"),
    ("[mappo,{name:l,algo:llm_grpo,llm:{grpo:{seed:5}}}]", "population.members[1].llm.grpo.seed=5"),
])
def test_a_members_own_seed_is_refused_as_the_runs_sections_are(members, key, tmp_path,
                                                                monkeypatch, capsys):
    """``vdn.seed=5`` is refused for the run (each learner is seeded from the run's seed tree);
    in a member's section it was accepted and ignored."""
    got = _refused(["population=pfsp", "game=kuhn", "progress=false",
                    f"population.members={members}"], monkeypatch, tmp_path, capsys)
    assert got == (f"{key} is not read by an experiment: the run's seed= seeds every member, "
                   "each from its own stream (give seed=5 instead)"), got


def test_a_member_seed_a_learner_reads_is_kept_and_the_run_levels_zero_accepted(
        tmp_path, monkeypatch):
    """``llm.tiny.seed`` (the tiny model's initial weights) was refused as an unread seed
    (review); ``vdn.seed=0`` passes for a member as for the run."""
    exp = _composed(["population=pfsp", "game=kuhn", "progress=false", "seed=5",
                     "population.members=[vdn,{name:v0,algo:vdn,vdn:{seed:0}},"
                     "{name:l,algo:llm_grpo,llm:{tiny:{seed:3}}}]"], monkeypatch, tmp_path)
    assert [c.tiny.seed for *_, c in league_member_specs(exp)[2:]] == [3]


def test_a_members_true_false_setting_refuses_other_integers(tmp_path, monkeypatch, capsys):
    """``mappo.value_norm=2`` is refused on the command line (9267d78); in a member's section
    it ran as true (review)."""
    got = _refused([*TAG, "population.members=[mappo,{name:b,algo:mappo,mappo:"
                    "{value_norm:2}}]"], monkeypatch, tmp_path, capsys)
    assert got == "population.members[1].mappo.value_norm=2; expected true or false", got
