"""VectorGame's trajectories are bit-identical to those of the code before step41's cuts to
its per-copy Python (games/vector.py, games/pettingzoo.py): every field of every VecStep of
a seeded rollout, hashed, against digests recorded with that code (commit 7648902).

The games cover what the hot paths branch on: a Parallel MPE game with global states and
entity graphs (the main job's), one whose episodes end at max_cycles (truncation,
``final_obs``/``final_legal``), PettingZoo's turn-based tictactoe (AEC, action masks,
text views), hanabi (an OpenSpiel game through shimmy, AEC), rps (a Parallel game with
dict observations) and a native OpenSpiel game.

A digest that moves means a trajectory moved: find which field with ``_fields(...)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
import pytest

import games

CASES = {
    # name: (game, kwargs, copies, steps, VectorGame options)
    "adversary": ("pettingzoo/mpe2.simple_adversary_v3", {"max_cycles": 7}, 3, 30,
                  {"with_state": True, "with_graphs": True}),
    "spread": ("pettingzoo/mpe2.simple_spread_v3", {"max_cycles": 5}, 2, 17,
               {"with_state": True}),
    "tictactoe": ("pettingzoo/pettingzoo.classic.tictactoe_v3", {}, 3, 40, {"with_text": True}),
    "hanabi": ("pettingzoo/pettingzoo.classic.hanabi_v5",
               {"players": 2, "hand_size": 2, "max_information_tokens": 3, "max_life_tokens": 1,
                "colors": 2, "ranks": 2}, 2, 30, {}),
    "rps": ("pettingzoo/pettingzoo.classic.rps_v2", {"max_cycles": 4}, 2, 11, {}),
    "kuhn": ("openspiel/kuhn_poker", {}, 3, 20, {"with_state": True, "with_text": True}),
}

# sha256 of each rollout's fields, recorded with the code of commit 7648902
DIGESTS = {
    "adversary": "39a4155597369e858c8ef64b75631da5a54d454740c07b5c92d797b42c7183aa",
    "spread": "51e3a002167faa7a277321219e23116a8441ff3584158b57368785c90cb7340c",
    "tictactoe": "6228caef42bbf04e861ddca93c8553ec4f6bdb08c287cf12512dce567d6e9569",
    "hanabi": "d4de1387afcf7de0e2561fe271cd2c940b23f283df8915344c57c4fc2c4c2dc0",
    "rps": "be5a7a44d4002c287c7b63b8bb8bd7bf2b559d8d9a97748d6533e5e6b3d43752",
    "kuhn": "f42075d880c150bff983cba2f78a51f2f4d4cfc6c0fbe695355903d9a7957420",
}


def _parts(value: object) -> Iterator[bytes]:
    """Bytes of a VecStep field, dtypes and shapes included; dicts in key order."""
    if isinstance(value, np.ndarray):
        yield f"{value.dtype}{value.shape}".encode()
        yield np.ascontiguousarray(value).tobytes()
    elif isinstance(value, dict):
        for k in sorted(value, key=repr):
            yield repr(k).encode()
            yield from _parts(value[k])
    elif isinstance(value, list | tuple):
        yield f"{type(value).__name__}{len(value)}".encode()
        for v in value:
            yield from _parts(v)
    else:
        yield f"{type(value).__name__}:{value!r}".encode()


def _fields(vs: games.VecStep) -> dict[str, object]:
    return {f: getattr(vs, f) for f in vs.__dataclass_fields__}


def _rollout(case: str) -> str:
    name, kwargs, copies, steps, options = CASES[case]
    vg = games.VectorGame(name, copies, seed=3, **options, **kwargs)
    rng = np.random.default_rng(11)
    kept = [vg.reset()]
    try:
        for _ in range(steps):
            vs, actions = kept[-1], {}
            for a in vg.spec.agent_ids:
                legal = vs.legal[a]  # a random legal action where the agent acts, else 0
                actions[a] = np.where(legal.any(1), (rng.random(legal.shape) * legal).argmax(1),
                                      0)
            kept.append(vg.step(actions))
    finally:
        vg.close()
    # hashed after the rollout: a VecStep's arrays must not change under a later step
    # (learners keep them), so buffers reused from step to step would move the digest
    digest = hashlib.sha256()
    for vs in kept:
        for f, value in _fields(vs).items():
            digest.update(f.encode())
            for part in _parts(value):
                digest.update(part)
    return digest.hexdigest()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_seeded_rollout_gives_the_same_vecsteps_as_before(case):
    assert _rollout(case) == DIGESTS[case]


def test_the_rollouts_cross_episode_ends():
    """The pins cover auto-resets, truncation at max_cycles and terminal states."""
    for case in ("adversary", "spread", "tictactoe", "rps", "kuhn"):
        name, kwargs, copies, steps, options = CASES[case]
        vg = games.VectorGame(name, copies, seed=3, **options, **kwargs)
        rng = np.random.default_rng(11)
        vs, ended = vg.reset(), 0
        for _ in range(steps):
            vs = vg.step({a: np.where(vs.legal[a].any(1),
                                      (rng.random(vs.legal[a].shape) * vs.legal[a]).argmax(1), 0)
                          for a in vg.spec.agent_ids})
            ended += int(vs.done.sum())
        vg.close()
        assert ended >= 2, case
