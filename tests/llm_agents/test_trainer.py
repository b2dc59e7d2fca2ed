"""The trainer: the loss sees exactly the generated tokens, advantages have the statistics
each mode promises (and agent-wise differs from global where reward scales differ),
updates change parameters and log per-role gradient norms, checkpoints resume exactly."""

import numpy as np
import pytest
import torch

import games
from llm_agents import losses
from llm_agents.actions import ActionConfig
from llm_agents.backends import SamplingConfig
from llm_agents.credit import KeyIndex, turn_advantages
from llm_agents.opponents import OpponentPool
from llm_agents.records import Decision, Turn
from llm_agents.rollout import EpisodeJob, RolloutEngine
from llm_agents.team import Team
from llm_agents.trainer import GRPOConfig, MultiTurnGRPO
from marl.advantages import AdvantageConfig, RoleEMABaseline
from marl.core import atomic_torch_save, safe_torch_load
from marl.train import RandomPolicy

from .conftest import COMPACT, KUHN, RELAY

GEN = ActionConfig(mode="generate", sampling=SamplingConfig(max_new_tokens=4))


def test_loss_masks_exactly_the_generated_tokens(kuhn_tok, make_model):
    """Logits exist only where they predict a generated token (the prompt pass keeps its
    last position, which predicts the first generated token), and the loss reaches exactly
    those of real generated tokens, not the padding after shorter completions."""
    model = make_model(kuhn_tok)
    engine = RolloutEngine(Team.shared(model, kuhn_tok), GEN, COMPACT)
    turns = engine.run([EpisodeJob(KUHN, s) for s in range(8)]).turns
    outputs = []

    def keep(module, inputs, output):
        if output.requires_grad:
            output.retain_grad()
        outputs.append(output)

    hook = model.lm_head.register_forward_hook(keep)
    with torch.no_grad():  # no gradients: each distinct prompt runs once (test_repeated_prompts)
        engine.mode.unit_logprobs(model, turns, kuhn_tok.pad_token_id, torch.device("cpu"))
    prompts = {tuple(t.decision.prompt_ids) for t in turns}
    assert outputs[0].shape[:2] == (len(prompts), 1) and len(prompts) < len(turns)
    outputs.clear()
    ul = engine.mode.unit_logprobs(model, turns, kuhn_tok.pad_token_id, torch.device("cpu"))
    hook.remove()
    lengths = [len(t.decision.completion_ids) for t in turns]
    assert ul.mask.sum(1).tolist() == lengths
    assert all(row[:n].all() for row, n in zip(ul.mask, lengths, strict=True))
    assert len(set(lengths)) > 1  # shorter completions are padded
    first, rest = outputs  # prompt pass, continuation pass
    assert first.shape[:2] == (len(turns), 1)  # no logits for prompt positions but the last
    w = losses.AGGREGATIONS["token_mean"](ul.mask, int(ul.mask.sum()), len(turns))
    assert w.sum().item() == pytest.approx(1.0)
    adv = torch.randn(len(turns), 1)
    loss = (w * losses.ppo_clip(ul.logp, ul.logp.detach(), adv).loss).sum()
    loss.backward()
    # unit j is predicted by the prompt's last logits (j = 0) or the continuation's j - 1
    touched = torch.cat([first.grad, rest.grad], 1).abs().sum(-1) > 0  # [N, L]
    assert torch.equal(touched, ul.mask)


def _synthetic_turns(seed=0, groups=4, k=8):
    """One turn per agent per episode: ``a`` (role A) rewards ~ N(5, 10^2), ``b`` (role B)
    ~ N(-1, 0.1^2); 4 groups of 8 episodes."""
    rng = np.random.default_rng(seed)
    turns = []
    for g in range(groups):
        for e in range(k):
            ep = g * k + e
            for i, (agent, role, mu, sd) in enumerate([("a", "A", 5, 10), ("b", "B", -1, 0.1)]):
                d = Decision(0, True, "", [1], [1], [0.0])
                turns.append(Turn(ep, g, 0, agent, role, "m", i, d, 0, float(rng.normal(mu, sd))))
    return turns


def _adv(turns, scheme, **kw):
    res = turn_advantages(turns, ["g"], scheme, KeyIndex(), **kw)
    return res.advantages.double().numpy(), res


def _stats(adv, labels):
    """``[K, 2]`` mean and population std of ``adv`` per distinct label."""
    groups = {}
    for a, lab in zip(adv, labels, strict=True):
        groups.setdefault(lab, []).append(a)
    return np.array([(np.mean(v), np.std(v)) for v in groups.values()])


@pytest.mark.parametrize(("scheme", "label"), [
    ("global", lambda t: "all"),
    ("agent", lambda t: (t.group, t.agent)),
    ("role", lambda t: t.role),
    ("group_role", lambda t: (t.group, t.role)),
])
def test_advantages_have_the_statistics_each_mode_promises(scheme, label):
    turns = _synthetic_turns()
    adv, res = _adv(turns, scheme)
    stats = _stats(adv, [label(t) for t in turns])
    np.testing.assert_allclose(stats[:, 0], 0.0, atol=1e-5)
    np.testing.assert_allclose(stats[:, 1], 1.0, atol=1e-4)
    assert res.diagnostics["adv/global/count"] == len(turns)


def test_role_ema_is_a_per_role_baseline_updated_in_order():
    turns = _synthetic_turns(groups=2, k=4)
    state, alpha = RoleEMABaseline(), 0.9
    cfg = AdvantageConfig(role_ema_alpha=alpha)
    for _ in range(2):  # the second batch starts from the first batch's baselines
        before = {r: state.get(0, i) or 0.0 for i, r in enumerate("AB")}
        adv, _ = _adv(turns, "role_ema", cfg=cfg, state=state)
        base = dict(before)
        for t, a in zip(turns, adv, strict=True):
            assert a == pytest.approx(t.reward - base[t.role], abs=1e-4)
            base[t.role] = alpha * base[t.role] + (1 - alpha) * t.reward
        assert state.get(0, 0) == pytest.approx(base["A"], abs=1e-5)


def test_agent_and_global_normalization_differ_where_reward_scales_differ():
    turns = _synthetic_turns()
    b = np.array([t.agent == "b" for t in turns])
    glob, _ = _adv(turns, "global")
    agent, res = _adv(turns, "agent")
    assert glob[b].std() < 0.05 < 0.9 < agent[b].std()  # agent b's signal vanishes globally
    assert abs(glob[~b].std() - agent[~b].std()) > 0.1
    assert res.diagnostics["adv/agent_b/raw_std_ratio"] < 0.05


def test_turn_returns_run_over_each_agents_own_turns():
    d = Decision(0, True, "", [1], [1], [0.0])
    turns = [Turn(0, 0, 0, "a", "A", "m", 0, d, 0, 0.0), Turn(0, 0, 0, "b", "B", "m", 1, d, 0, 5.0),
             Turn(0, 0, 0, "a", "A", "m", 2, d, 0, 0.0), Turn(0, 0, 0, "a", "A", "m", 3, d, 0, 1.0)]
    adv, _ = _adv(turns, "none", gamma=0.5)
    np.testing.assert_allclose(adv, [0.25, 5.0, 0.5, 1.0])
    raw, _ = _adv(turns, "none", gamma=0.0)  # gamma 0: each return is its turn's reward
    np.testing.assert_allclose(raw, [0.0, 5.0, 0.0, 1.0])


def _params(model):
    return [p.detach().clone() for p in model.parameters()]


def test_update_changes_parameters_and_logs_per_role_gradient_norms(kuhn_tok, make_model):
    model = make_model(kuhn_tok)
    before = _params(model)
    cfg = GRPOConfig(group_size=4, groups_per_step=4, adv_norm="group_role", lr=1e-2,
                     epochs=2, minibatch_turns=8, kl_coef=0.1, ent_coef=0.01, action=GEN,
                     prompt=COMPACT, device="cpu")
    trainer = MultiTurnGRPO(Team.shared(model, kuhn_tok), KUHN, cfg)
    metrics = trainer.step()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    for key in ("losses/pg_loss", "losses/kl", "losses/entropy", "losses/approx_kl",
                "losses/clipfrac", "losses/grad_norm", "losses/grad_norm/player_0",
                "losses/grad_norm/player_1", "adv/role_player_0/adv_mean", "charts/legal_rate",
                "charts/team_return"):
        assert key in metrics and np.isfinite(metrics[key]), key
    assert metrics["losses/kl"] > 0 and metrics["losses/grad_norm/player_0"] > 0
    # zero-sum self-play: the team return is 0 by construction; the sides say who wins
    assert metrics["charts/team_return"] == pytest.approx(0.0, abs=1e-12)
    assert metrics["charts/seat_return/player_0"] == pytest.approx(
        -metrics["charts/seat_return/player_1"], abs=1e-12)
    assert metrics["charts/win_rate/player_0"] + metrics["charts/win_rate/player_1"] == 1.0
    ref = trainer.ref["shared"]
    assert all(torch.equal(a, b) for a, b in zip(before, ref.parameters(), strict=True))


def test_per_role_models_each_learn_from_their_own_turns(multi_tok, make_model):
    scout, solver = make_model(multi_tok, 1), make_model(multi_tok, 2)
    before = {"scout": _params(scout), "solver": _params(solver)}
    team = Team.per_role({"scout": (scout, multi_tok), "solver": (solver, multi_tok)})
    cfg = GRPOConfig(group_size=4, groups_per_step=4, adv_norm="role", lr=1e-2,
                     action=ActionConfig(mode="score"), prompt=COMPACT, device="cpu")
    metrics = MultiTurnGRPO(team, "tool/relay", cfg, game_kwargs={"tool/relay": RELAY}).step()
    for name, model in (("scout", scout), ("solver", solver)):
        assert any(not torch.equal(a, b) for a, b in zip(before[name], model.parameters(),
                                                          strict=True)), name
        assert metrics[f"losses/grad_norm/{name}"] > 0


def test_league_opponents_take_one_side_of_each_group(kuhn_tok, make_model):
    pool = OpponentPool([RandomPolicy(games.make(KUHN).spec, seed=0)], prob=1.0)
    cfg = GRPOConfig(group_size=4, groups_per_step=6, action=ActionConfig(mode="score"),
                     prompt=COMPACT, device="cpu")
    trainer = MultiTurnGRPO(Team.shared(make_model(kuhn_tok), kuhn_tok), KUHN, cfg, opponents=pool)
    batch = trainer.collect()
    for g in range(6):
        seats = {tuple(sorted(e.seats.items())) for e in batch.episodes if e.group == g}
        assert len(seats) == 1 and "random" in dict(next(iter(seats))).values()
    assert {t.agent for t in batch.turns} == {"player_0", "player_1"}  # sides vary by group
    assert trainer.update(batch)["charts/trained_turns"] == len(batch.turns)
    trainer.opponents.add(trainer.policy())  # league play against its own snapshot
    trainer.opponents.policies.pop(0)
    kinds = {k for e in trainer.collect().episodes for k in e.seats.values()}
    assert kinds == {"team", "llm"}


def test_checkpoint_resumes_exactly(tmp_path, kuhn_tok, make_model):
    def build():
        cfg = GRPOConfig(group_size=4, groups_per_step=4, adv_norm="role_ema", lr=1e-2,
                         action=GEN, prompt=COMPACT, device="cpu")
        return MultiTurnGRPO(Team.shared(make_model(kuhn_tok), kuhn_tok), KUHN, cfg)

    a = build()
    a.step()
    path = atomic_torch_save(a.state_dict(), tmp_path / "trainer.pt")
    expected = a.step()
    b = build()
    b.load_state_dict(safe_torch_load(path))
    got = b.step()
    for key in ("losses/pg_loss", "charts/team_return", "charts/legal_rate", "adv/global/adv_std"):
        assert got[key] == pytest.approx(expected[key], abs=1e-6), key
    for p, q in zip(a.team.models["shared"].model.parameters(),
                    b.team.models["shared"].model.parameters(), strict=True):
        torch.testing.assert_close(p, q)


def test_side_metrics_per_seat_and_side():
    """By hand: self-play episodes (the team holds both Kuhn seats) give both sides' win
    rates, an episode against a fixed opponent gives only the side the team held, and tied
    sides share the win."""
    from llm_agents.records import EpisodeRecord
    from llm_agents.trainer import side_metrics

    spec = games.make(KUHN).spec
    eps = [EpisodeRecord(KUHN, 0, 0, {"player_0": 2.0, "player_1": -2.0}, 3,
                         seats={"player_0": "team", "player_1": "team"}),
           EpisodeRecord(KUHN, 1, 0, {"player_0": -1.0, "player_1": 1.0}, 2,
                         seats={"player_0": "team", "player_1": "team"}),
           EpisodeRecord(KUHN, 2, 0, {"player_0": 1.0, "player_1": -1.0}, 2,
                         seats={"player_0": "random", "player_1": "team"})]
    m = side_metrics(eps, {KUHN: spec})
    assert m == {"charts/seat_return/player_0": 0.5, "charts/seat_return/player_1": -2 / 3,
                 "charts/win_rate/player_0": 0.5, "charts/win_rate/player_1": 1 / 3}
    draw = EpisodeRecord(KUHN, 3, 0, {"player_0": 0.0, "player_1": 0.0}, 2,
                         seats={"player_0": "team", "player_1": "team"})
    assert side_metrics([draw], {KUHN: spec})["charts/win_rate/player_0"] == 0.5
    # a seat the record does not name is not the team's, as charts/team_return counts it
    assert side_metrics([EpisodeRecord(KUHN, 4, 0, {"player_0": 1.0, "player_1": -1.0}, 2)],
                        {KUHN: spec}) == {}
