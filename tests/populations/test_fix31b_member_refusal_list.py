"""A league member refused for a setting of its own mapping names the setting and no list of
"algos that play it" (walk31 M4): the list was made with the member's ``encoder: gnn``
applied to every MAPPO-family algo, so it said ``['llm_grpo', 'qmix', 'vdn']`` on Kuhn poker,
which mappo (member 0 of the same league) and ippo play."""

from __future__ import annotations

from tests.populations.test_walk19_experiment import _refused

KUHN = ["population=pfsp", "game=kuhn", "progress=false"]


def test_a_members_own_setting_gives_no_list_that_leaves_out_its_algo(tmp_path, monkeypatch,
                                                                      capsys):
    got = _refused([*KUHN, "population.members=[mappo,{name:gnn,algo:mappo,mappo:{net:"
                           "{encoder:gnn}}}]"], monkeypatch, tmp_path, capsys)
    assert got == (
        "population.members[1]: algo=mappo cannot play openspiel/kuhn_poker: a gnn encoder or "
        "critic needs entity graphs and it has none; its own mappo.net.encoder=gnn does: set "
        "population.members[1].mappo.net.encoder=mlp (the run's) or leave it out of that "
        "member's mapping"), got


def test_a_run_level_refusal_keeps_its_list_and_the_sections_note(tmp_path, monkeypatch,
                                                                  capsys):
    """The run's own section refuses: the note says mappo and ippo play it at the section's
    defaults, and the list names the other algos."""
    got = _refused([*KUHN, "encoder=gnn"], monkeypatch, tmp_path, capsys)
    assert got.startswith("algo=mappo cannot play openspiel/kuhn_poker: a gnn encoder or "
                          "critic needs entity graphs and it has none; use encoder=mlp"), got
    assert "; use encoder=mlp; algos that play it: [" in got, got
    assert got.endswith(
        ", and ['ippo', 'mappo'] with mappo.net.encoder='mlp' and "
        "mappo.net.critic='auto', their defaults (set to 'gnn' and 'gnn')"), got
