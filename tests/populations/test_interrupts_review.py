"""Resuming an interrupted sweep and the Ctrl-C line (review 2 of the CLI's user path)."""

from tests.populations.test_cli import _cli

SWEEP = ["-m", "seed=0", "game=kuhn", "frames=64", "num_envs=4", "eval_episodes=2",
         "progress=false", "logger=none", "hydra.sweep.dir=sw"]


def _jobs(sweep):
    return sorted(p.name for p in sweep.iterdir() if p.is_dir())


def test_a_resumed_sweep_finds_its_jobs_when_a_may_change_setting_changes(tmp_path):
    """``checkpoint_every_s``, ``device``, ``population.generations``... may change on a
    resume, but they were part of the job folder name: the resumed sweep made a new folder
    and trained the job from frame 0 there, leaving its checkpoints unused."""
    assert _cli([*SWEEP, "checkpoint_every_s=2", "runner.workers=2"], tmp_path).returncode == 0
    before = _jobs(tmp_path / "sw")
    assert len(before) == 1 and "checkpoint_every_s" not in before[0], before
    res = _cli([*SWEEP, "checkpoint_every_s=3", "runner.workers=2", "resume=true"], tmp_path,
               check=False)
    assert res.returncode == 0, res.stderr
    assert "already finished" in res.stderr + res.stdout
    assert _jobs(tmp_path / "sw") == before
    # a key under runner.* stays in the name: the job's old folder is named, not started over
    res = _cli([*SWEEP, "runner.workers=3", "resume=true"], tmp_path, check=False)
    assert res.returncode == 2, res.stderr
    err = res.stderr.strip().splitlines()[-1]
    assert before[0] in err and "resume=true" in err
    assert _jobs(tmp_path / "sw") == before  # the new job folder is not left behind
