"""MADDPG's critic and actor losses against a slow reference on a hand-made trajectory
(:mod:`tests.marl.exits_game`: an agent leaving mid-episode, episodes terminated and
truncated, legal masks that change every step).

The reference walks the recorded steps with plain loops: agent ``i``'s critic regresses on
``y_i = r_i + gamma * (1 - terminated_i) * Q'_i(s', mu'_1(o'_1), ..., mu'_A(o'_A))``, where
``terminated_i`` is agent ``i``'s own end flag (a truncated agent bootstraps from its final
observation, also one truncated alone while the others play on, ``Exits(cut=True)``: its own
target action comes from its last observation, while for the other critics it is gone, with
the zero observation it has at the later steps), ``mu'_j`` is agent ``j``'s target actor
taking its best *legal* action, and
only steps where agent ``i`` is in the episode are trained (a dead agent has no transition;
one waiting a step, ``Exits(wait=True)``, keeps its transition and reward). With
continuous actions (boxes of different widths) the critics see ``tanh`` actions in
``[-1, 1]`` and actor ``i`` ascends ``Q_i`` with its own replayed action replaced by
``tanh(mu_i(o_i))``. ``state_input="obs"`` (``cut_obs``): ``s`` is every agent's observation
concatenated; agent ``i``'s own critic reads its last observation in its slot of ``s'`` where
it was truncated alone (the others read the zeros it has from then on)."""

import copy

import numpy as np
import pytest
import torch

from games import VectorGame
from marl.maddpg import MADDPG, MADDPGConfig
from tests.marl.exits_game import Exits, left_before, record

GAMMA = 0.9


def _mlp(net, group: int, x: np.ndarray) -> np.ndarray:
    """Group ``group``'s MLP of a GroupedMLP on one input vector, layer by layer."""
    for k, layer in enumerate(net.layers):
        w, b = (t[group].detach().double().numpy() for t in (layer.weight, layer.bias))
        x = x @ w + b
        if k < len(net.layers) - 1:
            x = np.maximum(x, 0.0)
    return x


def _unit(learner, i: int, action) -> np.ndarray:
    """The action the critics see: a one-hot, or the box action mapped into [-1, 1]."""
    D = learner.head.dims_A.max().item()
    if learner.head.discrete:
        return np.eye(D)[int(action)]
    box = np.asarray(action, float)
    low = learner.head.low_AD[i, : box.size].double().numpy()
    high = learner.head.high_AD[i, : box.size].double().numpy()
    out = np.zeros(D)
    out[: box.size] = np.clip((box - low) / (high - low) * 2 - 1, -1, 1)
    return out


def _mu(learner, net, i: int, obs, legal=None, gumbel=None) -> np.ndarray:
    """Agent ``i``'s deterministic action under actor ``net``: best legal one-hot or tanh;
    ``gumbel``: Gumbel noise added to the logits (a sample of the softmax policy)."""
    out = _mlp(net, learner.groups[i], np.asarray(obs, float))
    if learner.head.discrete:
        out = out if gumbel is None else out + gumbel
        return np.eye(out.size)[int(np.argmax(np.where(legal, out, -np.inf)))]
    width = int(learner.head.dims_A[i])
    return np.where(np.arange(out.size) < width, np.tanh(out), 0.0)


def _gstate(learner, step, c, final=False, own=None):
    """Copy ``c``'s global input: the state, or (``state_input="obs"``) every agent's
    observation concatenated, ``own``'s slot holding its last observation (``final_obs``)."""
    if learner.stack.use_state:
        return np.asarray((step.final_state if final else step.state)[c], float)
    src = step.final_obs if final else step.obs
    return np.concatenate([np.asarray((step.final_obs if a == own else src)[a][c], float)
                           for a in learner.spec.agent_ids])


def _reference_loss(learner, rec, noise=None):
    """Mean over (step, copy, acting agent) of ``(Q_i(s, u) - y_i)^2``, by loops.
    ``noise``: ``([rows, A, D], [1, A, D])`` Gumbel noise of the sampled target actions
    (``target_action="gumbel"``), per stored row, and of an agent's gone placeholder."""
    agents, g = learner.agents, learner.groups
    D = int(learner.head.dims_A.max())
    errs, kinds = [], {"term": 0, "trunc": 0, "left": 0, "dead": 0, "wait": 0, "cut": 0}
    for k, ((vs, actions, nxt), gone) in enumerate(zip(rec, left_before(rec, agents),
                                                       strict=True)):
        for c in range(len(nxt.done)):
            r = k * len(nxt.done) + c  # the stored row
            done = bool(nxt.done[c])
            state = _gstate(learner, vs, c)
            joint = np.concatenate([_unit(learner, i, actions[a][c]) for i, a in enumerate(agents)])

            def next_action(j, a, own, nxt=nxt, c=c, r=r, done=done):  # target actor j's best
                # legal action after the step
                legal = (nxt.legal[a][c] if learner.head.discrete and not done and nxt.acting[a][c]
                         else np.ones(D, bool))  # placeholder rows: any action
                alone = not done and (nxt.terminated[a][c] or nxt.truncated[a][c])
                if alone:  # the game's last observation of it (t / LIMIT > 0: not zeros)
                    assert nxt.final_obs[a][c][0] > 0
                placeholder = alone and not own and not done
                obs = (nxt.final_obs[a][c] if done or (alone and own)
                       else np.zeros_like(nxt.obs[a][c]) if placeholder else nxt.obs[a][c])
                gumbel = None if noise is None else noise[int(placeholder)][
                    0 if placeholder else r, j]
                return _mu(learner, learner.target_actor, j, obs, legal, gumbel)

            for i, a in enumerate(agents):
                if (c, a) in gone:
                    kinds["dead"] += 1
                    continue
                kinds["wait"] += not vs.acting[a][c]
                ident = np.eye(len(agents))[i]
                q = _mlp(learner.critic, g[i], np.concatenate([state, joint, ident]))[0]
                y = float(nxt.rewards[a][c])
                if nxt.terminated[a][c]:
                    kinds["left" if not done else "term"] += 1
                else:
                    kinds["trunc"] += bool(nxt.truncated[a][c])
                    kinds["cut"] += bool(nxt.truncated[a][c]) and not done
                    next_joint = [next_action(j, b, j == i) for j, b in enumerate(agents)]
                    alone = not done and bool(nxt.truncated[a][c])
                    st = _gstate(learner, nxt, c, final=done, own=a if alone else None)
                    x = np.concatenate([st, *next_joint, ident])
                    y += GAMMA * _mlp(learner.target_critic, g[i], x)[0]
                errs.append((q - y) ** 2)
    return float(np.mean(errs)), kinds


def _reference_actor_loss(learner, actor, rec, noise=None):
    """Mean over (step, copy, agent in the episode) of ``-Q_i(s, u_-i, tanh(mu_i(o_i)))`` with the
    critic as it is now (after the update's critic step) and the actor from before it;
    discrete: the straight-through Gumbel sample's forward value, the one-hot of
    ``argmax(logits + noise)`` over the legal actions (``noise [rows, A, D]``)."""
    agents, qs = learner.agents, []
    D = int(learner.head.dims_A.max())
    for k, ((vs, actions, _), gone) in enumerate(zip(rec, left_before(rec, agents),
                                                     strict=True)):
        for c in range(len(vs.done)):
            units = [_unit(learner, i, actions[a][c]) for i, a in enumerate(agents)]
            for i, a in enumerate(agents):
                if (c, a) in gone:
                    continue
                legal = vs.legal[a][c] if learner.head.discrete and vs.acting[a][c] else (
                    np.ones(D, bool))  # a waiting seat's row: any action
                gumbel = None if noise is None else noise[k * len(vs.done) + c, i]
                own = _mu(learner, actor, i, vs.obs[a][c], legal, gumbel)
                joint = [*units[:i], own, *units[i + 1 :]]
                x = np.concatenate([_gstate(learner, vs, c), *joint, np.eye(len(agents))[i]])
                qs.append(_mlp(learner.critic, learner.groups[i], x)[0])
    return -float(np.mean(qs))


CASES = [(share, cont, wait) for wait in (False, True) for share, cont in
         ((False, False), (True, False), (False, True), (True, True))]
CASES += [(False, False, "cut"), (True, True, "cut")]  # an agent truncated alone
CASES += [(False, False, "cut_obs"), (True, True, "cut_obs")]  # ... state_input="obs"


WAITS = {False: "acting", True: "waiting", "cut": "cut_alone", "cut_obs": "cut_alone_obs"}


@pytest.mark.parametrize(("share", "cont", "wait"), CASES, ids=[
    f"{WAITS[w]}-{'box_' if c else ''}{'shared' if s else 'per_agent'}" for s, c, w in CASES])
def test_critic_and_actor_losses_match_a_slow_reference(share, cont, wait):
    obs_state = wait == "cut_obs"
    cut, wait = wait in ("cut", "cut_obs"), wait is True
    vg = VectorGame(lambda: Exits(continuous=cont, wait=wait, cut=cut), 4, seed=0,
                    with_state=True)
    cfg = MADDPGConfig(gamma=GAMMA, batch_size=8, learning_starts=1, buffer_size=1000,
                       share_parameters=share, hidden=(16,), seed=1, exploration_noise=0.4,
                       actor_reg=0.0, state_input="obs" if obs_state else "auto")
    learner = MADDPG(vg.spec, cfg)
    with torch.no_grad():  # targets unlike the online nets, with values far from 0
        for net in (learner.target_actor, learner.target_critic):
            for p in net.parameters():
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
        learner.target_critic.layers[-1].bias.add_(3.0)
    rec = record(learner, vg)
    ref, kinds = _reference_loss(learner, rec)
    assert kinds.pop("wait") >= 3 if wait else kinds.pop("wait") == 0, kinds
    assert kinds.pop("cut") >= 3 if cut else kinds.pop("cut") == 0, kinds
    assert min(kinds.values()) >= 3, kinds  # every kind of ending, and dead agents, occur
    whole = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    learner.buffer.sample = lambda n, gen: whole  # the update sees every transition once
    actor = copy.deepcopy(learner.actor)
    gen = torch.Generator().set_state(learner.update_gen.get_state())
    metrics = learner.update()
    assert metrics["losses/critic_loss"] == pytest.approx(ref, rel=1e-5)
    noise = None
    if not cont:  # the actor step's Gumbel draw, the update's first (argmax targets draw none)
        u = torch.rand(whole["action"].shape, generator=gen).clamp_(1e-10, 1.0 - 1e-7)
        noise = (-torch.log(-torch.log(u))).double().numpy()
    ref_actor = _reference_actor_loss(learner, actor, rec, noise)
    assert metrics["losses/actor_loss"] == pytest.approx(ref_actor, rel=1e-5)


def test_sampled_target_actions_match_a_slow_reference():
    """``target_action="gumbel"``: each target actor's next action is a
    Gumbel-max sample of its softmax policy over the legal actions, drawn per stored row
    (and once for an agent's gone placeholder), not its argmax."""
    vg = VectorGame(lambda: Exits(cut=True), 4, seed=0, with_state=True)
    cfg = MADDPGConfig(gamma=GAMMA, batch_size=8, learning_starts=1, buffer_size=1000,
                       hidden=(16,), seed=1, actor_reg=0.0, target_action="gumbel",
                       gumbel_temperature=0.5)
    learner = MADDPG(vg.spec, cfg)
    with torch.no_grad():
        learner.target_critic.layers[-1].bias.add_(3.0)
        for p in learner.target_actor.parameters():  # logits near the Gumbel noise's scale
            p.mul_(40.0)
    rec = record(learner, vg)
    whole = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    learner.buffer.sample = lambda n, gen: whole
    gen = torch.Generator().set_state(learner.update_gen.get_state())
    noise = []
    for shape in ((len(learner.buffer), 2, 3), (1, 2, 3)):  # the update's first two draws
        u = torch.rand(shape, generator=gen).clamp_(1e-10, 1.0 - 1e-7)
        noise.append((-torch.log(-torch.log(u))).double().numpy())
    ref, kinds = _reference_loss(learner, rec, noise)
    argmax_ref, _ = _reference_loss(learner, rec)
    assert kinds["cut"] >= 3
    assert abs(ref - argmax_ref) > 1e-3 * ref  # the samples are not the argmaxes
    assert learner.update()["losses/critic_loss"] == pytest.approx(ref, rel=1e-5)


def test_a_dead_agent_gets_no_actor_gradient():
    """Rows where an agent did not act (it left the game) do not train its actor."""
    vg = VectorGame(Exits, 4, seed=0, with_state=True)
    learner = MADDPG(vg.spec, MADDPGConfig(batch_size=8, learning_starts=1, hidden=(16,)))
    record(learner, vg)
    data = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    dead = data["state"][:, 1] == 0.0  # agent_0 had left the game
    assert dead.sum() >= 3
    learner.buffer.sample = lambda n, gen: {k: v[dead] for k, v in data.items()}
    learner.cfg.actor_reg = 0.0
    before = [p.detach().clone() for p in learner.actor.parameters()]
    learner.update()
    w0 = [p[0] for p in learner.actor.parameters()]  # group 0: agent_0's actor
    for b, p in zip(before, w0, strict=True):
        assert torch.equal(b[0], p.detach()), "agent_0's actor moved on rows where it was dead"


def test_targets_move_by_polyak_averaging_after_every_update():
    vg = VectorGame(Exits, 4, seed=0, with_state=True)
    learner = MADDPG(vg.spec, MADDPGConfig(batch_size=8, learning_starts=1, hidden=(16,),
                                           tau=0.25))
    record(learner, vg, steps=4)
    pairs = [(learner.actor, learner.target_actor), (learner.critic, learner.target_critic)]
    for _ in range(3):
        before = [[p.detach().clone() for p in t.parameters()] for _, t in pairs]
        learner.update()
        for (online, target), old in zip(pairs, before, strict=True):
            for p, tp, o in zip(online.parameters(), target.parameters(), old, strict=True):
                assert torch.allclose(tp, 0.75 * o + 0.25 * p.detach(), atol=1e-7)


def test_replay_checkpoint_from_before_per_agent_ends_loads():
    """A replay saved before ``acting`` / ``terminated`` / ``left`` existed: every agent
    acted and none left alone (the old semantics), and training goes on."""
    vg = VectorGame(Exits, 4, seed=0, with_state=True)
    learner = MADDPG(vg.spec, MADDPGConfig(batch_size=8, learning_starts=1, hidden=(16,)))
    record(learner, vg, steps=5)
    state = learner.state_dict()
    for key in ("acting", "terminated", "left"):
        del state["buffer"]["data"][key]
    fresh = MADDPG(vg.spec, MADDPGConfig(batch_size=8, learning_starts=1, hidden=(16,)))
    fresh.load_state_dict(state)
    n = len(fresh.buffer)
    assert n == 20 and fresh.buffer.data["acting"][:n].all()
    assert not fresh.buffer.data["terminated"][:n].any()
    assert not fresh.buffer.data["left"][:n].any()
    assert np.isfinite(fresh.update()["losses/critic_loss"])
