"""A sweep over ``population.members`` takes a key of a member given by its index
(session 36, item 1), as does a run whose members list comes after that key.

Before: ``selfplay-train -m 'population.members=[mappo,vdn],[ippo,vdn]'
population.members.0.mappo.epochs=2`` was refused with Hydra's "Error merging override
population.members.0.mappo.epochs=2; list index out of range": Hydra composes a sweep's base
config without its swept keys, and the preset's members list had no member 0 to set. So was
``population.members.0.mappo.epochs=2 population.members=[mappo,vdn]`` (Hydra applies
overrides in order), and a member the list does not hold was told only that line.
"""

from __future__ import annotations

import pytest

import populations.cli as cli
from populations import train_overrides
from populations.experiment import league_member_specs
from populations.member_overrides import members_by_index_last
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


def test_a_members_key_before_its_list_sets_that_lists_member(monkeypatch, tmp_path):
    from hydra.core.hydra_config import HydraConfig

    got = []
    monkeypatch.setattr(cli, "_train_task", lambda cfg: got.append(train_overrides.prepare(
        cfg, list(HydraConfig.get().overrides.task), check=False)))
    train_here([*TAG, "population.members.0.mappo.epochs=2", "population.members=[mappo,vdn]",
                f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    assert [list(exp.population.members) for exp in got] == [
        [{"algo": "mappo", "mappo": {"epochs": 2}}, "vdn"]]


@pytest.mark.parametrize("sweep", [[], ["-m", "seed=0,1"]])
def test_a_member_the_list_does_not_hold_is_told_so(sweep, monkeypatch, tmp_path, capsys):
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    with pytest.raises(SystemExit) as stop:
        train_here([*sweep, *TAG, "population.members=[mappo,vdn]",
                    "population.members.5.mappo.epochs=2", f"hydra.run.dir={tmp_path / 'run'}",
                    f"hydra.sweep.dir={tmp_path / 'sweep'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and started == [] and len(err) == 1, err
    said = ("population.members.5.mappo.epochs=2: the run's population.members holds no member "
            "5 (list index out of range): give population.members=[...] with 6 or more members, "
            "or the index of a member it holds")
    assert err[0] == ("selfplay-train: " + (f"all 2 jobs of the sweep cannot run: {said}; no "
                                             "job was started" if sweep else said)), err


@pytest.mark.parametrize(("args", "expected"), [
    (["-m", "seed=0,1", "population.members.0.mappo.epochs=2", "+population.members.1.x=[1,2]"],
     ["-m", "seed=0,1", "population.members.0.mappo.epochs=choice(2)",
      "+population.members.1.x=choice([1,2])"]),
    # a sweep of its own, a value Hydra cannot parse, and a single run: as typed
    (["-m", "population.members.0.mappo.epochs=2,3", "population.members.0.mappo.lr=[1"],
     ["-m", "population.members.0.mappo.epochs=2,3", "population.members.0.mappo.lr=[1"]),
    (["population.members.0.mappo.epochs=2"], ["population.members.0.mappo.epochs=2"]),
    # after the (last) list they set, in a run or a sweep
    (["population.members.0.mappo.epochs=2", "seed=1", "population.members=[mappo,vdn]",
      "x=1"],
     ["seed=1", "population.members=[mappo,vdn]", "population.members.0.mappo.epochs=2", "x=1"]),
    (["population.members.1.name=b", "-m", "+population.members=[a,b],[c,d]"],
     ["-m", "+population.members=[a,b],[c,d]", "population.members.1.name=choice(b)"]),
])
def test_members_by_index_last(args, expected):
    assert members_by_index_last(args) == expected
