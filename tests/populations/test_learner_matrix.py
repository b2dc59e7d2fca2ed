"""The learner matrix, derived from the registry and the capabilities learners declare
(a newly registered learner joins every row here without an edit):

* **snapshots** -- every learner trains one tiny update, publishes its snapshot to a
  policy store (real SQLite), loads it back through ``load_policy`` and acts exactly as the
  learner's own snapshot did; then it plays a match (``runners.play_job``) on one side of a
  shared game against every other kind's snapshot on the other side;
* **resume** -- every learner trains, is checkpointed (``torch.save`` / ``weights_only``
  load), and a fresh learner built as a resumed run builds it (same settings and seed, so its
  random streams stand where the trained one's started) loads it: the next rollout's
  actions, the next update's metrics and the weights after it equal the uninterrupted
  learner's.

Both run once on a simultaneous-move and once on a turn-based game, for each learner whose
capabilities say it plays that kind (MADDPG: simultaneous only). Which game a learner (pair)
plays is decided by ``registry.compatible`` over the shipped two-team game presets
(``GAME_ORDER`` first: competitive MPE and Kuhn poker, which every current learner of the
kind plays); the settings are ``selfplay-train``'s with ``test_matrix.TINY``'s budgets.
Training every algo on every preset is ``test_matrix.test_algo_game_pair``.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import games
import llm_agents.learner  # noqa: F401 - registers llm_grpo, as populations does
from marl import registry
from marl.core import Policy, atomic_torch_save, safe_torch_load
from marl.registry import LearnerEntry
from marl.train import RandomPolicy, train
from populations.approx_exploit import policy_vector_kwargs
from populations.db import LeagueDB
from populations.experiment import ExperimentConfig, settings
from populations.runners import MatchJob, play_job
from populations.store import PolicyStore

from .test_matrix import CONFIGS, _game, _prepared

KINDS = registry.names()
MOVES = ("simultaneous", "turn_based")  # Capabilities fields and GameSpec kinds alike
GAME_ORDER = ("mpe_adversary", "kuhn", "rps")  # tried first: competitive, two teams, cheap
PRESETS = (*GAME_ORDER, *sorted(p.stem for p in (CONFIGS / "game").glob("*.yaml")
                                if p.stem not in GAME_ORDER))


@functools.cache
def _preset(name: str) -> tuple[ExperimentConfig, games.Game]:
    """``selfplay-train``'s config for game preset ``name`` at tiny settings, and the game."""
    return _prepared("mappo", name), _game(name)


def _plays(kind: str, preset: str) -> bool:
    game = _preset(preset)[1]
    text_views = not callable(getattr(game, "batched", None))
    return registry.compatible(kind, game.spec, settings(_preset(preset)[0], registry.get(kind)),
                               text_views)


def _moves(kind: str) -> list[str]:
    """The kinds of game (``MOVES``) learner ``kind`` declares it plays."""
    return [m for m in MOVES if getattr(registry.get(kind).capabilities, m)]


@functools.cache
def shared_game(move: str, *kinds: str) -> str | None:
    """The first two-team ``move`` game preset every learner in ``kinds`` can play."""
    for preset in PRESETS:
        spec = _preset(preset)[1].spec
        if len(spec.teams) == 2 and spec.simultaneous == (move == "simultaneous") \
                and all(_plays(k, preset) for k in kinds):
            return preset
    return None


def _kwargs(exp: ExperimentConfig) -> dict[str, Any]:
    return dict(exp.game.kwargs)


def build(kind: str, preset: str, seed: int, workdir: Path) -> Any:
    """Learner ``kind`` for every seat of ``preset``, built through the registry."""
    exp, game = _preset(preset)
    entry = registry.get(kind)
    context = {}
    if entry.capabilities.own_rollouts:  # it plays its own episodes: it needs the game
        context = {"game": exp.game.name, "game_kwargs": _kwargs(exp), "workdir": workdir}
    return entry.build(game.spec, settings(exp, entry), None, "cpu", seed, **context)


@dataclass
class Trace:
    """What a learner did in one training phase: its actions, in order, and its updates."""

    actions: list[dict[str, np.ndarray]]
    metrics: list[dict[str, float]]


def _vector_game(learner: Any, preset: str, seed: int) -> games.VectorGame:
    exp = _preset(preset)[0]
    vkw = getattr(learner, "vector_game_kwargs", {"with_state": True})
    return games.VectorGame(exp.game.name, exp.num_envs, seed=seed, **vkw, **_kwargs(exp))


def train_phase(entry: LearnerEntry, learner: Any, preset: str, seed: int) -> Trace:
    """Train until at least one update on game copies seeded ``seed``, recording actions."""
    if entry.capabilities.own_rollouts:
        batch = learner.collect()
        actions = [{t.agent: np.array([t.decision.index, *t.decision.completion_ids])}
                   for t in batch.turns]
        return Trace(actions, [learner.update(batch)])
    actions: list[dict[str, np.ndarray]] = []
    act = learner.act

    def recording(vs: games.VecStep) -> dict[str, np.ndarray]:
        out = act(vs)
        actions.append({a: np.array(x, copy=True) for a, x in out.items()})
        return out

    learner.act = recording  # the instance's act, seen by marl.train.train
    try:
        exp = _preset(preset)[0]
        res = train(learner, _vector_game(learner, preset, seed), exp.frames, progress=False)
    finally:
        del learner.act
    assert res.updates >= 1, f"{entry.name}: no update in {exp.frames} frames"
    return Trace(actions, res.metrics)


def probe_step(policy: Policy, preset: str, seed: int, steps: int = 2) -> games.VecStep:
    """A VecStep a few random steps into ``preset`` (with the views ``policy`` reads)."""
    exp, game = _preset(preset)
    vg = games.VectorGame(exp.game.name, 2, seed=seed, **policy_vector_kwargs([policy]),
                          **_kwargs(exp))
    rnd = RandomPolicy(game.spec, seed=seed)
    vs = vg.reset()
    for _ in range(steps):
        vs = vg.step({a: rnd.act(a, vs) for a in game.spec.agent_ids})
    return vs


def assert_same_play(a: Policy, b: Policy, vs: games.VecStep, seed: int) -> None:
    """``a`` and ``b`` take the same sampled and greedy actions (and probabilities)."""
    for agent in a.meta.agents:
        for greedy in (False, True):
            a.reseed(seed)
            b.reseed(seed)
            np.testing.assert_array_equal(a.act(agent, vs, greedy), b.act(agent, vs, greedy),
                                          err_msg=f"{a.meta.kind} {agent} greedy={greedy}")
        try:
            pa = a.action_probs(agent, vs)
        except NotImplementedError:
            continue
        np.testing.assert_array_equal(pa, b.action_probs(agent, vs))


# ------------------------------------------------------------------------- snapshots
@dataclass
class Snapshot:
    policy: Policy  # the learner's own snapshot, in memory
    path: str  # its file in the store
    store: PolicyStore
    snapshot_id: int


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    """``get(kind, preset)``: ``kind`` trained one update on ``preset`` and published to a
    store in a real league database (built once per pair)."""
    root = tmp_path_factory.mktemp("learner_matrix")
    db = LeagueDB(root / "league.db")
    store = PolicyStore(root / "snapshots", db, db.create_run("learner_matrix"))
    made: dict[tuple[str, str], Snapshot] = {}

    def get(kind: str, preset: str) -> Snapshot:
        if (kind, preset) not in made:
            entry = registry.get(kind)
            learner = build(kind, preset, seed=3, workdir=root / f"{kind}_{preset}")
            train_phase(entry, learner, preset, seed=5)
            policy = learner.policy()
            snap = store.publish(f"{kind}.{preset}", policy)
            made[kind, preset] = Snapshot(policy, snap.path, store, snap.id)
        return made[kind, preset]

    yield get
    db.close()


CASES = [(m, k) for k in KINDS for m in _moves(k)]
CASE_IDS = [f"{m}-{k}" for m, k in CASES]


@pytest.mark.parametrize(("move", "kind"), CASES, ids=CASE_IDS)
def test_snapshot_saves_loads_and_acts_alike(move, kind, snapshots):
    preset = shared_game(move, kind)
    assert preset is not None, f"{kind} plays no shipped two-team {move} game preset"
    snap = snapshots(kind, preset)
    loaded = snap.store.load(snap.snapshot_id)  # load_policy, after the SHA-256 check
    assert loaded is not snap.policy and loaded.meta == snap.policy.meta
    assert loaded.meta.kind == registry.get(kind).policy
    assert set(loaded.meta.agents) == set(_preset(preset)[1].spec.agent_ids)
    for seed in (0, 1):
        assert_same_play(snap.policy, loaded, probe_step(loaded, preset, seed), seed)


PAIRS = [(m, a, b) for m in MOVES for a in KINDS for b in KINDS
         if a != b and m in _moves(a) and m in _moves(b)]


@pytest.mark.parametrize(("move", "first", "second"), PAIRS,
                         ids=[f"{m}-{a}-vs-{b}" for m, a, b in PAIRS])
def test_snapshot_plays_every_other_kind(move, first, second, snapshots):
    """``first``'s snapshot fills the first team's seats, ``second``'s the other team's."""
    preset = shared_game(move, first, second)
    if preset is None:
        pytest.skip(f"{first} and {second} share no shipped two-team {move} game preset")
    exp, game = _preset(preset)
    spec = game.spec
    sides = {a.id: snapshots(first if a.team == spec.teams[0] else second, preset).path
             for a in spec.agents}
    job = MatchJob(f"{first}-vs-{second}", exp.game.name, sides, episodes=2, seed=7,
                   game_kwargs=_kwargs(exp), num_envs=2)
    res = play_job(job)
    assert len(res.returns) == 2
    assert all(set(r) == set(spec.agent_ids) and all(map(math.isfinite, r.values()))
               for r in res.returns)
    assert play_job(job).returns == res.returns  # a fresh load plays the same match


# ---------------------------------------------------------------------------- resume
_CLOCK = re.compile(r"seconds|per_second")  # wall-clock metrics differ run to run


def _same_metrics(a: list[dict[str, float]], b: list[dict[str, float]]) -> None:
    assert [sorted(m) for m in a] == [sorted(m) for m in b]
    for ma, mb in zip(a, b, strict=True):
        for k in (k for k in ma if not _CLOCK.search(k)):
            assert ma[k] == mb[k] or (math.isnan(ma[k]) and math.isnan(mb[k])), k


@pytest.mark.parametrize(("move", "kind"), CASES, ids=CASE_IDS)
def test_resumed_learner_acts_as_the_uninterrupted_one(move, kind, tmp_path):
    preset = shared_game(move, kind)
    assert preset is not None, f"{kind} plays no shipped two-team {move} game preset"
    entry = registry.get(kind)
    first = build(kind, preset, seed=11, workdir=tmp_path / "a")
    train_phase(entry, first, preset, seed=21)
    path = atomic_torch_save(first.state_dict(), tmp_path / "learner.pt")
    resumed = build(kind, preset, seed=11, workdir=tmp_path / "b")  # as `resume=true` does
    resumed.load_state_dict(safe_torch_load(path))
    if hasattr(first, "start_episodes"):  # a checkpoint holds no unfinished rollout
        first.start_episodes()
    want = train_phase(entry, first, preset, seed=22)
    got = train_phase(entry, resumed, preset, seed=22)
    assert len(got.actions) == len(want.actions) > 0
    for step, (w, g) in enumerate(zip(want.actions, got.actions, strict=True)):
        assert w.keys() == g.keys(), step
        for agent in w:
            np.testing.assert_array_equal(w[agent], g[agent], err_msg=f"step {step} {agent}")
    _same_metrics(want.metrics, got.metrics)
    after_a, after_b = first.policy(), resumed.policy()
    vs = probe_step(after_a, preset, seed=4)
    assert_same_play(after_a, after_b, vs, seed=4)
    for (k, x), (_, y) in zip(_tensors(first.state_dict()), _tensors(resumed.state_dict()),
                              strict=True):
        assert torch.equal(x, y), k


def _tensors(state: Any, prefix: str = "") -> list[tuple[str, torch.Tensor]]:
    """Every tensor of a (nested) state dict with its path, in a stable order."""
    if isinstance(state, torch.Tensor):
        return [(prefix, state)]
    if isinstance(state, dict):
        return [t for k in sorted(state, key=str) for t in _tensors(state[k], f"{prefix}/{k}")]
    if isinstance(state, list | tuple):
        return [t for i, v in enumerate(state) for t in _tensors(v, f"{prefix}/{i}")]
    return []
