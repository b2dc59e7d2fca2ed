"""MAPPO options that reproduce BenchMARL's (TorchRL ``ClipPPOLoss``) MAPPO: separate
gradient clips for actor and critic (``optim``), Adam's epsilon, truncation as termination
(``truncation``), nn.Linear's own init (``net.init``) and a shared actor without the seat
one-hot (``net.seat_id``). Defaults are unchanged; each test fails if its option is
ignored."""

import pytest
import torch
from torch import nn

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from marl.networks import mlp

BALANCE = {"n_agents": 3, "max_steps": 20}


def _updated(B=2, **kw):
    """A learner on vmas/balance after one update of a full rollout (seed 0 throughout)."""
    net = kw.pop("net", NetConfig(value="shared"))
    spec = games.make("vmas/balance", **BALANCE).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=4, epochs=2, minibatches=2, net=net, **kw),
                    seed=0)
    vg = games.VectorGame("vmas/balance", B, seed=0, tensors=True, **BALANCE,
                          **learner.vector_game_kwargs)
    vs = vg.reset()
    while not learner.ready():
        vs = vg.step(learner.act(vs))
        learner.observe(vs)
    metrics = learner.update()
    vg.close()
    return learner, metrics


def _flat(module):
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


def test_separate_optim_steps_the_actor_on_its_own_gradient_and_the_critic_on_its_own():
    base, _ = _updated(optim="separate", vf_coef=0.5, max_grad_norm=0.5)
    loud_critic, _ = _updated(optim="separate", vf_coef=1e4, max_grad_norm=0.5)
    loud_entropy, _ = _updated(optim="separate", ent_coef=5.0, max_grad_norm=0.5)
    # the actor never sees the critic's gradient (nor its clip), and the reverse
    assert torch.equal(_flat(base.actors), _flat(loud_critic.actors))
    assert not torch.equal(_flat(base.critics), _flat(loud_critic.critics))
    assert torch.equal(_flat(base.critics), _flat(loud_entropy.critics))
    assert not torch.equal(_flat(base.actors), _flat(loud_entropy.actors))


def test_joint_optim_clips_both_networks_together():
    # the default: one clip over both, so a loud critic shrinks the actor's step
    joint, _ = _updated(vf_coef=0.5, max_grad_norm=0.5)
    joint_loud, _ = _updated(vf_coef=1e4, max_grad_norm=0.5)
    assert not torch.equal(_flat(joint.actors), _flat(joint_loud.actors))


def test_adam_eps_reaches_the_optimizer():
    learner, _ = _updated(adam_eps=1e-6)
    assert learner.opt.param_groups[0]["eps"] == 1e-6
    assert MAPPO(games.make("vmas/balance", **BALANCE).spec).opt.param_groups[0]["eps"] == 1e-5


@pytest.mark.parametrize("truncation", ["bootstrap", "terminal"])
def test_a_cut_episode_is_bootstrapped_or_ends_as_terminated(truncation):
    spec = games.make("vmas/balance", n_agents=3, max_steps=3).spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=8, truncation=truncation), seed=0)
    vg = games.VectorGame("vmas/balance", 4, seed=0, tensors=True, n_agents=3, max_steps=3,
                          **learner.vector_game_kwargs)
    vs = vg.reset()
    cut = torch.zeros(0, dtype=torch.bool)
    while not learner.ready():
        vs = vg.step(learner.act(vs))
        learner.observe(vs)
        cut = torch.cat([cut, (vs.truncated["agent_0"] & ~vs.terminated["agent_0"])])
    buf = learner.buf
    assert cut.any()  # episodes were cut at their third step
    ended = buf.end[: buf.row]
    if truncation == "terminal":
        assert bool(buf.term[: buf.row][ended].all())
        assert bool((buf.final_value == 0).all())  # nothing to bootstrap from
    else:
        assert not bool(buf.term[: buf.row][ended].all())
        assert bool((buf.final_value[: buf.row][ended & ~buf.term[: buf.row]] != 0).all())
    vg.close()


def test_torch_init_is_nn_linear_s_own_and_orthogonal_is_not():
    torch.manual_seed(3)
    ours = mlp(7, (16, 16), 5, out_gain=0.01, orthogonal=False)
    torch.manual_seed(3)
    plain = [nn.Linear(7, 16), nn.Linear(16, 16), nn.Linear(16, 5)]
    linears = [m for m in ours if isinstance(m, nn.Linear)]
    for a, b in zip(linears, plain, strict=True):
        assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
    torch.manual_seed(3)
    ortho = [m for m in mlp(7, (16, 16), 5, out_gain=0.01) if isinstance(m, nn.Linear)]
    w = ortho[-1].weight  # [5, 16]: orthogonal rows of norm 0.01
    torch.testing.assert_close(w @ w.T, 1e-4 * torch.eye(5), atol=1e-7, rtol=0)
    assert not torch.equal(ortho[0].weight, linears[0].weight)


def test_learner_init_option_reaches_actor_and_critic():
    spec = games.make("vmas/balance", **BALANCE).spec
    for init in ("orthogonal", "torch"):
        learner = MAPPO(spec, MAPPOConfig(net=NetConfig(init=init)), seed=0)
        for net in (learner.actors[0], learner.critics[0]):
            bias = net.head[0].bias
            assert bool((bias == 0).all()) == (init == "orthogonal")


def test_actor_without_seat_id_sees_only_the_observation(tmp_path):
    spec = games.make("vmas/balance", **BALANCE).spec
    plain = MAPPO(spec, MAPPOConfig(net=NetConfig(seat_id=False)), seed=0)
    seated = MAPPO(spec, MAPPOConfig(), seed=0)
    obs_dim = plain.groups[0].obs_dim
    assert plain.actors[0].head[0].in_features == obs_dim
    assert seated.actors[0].head[0].in_features == obs_dim + 3
    x = {"obs": torch.randn(1, obs_dim).expand(3, obs_dim), "seat": torch.arange(3)}
    with torch.no_grad():
        same, differ = plain.actors[0](x), seated.actors[0](x)
    assert torch.equal(same, same[:1].expand_as(same))  # one observation, one policy
    assert not torch.allclose(differ[0], differ[1])
    # it trains, and its published policy plays the same inputs after a save and load
    learner, _ = _updated(net=NetConfig(value="shared", seat_id=False))
    learner.policy().save(tmp_path / "p.pt")
    loaded = load_policy(tmp_path / "p.pt")
    with torch.no_grad():
        torch.testing.assert_close(loaded.actors[0](x), learner.actors[0](x))


@pytest.mark.parametrize("make,message", [
    (lambda: MAPPOConfig(optim="both"),
     "optim='both' unknown; choose one of ['joint', 'separate']"),
    (lambda: MAPPOConfig(truncation="cut"),
     "truncation='cut' unknown; choose one of ['bootstrap', 'terminal']"),
    (lambda: MAPPOConfig(adam_eps=0.0), "adam_eps=0.0; expected a finite number > 0"),
    (lambda: NetConfig(init="xavier"),
     "init='xavier' unknown; choose one of ['orthogonal', 'torch']"),
])
def test_bad_values_are_refused_in_one_line(make, message):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value) == message


def test_policy_files_from_before_the_options_load():
    spec = games.make("vmas/balance", **BALANCE).spec
    policy = MAPPO(spec, MAPPOConfig(), seed=0).policy()
    payload = policy.payload()
    for key in ("init", "seat_id"):
        del payload["net"][key]
    again = type(policy).from_payload(policy.meta, payload)
    assert again.net.init == "orthogonal" and again.net.seat_id


def test_foreach_adam_steps_bitwise_as_the_per_tensor_loop_and_survives_a_resume():
    fast, _ = _updated()
    assert fast.opt.param_groups[0]["foreach"] is True
    spec = games.make("vmas/balance", **BALANCE).spec
    slow = MAPPO(spec, MAPPOConfig(rollout_steps=4, epochs=2, minibatches=2,
                                   net=NetConfig(value="shared")), seed=0)
    params = list(slow.actors.parameters()) + list(slow.critics.parameters())
    slow.opt = torch.optim.Adam(params, lr=slow.cfg.lr, eps=slow.cfg.adam_eps, foreach=False)
    vg = games.VectorGame("vmas/balance", 2, seed=0, tensors=True, **BALANCE,
                          **slow.vector_game_kwargs)
    vs = vg.reset()
    while not slow.ready():
        vs = vg.step(slow.act(vs))
        slow.observe(vs)
    slow.update()
    assert torch.equal(_flat(fast.actors), _flat(slow.actors))
    assert torch.equal(_flat(fast.critics), _flat(slow.critics))
    # a checkpoint from before (its optimizer saved foreach=None) resumes on the fast path
    state = slow.state_dict()
    state["opt"]["param_groups"][0]["foreach"] = None
    fast.load_state_dict(state)
    assert fast.opt.param_groups[0]["foreach"] is True
