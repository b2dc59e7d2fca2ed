"""The learner registry: one decorator per learner, capabilities decide which games it plays,
presets (IPPO) are entries, ``load_policy`` finds policy kinds through it, and ``marl``
never imports ``llm_agents`` (checked by ``tests/test_structure.py``)."""

import sys
from pathlib import Path

import pytest

import games
from marl import registry
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.registry import IncompatibleError, check_compatible
from marl.value_decomp import ValueDecompConfig
from tests import subprocs

ROOT = Path(__file__).resolve().parents[2]
KUHN = games.make("openspiel/kuhn_poker").spec
SPREAD = games.make("pettingzoo/mpe2.simple_spread_v3", N=2, max_cycles=5).spec


def test_marl_learners_are_registered_with_their_config_and_policy_kind():
    e = registry.entries()
    assert {"mappo", "ippo", "vdn", "qmix", "maddpg"} <= set(e)
    assert e["ippo"].section == "mappo" and e["ippo"].config is MAPPOConfig
    assert e["ippo"].capabilities.centralized_critic is False
    assert {e[n].policy for n in ("mappo", "ippo")} == {"mappo"}
    assert e["vdn"].capabilities.team and e["vdn"].capabilities.turn_based
    assert not e["maddpg"].capabilities.turn_based


def test_presets_are_entries_not_special_cases():
    ippo = registry.get("ippo").build(SPREAD, MAPPOConfig(rollout_steps=2), seed=0)
    assert isinstance(ippo, MAPPO) and ippo.cfg.net.critic == "local"
    # one shared section: the vdn preset fixes the mixer whatever the section says
    vdn = registry.get("vdn").build(SPREAD, ValueDecompConfig(mixer="qmix"), seed=3)
    assert vdn.cfg.mixer == "vdn" and vdn.cfg.seed == 3


def test_unknown_algo_lists_the_registered_ones():
    with pytest.raises(ValueError, match=r"algo 'mapo' unknown; choose one of \[.*'mappo'"):
        registry.get("mapo")


def test_incompatible_pairs_fail_in_one_line_naming_what_to_change():
    with pytest.raises(IncompatibleError) as err:
        check_compatible("maddpg", KUHN)
    msg = str(err.value)
    assert "\n" not in msg
    assert "algo=maddpg" in msg and "turn-based" in msg and "'mappo'" in msg
    # a config that needs what the game lacks: the setting to change is named
    state = MAPPOConfig(net=NetConfig(critic="state"))
    with pytest.raises(IncompatibleError, match="critic='state' needs a global state.*auto"):
        check_compatible("mappo", KUHN, state)
    check_compatible("mappo", KUHN)  # the default (critic=auto) plays it
    check_compatible("maddpg", SPREAD)


def test_the_hint_offers_no_algo_that_shares_the_refused_setting():
    # encoder=gnn sets the mappo section, which ippo reads too: offering ippo failed the same way
    gnn = MAPPOConfig(net=NetConfig(encoder="gnn", critic="gnn"))
    for algo, other in (("mappo", "'ippo'"), ("ippo", "'mappo'")):
        with pytest.raises(IncompatibleError, match="entity graphs") as err:
            check_compatible(algo, KUHN, gnn)
        hint = str(err.value).split("algos that play it: ")[1]
        as_set, _, defaults = hint.partition(", and ")  # the section's at its defaults after
        assert other not in as_set and "'vdn'" in as_set
        assert defaults == ("['ippo', 'mappo'] with mappo.net.encoder='mlp' and "
                            "mappo.net.critic='auto', their defaults (set to 'gnn' and "
                            "'gnn')"), hint


def test_critic_and_sharing_adapt_to_the_game():
    assert MAPPO(KUHN).cfg.net.critic == "concat"
    assert MAPPO(SPREAD).cfg.net.critic == "state"
    assert MAPPO(KUHN).cfg.net.share == "all"
    ref = games.make("pettingzoo/mpe2.simple_speaker_listener_v4", max_cycles=5).spec
    assert MAPPO(ref).cfg.net.share == "role"  # speaker and listener have different actions


def test_a_registered_name_cannot_be_taken_by_another_class():
    with pytest.raises(ValueError, match="already registered"):
        registry.register_learner("mappo", config=MAPPOConfig, policy="mappo",
                                  capabilities=registry.get("mappo").capabilities)(
            type("X", (), {}))


def test_llm_grpo_registers_from_llm_agents():
    import llm_agents.learner  # noqa: F401

    e = registry.get("llm_grpo")
    assert e.section == "llm" and e.policy == "llm" and e.capabilities.own_rollouts
    check_compatible("llm_grpo", KUHN)


def test_load_policy_finds_kinds_through_the_registry(tmp_path):
    """A fresh process that imported nothing but marl.core loads a VDN file, and an llm file
    names the package to import."""
    from marl.value_decomp import ValueDecomp

    ValueDecomp(SPREAD, ValueDecompConfig(mixer="vdn")).policy().save(tmp_path / "vdn.pt")
    code = ("import sys\nfrom marl.core import load_policy\n"
            f"p = load_policy({str(tmp_path / 'vdn.pt')!r})\n"
            "print(p.meta.kind, 'llm_agents' in sys.modules)")
    out = subprocs.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                        text=True, check=True, timeout=120)
    assert out.stdout.split() == ["vdn", "False"]


# marl never imports llm_agents (nor anything above it): tests/test_structure.py
