"""Findings of user-path walk 19 in ``selfplay-train`` sweeps and ``selfplay-eval``: a sweep
over ``experiment=`` in one folder that its printed command resumes, eval labels that say
which file is which, game notes that name the argument that differs, resume hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.populations.test_walk18_cli_more import _pasted, _train

# two tiny experiments in one sweep (each a few seconds)
EXPERIMENTS = ["-m", "experiment=kuhn_psro,psro_maddpg_oracle", "population.iterations=1",
               "population.oracle_frames=300", "progress=false"]


def _jobs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("settings.json"))


def test_a_sweep_over_experiments_is_one_folder_its_command_resumes(
        tmp_path, monkeypatch, capsys):
    # before: multirun.yaml went to multirun/default/<stamp>/, job 0 to
    # multirun/kuhn_psro/<stamp>/0_..., job 1 to multirun/psro_maddpg_oracle/<stamp>/1_...;
    # the printed command (hydra.sweep.dir=<job 1's folder>) retrained job 0 from scratch there
    import populations.experiment as experiment

    real = experiment.run_experiment

    def stopped(exp, run_dir, *args, **kwargs):
        summary = real(exp, run_dir, *args, **kwargs)
        if exp.experiment == "psro_maddpg_oracle":
            raise KeyboardInterrupt  # Ctrl-C in job 1, once it recorded its run
        return summary

    monkeypatch.setattr(experiment, "run_experiment", stopped)
    with pytest.raises(SystemExit) as stop:
        _train(EXPERIMENTS, monkeypatch, tmp_path)
    assert stop.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    jobs = _jobs(tmp_path / "multirun")
    assert [j.name[:2] for j in jobs] == ["0_", "1_"], jobs
    sweep = jobs[0].parent
    assert jobs[1].parent == sweep and (sweep / "multirun.yaml").is_file()
    assert sorted(p.name for p in (tmp_path / "multirun").iterdir()) == [sweep.parent.name]
    assert sweep.parent.name == "kuhn_psro+psro_maddpg_oracle"

    assert "the sweep resumes with: " in err, err
    monkeypatch.setattr(experiment, "run_experiment", real)
    mtime = (jobs[0] / "settings.json").stat().st_mtime_ns
    _train(_pasted(err.split("resumes with: ", 1)[1]), monkeypatch, tmp_path)
    assert _jobs(tmp_path / "multirun") == jobs  # every job where it was, none duplicated
    assert (jobs[0] / "settings.json").stat().st_mtime_ns == mtime  # job 0 not retrained


def test_a_resume_of_an_experiment_sweep_without_its_folder_names_it(
        tmp_path, monkeypatch, capsys):
    # resume=true without hydra.sweep.dir: the newest sweep of these experiments is named
    sweep = tmp_path / "multirun" / "kuhn_psro+psro_maddpg_oracle" / "2026-01-01_00-00-00"
    (sweep / "0_x").mkdir(parents=True)
    (sweep / "0_x" / "settings.json").write_text("{}")
    with pytest.raises(SystemExit) as stop:
        _train([*EXPERIMENTS, "resume=true"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    assert f"hydra.sweep.dir={sweep.relative_to(tmp_path)}" in err, err
