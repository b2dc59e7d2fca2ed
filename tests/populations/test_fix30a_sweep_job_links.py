"""A sweep's job folder that is a link, or no folder, where the sweep would run a job.

``refuse_planted`` refused links where Hydra writes inside a job folder (``.hydra``, its files,
``cli.log``) but not the job folder itself: a link named as a job of the sweep
(``0_<overrides>``) had Hydra's ``.hydra`` and ``cli.log``, then the whole run (settings,
database, checkpoints), written in its target, on a fresh sweep into an existing sweep folder
and on a sweep's resume alike. A file of that name failed with Python's raw
``[Errno 17] File exists`` and left the sweep's lock and ``multirun.yaml`` behind. Both are
refused in one line before anything is written, and the sweep folder stays as it was.

Real ``selfplay-train`` commands in this process (as ``test_fix29b_planted_links`` runs them).
"""

from __future__ import annotations

from pathlib import Path

from tests.populations.test_fix29b_planted_links import _refused, _tree
from tests.populations.test_walk18_cli_more import TINY, _train

# the folder of job 0 of `-m <TINY> seed=0` (Hydra's override_dirname, '/' made '_')
JOB = ('0_eval_episodes=1,frames=200,game.name="openspiel_kuhn_poker(players=2)",'
       "mappo.epochs=1,mappo.minibatches=1,mappo.rollout_steps=4,num_envs=4,seed=0")


def _target(tmp_path: Path) -> Path:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("not the sweep's\n")
    return target


def test_a_link_at_a_job_folder_of_a_fresh_sweep_is_refused(tmp_path, monkeypatch, capsys):
    sweep, target = tmp_path / "sweep", _target(tmp_path)
    sweep.mkdir()
    (sweep / JOB).symlink_to(target, target_is_directory=True)
    line = _refused(["-m", *TINY, "seed=0", f"hydra.sweep.dir={sweep}"], monkeypatch,
                    tmp_path, capsys)
    assert line == (f"selfplay-train: sweep job folder {sweep / JOB} is a link (to {target}); "
                    "a run folder's files must be its own: remove the link")
    assert _tree(target) == ["keep.txt"]  # no .hydra, cli.log, run written there
    assert _tree(sweep) == [JOB]  # no lock, no multirun.yaml left


def test_a_file_at_a_job_folder_of_a_fresh_sweep_is_refused(tmp_path, monkeypatch, capsys):
    """It failed with Python's ``[Errno 17] File exists: '...'`` once Hydra launched the job,
    leaving the sweep's ``.lock`` and ``multirun.yaml`` behind."""
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / JOB).write_text("the user's file\n")
    line = _refused(["-m", *TINY, "seed=0", f"hydra.sweep.dir={sweep}"], monkeypatch,
                    tmp_path, capsys)
    assert line == (f"selfplay-train: sweep job folder {sweep / JOB} is not a folder; a "
                    "sweep's job folders must be its own: move it away")
    assert _tree(sweep) == [JOB]
    assert (sweep / JOB).read_text() == "the user's file\n"


def test_a_link_at_a_job_folder_of_a_resumed_sweep_is_refused(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "sweep"
    _train(["-m", *TINY, "seed=0", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    assert (sweep / JOB).is_dir()  # the name this module plants links at
    moved = tmp_path / "moved"
    (sweep / JOB).rename(moved)  # the job's run, now behind a link
    (sweep / JOB).symlink_to(moved, target_is_directory=True)
    before = {p: p.read_bytes() for p in moved.rglob("*") if p.is_file()}
    swept = _tree(sweep)
    capsys.readouterr()
    line = _refused(["-m", *TINY, "seed=0", "resume=true", f"hydra.sweep.dir={sweep}"],
                    monkeypatch, tmp_path, capsys)
    assert line.endswith(f"sweep job folder {sweep / JOB} is a link (to {moved}); a run "
                         "folder's files must be its own: remove the link")
    assert {p: p.read_bytes() for p in moved.rglob("*") if p.is_file()} == before
    assert _tree(sweep) == swept


def test_other_links_in_a_sweep_folder_are_no_job_folders(tmp_path, monkeypatch):
    """Only names of a job (``<number>_...``) are refused: a user's own link beside the jobs
    stays, and the sweep runs."""
    sweep, target = tmp_path / "sweep", _target(tmp_path)
    sweep.mkdir()
    (sweep / "data").symlink_to(target, target_is_directory=True)
    _train(["-m", *TINY, "seed=0", f"hydra.sweep.dir={sweep}"], monkeypatch, tmp_path)
    assert (sweep / JOB / "settings.json").is_file()
    assert _tree(target) == ["keep.txt"]
