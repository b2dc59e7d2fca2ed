"""A whole member given by its index (fix36): ``population.members.0={algo:vdn,name:bob}``
typed before ``population.members=[mappo,vdn]`` was applied first, to the preset's list, and
refused with Hydra's "list index out of range" (only a key under a member,
``population.members.0.mappo.epochs=2``, was moved after the list). It now sets member 0 of
the list typed; one beyond that list is told in the words a key under it is."""

from pathlib import Path

import pytest

from populations import cli, train_overrides
from tests.populations.user_modules import train_here

TAG = ["population=pfsp", "game=mpe_tag", "population.generations=1",
       "population.frames_per_generation=256", "num_envs=2", "eval_episodes=2",
       "progress=false", "logger=none"]  # fmt: skip


def test_a_whole_member_by_index_before_the_list_sets_that_lists_member(monkeypatch,
                                                                       tmp_path: Path):
    from hydra.core.hydra_config import HydraConfig

    got = []
    monkeypatch.setattr(cli, "_train_task", lambda cfg: got.append(train_overrides.prepare(
        cfg, list(HydraConfig.get().overrides.task), check=False)))
    train_here([*TAG, "population.members.0={algo:vdn,name:bob}",
                "population.members=[mappo,vdn]", f"hydra.run.dir={tmp_path / 'run'}"],
               monkeypatch, tmp_path)
    assert len(got) == 1
    assert list(got[0].population.members) == [{"algo": "vdn", "name": "bob"}, "vdn"]


def test_a_whole_member_beyond_the_list_is_told_in_one_line(monkeypatch, tmp_path, capsys):
    started = []
    monkeypatch.setattr(cli, "_train_task", started.append)
    with pytest.raises(SystemExit) as stop:
        train_here([*TAG, "population.members=[mappo,vdn]", "population.members.5={algo:vdn}",
                    f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and started == [], err
    assert err == ["selfplay-train: population.members.5={algo:vdn}: the run's population."
                   "members holds no member 5 (list index out of range): give population."
                   "members=[...] with 6 or more members, or the index of a member it holds"], err
    assert not (tmp_path / "run").exists()
