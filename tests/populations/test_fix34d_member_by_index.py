"""``population.members.0.mappo.epochs=2`` where member 0 is given by its name
(``population.members=[mappo,vdn]``): Hydra replaces the name by ``{mappo: {epochs: 2}}`` and
keeps no trace of it (mappo, ippo or mappo_exploiter read that section alike), and the run was
refused with "population.members[0]={mappo: {'epochs': 2}}: needs algo: <a learner's name>,
e.g. {name: gnn, ...}", which did not say why the name was gone nor what to type. The line now
says so and gives the mapping form with the other members as they are."""

from __future__ import annotations

from tests.populations.test_member_settings import TAG
from tests.populations.test_walk19_experiment import _composed, _refused


def test_a_key_by_index_on_a_member_given_by_name_says_the_mapping_form(tmp_path, monkeypatch,
                                                                        capsys):
    got = _refused([*TAG, "population.members=[mappo,vdn]", "population.members.0.mappo.epochs=2"],
                   monkeypatch, tmp_path, capsys)
    assert got.startswith("bad config: population.members[0]={mappo: {epochs: 2}} has no algo"), got
    assert "population.members.0.mappo.epochs=... replaces a member given by its name" in got, got
    assert got.endswith("give that member as a mapping: population.members=[{algo: mappo, "
                        "mappo: {epochs: 2}}, vdn] (algo: that member's learner)"), got


def test_the_mapping_form_it_names_sets_the_members_epochs(tmp_path, monkeypatch):
    from populations.experiment import league_member_specs

    exp = _composed([*TAG, "population.members=[{algo: mappo, mappo: {epochs: 2}}, vdn]"],
                    monkeypatch, tmp_path)
    (_, name, _, mine), (_, other, _, _) = league_member_specs(exp)
    assert (name, mine.epochs, other) == ("mappo", 2, "vdn")  # the name the plain entry had
