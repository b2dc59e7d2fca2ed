"""Findings of user-path walk 21 (a comparison study: sweeps over encoders, algos and seeds):
a resumed sweep finds its jobs' folders by their settings (a longer seed list numbers the
jobs anew), a swept key stays in the job folder names, and ``population.*`` settings a run
does not read are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.populations.test_walk18_cli_more import _train

# kuhn, 64 frames a job: seconds
FAST = ["game=kuhn", "frames=64", "num_envs=4", "mappo.rollout_steps=4", "mappo.epochs=1",
        "mappo.minibatches=1", "eval_episodes=2", "progress=false", "logger=none"]


def _jobs(sweep: Path) -> list[str]:
    return sorted(p.name for p in sweep.iterdir() if p.is_dir())


def test_a_longer_seed_list_resumes_the_finished_jobs_in_their_folders(
        tmp_path, monkeypatch, capsys):
    # before: seed is the inner loop, so seed=0,1,2 numbered encoder=gnn,seed=0 job 3, not 2:
    # jobs 2 and 3 of the first sweep trained again from frame 0 in new folders
    # (3_algo=ippo,...,seed=0 beside 2_algo=ippo,...,seed=0), with exit 0 and no word
    sweep = tmp_path / "sweep"
    _train(["-m", "algo=mappo,ippo", "seed=0,1", *FAST, f"hydra.sweep.dir={sweep}"],
           monkeypatch, tmp_path)
    before = _jobs(sweep)
    assert len(before) == 4 and before[2].startswith("2_algo=ippo") and \
        before[2].endswith("seed=0"), before
    stamps = {name: (sweep / name / "settings.json").stat().st_mtime_ns for name in before}
    capsys.readouterr()
    _train(["-m", "algo=mappo,ippo", "seed=0,1,2", *FAST, "resume=true",
            f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    after = _jobs(sweep)
    assert len(after) == 6, after  # 4 kept + the 2 new seeds, not 4 + 5
    assert set(before) <= set(after)
    new = sorted(set(after) - set(before))
    assert [n.split("_", 1)[1].rsplit(",", 1)[1] for n in new] == ["seed=2", "seed=2"], new
    assert (out + err).count("nothing to do") == 4, out + err
    # each finished job answered in its own folder, which it left as it was
    for name in before:
        assert f"run folder : {sweep / name}" in out
        assert (sweep / name / "settings.json").stat().st_mtime_ns == stamps[name]
    assert "resumes in its folder 2_algo=ippo" in out + err  # job 3 says where it went

