"""Any key by index on a member given by its name keeps the name (session 35, review35).

Before: only a section's key (``population.members.0.mappo.epochs=2``) got the plain-named
member's name back. ``population.members.0.name=bob`` (alone or with a section key) was
refused with "needs algo: <a learner's name>" (its section shown as ``{'epochs': 2}``, two
quoting styles in one line), and ``population.members.0.epochs=2`` (a learner's setting put
under the member, not its section) got the same line, no word of
``population.members.0.mappo.epochs=2``.
"""

from __future__ import annotations

import pytest

from populations.experiment import league_member_specs
from tests.populations.test_left35_member_names_hints import TAG, _prepared, _refused


@pytest.mark.parametrize(("argv", "member"), [
    (["population.members.0.name=bob"], {"algo": "mappo", "name": "bob"}),
    (["population.members.0.name=bob", "population.members.0.mappo.epochs=2"],
     {"algo": "mappo", "mappo": {"epochs": 2}, "name": "bob"}),
])
def test_a_named_members_name_by_index_keeps_its_learner(argv, member, monkeypatch, tmp_path):
    exp = _prepared(["population.members=[mappo,ippo]", *argv], monkeypatch, tmp_path)
    assert list(exp.population.members) == [member, "ippo"]
    specs = league_member_specs(exp)
    assert [name for _, name, _, _ in specs] == ["bob", "ippo"]
    assert specs[0][3].epochs == member.get("mappo", {}).get("epochs", specs[1][3].epochs)


def test_a_presets_member_renamed_by_index_keeps_its_learner(monkeypatch, tmp_path):
    exp = _prepared(["experiment=tag_pfsp_league", "population.members.1.name=hunter"],
                    monkeypatch, tmp_path)
    assert list(exp.population.members) == ["mappo", {"algo": "mappo_exploiter",
                                                      "name": "hunter"}]
    assert [name for _, name, _, _ in league_member_specs(exp)] == ["mappo", "hunter"]


@pytest.mark.parametrize(("argv", "where", "section"), [
    (["population.members=[mappo,ippo]", "population.members.0.epochs=2"], 0, "mappo"),
    (["population.members=[vdn,mappo]", "population.members.1.name=bob",
      "population.members.1.epochs=2"], 1, "mappo"),
    (["population.members=[mappo,vdn]", "population.members.1.epochs=2"], 1, "vdn"),
])
def test_a_learners_setting_under_the_member_is_told_its_section(argv, where, section,
                                                                 monkeypatch, tmp_path, capsys):
    line = _refused([*TAG, *argv], monkeypatch, tmp_path, capsys)
    assert line == (f"bad config: population.members.{where}.epochs=2: a learner's setting "
                    f"goes in the member's section: population.members.{where}.{section}."
                    "epochs=2"), line


def test_a_member_needing_algo_is_shown_in_one_quoting_style(monkeypatch, tmp_path, capsys):
    # member 1 is a mapping with no algo: no name to put back
    line = _refused([*TAG, "population.members=[mappo,{name:g,mappo:{epochs:2}}]"],
                    monkeypatch, tmp_path, capsys)
    assert line.startswith("bad config: population.members[1]={name: g, mappo: {epochs: 2}}: "
                           "needs algo: <a learner's name>"), line
