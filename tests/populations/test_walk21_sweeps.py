"""Findings of user-path walk 21 (a comparison study: sweeps over encoders, algos and seeds):
a resumed sweep finds its jobs' folders by their settings (a longer seed list numbers the
jobs anew), a swept key stays in the job folder names, and ``population.*`` settings a run
does not read are named."""

from __future__ import annotations

import shutil
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



LEAGUE = ["population=self_play", "population.frames_per_generation=32"]


@pytest.fixture(scope="module")
def generations_sweep(tmp_path_factory):
    """``-m population.generations=1,2`` (two small leagues), finished, in a folder of its
    own: the two tests below each copy it (one sweep instead of two: ~6 s)."""
    cwd = tmp_path_factory.mktemp("generations_sweep")
    sweep = cwd / "sweep"
    with pytest.MonkeyPatch.context() as monkeypatch:
        _train(["-m", "population.generations=1,2", *FAST, *LEAGUE,
                f"hydra.sweep.dir={sweep}"], monkeypatch, cwd)
    return sweep


def _copy(sweep: Path, tmp_path: Path) -> Path:
    """The finished sweep copied into ``tmp_path/sweep``, as the test's own sweep was."""
    shutil.copytree(sweep, tmp_path / "sweep")
    return tmp_path / "sweep"


def test_a_swept_key_a_resume_may_change_stays_in_the_job_folder_names(
        tmp_path, monkeypatch, capsys, generations_sweep):
    # before: population.generations is left out of job folder names (a resume may change
    # it), so -m population.generations=1,2 gave two folders told apart by 0_/1_ alone
    sweep = _copy(generations_sweep, tmp_path)
    names = _jobs(sweep)
    assert [n.split("_", 1)[0] for n in names] == ["0", "1"]
    assert "population.generations=1" in names[0] and "population.generations=2" in names[1]
    assert names[0].split("_", 1)[1] != names[1].split("_", 1)[1], names
    # a sweep folder made before (names without the key) resumes into its folders
    for name in names:
        (sweep / name).rename(sweep / name.replace(",population.generations=1", "")
                              .replace(",population.generations=2", ""))
    old = _jobs(sweep)
    assert old[0].split("_", 1)[1] == old[1].split("_", 1)[1], old
    capsys.readouterr()
    _train(["-m", "population.generations=1,2", *FAST, *LEAGUE, "resume=true",
            f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    assert _jobs(sweep) == old and (out + err).count(", done)") == 2, out + err  # finished
    # one value of it is no sweep: the name leaves it out, as before
    one = tmp_path / "one"
    _train(["-m", "population.generations=1", "seed=0,1", *FAST, *LEAGUE,
            f"hydra.sweep.dir={one}"], monkeypatch, tmp_path)
    assert not any("generations" in n for n in _jobs(one)), _jobs(one)


def test_a_swept_experiment_names_its_jobs(monkeypatch):
    # before: -m experiment=kuhn_psro,spread_mappo_gnn gave 0_eval_episodes=5,frames=1000 and
    # 1_eval_episodes=5,frames=1000
    from omegaconf import OmegaConf

    import populations.sweeps as sweeps

    monkeypatch.setattr(sweeps, "_SWEPT", set(sweeps.swept_keys(["experiment=kuhn_psro,main",
                                                                  "frames=1000"])))
    cfg = OmegaConf.load(Path(__file__).resolve().parents[2] / "configs" / "config.yaml")
    cfg.hydra.job.num = 1
    cfg.hydra.job.override_dirname = "frames=1000"
    cfg.hydra.overrides = {"task": ["experiment=main", "frames=1000"]}
    assert cfg.hydra.sweep.subdir == "1_experiment=main,frames=1000"


def test_a_job_whose_settings_match_two_folders_is_refused_naming_both(
        tmp_path, monkeypatch, capsys, generations_sweep):
    # population.generations may change on a resume; swept, it tells two jobs apart: resumed
    # without it in the list, job 0 could be either folder, and neither is retrained
    sweep = _copy(generations_sweep, tmp_path)
    before = _jobs(sweep)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        _train(["-m", "population.generations=3", *FAST, *LEAGUE, "resume=true",
                f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2, err
    assert all(name in err for name in before), err
    assert "could be any of 2 folders of the sweep, which differ only by " \
        "population.generations (" in err, err
    assert _jobs(sweep) == before  # nothing new left behind


def test_population_settings_a_single_run_ignores_are_named(tmp_path, monkeypatch, capsys):
    # before: population.generations=4 population.iterations=3 with population=none trained
    # one learner for frames=, without a word (frames= in a league is named)
    _train(["population.generations=4", "population.iterations=3", *FAST,
            f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    out, err = capsys.readouterr()
    notes = [x.split(" - ", 1)[1] for x in (out + err).splitlines() if "is not used with" in x]
    assert notes == [
        "population.generations=4 is not used with population.kind=none: only "
        "population.kind=league reads it (population=fsp, population=pfsp, "
        "population=self_play)",
        "population.iterations=3 is not used with population.kind=none: only "
        "population.kind=psro reads it (population=psro)"], notes


def test_a_league_names_psro_settings_and_psro_league_settings():
    from populations.experiment import ExperimentConfig, PopulationConfig
    from populations.train_overrides import unused_overrides

    league = ExperimentConfig(population=PopulationConfig(kind="league"))
    psro = ExperimentConfig(population=PopulationConfig(kind="psro"))
    line = ["population.generations=2", "population.psro.meta_solver=nash",
            "population.kind=league"]
    (note,) = unused_overrides(league, line)
    assert note.startswith("population.psro.meta_solver=nash is not used with "
                           "population.kind=league: only population.kind=psro reads it")
    (note,) = unused_overrides(psro, line)
    assert note.startswith("population.generations=2 is not used with population.kind=psro")
