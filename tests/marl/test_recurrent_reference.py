"""Recurrent MAPPO's hidden states against a per-(copy, agent) loop written from the rMAPPO
rules alone, on a game where one agent leaves mid-episode (:mod:`tests.marl.exits_game`):
each agent's GRU state starts at zero when its episode starts (a fresh reset, the copy's
episode ended at the previous step, or the agent's own episode ended), advances only on
the steps where the agent acts, and waits unchanged otherwise. The learner's stored
states (``buf.h_actor``, before the row's reset) and the log-probabilities it recorded must
be those of the loop, for 2 rollouts (the second one starting from carried states)."""

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
