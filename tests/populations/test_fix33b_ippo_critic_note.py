"""``selfplay-train algo=ippo mappo.net.critic=state`` trained local critics (IPPO's preset
replaces the critic) while ``settings.json`` recorded critic=state, without a word. Not
refused (``algo=ippo encoder=gnn`` sets ``mappo.net.critic=gnn`` for both learners of the
section): a setting typed on the command line that the run's learner replaces gets a note,
as the other settings a run does not read."""

from __future__ import annotations

from marl.mappo import MAPPOConfig, NetConfig
from populations.experiment import ExperimentConfig, GameConfig
from populations.experiment_config import PopulationConfig
from populations.train_overrides import unused_overrides

STATE = MAPPOConfig(net=NetConfig(critic="state"))
NOTE = ("mappo.net.critic='state' is not used with algo=ippo: its preset fixes it to 'local' "
        "(every critic sees only its own observation); algo=mappo reads it")


def test_a_critic_typed_with_ippo_is_noted():
    exp = ExperimentConfig(algo="ippo", mappo=STATE)
    assert unused_overrides(exp, ["algo=ippo", "mappo.net.critic=state"]) == [NOTE]
    assert unused_overrides(exp, ["algo=ippo", "++mappo.net.critic=state"]) == [NOTE]


def test_no_note_where_the_critic_is_read_or_not_typed():
    assert unused_overrides(ExperimentConfig(algo="mappo", mappo=STATE),
                            ["mappo.net.critic=state"]) == []
    gnn = MAPPOConfig(net=NetConfig(encoder="gnn", critic="gnn"))  # encoder=gnn: the group
    assert unused_overrides(ExperimentConfig(algo="ippo", mappo=gnn), ["encoder=gnn"]) == []
    assert unused_overrides(ExperimentConfig(algo="ippo"), ["mappo.lr=0.001"]) == []


def test_a_league_notes_it_when_no_member_reads_it():
    def league(*members):
        return ExperimentConfig(mappo=STATE, game=GameConfig(name="openspiel/kuhn_poker"),
                                population=PopulationConfig(kind="league",
                                                            members=list(members)))

    assert unused_overrides(league("ippo"), ["mappo.net.critic=state"]) == [NOTE]
    assert unused_overrides(league("ippo", "mappo"), ["mappo.net.critic=state"]) == []


def test_a_league_members_own_critic_under_ippo_is_noted():
    exp = ExperimentConfig(game=GameConfig(name="openspiel/kuhn_poker"), population=(
        PopulationConfig(kind="league", members=[
            "mappo", {"name": "i", "algo": "ippo", "mappo": {"net": {"critic": "state"}}}])))
    assert unused_overrides(exp, []) == [
        "population.members[1].mappo.net.critic='state' is not used with algo=ippo: its "
        "preset fixes it to 'local' (every critic sees only its own observation)"]
