"""A resumed run folder continues its wandb run: the id is kept in ``<run>/wandb/run_id`` and
passed with ``resume="allow"`` (each resume started a second wandb run). Disabled mode: no
network, no files of wandb's own."""

import struct

import pytest

from populations.loggers import LoggerConfig, WandbLogger, offline_records


@pytest.fixture
def disabled(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


def test_a_resumed_run_folder_continues_its_wandb_run(tmp_path, disabled):
    first = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {"seed": 0})
    run_id = first.run.id
    first.close()
    assert (tmp_path / "wandb" / "run_id").read_text().strip() == run_id
    again = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {"seed": 0})
    assert again.run.id == run_id
    again.close()
    other = WandbLogger(tmp_path / "other", LoggerConfig(kind="wandb"), {"seed": 0})
    assert other.run.id != run_id  # another run folder is another wandb run
    other.close()


def test_a_run_opens_with_no_deprecation_warning_of_wandb(tmp_path, capfd, monkeypatch):
    # reinit=True made wandb 0.19.10+ print "Using a boolean value for 'reinit' is
    # deprecated" on every run; offline mode (as a user without an API key gets) prints it
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "false")
    logger = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {"seed": 0})
    logger.close()
    out = capfd.readouterr()
    assert "deprecated" not in out.out + out.err


def test_a_damaged_run_id_file_is_one_line(tmp_path, disabled):
    (tmp_path / "wandb").mkdir()
    (tmp_path / "wandb" / "run_id").write_text("../../x y\n")
    with pytest.raises(ValueError, match=r"run_id holds '\.\./\.\./x y', not a wandb run id"):
        WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {})


def _session(run_dir, steps=(), backfill=(), drop_after=None):
    """One process on ``run_dir``: what reaches ``wandb.log`` as ``[(step, keys)]``."""
    logger = WandbLogger(run_dir, LoggerConfig(kind="wandb"), {})
    sent = []
    logger.run.log = lambda row, step, commit=None: sent.append((step, sorted(row)))
    if drop_after is not None:  # what single_run._restore does on a resume
        logger.drop_after(drop_after)
        logger.backfill(list(backfill))
    for s in steps:
        logger.log(s, {"loss": float(s)})
        logger.log(s, {"eval": 1.0})  # a second call at the same step merges into its row
    logger.close()
    return sent


def test_a_resumed_run_logs_each_wandb_step_once(tmp_path, disabled):
    """Killed after logging step 5, resumed from its checkpoint at step 3: wandb's steps only
    go up, so the resumed process leaves out steps 4 and 5 (they hold the killed process's
    rows) and logs from step 6 on; before, it sent 4 and 5 again (offline: twice in the run,
    online: dropped with a warning each)."""
    first = _session(tmp_path, steps=[1, 2, 3, 4, 5])
    assert [s for s, _ in first] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert (tmp_path / "wandb" / "last_step").read_text() == "5\n"
    rows = [(s, "loss", float(s)) for s in (1, 2, 3)]  # the database's rows up to the checkpoint
    again = _session(tmp_path, steps=[4, 5, 6, 7], backfill=rows, drop_after=3)
    assert again == [(6, ["loss"]), (6, ["eval"]), (7, ["loss"]), (7, ["eval"])]


def test_a_run_that_logged_elsewhere_gets_its_recorded_rows_on_resume(tmp_path, disabled):
    """A run resumed with ``logger=wandb`` after logging to csv only: the database's rows up
    to the checkpoint reach wandb, in step order, before the new ones."""
    rows = [(1, "a", 1.0), (1, "b", 2.0), (2, "a", 3.0)]
    sent = _session(tmp_path, steps=[3], backfill=rows, drop_after=2)
    assert sent == [(1, ["a", "b"]), (2, ["a"]), (3, ["loss"]), (3, ["eval"])]


def test_a_step_below_the_last_one_is_left_out_with_one_warning(tmp_path, disabled, caplog):
    logger = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {})
    sent = []
    logger.run.log = lambda row, step, commit=None: sent.append(step)
    for s in (10, 20, 15, 12, 20, 30):
        logger.log(s, {"x": 1.0})
    logger.close()
    assert sent == [10, 20, 20, 30]
    assert [r.message for r in caplog.records].count(
        "wandb: step 15 after step 20 is not logged to wandb (its steps only go up); the "
        "league database has it") == 1


def test_a_damaged_last_step_file_is_one_line(tmp_path, disabled):
    WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {}).close()
    (tmp_path / "wandb" / "last_step").write_text("-3 x\n")
    with pytest.raises(ValueError, match=r"last_step holds '-3 x', not a step"):
        WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {})


def _wandb_steps(run_dir) -> list[list[int]]:
    """The history steps each offline wandb file of ``run_dir`` holds, file by file (read
    with :func:`populations.loggers.offline_records`: wandb ships no reader of its own)."""
    import wandb

    # the wandb service writes a finished run's records after finish() returns (~0.5 s
    # later here, often): a read then found only the file's header; teardown ends the
    # service once it has written them
    wandb.teardown()

    return [[rec.history.step.num for rec in offline_records(path)
             if rec.WhichOneof("record_type") == "history"]
            for path in sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))]


@pytest.mark.benchmark
def test_offline_wandb_files_of_a_killed_and_resumed_run_hold_each_step_once(
        tmp_path, monkeypatch):
    """A single run killed after logging past its checkpoint and resumed: the wandb files of
    its two processes hold every step of the uninterrupted run's wandb file, each once (before:
    the resumed file held the steps between the checkpoint and the kill again). Three
    offline wandb runs (~20 s on a loaded 2-core machine)."""
    from tests.populations.test_single_resume import (
        TINY,
        _exp,
        _kill_after_first_checkpoint,
        _Killed,
    )

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    from populations.experiment import run_experiment

    run_experiment(_exp(*TINY, "logger=wandb"), tmp_path / "ref")
    with monkeypatch.context() as m:
        _kill_after_first_checkpoint(m)
        with pytest.raises(_Killed):
            run_experiment(_exp(*TINY, "logger=wandb"), tmp_path / "run")
    run_experiment(_exp(*TINY, "logger=wandb", "resume=true"), tmp_path / "run")
    [ref] = _wandb_steps(tmp_path / "ref")
    killed, resumed = _wandb_steps(tmp_path / "run")
    assert ref == [16, 32, 48, 64]
    # the step the kill interrupted (48) is held back and sent by the resume, once
    assert killed == [16, 32] and resumed == [48, 64]


def _offline_file(run_dir, steps, cut=False):
    """A wandb offline run file holding history rows at ``steps`` (``cut``: its last record
    cut short, as a SIGKILL leaves it)."""
    from wandb.proto import wandb_internal_pb2 as pb

    run_id = (run_dir / "wandb" / "run_id").read_text().strip()
    folder = run_dir / "wandb" / f"offline-run-20261203_231758-{run_id}"
    folder.mkdir()
    data = b":W&B\x00\x00\x01"
    for s in steps:
        rec = pb.Record()
        rec.history.step.num = s
        body = rec.SerializeToString()
        data += b"\x00" * 4 + struct.pack("<HB", len(body), 1) + body
    (folder / f"run-{run_id}.wandb").write_bytes(data[:-3] if cut else data)


@pytest.mark.parametrize("cut", [False, True])
def test_steps_a_kill_kept_from_the_offline_file_are_logged_again(tmp_path, disabled, cut):
    """kill -9 of an offline run: last_step said 5, its wandb file held steps 1 and 2 (the
    rest was never written: steps 2300-3100 of a run killed at 3100 on this CPU). The resume
    from the checkpoint at step 3 gave wandb only steps 6 on, so 3-5 were in no wandb file;
    now the database's rows after the file's last step and the replayed steps reach it."""
    _session(tmp_path, steps=[1, 2, 3, 4, 5])
    _offline_file(tmp_path, [1, 2, 3] if cut else [1, 2], cut)
    rows = [(s, "loss", float(s)) for s in (1, 2, 3)]  # the database's rows up to the checkpoint
    again = _session(tmp_path, steps=[4, 5, 6], backfill=rows, drop_after=3)
    assert [s for s, _ in again] == [3, 4, 4, 5, 5, 6, 6]
