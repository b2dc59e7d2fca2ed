"""Resuming a single-learner run (``population=none``): a finished run trains and publishes
nothing again; an interrupted one goes on from its last checkpoint for the frames left,
without repeating metric rows; a damaged checkpoint stops the resume in one line."""

import csv
import logging
import shutil
import sqlite3

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
import populations.single_run as single_run
from marl.core import CheckpointError
from populations.checkpoint import load_latest, save_checkpoint
from populations.experiment import ExperimentConfig, run_experiment
from populations.run_folder import RunFolderError
from tests.populations.test_db_store import garble

# updates every 4 steps of 4 copies: at frames 16, 32, 48 and 64
TINY = ["game=kuhn", "frames=64", "num_envs=4", "mappo.rollout_steps=4", "eval_episodes=2",
        "progress=false", "checkpoint_every_s=0"]
TINY_LLM = ["experiment=tool_team_llm", "llm.iterations=2", "llm.grpo.group_size=2",
            "llm.grpo.groups_per_step=4", "llm.corpus_episodes=20", "eval_episodes=2",
            "num_envs=4", "progress=false", "logger=none", "checkpoint_every_s=0"]


def _exp(*overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=list(overrides)))


def _rows(db_path, sql):
    db = sqlite3.connect(db_path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


class _Killed(Exception):
    """Stands for a kill of the training process."""


def _kill_after_first_checkpoint(monkeypatch, at_call=3):
    """Checkpoint once (the first update), then go on without checkpoints and die at the
    ``at_call``-th one: the run has logged metrics past its checkpoint."""
    real, calls = single_run.save_checkpoint, []

    def save(folder, step, state, keep=3, **kw):
        calls.append(step)
        if len(calls) == at_call:
            raise _Killed(f"killed at step {step}")
        if len(calls) == 1:
            real(folder, step, state, keep, **kw)

    monkeypatch.setattr(single_run, "save_checkpoint", save)
    return calls


def test_a_finished_run_resumes_to_nothing(tmp_path, caplog):
    first = run_experiment(_exp(*TINY), tmp_path).table
    before = sorted(p.name for p in (tmp_path / "snapshots").rglob("*.pt"))
    metrics = _rows(tmp_path / "league.db", "SELECT step, key, value FROM metrics ORDER BY id")
    settings = (tmp_path / "settings.json").read_text()
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        summary = run_experiment(_exp(*TINY, "resume=true"), tmp_path)
        # other settings would be recorded while nothing trains: refused, even overridden
        with pytest.raises(RunFolderError, match=r"has finished and cannot continue with "
                           r"other settings \(seed=0 \(run\) vs 1 \(now\)\)"):
            run_experiment(_exp(*TINY, "resume=true", "resume_override=true", "seed=1"),
                           tmp_path)
    assert (tmp_path / "settings.json").read_text() == settings
    run_experiment(_exp(*TINY, "resume=true"), tmp_path)  # its own settings still resume
    assert sorted(p.name for p in (tmp_path / "snapshots").rglob("*.pt")) == before == \
        ["v0000.pt"]
    # the figures the run recorded (its seconds and final_return were left out)
    assert summary.table == first and set(first[0]) == {
        "member", "version", "frames", "seconds", "final_return", "eval_return", "eval_ci95"}
    assert f"run {tmp_path} already finished at 64 frames (snapshot v0); nothing to do" \
        in caplog.messages
    assert _rows(tmp_path / "league.db",
                 "SELECT step, key, value FROM metrics ORDER BY id") == metrics
    assert _rows(tmp_path / "league.db", "SELECT COUNT(*) FROM matches") == [(2,)]


def test_an_interrupted_run_resumes_at_its_checkpoint(tmp_path, monkeypatch):
    calls = _kill_after_first_checkpoint(monkeypatch)
    with pytest.raises(_Killed):
        run_experiment(_exp(*TINY), tmp_path)
    assert calls == [16, 32, 48]  # checkpoint at 16; metrics logged at 32 and 48 too
    assert _rows(tmp_path / "league.db", "SELECT status FROM runs") == [("failed",)]
    monkeypatch.undo()
    trained = []
    real_train = single_run.train

    def train(learner, vg, frames, **kw):
        trained.append(frames)
        return real_train(learner, vg, frames, **kw)

    monkeypatch.setattr(single_run, "train", train)
    summary = run_experiment(_exp(*TINY, "resume=true"), tmp_path)
    assert trained == [64 - 16]  # the frames left after the checkpoint
    assert summary.table[0]["frames"] == 64 and summary.table[0]["version"] == 0
    assert _rows(summary.database, "SELECT status FROM runs") == [("finished",)]
    assert sorted(p.name for p in (tmp_path / "snapshots").rglob("*.pt")) == ["v0000.pt"]
    frames = _rows(summary.database, "SELECT step, value FROM metrics "
                                     "WHERE key = 'charts/frames' ORDER BY step")
    assert frames == [(16, 16.0), (32, 32.0), (48, 48.0), (64, 64.0)]  # one row per update
    with open(tmp_path / "metrics.csv", newline="") as fh:
        rows = [(int(r["step"]), r["key"], float(r["value"])) for r in csv.DictReader(fh)]
    assert len(rows) == len({(s, k) for s, k, _ in rows})
    assert sorted({s for s, k, _ in rows if k == "charts/frames"}) == [16, 32, 48, 64]
    # the file holds the resumed run's values past the checkpoint, as the database does
    assert sorted(rows) == sorted(_rows(summary.database,
                                        "SELECT step, key, value FROM metrics"))


def test_a_damaged_checkpoint_stops_the_resume_in_one_line(tmp_path, monkeypatch):
    _kill_after_first_checkpoint(monkeypatch, at_call=2)
    with pytest.raises(_Killed):
        run_experiment(_exp(*TINY), tmp_path)
    monkeypatch.undo()
    garble(tmp_path / "checkpoints" / "ckpt_000016.pt")
    with pytest.raises(CheckpointError, match="ckpt_000016.pt is damaged") as err:
        run_experiment(_exp(*TINY, "resume=true"), tmp_path)
    assert "\n" not in str(err.value)
    assert not list((tmp_path / "snapshots").rglob("*.pt"))  # nothing trained nor published


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    """A run killed right after its first checkpoint (copied by each test that edits it)."""
    run = tmp_path_factory.mktemp("killed") / "run"
    real = single_run.save_checkpoint

    def save(folder, step, state, keep=3, **kw):
        real(folder, step, state, keep, **kw)
        raise _Killed

    with pytest.MonkeyPatch.context() as patch, pytest.raises(_Killed):
        patch.setattr(single_run, "save_checkpoint", save)
        run_experiment(_exp(*TINY), run)
    return run


@pytest.mark.parametrize("bad", [-5, 2**64])  # 2**64: an OverflowError traceback from SQLite
def test_a_checkpoint_with_a_bad_step_is_refused(tmp_path, killed_run, bad):
    shutil.copytree(killed_run, tmp_path, dirs_exist_ok=True)
    _, state = load_latest(tmp_path / "checkpoints")  # rewritten with its hash, as a crafter can
    save_checkpoint(tmp_path / "checkpoints", state["step"], {**state, "step": bad})
    with pytest.raises(CheckpointError, match=f"step={bad}; expected a count >= 0"):
        run_experiment(_exp(*TINY, "resume=true"), tmp_path)


@pytest.mark.parametrize("name, value", [("eval_episodes", 0), ("checkpoint_every_s", -1.0)])
def test_out_of_range_settings_are_refused_in_one_line(name, value):
    with pytest.raises(ValueError, match=f"^{name}={value}; expected"):
        ExperimentConfig(**{name: value})


def test_a_finished_llm_run_resumes_to_nothing(tmp_path, caplog):
    first = run_experiment(_exp(*TINY_LLM), tmp_path).table
    with caplog.at_level(logging.INFO, logger="populations.experiment"):
        summary = run_experiment(_exp(*TINY_LLM, "resume=true"), tmp_path)
    assert sorted(p.name for p in (tmp_path / "snapshots").rglob("*.pt")) == \
        ["v0000.pt", "v0001.pt"]
    assert summary.table == first and "legal_rate" in first[0]  # its recorded rates
    assert any("already finished at 2 iterations" in m for m in caplog.messages)


def test_an_interrupted_llm_run_resumes_at_its_checkpoint(tmp_path, monkeypatch):
    _kill_after_first_checkpoint(monkeypatch, at_call=2)  # checkpoint 1; killed at 2
    with pytest.raises(_Killed):
        run_experiment(_exp(*TINY_LLM), tmp_path)
    monkeypatch.undo()
    stepped, real_own = [], single_run.rollout_trainer

    def own_rollouts(*args, **kw):
        trainer = real_own(*args, **kw)
        step = trainer.step
        trainer.step = lambda: stepped.append(1) or step()
        return trainer

    monkeypatch.setattr(single_run, "rollout_trainer", own_rollouts)
    summary = run_experiment(_exp(*TINY_LLM, "resume=true"), tmp_path)
    assert len(stepped) == 1  # iteration 2 only: iteration 1 is in the checkpoint
    assert sorted(p.name for p in (tmp_path / "snapshots").rglob("*.pt")) == \
        ["v0000.pt", "v0001.pt"]
    steps = _rows(summary.database, "SELECT step, COUNT(*) FROM metrics WHERE key = "
                                    "'charts/legal_rate' GROUP BY step")
    assert steps == [(1, 1), (2, 1)]
