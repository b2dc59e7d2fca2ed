"""(vmas41b) Scenarios that draw part of a layout once for all copies reset together
(``DRAWS_SHARED``) reset more than ``groups`` copies in ``groups`` groups: each group a
reset of all copies that keeps only that group's copies and puts every other copy back.

vmas41 reset each copy on its own (B-1 single resets: passage at 1,024 copies on a CPU,
~2.4 s against 2 ms for VMAS's own reset). Here: a grouped reset keeps every other copy
bit for bit (every per-copy tensor reachable from the scenario, and the step count), each
kept copy is exactly what VMAS's reset of all copies drew for it (seen by a spy on the real
reset), the groups' shared draws differ, and the same seed replays the same layouts.
"""

import pytest
import torch

import games
from games.vmas_reset import DRAWS_SHARED, REDRAWN_BOOKKEEPING, RESET_GROUPS, is_vmas_object

B = 80  # more than the groups used here: 8 groups of 10 copies (RESET_GROUPS: 32)
GROUPS = 8
FOOTBALL = {"spawn_in_formation": True, "randomise_formation_indices": True}


def _vg(name: str, seed: int = 0, num_envs: int = B):
    kwargs = FOOTBALL if name == "vmas/football" else {}
    vg = games.VectorGame(name, num_envs, seed=seed, tensors=True, **kwargs)
    vg.native.sim.groups = GROUPS
    return vg


def _state(sim) -> dict[str, torch.Tensor]:
    """Every per-copy tensor reachable from the scenario, by path (not through the lists a
    reset redraws: ball_passage's passages_to_place), and the step counts."""
    skip = REDRAWN_BOOKKEEPING.get(sim.where, frozenset())
    seen, out = set(), {"env.steps": sim.env.steps.clone()}

    def walk(obj, path):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, (list, tuple)):
            items = enumerate(obj)
        elif isinstance(obj, dict):
            items = obj.items()
        elif hasattr(obj, "__dict__") and is_vmas_object(obj):
            items = vars(obj).items()
        else:
            return
        for j, (key, value) in enumerate(items):
            if key in skip:
                continue
            name = key if isinstance(key, (str, int)) else f"{type(key).__name__}{j}"
            if isinstance(value, torch.Tensor):
                if value.dim() and value.shape[0] == sim.num_envs:
                    out[f"{path}.{name}"] = value.clone()
            else:
                walk(value, f"{path}.{name}")

    walk(sim.env.scenario, "sc")
    return out


def _spy(sim, monkeypatch) -> list[dict[str, torch.Tensor]]:
    """The state right after each of VMAS's resets of all copies (the real one runs)."""
    scenario, seen = sim.env.scenario, []
    real = scenario.env_reset_world_at

    def reset_world_at(env_index=None):
        real(env_index)
        if env_index is None:
            seen.append(_state(sim))

    monkeypatch.setattr(scenario, "env_reset_world_at", reset_world_at)
    return seen


def _step(vg, n=2):
    for _ in range(n):
        vg.step({a: torch.ones(vg.num_envs, dtype=torch.long)
                 if sp.discrete else torch.full((vg.num_envs, *sp.shape), 0.3)
                 for a, sp in vg.spec.action_spaces.items()})


@pytest.mark.parametrize("name", sorted(DRAWS_SHARED))
def test_a_grouped_reset_keeps_the_others_and_gives_each_group_its_reset_of_all(
        name, monkeypatch):
    """Fails before: the ended copies were reset one by one (no reset of all copies)."""
    vg = _vg(name)
    vg.reset()
    _step(vg)
    sim = vg.native.sim
    ended = torch.arange(3, B, 2)  # 39 copies: more than the groups
    keep = torch.ones(B, dtype=torch.bool)
    keep[ended] = False
    # the reference for the copies that go on: the same batch, its ended copies reset one
    # by one by VMAS (a joint's landmark is put between its ends again in every copy)
    twin = _vg(name)
    twin.reset()
    _step(twin)
    twin.native.sim.groups = 10**9
    twin.native.sim.reset_at(ended)
    alone = _state(twin.native.sim)
    before = _state(sim)
    seen = _spy(sim, monkeypatch)
    sim.reset_at(ended)
    assert not sim._one_by_one
    assert len(seen) == GROUPS
    after = _state(sim)
    assert set(after) == set(before)
    for path, value in after.items():
        # the copies that did not end: bit for bit as VMAS's own resets leave them (or, where
        # VMAS's single reset rebinds a tensor, ball_trajectory's pos_shaping: as before)
        assert torch.equal(value[keep], alone.get(path, before[path])[keep]), path
        if path == "env.steps":
            assert (value[~keep] == 0).all()
            continue
        for k in range(GROUPS):  # group k: as the k-th reset of all copies drew it
            group = ended[k::GROUPS]
            assert torch.equal(value[group], seen[k][path][group]), (path, k)


@pytest.mark.parametrize("name", sorted(DRAWS_SHARED))
def test_a_grouped_reset_of_all_copies_is_each_groups_reset_of_all(name, monkeypatch):
    vg = _vg(name)
    seen = _spy(vg.native.sim, monkeypatch)
    vg.reset()
    assert len(seen) == GROUPS
    after = _state(vg.native.sim)
    for path, value in after.items():
        if path != "env.steps":
            for k in range(GROUPS):
                assert torch.equal(value[k::GROUPS], seen[k][path][k::GROUPS]), (path, k)
    assert (after["env.steps"] == 0).all()


def _gap_x(sim) -> torch.Tensor:
    gap = next(lm for lm in sim.env.world.landmarks if lm.name.startswith("passage")
               and not lm.collide)
    return gap.state.pos[:, 0].clone()


def test_passage_groups_draw_their_own_gaps_and_replay_with_the_seed():
    a, b, c = (_vg("vmas/passage", seed=s) for s in (3, 3, 4))
    obs = [vg.reset().obs for vg in (a, b, c)]
    for agent in a.spec.agent_ids:
        assert torch.equal(obs[0][agent], obs[1][agent])
        assert not torch.equal(obs[0][agent], obs[2][agent])
    gaps = _gap_x(a.native.sim)
    assert len(set(gaps.tolist())) > 2  # 8 groups' gaps: several of the block positions
    for vg in (a, b):
        _step(vg)
        vg.native.sim.reset_at(torch.arange(0, B, 3))
    assert torch.equal(_gap_x(a.native.sim), _gap_x(b.native.sim))


def test_up_to_groups_copies_are_reset_one_by_one(monkeypatch):
    """At most ``groups`` copies (an evaluation's batch): each its own draw."""
    vg = _vg("vmas/passage", num_envs=GROUPS)
    seen = _spy(vg.native.sim, monkeypatch)
    vg.reset()
    assert len(seen) == 1  # VMAS's reset of all, then copies 1..B-1 on their own
    vg = _vg("vmas/passage")
    vg.reset()
    seen = _spy(vg.native.sim, monkeypatch)
    vg.native.sim.reset_at(torch.arange(GROUPS))
    assert seen == []
    assert RESET_GROUPS >= 32  # an evaluation's 32 episodes: 32 draws


def test_football_is_still_reset_one_by_one(monkeypatch):
    """football's scripted players keep state a put-back would miss (RESET_ONE_BY_ONE)."""
    vg = _vg("vmas/football")
    assert vg.native.sim.each_copy
    vg.reset()
    seen = _spy(vg.native.sim, monkeypatch)
    vg.native.sim.reset_at(torch.arange(0, B, 2))
    assert seen == []
