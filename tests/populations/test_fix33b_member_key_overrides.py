"""A key of a league member's section set with the list's index (``population.members.1.
mappo.lrr=1``, the form Hydra takes for an element of a list): a mistyped key gets the
one line the mapping form gets, with the nearest key; Hydra said "Could not override
'population.members.1.mappo.lrr'; To append to your config use +...; Key 'lrr' is not in
struct". A correct key in that form sets the member's value."""

from __future__ import annotations

import pytest

from populations.experiment import league_member_specs
from tests.populations.test_member_settings import TAG
from tests.populations.test_walk19_experiment import _composed, _refused

MEMBERS = "population.members=[mappo,{name:g,algo:mappo,mappo:{lr:0.001}}]"


@pytest.mark.parametrize("override", ["population.members.1.mappo.lrr=1",
                                      "+population.members.1.mappo.lrr=1"])
def test_a_mistyped_key_of_a_member_by_index_names_the_nearest(override, tmp_path,
                                                               monkeypatch, capsys):
    got = _refused([*TAG, MEMBERS, override], monkeypatch, tmp_path, capsys)
    assert "Could not override" not in got and "not in struct" not in got, got
    assert "population.members[1].mappo.lrr" in got and got.endswith("nearest: mappo.lr"), got


def test_a_key_of_a_member_by_index_sets_it(tmp_path, monkeypatch):
    exp = _composed([*TAG, MEMBERS, "population.members.1.mappo.lr=1e-4"], monkeypatch,
                    tmp_path)
    (_, _, _, plain), (_, name, _, mine) = league_member_specs(exp)
    assert name == "g" and mine.lr == 1e-4 and plain.lr != 1e-4
