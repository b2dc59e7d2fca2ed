"""``mappo.net.gnn_layer=bogus`` and ``mappo.net.graph_radius=-1`` were accepted by
``NetConfig`` (walk 19): the first failed only when a GNN was built (after the run folder),
the second connected no entities at all. Both are refused in one line naming the key, the
value and what is accepted, before torch loads on the command line."""

from __future__ import annotations

import pytest

from marl.configs import GNN_LAYERS, MAPPOConfig, NetConfig
from populations.config_checks import check_section_value


def test_gnn_layer_outside_the_known_layers_is_refused():
    with pytest.raises(ValueError, match=r"^gnn_layer='bogus' unknown; choose one of "
                                         r"\['gatv2', 'transformer'\]$"):
        NetConfig(gnn_layer="bogus")


@pytest.mark.parametrize("radius", [-1.0, 0.0, float("nan"), "far"])
def test_graph_radius_must_be_positive_or_none(radius):
    with pytest.raises(ValueError, match=r"^graph_radius=.*; expected a number > 0 or inf"):
        NetConfig(graph_radius=radius)


@pytest.mark.parametrize("radius", [None, 0.5, 2, float("inf")])
def test_graph_radius_none_or_positive_is_taken(radius):
    assert NetConfig(graph_radius=radius).graph_radius == radius


def test_every_layer_the_gnn_builds_is_accepted():
    from marl.gnn import GNN_LAYERS as BUILT  # one list: the GNN's own

    assert GNN_LAYERS == BUILT
    for layer in BUILT:
        assert MAPPOConfig(net=NetConfig(gnn_layer=layer)).net.gnn_layer == layer


@pytest.mark.parametrize(("key", "value", "words"), [
    ("mappo.net.gnn_layer", "bogus", "mappo.net.gnn_layer='bogus' unknown; choose one of "
                                     "['gatv2', 'transformer']"),
    ("mappo.net.graph_radius", -1, "mappo.net.graph_radius=-1.0; expected a number > 0 or inf"),
])
def test_the_command_line_refuses_them_by_their_path(key, value, words):
    with pytest.raises(ValueError) as err:
        check_section_value(key, value)
    assert str(err.value) == words
