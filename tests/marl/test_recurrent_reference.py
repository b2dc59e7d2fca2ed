"""Recurrent MAPPO's hidden states against a per-(copy, agent) loop written from the rMAPPO
rules alone, on a game where one agent leaves mid-episode (:mod:`tests.marl.exits_game`):
each agent's GRU state starts at zero when its episode starts (a fresh reset, the copy's
episode ended at the previous step, or the agent's own episode ended), advances only on
the steps where the agent acts, and waits unchanged otherwise. The learner's stored
states (``buf.h_actor``, before the row's reset) and the log-probabilities it recorded must
be those of the loop, for 2 rollouts (the second one starting from carried states)."""

import pytest
import torch

from games import VectorGame
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from tests.marl.exits_game import Exits

H = 8


@torch.no_grad()
def test_hidden_states_and_logps_follow_a_per_copy_loop():
    cfg = MAPPOConfig(rollout_steps=10, epochs=1,
                      net=NetConfig(recurrent=True, rnn_hidden=H, hidden=(16,)))
    learner = MAPPO(Exits().spec, cfg, seed=0)
    vg = VectorGame(Exits, 4, seed=0, with_state=True)
    B, agents = 4, learner.agents
    h_ref = {(b, a): torch.zeros(H) for b in range(B) for a in agents}
    vs, prev, counts = vg.reset(), None, {"acted": 0, "idle": 0, "own_end": 0}
    for _ in range(2):
        rows = []
        while not learner.ready():
            actions = learner.act(vs)
            t = learner.buf.row - 1  # the row act just wrote
            nxt = vg.step(actions)
            learner.observe(nxt)
            rows.append((t, vs, prev))
            prev, vs = nxt, nxt
        buf = learner.buf
        for t, vs_t, before in rows:
            x = learner._inputs(vs_t)
            for g, grp in enumerate(learner.groups):
                actor = learner.actors[g]
                xg = learner._group_batch(x, g)
                z = actor.body(actor.encode(xg))  # [B * k, F], row b * k + j
                for b in range(B):
                    for j, i in enumerate(grp.cols):
                        a = agents[i]
                        torch.testing.assert_close(buf.h_actor[t, b, i], h_ref[(b, a)])
                        start = before is None or bool(
                            before.done[b] or before.terminated[a][b] or before.truncated[a][b])
                        counts["own_end"] += bool(before is not None and before.terminated[a][b]
                                                  and not before.done[b])
                        h = torch.zeros(H) if start else h_ref[(b, a)]
                        m = b * len(grp.cols) + j
                        new = actor.rnn.cell(z[m : m + 1], h[None])[0]
                        if not vs_t.acting[a][b]:
                            counts["idle"] += 1
                            h_ref[(b, a)] = h  # waits (after its reset)
                            continue
                        counts["acted"] += 1
                        logits = actor._out(actor.head(actor.rnn.norm(new))[None],
                                            {k: v[m : m + 1] for k, v in xg.items()})
                        logp = torch.log_softmax(logits, -1)[0, buf.action[t, b, i]]
                        torch.testing.assert_close(buf.logp[t, b, i], logp)
                        h_ref[(b, a)] = new
        learner.update()
    assert min(counts.values()) >= 3, counts


def _unroll_loop(core, z_LSF, h0_SH, start_LS, move_LS):
    """GRUCore.unroll written as the rMAPPO rule, row by row."""
    h, outs = h0_SH, []
    for t in range(z_LSF.shape[0]):
        h = h.masked_fill(start_LS[t][:, None], 0.0)
        new = core.cell(z_LSF[t], h)
        outs.append(new)
        h = torch.where(move_LS[t][:, None], new, h)
    return core.norm(torch.stack(outs))


@pytest.mark.parametrize("rows", ["prefix", "any"])
def test_unroll_equals_a_row_by_row_loop(rows):
    """prefix: each sequence moves on its first n rows (0 to L), resets only at the first
    row (simultaneous games, chunk padding); any: resets anywhere and rows skipped anywhere
    (turns), one sequence that never moves, one that always does. Outputs of every row and
    gradients."""
    from marl.recurrent import GRUCore

    gen = torch.Generator().manual_seed(0)
    core = GRUCore(5, H)
    L, S = 9, 12
    z = torch.randn(L, S, 5, generator=gen, requires_grad=True)
    h0 = torch.randn(S, H, generator=gen)
    if rows == "prefix":
        n = torch.randint(0, L + 1, (S,), generator=gen)
        n[:2] = torch.tensor([0, L])
        move = torch.arange(L)[:, None] < n
        start = torch.zeros(L, S, dtype=torch.bool)
        start[0] = torch.rand(S, generator=gen) < 0.5
    else:
        start = torch.rand(L, S, generator=gen) < 0.2
        move = torch.rand(L, S, generator=gen) < 0.6
        move[:, 0], move[:, 1], start[:, 1] = False, True, False
        assert start[1:].any()
    assert (~move).any() and start[0].any()
    w = torch.randn(L, S, H, generator=gen)
    res = []
    for unroll in (core.unroll, lambda *a: _unroll_loop(core, *a)):
        core.zero_grad()
        z.grad = None
        out = unroll(z, h0, start, move)
        (out * w).sum().backward()
        res.append((out.detach(), z.grad.clone(), [p.grad.clone() for p in core.parameters()]))
    (out, gz, gp), (ref, gz_ref, gp_ref) = res
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gz, gz_ref, rtol=1e-4, atol=1e-6)
    for a, b in zip(gp, gp_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
