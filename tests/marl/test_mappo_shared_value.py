"""MAPPO's shared centralized value (``NetConfig(value="shared")``, BenchMARL's critic):
one value per copy and step, the same math as the critic run per seat without a seat
one-hot, evaluated once per distinct row in acting and in the update; and FastTanh,
the CPU tanh of the MLPs."""

import pytest
import torch
from torch import nn

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from marl.mappo_update import _minibatch_source
from marl.networks import FastTanh
from marl.train import train, without_clock
from tests.marl.test_mappo import gather_reference

SPREAD = "pettingzoo/mpe2.simple_spread_v3"
SHARED = NetConfig(value="shared")


def _spread(learner, B=4, seed=0, N=3):
    return games.VectorGame(SPREAD, B, seed=seed, N=N, max_cycles=25,
                            **learner.vector_game_kwargs)


def _fill(learner, vg):
    """Act until the rollout buffer is full (no update)."""
    vs = vg.reset()
    while not learner.ready():
        vs = vg.step(learner.act(vs))
        learner.observe(vs)


@pytest.mark.parametrize("game,kw,critic", [
    (SPREAD, {"N": 3, "max_cycles": 25}, "state"),
    (SPREAD, {"N": 3, "max_cycles": 25}, "concat"),
    ("vmas/navigation", {"n_agents": 3, "max_steps": 20}, "auto"),  # tensor VecSteps
])
def test_acting_values_are_one_per_copy_and_the_critic_of_the_seat_input(game, kw, critic):
    spec = games.make(game, **kw).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=5, epochs=1,
                                      net=NetConfig(critic=critic, value="shared")), seed=0)
    base = 54  # no seat one-hot: the state, or 3 × 18 observations
    assert learner.critic_dim == base
    vg = games.VectorGame(game, 4, seed=0, **kw, **learner.vector_game_kwargs)
    train(learner, vg, frames=4 * 5 * 2, progress=False)  # value_rms has moved
    assert learner.value_rms.count > 1
    _fill(learner, vg)
    buf, T = learner.buf, learner.buf.row
    v_TBA = buf.value[1:T]
    assert torch.equal(v_TBA, v_TBA[..., :1].expand_as(v_TBA))  # every seat of a copy
    # reference: the critic run per seat on that seat's stored input (no one-hot)
    with torch.no_grad():
        ref = learner.critics[0]({"critic": buf.critic[1:T].reshape(-1, base)})
    ref = learner.value_rms.denormalize(ref).reshape(v_TBA.shape)
    torch.testing.assert_close(v_TBA, ref, rtol=1e-6, atol=1e-6)


def _rows_in_update(net, epochs=2):
    """Critic rows evaluated by one update, and the samples it trained on."""
    spec = games.make(SPREAD, N=3, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=6, epochs=epochs, minibatches=3, net=net),
                    seed=0)
    _fill(learner, _spread(learner))
    rows = []
    hook = learner.critics[0].register_forward_hook(lambda m, i, o: rows.append(len(o)))
    metrics = learner.update()
    hook.remove()
    return sum(rows), metrics["charts/samples"]


def test_update_evaluates_each_copy_step_once_not_once_per_seat():
    rows, samples = _rows_in_update(SHARED)  # T*B per epoch
    seat_rows, seat_samples = _rows_in_update(NetConfig())  # T*B*A per epoch
    assert samples == seat_samples and samples % 3 == 0 and samples > 0
    assert seat_rows == 2 * samples
    assert rows == 2 * samples // 3


def test_minibatch_values_are_the_critic_of_each_samples_own_input():
    """Each minibatch sample's value is the critic on its own stored input, also where a
    copy has only some seats' steps and where a copy's carried row-0 inputs differ."""
    spec = games.make(SPREAD, N=3, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=6, net=SHARED), seed=0)
    _fill(learner, _spread(learner))
    buf = learner.buf
    T, B, A = buf.row, *buf.action.shape[1:]
    steps = buf.acting[:T].clone()
    steps[2, :, 0] = False  # rows with some seats' steps only
    steps[0, :2] = True  # carried steps in copies 0 and 1...
    buf.critic[0, 0] = torch.randn(A, buf.critic.shape[-1])  # ...copy 0's differ per seat
    buf.critic[0, 1] = torch.randn(buf.critic.shape[-1])  # copy 1's are one input
    sizes, forward = _minibatch_source(learner, steps)
    # rows: copy-steps with a step, copy 0's carried row split into 3 (one per seat)
    assert sizes == [int(steps[1:].any(-1).sum()) + 1 + 3]
    logits, values, at = forward(0, torch.randperm(sizes[0], generator=torch.Generator()
                                                   .manual_seed(0)))
    tba = torch.stack((at // (B * A), at // A % B, at % A), 1)
    assert sorted(map(tuple, tba.tolist())) == sorted(map(tuple, steps.nonzero().tolist()))
    x = gather_reference(learner, 0, *tba.T)
    torch.testing.assert_close(logits, learner.actors[0](x), rtol=0, atol=1e-6)
    torch.testing.assert_close(values, learner.critics[0]({"critic": x["critic"]}),
                               rtol=0, atol=1e-6)


def test_role_groups_each_share_their_own_value():
    """simple_adversary with one network per role: one value per copy and group."""
    game = "pettingzoo/mpe2.simple_adversary_v3"
    spec = games.make(game, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=5, epochs=1,
                                      net=NetConfig(share="role", value="shared")), seed=0)
    vg = games.VectorGame(game, 4, seed=0, max_cycles=25, **learner.vector_game_kwargs)
    _fill(learner, vg)
    v = learner.buf.value[1:learner.buf.row]  # seats: adversary_0 | agent_0, agent_1
    assert torch.equal(v[..., 1], v[..., 2]) and not torch.equal(v[..., 0], v[..., 1])
    rows = []
    for critic in learner.critics:
        critic.register_forward_hook(lambda m, i, o: rows.append(len(o)))
    samples = learner.update()["charts/samples"]
    assert sum(rows) == samples // 3 * 2  # adversary rows + agent rows, once per copy-step


@pytest.mark.parametrize("net,match", [
    (dict(critic="local"), "value='shared' needs critic='state', 'concat' or 'auto', not "
                           "critic='local'; use value='seat'"),
    (dict(critic="gnn", encoder="gnn"), "not critic='gnn'; use value='seat'"),
    (dict(recurrent=True), "value='shared' is feed-forward only, not recurrent=True"),
    (dict(value="joint"), r"value='joint' unknown; choose one of \['seat', 'shared'\]"),
])
def test_shared_value_refuses_other_critics_in_one_line(net, match):
    with pytest.raises(ValueError, match=match) as err:
        NetConfig(**{"value": "shared", **net})
    assert "\n" not in str(err.value)


def test_shared_value_checkpoint_resumes_identically(tmp_path):
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    cfg = MAPPOConfig(rollout_steps=25, epochs=2, net=SHARED)
    a = MAPPO(spec, cfg, seed=0)
    train(a, _spread(a, seed=0, N=2), frames=4 * 25 * 2, progress=False)
    a.save(tmp_path / "learner.pt")
    vg_a = _spread(a, seed=7, N=2)
    out_a = train(a, vg_a, frames=4 * 25, progress=False).metrics
    b = MAPPO(spec, cfg, seed=123)
    b.load(tmp_path / "learner.pt")
    vg_b = _spread(b, seed=7, N=2)
    out_b = train(b, vg_b, frames=4 * 25, progress=False).metrics
    # charts/frames_per_second: wall time, the one metric a resume does not repeat
    assert without_clock(out_a) == without_clock(out_b)
    vs = vg_a.reset()
    assert all((a.policy().act(s, vs, greedy=True) == b.policy().act(s, vs, greedy=True)).all()
               for s in spec.agent_ids)


def test_policy_files_without_the_new_net_fields_still_load(tmp_path):
    """A policy saved before ``value`` / ``fast_tanh`` existed loads and acts the same."""
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=5, epochs=1), seed=0)
    pol = learner.policy()
    path = pol.save(tmp_path / "p.pt")
    blob = torch.load(path, weights_only=True)
    for key in ("value", "fast_tanh"):
        blob["payload"]["net"].pop(key)
    torch.save(blob, path)
    old = load_policy(path)
    vs = _spread(learner, N=2).reset()
    for s in spec.agent_ids:
        torch.testing.assert_close(torch.as_tensor(old.action_probs(s, vs)),
                                   torch.as_tensor(pol.action_probs(s, vs)))


# ------------------------------------------------------------------ FastTanh
def test_fast_tanh_matches_torch_tanh_in_value_and_gradient():
    x = torch.cat([torch.linspace(-40, 40, 400_001), torch.logspace(-40, 2, 4001),
                   -torch.logspace(-40, 2, 4001), torch.tensor([0.0, 1e30, -1e30])])
    ref = torch.tanh(x)
    xg = x.clone().requires_grad_()
    y = FastTanh()(xg)
    assert (y - ref).abs().max() < 2.5e-7
    assert torch.equal(y[-2:], torch.tensor([1.0, -1.0]))  # saturates exactly
    (y * torch.linspace(-1, 1, len(x))).sum().backward()
    xr = x.clone().requires_grad_()
    (torch.tanh(xr) * torch.linspace(-1, 1, len(x))).sum().backward()
    assert (xg.grad - xr.grad).abs().max() < 5e-7
    special = FastTanh()(torch.tensor([float("inf"), -float("inf"), float("nan")]))
    assert special[:2].tolist() == [1.0, -1.0] and special[2].isnan()
    with torch.no_grad():  # the no-grad path computes the same
        assert torch.equal(FastTanh()(x), y.detach())
    d = FastTanh()(torch.linspace(-3, 3, 50, dtype=torch.float64))
    assert (d - torch.tanh(torch.linspace(-3, 3, 50, dtype=torch.float64))).abs().max() < 1e-15


def test_fast_tanh_keeps_state_dicts_and_is_off_with_fast_tanh_false():
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    fast = MAPPO(spec, MAPPOConfig(net=NetConfig(fast_tanh=True)), seed=0)
    plain = MAPPO(spec, MAPPOConfig(net=NetConfig(fast_tanh=False)), seed=0)
    assert any(isinstance(m, FastTanh) for m in fast.actors.modules())
    assert not any(isinstance(m, FastTanh) for m in plain.actors.modules())
    assert any(isinstance(m, nn.Tanh) for m in plain.critics.modules())
    sd_f, sd_p = fast.state_dict(), plain.state_dict()
    for part in ("actors", "critics"):
        assert list(sd_f[part]) == list(sd_p[part])
        assert all(torch.equal(sd_f[part][k], sd_p[part][k]) for k in sd_f[part])
    plain.load_state_dict(sd_f)  # and a checkpoint of one loads into the other


def test_fast_tanh_reaches_the_gnn_encoders():
    """``fast_tanh`` switches the GNN encoders' tanh too (input layer and residuals): same
    state dicts, outputs within FastTanh's rounding of torch.tanh's."""
    spec = games.make(SPREAD, N=2, max_cycles=25).spec
    net = {"encoder": "gnn", "critic": "gnn", "gnn_hidden": 8}
    fast = MAPPO(spec, MAPPOConfig(net=NetConfig(**net)), seed=0)
    plain = MAPPO(spec, MAPPOConfig(net=NetConfig(fast_tanh=False, **net)), seed=0)
    for learner, kind in ((fast, FastTanh), (plain, nn.Tanh)):
        for enc in (learner.actors[0].graph, learner.critics[0].graph):
            acts = [m for m in enc.modules() if isinstance(m, (nn.Tanh, FastTanh))]
            assert len(acts) == 2 and all(isinstance(m, kind) for m in acts)
    plain.load_state_dict(fast.state_dict())
    vs = _spread(fast, N=2).reset()
    for s in spec.agent_ids:
        torch.testing.assert_close(torch.as_tensor(fast.policy().action_probs(s, vs)),
                                   torch.as_tensor(plain.policy().action_probs(s, vs)),
                                   rtol=0, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_fast_tanh_is_torch_tanh_on_cuda():
    x = torch.randn(1000, device="cuda") * 5
    assert torch.equal(FastTanh()(x), torch.tanh(x))


