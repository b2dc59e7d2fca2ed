"""walk40a's findings on names spelt wrong, a word for a count and large graphs:

- L8 / L10: a VMAS scenario and a league member spelt wrong get the nearest names, as
  OpenSpiel's games and ``algo=`` do.
- L11: ``frames=abc`` says 'expected an integer >= 1', as ``frames=-5`` does.
- L6: a GNN on a large entity graph is warned about once (images are: LARGE_OBS).
"""

from __future__ import annotations

import pytest

import games


def test_a_word_for_a_count_says_the_count_rule():
    from populations.command_line import CLIError
    from populations.config_checks import typed_override
    from populations.train_overrides import check_command_line

    for override in ("frames=abc", "frames=-5"):
        with pytest.raises(CLIError, match=r"expected an integer >= 1$"):
            check_command_line([override])
    with pytest.raises(ValueError, match=r"^seed='x'; expected an integer from 0 to "):
        typed_override("seed", "x")
    with pytest.raises(ValueError, match=r"^checkpoint_every_s='x'; expected a number$"):
        typed_override("checkpoint_every_s", "x")
    assert typed_override("frames", "100") == 100


def test_a_misspelt_vmas_scenario_gets_the_nearest():
    with pytest.raises(games.UnknownGameError, match=r"^unknown VMAS scenario 'transprot'; did "
                                                     r"you mean 'transport'\? accepted: "):
        games.make("vmas/transprot")


def test_a_misspelt_league_member_gets_the_nearest():
    from populations.experiment_config import PopulationConfig

    with pytest.raises(ValueError, match=r"'mapo_exploiter' unknown; choose from \[.*\]; "
                                         r"nearest: mappo_exploiter\b"):
        PopulationConfig(kind="league", members=["mappo", "mapo_exploiter"])


def test_a_gnn_on_a_large_vmas_graph_is_warned_about_once(caplog, monkeypatch):
    # walk40a L6: vmas/multi_give_way (20 nodes, 380 edges) trained ~14x slower with a GNN
    from games import graphs

    monkeypatch.setattr(graphs, "_warned_large", set())
    with caplog.at_level("WARNING", logger="games.graphs"):
        big = games.make("vmas/multi_give_way")
        big.batched(2, with_graphs=False)
        assert not caplog.records  # an MLP reads no graph
        big.batched(2, with_graphs=True)
        big.batched(2, with_graphs=True)
        games.make("vmas/simple_spread").batched(2, with_graphs=True)  # 6 nodes: no warning
    big.reset(0)
    nodes, agents = len(big.entity_graph().nodes), len(big.spec.agent_ids)
    assert (agents, nodes) == (4, 20) and agents * nodes * (nodes - 1) >= graphs.LARGE_GRAPH
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["vmas/multi_give_way"]
    assert "along 1520 edges per game copy and step (4 agents, each reading the graph of all " \
        "20 entities)" in caplog.text
    assert not graphs.warn_large_graph("g", 12, 2)  # give_way's 264 edges: 7x, not warned


def test_a_gnn_on_a_large_pettingzoo_graph_is_warned_about_too(caplog, monkeypatch):
    # the stepped-in-Python path builds its first graph in VectorGame: simple_spread with N=8
    # reads 8 agents x 16 entities (1,920 edges); with N=3 (90 edges) nothing is said
    from games import graphs

    monkeypatch.setattr(graphs, "_warned_large", set())
    name = "pettingzoo/mpe2.simple_spread_v3"
    with caplog.at_level("WARNING", logger="games.graphs"):
        games.VectorGame(name, 2, seed=0, N=3, with_graphs=True).close()
        assert not caplog.records
        games.VectorGame(name, 2, seed=0, N=8, with_graphs=False).close()
        assert not caplog.records  # an MLP reads no graph
        games.VectorGame(name, 2, seed=0, N=8, with_graphs=True).close()
    assert "along 1920 edges per game copy and step (8 agents" in caplog.text
