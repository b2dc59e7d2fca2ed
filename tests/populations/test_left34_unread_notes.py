"""Settings a run does not read get the one-line note the others get, not silence:
``population.exploit.*`` of a league whose estimates never run (``population.exploit.every=0``,
the default), and a learner setting its preset replaces when typed as a whole mapping
(``algo=ippo mappo.net={critic: state}``) or read by PSRO's oracle named by its learner
(``population.oracle=ippo mappo.net.critic=state``): IPPO trained local critics unsaid."""

from __future__ import annotations

import pytest

from marl.mappo import MAPPOConfig, NetConfig
from populations.experiment import ExperimentConfig, GameConfig
from populations.experiment_config import ExploitEvery, PopulationConfig
from populations.train_overrides import unused_overrides
from tests.populations.test_fix33b_ippo_critic_note import NOTE, STATE

KUHN = GameConfig(name="openspiel/kuhn_poker")


def _league(every: int = 0) -> ExperimentConfig:
    return ExperimentConfig(game=KUHN, population=PopulationConfig(
        kind="league", exploit=ExploitEvery(every=every)))


@pytest.mark.parametrize("override", ["population.exploit.frames=5000",
                                      "population.exploit.algo=mappo",
                                      "population.exploit.seeds=3",
                                      "population.exploit.eval_episodes=50",
                                      "+population.exploit.learner.epochs=4"])
def test_exploit_settings_without_estimates_are_noted(override):
    assert unused_overrides(_league(), [override]) == [
        f"{override.lstrip('+')} is not used with population.exploit.every=0 (the default): "
        "no estimate runs; population.exploit.every=N estimates every N-th generation's "
        "snapshots with these settings"]


def test_exploit_settings_with_estimates_or_every_alone_are_not_noted():
    assert unused_overrides(_league(2), ["population.exploit.every=2",
                                         "population.exploit.frames=5000"]) == []
    assert unused_overrides(_league(), ["population.exploit.every=0"]) == []


@pytest.mark.parametrize("override", ["mappo.net={critic: state}",
                                      "mappo={net: {critic: state}}",
                                      "++mappo.net={critic: state}"])
def test_a_critic_in_a_whole_mapping_with_ippo_is_noted(override):
    exp = ExperimentConfig(algo="ippo", mappo=STATE)
    assert unused_overrides(exp, ["algo=ippo", override]) == [NOTE]


def test_a_whole_mapping_read_by_mappo_is_not_noted():
    assert unused_overrides(ExperimentConfig(algo="mappo", mappo=STATE),
                            ["mappo.net={critic: state}"]) == []
    assert unused_overrides(ExperimentConfig(algo="ippo", mappo=MAPPOConfig(lr=1e-4)),
                            ["mappo={lr: 0.0001}"]) == []


def _psro(oracle: str, mappo: MAPPOConfig = STATE) -> ExperimentConfig:
    return ExperimentConfig(game=KUHN, mappo=mappo, population=PopulationConfig(
        kind="psro", oracle=oracle))


def test_a_psro_oracle_named_ippo_notes_the_critic():
    note = NOTE.replace("algo=", "population.oracle=")
    assert unused_overrides(_psro("ippo"), ["population.oracle=ippo",
                                            "mappo.net.critic=state"]) == [note]
    assert unused_overrides(_psro("ippo"), ["population.oracle=ippo",
                                            "mappo.net={critic: state}"]) == [note]


def test_a_psro_oracle_that_reads_the_critic_is_not_noted():
    assert unused_overrides(_psro("mappo"), ["population.oracle=mappo",
                                             "mappo.net.critic=state"]) == []
    gnn = MAPPOConfig(net=NetConfig(encoder="gnn", critic="gnn"))
    assert unused_overrides(_psro("ippo", gnn), ["population.oracle=ippo",
                                                 "encoder=gnn"]) == []
