"""Ctrl-C / SIGTERM in a CLI stop a single run at its next update with a checkpoint
(``populations.run_folder.deferred_stop``); the run through the real CLI is in
test_interrupts_review (the second test lane)."""

import os
import signal

import pytest

from populations import run_folder


def test_the_first_signal_asks_the_second_stops_at_once(monkeypatch):
    """Inside ``deferred_stop`` (with the CLI's handlers) the first SIGTERM or Ctrl-C only
    asks; ``stop_now`` raises what the signal would have; a second signal raises where it
    arrives; a request the loop did not obey is obeyed when the block ends. A program that
    imports selfplay (its own handlers) is not changed."""
    with run_folder.sigterm_as_interrupt():
        with pytest.raises(run_folder.Terminated), run_folder.deferred_stop():
            os.kill(os.getpid(), signal.SIGTERM)
            assert run_folder.stop_requested()
            run_folder.stop_now()
        assert not run_folder.stop_requested()
        with pytest.raises(KeyboardInterrupt) as stop, run_folder.deferred_stop():
            os.kill(os.getpid(), signal.SIGINT)
            assert run_folder.stop_requested()
            os.kill(os.getpid(), signal.SIGINT)  # again: at once
            pytest.fail("the second Ctrl-C did not stop")
        assert type(stop.value) is KeyboardInterrupt
        with pytest.raises(run_folder.Terminated), run_folder.deferred_stop():
            os.kill(os.getpid(), signal.SIGTERM)  # after the loop's last check
        assert run_folder.stop_status(run_folder.Terminated()) == 143
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt), run_folder.deferred_stop():  # no CLI handlers
        os.kill(os.getpid(), signal.SIGINT)


def test_sigterm_exits_143_with_hydra_full_error(monkeypatch, capsys):
    """``HYDRA_FULL_ERROR=1`` shows the traceback; SIGTERM's exception raised on to the top
    made Python exit as after Ctrl-C (130), not 143."""
    from populations import cli_common

    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(SystemExit) as stop, run_folder.sigterm_as_interrupt(), \
            cli_common.reported("selfplay-train"):
        os.kill(os.getpid(), signal.SIGTERM)
    assert stop.value.code == 143
    assert "Traceback" in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt), cli_common.reported("selfplay-train"):
        raise KeyboardInterrupt  # Ctrl-C: raised on (Python exits 130 itself)


def test_a_stop_request_without_stderr_still_stops(monkeypatch):
    """The note on stderr failing (a daemon's closed stderr) raised OSError from the signal
    handler into the training loop: the run was recorded failed instead of stopped."""
    write = os.write

    def closed(fd, data):
        if fd == 2:
            raise OSError(9, "Bad file descriptor")
        return write(fd, data)

    with run_folder.sigterm_as_interrupt():
        monkeypatch.setattr(os, "write", closed)
        with pytest.raises(run_folder.Terminated), run_folder.deferred_stop():
            os.kill(os.getpid(), signal.SIGTERM)
            assert run_folder.stop_requested()
        monkeypatch.undo()


def test_a_replay_learner_stops_at_the_next_step_not_after_its_warm_up(tmp_path, monkeypatch):
    """VDN makes no update before ``learning_starts``: the first Ctrl-C waited for one and the
    run trained all its frames, then stopped without evaluating (review I2). A replay
    learner's state is whole after any step: it stops there, with a checkpoint holding its
    replay, and the resume goes on from that frame."""
    import marl.train
    from populations import experiment
    from populations.checkpoint import load_latest
    from populations.experiment import (
        ExperimentConfig,
        GameConfig,
        ValueDecompConfig,
        run_experiment,
    )

    steps = []
    after_step = marl.train.after_step

    def counted(learner, vs, *args, **kwargs):
        after_step(learner, vs, *args, **kwargs)
        steps.append(1)
        if len(steps) == 10:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(marl.train, "after_step", counted)
    cfg = ExperimentConfig(algo="vdn", game=GameConfig(name="matrix/climbing"), frames=4000,
                           num_envs=4, eval_episodes=1, progress=False,
                           checkpoint_every_s=1000, vdn=ValueDecompConfig(
                               mixer="vdn", learning_starts=100_000))
    with run_folder.sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, tmp_path / "run")
    assert len(steps) == 10
    _, state = load_latest(tmp_path / "run" / experiment.CHECKPOINTS)
    assert state["step"] == 40  # 10 steps of 4 copies
    assert state["learner"]["buffer"]["size"] == 40  # the replay so far


def test_a_second_signal_during_the_stops_clean_up_stops_at_once():
    """Once the stop was obeyed, a Ctrl-C in the clean-up it unwinds through (closing rollout
    workers, progress bars) was taken as a new first request: swallowed, the note printed
    again (review I5)."""
    with run_folder.sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt), \
            run_folder.deferred_stop():
        os.kill(os.getpid(), signal.SIGINT)
        try:
            run_folder.stop_now()
        finally:  # the clean-up the stop unwinds through
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)


def test_a_dropped_late_sigterm_leaves_a_later_ctrl_c_a_ctrl_c(capfd):
    """A league/PSRO block (``obey_at_end=False``) drops a SIGTERM that came after its last
    check; a Ctrl-C later in the same CLI (its summary) was still reported as SIGTERM (143)."""
    with run_folder.sigterm_as_interrupt():
        with run_folder.deferred_stop(obey_at_end=False):
            os.kill(os.getpid(), signal.SIGTERM)
        assert "nothing left to resume" in capfd.readouterr().err
        assert run_folder.stop_status(KeyboardInterrupt()) == 130
