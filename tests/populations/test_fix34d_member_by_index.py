"""``population.members.0.mappo.epochs=2`` where member 0 is given by its name
(``population.members=[mappo,vdn]``): Hydra replaces the name by ``{mappo: {epochs: 2}}`` and
keeps no trace of it (mappo, ippo or mappo_exploiter read that section alike), and the run was
refused with "population.members[0]={mappo: {'epochs': 2}}: needs algo: <a learner's name>,
e.g. {name: gnn, ...}", which did not say why the name was gone nor what to type. fix34d said so
and gave the mapping form; since session 35 the name is read back and the key is accepted
(tests/populations/test_left35_member_names_hints.py has the refusals that remain)."""

from __future__ import annotations

from tests.populations.test_member_settings import TAG
from tests.populations.test_walk19_experiment import _composed


def test_a_key_by_index_on_a_member_given_by_name_keeps_its_name(tmp_path, monkeypatch):
    # session 35 (left35): the name is read back from the config composed without the index
    # overrides, so the member is no longer refused and trains as the mapping it names
    from populations.experiment import league_member_specs
    from tests.populations.test_left35_member_names_hints import _prepared

    exp = _prepared(["population.members=[mappo,vdn]", "population.members.0.mappo.epochs=2"],
                    monkeypatch, tmp_path)
    (_, name, _, mine), (_, other, _, _) = league_member_specs(exp)
    assert (name, mine.epochs, other) == ("mappo", 2, "vdn")


def test_the_mapping_form_it_names_sets_the_members_epochs(tmp_path, monkeypatch):
    from populations.experiment import league_member_specs

    exp = _composed([*TAG, "population.members=[{algo: mappo, mappo: {epochs: 2}}, vdn]"],
                    monkeypatch, tmp_path)
    (_, name, _, mine), (_, other, _, _) = league_member_specs(exp)
    assert (name, mine.epochs, other) == ("mappo", 2, "vdn")  # the name the plain entry had
