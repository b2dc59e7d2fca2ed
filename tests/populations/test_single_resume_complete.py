"""A resumed single run (``population=none``) ends with the same summary row it would have
had uninterrupted: the episode returns and seconds before a periodic checkpoint count, and an
LLM run killed after its last checkpoint still reports its last iteration's rates."""

import pytest
import torch

import populations.single_run as single_run
from populations.experiment import run_experiment
from tests.populations.test_single_resume import TINY, TINY_LLM, _exp, _kill_after_first_checkpoint


class _Killed(Exception):
    """Stands for a kill of the process."""


def _capture_train(monkeypatch):
    """Record the episode returns of each ``train`` call."""
    seen, real = [], single_run.train

    def train(*args, **kw):
        res = real(*args, **kw)
        seen.append(list(res.episode_returns))
        return res

    monkeypatch.setattr(single_run, "train", train)
    return seen


def test_returns_and_seconds_before_a_periodic_checkpoint_count_after_a_resume(
        tmp_path, monkeypatch):
    _kill_after_first_checkpoint(monkeypatch, at_call=2)  # checkpoint at 16; killed at 32
    with pytest.raises(Exception, match="killed at step 32"):
        run_experiment(_exp(*TINY), tmp_path)
    monkeypatch.undo()
    ckpt = torch.load(tmp_path / "checkpoints" / "ckpt_000016.pt", weights_only=False)
    before = ckpt.get("returns")
    assert before and all(isinstance(r, float) for r in before)  # kuhn: 16 frames end episodes
    assert ckpt.get("seconds", 0.0) > 0.0
    seen = _capture_train(monkeypatch)
    row = run_experiment(_exp(*TINY, "resume=true"), tmp_path).table[0]
    (after,) = seen
    assert len(before) + len(after) < 50  # the summary is the mean of every episode
    assert row["final_return"] == round(sum(before + after) / len(before + after), 3)
    assert row["seconds"] >= round(ckpt["seconds"], 1)


def test_an_llm_run_killed_after_its_last_checkpoint_reports_its_last_iteration(
        tmp_path, monkeypatch):
    stepped, real_own = [], single_run.rollout_trainer

    def own_rollouts(*args, **kw):
        trainer = real_own(*args, **kw)
        step = trainer.step
        trainer.step = lambda: stepped.append(step()) or stepped[-1]
        return trainer

    def evaluate(*args, **kw):
        raise _Killed

    monkeypatch.setattr(single_run, "rollout_trainer", own_rollouts)
    monkeypatch.setattr(single_run, "evaluate_single", evaluate)  # after the last checkpoint
    with pytest.raises(_Killed):
        run_experiment(_exp(*TINY_LLM), tmp_path)
    monkeypatch.undo()
    assert len(stepped) == 2
    last = {k: round(stepped[-1][f"charts/{k}"], 3)
            for k in ("legal_rate", "success_rate", "team_return")}
    resumed = run_experiment(_exp(*TINY_LLM, "resume=true"), tmp_path)
    evaluated = resumed.table[0].pop("eval_return")  # tests/populations/test_walk20_single_eval
    ci = resumed.table[0].pop("eval_ci95")  # tests/populations/test_walk21_eval_ci
    assert isinstance(evaluated, float) and isinstance(ci, float)
    assert resumed.table[0].pop("eval_legal_rate") == 1.0  # scored moves, read back (fix 26f)
    assert resumed.table == [{"member": "llm", "version": 1, "iterations": 2, **last}]
