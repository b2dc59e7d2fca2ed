"""A valid key of a league member's section set by the list's index, that the member's mapping
does not hold yet (``population.members.1.mappo.epochs=2`` beside ``{..., mappo: {lr: ...}}``),
sets it: Hydra said "Could not override 'population.members.1.mappo.epochs'; To append to your
config use +...; Key 'epochs' is not in struct" (a member's mapping is plain YAML, closed by the
schema's root). A mistyped key still gets its one line with the nearest key
(test_fix33b_member_key_overrides)."""

from __future__ import annotations

import pytest

from populations.experiment import league_member_specs
from tests.populations.test_member_settings import TAG
from tests.populations.test_walk19_experiment import _composed

MEMBERS = "population.members=[mappo,{name:g,algo:mappo,mappo:{lr:0.001}}]"


@pytest.mark.parametrize("override", ["population.members.1.mappo.epochs=2",
                                      "+population.members.1.mappo.epochs=2"])
def test_a_key_the_members_mapping_lacks_is_set_by_index(override, tmp_path, monkeypatch):
    exp = _composed([*TAG, MEMBERS, override, "population.members.1.mappo.net.hidden=[8]"],
                    monkeypatch, tmp_path)
    (_, _, _, plain), (_, name, _, mine) = league_member_specs(exp)
    assert name == "g" and (mine.epochs, mine.lr, mine.net.hidden) == (2, 1e-3, [8])
    assert plain.epochs != 2 and plain.net.hidden != [8]
