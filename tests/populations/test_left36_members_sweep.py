"""A sweep over ``population.members`` takes a key of a member given by its index
(session 36, item 1).

Before: ``selfplay-train -m 'population.members=[mappo,vdn],[ippo,vdn]'
population.members.0.mappo.epochs=2`` was refused with Hydra's "Error merging override
population.members.0.mappo.epochs=2; list index out of range": Hydra composes a sweep's base
config without its swept keys, and the preset's members list had no member 0 to set.
"""

from __future__ import annotations

import pytest

import populations.cli as cli
from populations import train_overrides
from populations.experiment import league_member_specs
from populations.member_overrides import members_by_index_per_job
from tests.populations.user_modules import train_here

TAG = ["population=pfsp", "game=mpe_tag", "population.generations=1",
       "population.frames_per_generation=256", "num_envs=2", "eval_episodes=2",
       "progress=false", "logger=none"]  # fmt: skip


def test_each_job_of_a_members_sweep_sets_its_member_by_index(monkeypatch, tmp_path):
    from hydra.core.hydra_config import HydraConfig

    got, typed = [], []

    def task(cfg):
        overrides = list(HydraConfig.get().overrides.task)
        typed.append([o for o in overrides if o.startswith("population.members.")])
        got.append(train_overrides.prepare(cfg, overrides, check=False))

    monkeypatch.setattr(cli, "_train_task", task)
    train_here(["-m", *TAG, "population.members=[mappo,vdn],[ippo,vdn]",
                "population.members.0.mappo.epochs=2", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
               monkeypatch, tmp_path)
    assert [list(exp.population.members) for exp in got] == [
        [{"algo": "mappo", "mappo": {"epochs": 2}}, "vdn"],
        [{"algo": "ippo", "mappo": {"epochs": 2}}, "vdn"]]
    firsts = [league_member_specs(exp)[0] for exp in got]
    assert [(name, mine.epochs) for _, name, _, mine in firsts] == [("mappo", 2), ("ippo", 2)]
    # each job's overrides (its folder's name, its resume command) as typed
    assert typed == [["population.members.0.mappo.epochs=2"]] * 2
    folders = sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert all(",population.members.0.mappo.epochs=2," in f for f in folders), folders


def test_a_member_the_key_does_not_fit_names_its_job(monkeypatch, tmp_path, capsys):
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    with pytest.raises(SystemExit) as stop:
        train_here(["-m", *TAG, "population.members=[mappo,vdn],[vdn,mappo]",
                    "population.members.0.mappo.epochs=2",
                    f"hydra.sweep.dir={tmp_path / 'sweep'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and started == [] and len(err) == 1, err
    assert err[0].startswith("selfplay-train: job 1 (population.members=[vdn,mappo] "
                             "population.members.0.mappo.epochs=2) cannot run: "), err
    assert "population.members[0].mappo: not vdn's section" in err[0], err


@pytest.mark.parametrize(("args", "expected"), [
    (["-m", "seed=0,1", "population.members.0.mappo.epochs=2", "+population.members.1.x=[1,2]"],
     ["-m", "seed=0,1", "population.members.0.mappo.epochs=choice(2)",
      "+population.members.1.x=choice([1,2])"]),
    # a sweep of its own, a value Hydra cannot parse, and a single run: as typed
    (["-m", "population.members.0.mappo.epochs=2,3", "population.members.0.mappo.lr=[1"],
     ["-m", "population.members.0.mappo.epochs=2,3", "population.members.0.mappo.lr=[1"]),
    (["population.members.0.mappo.epochs=2"], ["population.members.0.mappo.epochs=2"]),
])
def test_members_by_index_per_job(args, expected):
    assert members_by_index_per_job(args) == expected
