"""A member whose own mapping makes it unable to play the game is told to change its mapping
(session 22).

Before: ``population.members=[mappo,{name:g,algo:mappo,mappo:{net:{encoder:gnn}}}]`` on Kuhn
poker was refused with MAPPO's run-level hint, ``use encoder=mlp`` (and "mappo and ippo play
it with mappo.* at its defaults"): the run's encoder was already mlp, and the GNN came from
the member's own mapping, which no run-level override changes."""

from __future__ import annotations

from tests.populations.test_walk19_experiment import _refused

KUHN = ["population=pfsp", "game=kuhn", "progress=false"]


def test_a_members_own_gnn_names_its_mapping(tmp_path, monkeypatch, capsys):
    got = _refused([*KUHN, "population.members=[mappo,{name:g,algo:mappo,mappo:{lr:0.01,"
                           "net:{encoder:gnn}}}]"], monkeypatch, tmp_path, capsys)
    assert got == (
        "population.members[1]: algo=mappo cannot play openspiel/kuhn_poker: a gnn encoder or "
        "critic needs entity graphs and it has none; its own mappo.net.encoder=gnn does: set "
        "population.members[1].mappo.net.encoder=mlp (the run's) or leave it out of that "
        "member's mapping"), got


def test_each_setting_of_the_mapping_that_refuses_is_named(tmp_path, monkeypatch, capsys):
    got = _refused([*KUHN, "population.members=[mappo,{name:g,algo:mappo,mappo:{net:"
                           "{encoder:gnn,critic:gnn}}}]"], monkeypatch, tmp_path, capsys)
    assert "; its own mappo.net.encoder=gnn and mappo.net.critic=gnn do: set " \
           "population.members[1].mappo.net.encoder=mlp and population.members[1].mappo.net." \
           "critic=auto (the run's) or leave them out of that member's mapping" in got, got
    assert "use encoder=" not in got, got


def test_a_gnn_from_the_run_keeps_the_run_level_hint(tmp_path, monkeypatch, capsys):
    """The run's section is what refuses: the member's mapping (``lr``) is not the cause."""
    got = _refused([*KUHN, "encoder=gnn", "population.members=[{name:g,algo:mappo,"
                           "mappo:{lr:0.01}},vdn]"], monkeypatch, tmp_path, capsys)
    assert got.startswith("population.members[0]: algo=mappo cannot play "
                          "openspiel/kuhn_poker: a gnn encoder or critic needs entity graphs "
                          "and it has none; use encoder=mlp"), got
