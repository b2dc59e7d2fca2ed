"""A single run (``population=none``) stopped after a checkpoint and resumed ends as the
uninterrupted run of its seed, bit for bit, where the game holds nothing between episodes
that a checkpoint cannot save: on a one-step game (``rps``: every copy's episode ends at
every step, no chance) the metrics after the checkpoint and the final weights, optimizer
and RNG streams are the uninterrupted run's, for MAPPO and for VDN (its replay saved,
``checkpoint_buffer``). The random seats' streams were reseeded from the checkpoint's step
at a resume (their moves after it were not the uninterrupted run's); a checkpoint now holds
their RNG states. On a game whose episodes outlast a step (kuhn), the episodes in flight at
the checkpoint are not saved (README, Resume): the resumed run plays new ones."""

import csv

import pytest
import torch

from populations.checkpoint import checkpoint_files, read_checkpoint
from populations.experiment import run_experiment
from tests.populations.test_single_resume import _exp, _kill_after_first_checkpoint

BASE = ["game=rps", "num_envs=4", "eval_episodes=2", "progress=false", "checkpoint_every_s=0",
        "logger=csv"]
RUNS = {
    "mappo": ["algo=mappo", "frames=64", "mappo.rollout_steps=4"],  # updates at 16, 32, 48, 64
    "vdn": ["algo=vdn", "frames=96", "vdn.learning_starts=16", "vdn.batch_size=8"],
}


def _metrics(run, after: int) -> list[dict]:
    """metrics.csv's rows past step ``after``, without the wall-clock ones."""
    with open(run / "metrics.csv", newline="") as fh:
        return [r for r in csv.DictReader(fh)
                if int(r["step"]) > after and r["key"] != "charts/frames_per_second"]


def _flat(x, at: str = "") -> dict:
    if isinstance(x, dict):
        return {k: v for key, val in x.items() for k, v in _flat(val, f"{at}/{key}").items()}
    if isinstance(x, (list, tuple)):
        return {k: v for i, val in enumerate(x) for k, v in _flat(val, f"{at}/{i}").items()}
    return {at: x}


def _same(a, b) -> bool:
    return torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


@pytest.mark.parametrize("algo", sorted(RUNS))
def test_a_resumed_run_ends_as_the_uninterrupted_one(algo, tmp_path, monkeypatch):
    run = [*BASE, *RUNS[algo]]
    run_experiment(_exp(*run), tmp_path / "ref")
    calls = _kill_after_first_checkpoint(monkeypatch, at_call=2)  # checkpoint, killed later
    with pytest.raises(Exception, match="killed at step"):
        run_experiment(_exp(*run), tmp_path / "run")
    monkeypatch.undo()
    k = calls[0]
    run_experiment(_exp(*run, "resume=true"), tmp_path / "run")
    want, got = _metrics(tmp_path / "ref", k), _metrics(tmp_path / "run", k)
    assert len(want) > 20 and got == want
    ref, res = (_flat(read_checkpoint(checkpoint_files(r / "checkpoints")[0])["learner"])
                for r in (tmp_path / "ref", tmp_path / "run"))
    assert ref.keys() == res.keys()
    assert [key for key in ref if not _same(ref[key], res[key])] == []


def test_a_checkpoint_holds_the_random_seats_states(tmp_path):
    run_experiment(_exp(*BASE, *RUNS["mappo"]), tmp_path)
    saved = read_checkpoint(checkpoint_files(tmp_path / "checkpoints")[0])["opponents"]
    assert list(saved) == ["player_1"] and saved["player_1"]["bit_generator"] == "PCG64"


def test_an_edited_seat_state_stops_the_resume_in_one_line(tmp_path, monkeypatch):
    from marl.core import CheckpointError
    from populations.checkpoint import save_checkpoint

    run = [*BASE, *RUNS["mappo"]]
    _kill_after_first_checkpoint(monkeypatch, at_call=2)
    with pytest.raises(Exception, match="killed at step"):
        run_experiment(_exp(*run), tmp_path)
    monkeypatch.undo()
    (path,) = checkpoint_files(tmp_path / "checkpoints")
    state = read_checkpoint(path)
    state["opponents"]["player_1"] = {"bit_generator": "MT19937", "state": {"key": 1}}
    save_checkpoint(tmp_path / "checkpoints", state["step"], state)
    with pytest.raises(CheckpointError) as err:
        run_experiment(_exp(*run, "resume=true"), tmp_path)
    assert "ckpt_000016.pt holds a random seat 'player_1' state numpy refuses" in str(err.value)
    assert "\n" not in str(err.value)
