"""A league of exploiters only (walk 19): ``population.members=[mappo_exploiter]`` was refused
("needs a main member to exploit") only once Hydra had made the run folder and torch had
built the learners; it is a fact of the config, refused with the other members' checks,
before Hydra composes."""

from __future__ import annotations

import pytest

import populations.cli as cli
from populations.experiment_config import PopulationConfig
from tests.populations.test_walk18_cli_more import _train


@pytest.mark.parametrize("members", [["mappo_exploiter"], ["mappo_exploiter", "ippo_exploiter"]])
def test_exploiters_without_a_main_member_are_refused_by_the_config(members):
    with pytest.raises(ValueError, match=rf"^members=.*: {members[0]} needs a main member to "
                                         r"exploit; add one of \[.*'mappo'.*\]$"):
        PopulationConfig(kind="league", members=members)


def test_an_exploiter_beside_a_main_member_is_accepted():
    assert PopulationConfig(kind="league", members=["ippo", "mappo_exploiter"]).members


def test_selfplay_train_refuses_exploiters_alone_before_hydra_makes_the_run(
        tmp_path, monkeypatch, capsys):
    started = []  # Hydra's task: it runs in the run folder Hydra made
    monkeypatch.setattr(cli, "_train_task", started.append)
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        _train(["population=pfsp", "population.members=[mappo_exploiter]",
                "game.name=openspiel/kuhn_poker", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    assert stop.value.code == 2 and started == []
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["selfplay-train: bad config: population.members=['mappo_exploiter']: "
                   "mappo_exploiter needs a main member to exploit; add one of ['ippo', "
                   "'llm_grpo', 'maddpg', 'mappo', 'qmix', 'vdn']"], err
    assert not run.exists()
