"""Resume equivalence of a single run (``population=none``) against an uninterrupted one.

A resume cannot continue the game copies of the killed process (episodes in flight at the
checkpoint are dropped, see the README's Resume section), so the training after it is not the
uninterrupted run's. What it can and must keep: the learner's whole state (the learner matrix,
tests/populations/test_learner_matrix.py, checks weights, optimizer, replay and RNG streams),
the evaluation of a run killed after its last checkpoint (the uninterrupted run's matches),
and fresh randomness after a checkpoint: a resumed segment that played the games and random
opponents of the run's start again would train on the same deals twice.
"""

import collections
import collections.abc
import inspect
import sqlite3
from typing import Any

import numpy as np
import pytest
import torch

import populations.single_run as single_run
from marl import registry
from marl.core import load_policy
from populations.checkpoint import read_checkpoint, save_checkpoint
from populations.experiment import run_experiment
from tests.populations.test_learner_matrix import (
    KINDS,
    _moves,
    build,
    probe_step,
    shared_game,
    train_phase,
)
from tests.populations.test_single_resume import TINY, _exp, _kill_after_first_checkpoint


class _Killed(Exception):
    """Stands for a kill of the process."""


def _rows(run_dir, sql):
    db = sqlite3.connect(run_dir / "league.db")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


MATCHES = "SELECT key, seats, returns FROM matches ORDER BY key"
CHEAP = [*TINY, "mappo.epochs=1", "mappo.minibatches=1"]  # one gradient step per update


def _with(*overrides):
    """CHEAP with ``overrides`` in place of its own values of those keys."""
    keys = {o.split("=")[0] for o in overrides}
    return [*(o for o in CHEAP if o.split("=")[0] not in keys), *overrides]


def test_a_run_killed_in_its_evaluation_resumes_to_the_uninterrupted_matches(
        tmp_path, monkeypatch):
    """The evaluation's random seats went on from the training opponents' streams, which a
    resume (training nothing again) restarted: the same trained snapshot was evaluated on
    other opponent moves (8 of 16 kuhn matches differed)."""
    run = _with("frames=16", "eval_episodes=16")  # one update, then the evaluation
    run_experiment(_exp(*run), tmp_path / "ref")
    real = single_run.evaluate_single

    def killed(*args, **kw):
        raise _Killed

    monkeypatch.setattr(single_run, "evaluate_single", killed)
    with pytest.raises(_Killed):
        run_experiment(_exp(*run), tmp_path / "run")
    monkeypatch.setattr(single_run, "evaluate_single", real)
    run_experiment(_exp(*run, "resume=true"), tmp_path / "run")
    snaps = "SELECT version, sha256 FROM snapshots"
    assert _rows(tmp_path / "run", snaps) == _rows(tmp_path / "ref", snaps)
    want = _rows(tmp_path / "ref", MATCHES)
    assert len(want) == 16 and _rows(tmp_path / "run", MATCHES) == want


def test_a_resume_plays_new_games_and_opponent_moves_from_its_checkpoint(
        tmp_path, monkeypatch):
    """Resumed game copies and random seats were seeded as at the run's start: every resume
    replayed the run's first deals and opponent moves (a job preempted every few minutes
    trained on its first few minutes of games over and over). Now they are seeded from the
    checkpoint's step, the same for every resume from that checkpoint. The episode-return
    chart's window of 50 episodes goes on over the episodes before the resume (it restarted
    empty: the first rows after a resume averaged the resumed part's episodes only)."""
    seen, real = [], single_run.train

    def train(learner, vg, frames, opponents=None, **kw):
        seen.append((vg.seed, {a: p.rng.bit_generator.state["state"]["state"]
                               for a, p in opponents.items()}))
        return real(learner, vg, frames, opponents=opponents, **kw)

    monkeypatch.setattr(single_run, "train", train)
    _kill_after_first_checkpoint(monkeypatch, at_call=2)  # checkpoint at 16, killed at 32
    with pytest.raises(Exception, match="killed at step 32"):
        run_experiment(_exp(*CHEAP), tmp_path)
    monkeypatch.setattr(single_run, "save_checkpoint", save_checkpoint)
    _kill_after_first_checkpoint(monkeypatch, at_call=1)  # resumed, killed at 32 again
    with pytest.raises(Exception, match="killed at step 32"):
        run_experiment(_exp(*CHEAP, "resume=true"), tmp_path)
    monkeypatch.setattr(single_run, "save_checkpoint", save_checkpoint)
    run_experiment(_exp(*CHEAP, "resume=true"), tmp_path)  # to the end, a checkpoint a step
    (start_seed, start_opp), (seed1, opp1), (seed2, opp2) = seen
    assert seed1 != start_seed and set(opp1.values()).isdisjoint(start_opp.values())
    assert (seed1, opp1) == (seed2, opp2)  # a resume from one checkpoint: one segment
    assert abs(seed1 - start_seed) >= 4  # 4 copies seeded s, s+1, ...: none replayed
    charts = dict(_rows(tmp_path, "SELECT step, value FROM metrics "
                                  "WHERE key = 'charts/episode_return'"))
    for step in (32, 48, 64):  # each checkpoint holds the window's returns at its step
        window = read_checkpoint(tmp_path / "checkpoints" / f"ckpt_{step:06d}.pt")["returns"]
        assert len(window) > 8 and charts[step] == float(np.mean(window)), step


# one kind per learner class (mappo/ippo and vdn/qmix share theirs), on a turn-based game
# where it plays one (Kuhn: cheap texts)
_CLASSES: dict[type, str] = {}
for _k in sorted(KINDS, key=lambda k: k not in ("mappo", "qmix")):  # the fuller of a pair
    _CLASSES.setdefault(registry.get(_k).cls, _k)
ONCE = [("turn_based" if "turn_based" in _moves(k) else _moves(k)[0], k)
        for k in KINDS if k in _CLASSES.values()]


@pytest.mark.parametrize(("move", "kind"), ONCE, ids=[f"{m}-{k}" for m, k in ONCE])
def test_a_reseeded_policy_plays_as_a_fresh_one(move, kind, tmp_path):
    """A league reseeds the snapshots it seats at each generation: a snapshot cached since an
    earlier generation must then play as one loaded after a resume. An LLM policy had no
    reseed (its scoring choices went on from where they were): in a league with an LLM team,
    the MADDPG and QMIX members' generation-3 snapshots after a resume differed."""
    preset = shared_game(move, kind)
    played = build(kind, preset, seed=3, workdir=tmp_path).policy()
    fresh = load_policy(played.save(tmp_path / "policy.pt"))
    vs = probe_step(played, preset, seed=0)

    def acts(policy):
        return [policy.act(agent, vs) for _ in range(4) for agent in policy.meta.agents]

    acts(played)  # its streams move on, as a cached snapshot's do
    played.reseed(9)
    fresh.reseed(9)
    for want, got in zip(acts(fresh), acts(played), strict=True):
        np.testing.assert_array_equal(got, want)


# caches a fresh learner fills on first use (an LLM backend's token ids of candidates and
# prompts, the rollout engine's games, the last batch's game names): not state, rebuilt the
# same. A new attribute that is a cache goes here; one that is state goes in state_dict()
_CACHES = {"_candidate_ids", "_prompt_ids", "_games", "_batch_games"}


def _differences(a: Any, b: Any, path: str, seen: set[int]) -> list[str]:
    """Where two objects' state differs: tensors, RNG streams, modules' and optimizers'
    state dicts, numbers, containers and every attribute (``__dict__`` and ``__slots__``) of
    other objects, recursively. A kind of value it cannot compare is named, not passed."""
    if isinstance(a, torch.Tensor):
        same = isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype \
            and bool(torch.equal(a, b))
        return [] if same else [path]
    if isinstance(a, torch.Generator):
        return _differences(a.get_state(), b.get_state(), path, seen)
    if isinstance(a, np.random.Generator):
        return [] if a.bit_generator.state == b.bit_generator.state else [path]
    if isinstance(a, torch.nn.Module | torch.optim.Optimizer):
        return _differences(a.state_dict(), b.state_dict(), path, seen)
    if isinstance(a, np.ndarray):
        return [] if isinstance(b, np.ndarray) and np.array_equal(a, b) else [path]
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return [f"{path} (keys)"]
        return [d for k in a for d in _differences(a[k], b[k], f"{path}[{k!r}]", seen)]
    if isinstance(a, list | tuple | collections.deque):
        if type(a) is not type(b) or len(a) != len(b):
            return [f"{path} (length)"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in
                _differences(x, y, f"{path}[{i}]", seen)]
    if isinstance(a, int | float | str | bytes | type(None) | torch.device | torch.dtype
                  | np.generic | collections.abc.Set):
        return [] if type(a) is type(b) and a == b else [f"{path}: {a!r} != {b!r}"]
    if inspect.isroutine(a) or isinstance(a, type) or id(a) in seen:
        return []  # code, not state; or an object already walked
    seen.add(id(a))
    if type(a) is not type(b):
        return [f"{path} (type)"]
    slots = [n for c in type(a).__mro__ for n in getattr(c, "__slots__", ()) if hasattr(a, n)]
    if not hasattr(a, "__dict__") and not slots:
        return [f"{path}: cannot compare a {type(a).__name__}"]
    fields = {**getattr(a, "__dict__", {}), **{n: getattr(a, n) for n in slots}}
    return [d for k, v in fields.items() if k not in _CACHES
            for d in _differences(v, getattr(b, k, None), f"{path}.{k}", seen)]


@pytest.mark.parametrize(("move", "kind"), ONCE, ids=[f"{m}-{k}" for m, k in ONCE])
def test_a_loaded_checkpoint_restores_everything_the_learner_holds(move, kind, tmp_path):
    """Every attribute of a trained learner (weights, targets, optimizer moments and steps,
    replay rows and position, counters, ε, normalizers, RNG streams; an LLM team's baselines
    and samplers), read back from a checkpoint file as a resume reads it into a learner built
    from the settings, equals the trained one's once its episodes in flight are dropped
    (``start_episodes``, what a resume does to them by design). The learner matrix checks
    that both then train alike; this names any state a checkpoint leaves out."""
    preset = shared_game(move, kind)
    trained = build(kind, preset, seed=11, workdir=tmp_path / "a")
    train_phase(registry.get(kind), trained, preset, seed=21)
    save_checkpoint(tmp_path / "ckpt", 1, {"step": 1, "learner": trained.state_dict()})
    resumed = build(kind, preset, seed=11, workdir=tmp_path / "b")  # as `resume=true` does
    resumed.load_state_dict(read_checkpoint(tmp_path / "ckpt" / "ckpt_000001.pt")["learner"])
    if hasattr(trained, "start_episodes"):
        trained.start_episodes()
    assert _differences(trained, resumed, kind, set()) == []


def _cuda_state(seed: int, offset: int) -> torch.Tensor:
    """A CUDA generator's state as ``torch.cuda.get_rng_state`` lays it out (16 bytes)."""
    return torch.tensor(list(np.array([seed, offset], "<i8").view(np.uint8)), dtype=torch.uint8)


@pytest.mark.parametrize("kind", ["mappo", "llm_grpo"])
def test_a_checkpoint_from_another_device_kind_resumes(kind, tmp_path):
    """The device may change on a resume, but an LLM team's sampling generators were set
    from the checkpoint's states as they were: a CUDA one's (16 bytes) on a CPU generator
    raised, and the resume stopped ('does not fit this llm_grpo learner'). Such a stream
    now restarts from the saved state (the same for every resume from it), as MAPPO's did,
    but by its hash: the sum of its bytes restarted seed 42 at offsets 4 and 1024, and
    seed 43 at offset 3, alike (review R3)."""
    preset = shared_game("turn_based", kind)
    state = build(kind, preset, seed=11, workdir=tmp_path / "a").state_dict()

    def draws(seed: int, offset: int, k: int) -> list[torch.Tensor]:
        cuda = _cuda_state(seed, offset)
        if kind == "mappo":
            state["gen"], state["gen_device"] = cuda, "cuda"
        else:
            state["backend_rng"] = dict.fromkeys(state["backend_rng"], cuda)
            state["backend_rng_device"] = dict.fromkeys(state["backend_rng"], "cuda")
        resumed = build(kind, preset, seed=11, workdir=tmp_path / f"b{k}")
        resumed.load_state_dict(state)
        gens = [resumed.gen] if kind == "mappo" else \
            [tm.backend.generator for tm in resumed.team.models.values()]
        assert gens  # the tiny LLM team samples with a torch generator per model
        return [torch.rand(3, generator=g) for g in gens]

    def same(x: list[torch.Tensor], y: list[torch.Tensor]) -> bool:
        return all(torch.equal(a, b) for a, b in zip(x, y, strict=True))

    first = draws(42, 4, 0)
    assert same(first, draws(42, 4, 1))  # a resume from one checkpoint restarts alike
    assert not same(first, draws(42, 1024, 2)) and not same(first, draws(43, 3, 3))
