"""A learner of the user's own whose config has a ``net`` of its own (no ``encoder``): the
early entity-graph check (``populations.cli.check_entity_graphs``) read ``net.encoder`` and
raised AttributeError in Hydra's callback, which Hydra turned into a warning ("Callback
ConfigCheck.on_run_start raised AttributeError: 'OwnNet' object has no attribute 'encoder'"),
skipping the rest of the callback: the run folder's lock and the record of what it held."""

from __future__ import annotations

import warnings

import pytest

from populations.cli import check_entity_graphs
from tests.populations.test_walk19_experiment import (  # noqa: F401 - own_learner: a fixture
    KUHN,
    MODULE,
    _composed,
    own_learner,
)


@pytest.mark.usefixtures("own_learner")
def test_an_own_net_passes_the_graph_check_and_the_callback_runs_whole(tmp_path, monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exp = _composed([f"imports=[{MODULE}]", "algo=walk19_algo", "+walk19_algo.net.width=4",
                         *KUHN], monkeypatch, tmp_path)
    raised = [str(w.message) for w in caught if "on_run_start raised" in str(w.message)]
    assert raised == [], raised
    check_entity_graphs(exp)  # reads no graphs: nothing to check, nothing raised
