"""Names listed from the learner registry do not depend on the order learners registered in
(the modules a process imported first; 8da7d23 sorted the refusal's ``algos that play it``):
the refusal's note of the section's own algos, the approximate-exploitability hint of the
algos that can respond, and the learner a never-ready loop names. Each is asked twice, the
second time with the registry in reverse order, as another import order would leave it."""

from __future__ import annotations

import pytest

import games
from marl import registry
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.registry import IncompatibleError, check_compatible

KUHN = games.make("openspiel/kuhn_poker").spec


@pytest.fixture(params=["registered", "reversed"])
def order(request, monkeypatch):
    if request.param == "reversed":
        forward = registry.entries
        monkeypatch.setattr(registry, "entries", lambda: dict(reversed(forward().items())))
    return request.param


def test_the_sections_own_algos_are_named_sorted(order):
    gnn = MAPPOConfig(net=NetConfig(encoder="gnn", critic="gnn"))
    with pytest.raises(IncompatibleError) as err:
        check_compatible("mappo", KUHN, gnn)
    assert str(err.value).endswith(", and ['ippo', 'mappo'] "
        "with mappo.net.encoder='mlp' and mappo.net.critic='auto', their defaults "
        "(set to 'gnn' and 'gnn')"), \
        err.value


def test_the_algos_that_can_respond_are_named_sorted(order):
    import llm_agents.learner  # noqa: F401 - registers llm_grpo
    from populations.approx_exploit import ApproxConfig, check_response_algo

    spread = games.make("pettingzoo/mpe2.simple_spread_v3", max_cycles=5).spec
    with pytest.raises(ValueError) as err:
        check_response_algo(spread, ApproxConfig(algo="llm_grpo"))
    assert str(err.value).endswith("; use one of ['ippo', 'maddpg', 'mappo', 'qmix', 'vdn']")


def test_a_class_registered_under_several_names_is_named_by_all(order):
    from marl.train import _registered_name

    assert _registered_name(MAPPO) == "ippo or mappo"
    assert _registered_name(type("Unregistered", (MAPPO,), {})) == ""
