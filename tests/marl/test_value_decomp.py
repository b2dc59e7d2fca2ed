"""VDN / QMIX and the replay buffer: mixer math, masking, truncation bootstrap, matrix-game
optima, margins over random on MPE, save/load round trips and error messages."""

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest
import torch

import games
from games import ActionSpace, AgentSpec, Game, GameSpec, Transition, VecStep, VectorGame
from marl.core import load_policy
from marl.replay import AgentStacker, ReplayBuffer
from marl.train import RandomPolicy, evaluate, train
from marl.value_decomp import QMixer, ValueDecomp, ValueDecompConfig, qmix_mix, vdn_mix

SPREAD = "pettingzoo/mpe2.simple_spread_v3"


def _matrix_cfg(mixer: str, seed: int, **kw) -> ValueDecompConfig:
    """One-shot games: no bootstrapping, a small FIFO replay that follows the policy."""
    base = dict(
        mixer=mixer,
        seed=seed,
        gamma=0.0,
        batch_size=64,
        buffer_size=2000,
        learning_starts=256,
        eps_decay_frames=4000,
        target_update="polyak",
        tau=0.05,
    )
    return ValueDecompConfig(**{**base, **kw})


def _greedy_joint(learner: ValueDecomp, vg: VectorGame) -> tuple[int, int]:
    acts = learner.act(vg.reset(), greedy=True)
    return int(acts["agent_0"][0]), int(acts["agent_1"][0])


# ------------------------------------------------------------------------- replay buffer
def test_replay_ring_buffer_wraps_and_samples_rows():
    buf = ReplayBuffer(5, {"x": ((2,), torch.float32), "i": ((), torch.int64)})
    for start in (0, 3, 6):  # 9 rows into 5 slots: rows 4..8 survive
        idx = torch.arange(start, start + 3)
        buf.add({"x": idx[:, None].float().expand(3, 2), "i": idx})
    assert len(buf) == 5 and buf.pos == 4
    assert sorted(buf.data["i"].tolist()) == [4, 5, 6, 7, 8]
    batch = buf.sample(64, torch.Generator().manual_seed(0))
    assert batch["x"].shape == (64, 2)
    assert torch.equal(batch["x"][:, 0].long(), batch["i"])  # fields stay aligned per row
    assert set(batch["i"].tolist()) <= {4, 5, 6, 7, 8}
    big = torch.arange(100, 112)  # an oversized batch keeps only its last C rows
    buf.add({"x": big[:, None].float().expand(12, 2), "i": big})
    assert sorted(buf.data["i"].tolist()) == [107, 108, 109, 110, 111]


def test_replay_state_dict_round_trip():
    buf = ReplayBuffer(4, {"i": ((), torch.int64)})
    buf.add({"i": torch.arange(3)})
    other = ReplayBuffer(4, {"i": ((), torch.int64)})
    other.load_state_dict(buf.state_dict())
    assert (other.pos, other.size) == (3, 3)
    assert torch.equal(other.data["i"][:3], torch.arange(3))


@pytest.mark.parametrize("frames", [float("inf"), -1, 2.5, True, "7", 2**62])
def test_a_replay_states_frames_are_checked_as_untrusted(frames):
    """A checkpoint's ``frames`` (what the warm-up counts) was taken as ``int(...)``: inf
    raised an OverflowError traceback, -1 and 2.5 were taken (review 27)."""
    buf = ReplayBuffer(4, {"i": ((), torch.int64)})
    buf.add({"i": torch.arange(3)})
    state = {**buf.state_dict(), "frames": frames}
    with pytest.raises(ValueError, match=r"^replay state holds frames=.*; expected an integer "
                                         r"in \[0, 2\*\*62 - 1\]$"):
        ReplayBuffer(4, {"i": ((), torch.int64)}).load_state_dict(state)


# ------------------------------------------------------------------------------ mixers
def test_vdn_mix_is_the_sum():
    q = torch.randn(7, 3)
    torch.testing.assert_close(vdn_mix(q), q.sum(-1))


def test_qmix_is_monotone_in_every_agent_utility():
    torch.manual_seed(0)
    mixer = QMixer(n_agents=3, state_dim=5, embed_dim=8, hyper_hidden=16)
    q = torch.randn(64, 3, requires_grad=True)
    mixer(q, torch.randn(64, 5)).sum().backward()
    assert (q.grad >= 0).all()


def test_qmix_mix_matches_loop():
    g = torch.Generator().manual_seed(1)
    q, w1, b1 = (
        torch.randn(4, 2, generator=g),
        torch.randn(4, 2, 3, generator=g),
        torch.randn(4, 3, generator=g),
    )
    w2, v = torch.randn(4, 3, generator=g), torch.randn(4, generator=g)
    want = []
    for b in range(4):
        h = torch.nn.functional.elu(q[b] @ w1[b].abs() + b1[b])
        want.append(h @ w2[b].abs() + v[b])
    torch.testing.assert_close(qmix_mix(q, w1, b1, w2, v), torch.stack(want))


# ------------------------------------------------------- truncation and termination flags
def _vecstep(term: bool, trunc: bool) -> VecStep:
    ids = ("agent_0", "agent_1")
    f = lambda v: {a: np.array([v, v]) for a in ids}  # noqa: E731
    done = np.array([True, False])
    return VecStep(
        obs={a: np.full((2, 3), 1.0, np.float32) for a in ids},
        legal={a: np.ones((2, 2), bool) for a in ids},
        acting={a: np.ones(2, bool) for a in ids},
        rewards={a: np.array([1.0, 3.0], np.float32) for a in ids},
        terminated={a: np.array([term, False]) for a in ids},
        truncated={a: np.array([trunc, False]) for a in ids},
        done=done,
        final_obs={a: np.full((2, 3), 7.0, np.float32) for a in ids},
        episode_return=f(0.0),
        episode_length=np.zeros(2, np.int64),
        state=np.full((2, 3), 1.0, np.float32),
        final_state=np.full((2, 3), 7.0, np.float32),
    )


@pytest.mark.parametrize(("term", "trunc", "terminal"), [(True, False, 1.0), (False, True, 0.0)])
def test_next_fields_bootstrap_truncation_not_termination(term, trunc, terminal):
    spec = games.make("matrix/climbing", repeats=3).spec  # obs and state of width 3
    stack = AgentStacker(spec, spec.agent_ids, torch.device("cpu"), "state", "sum")
    vs = _vecstep(term, trunc)
    nxt = stack.next_fields(vs, with_state=True)
    assert nxt["terminal"].tolist() == [terminal, 0.0]
    assert nxt["next_obs"][0].eq(7.0).all() and nxt["next_obs"][1].eq(1.0).all()
    assert nxt["next_state"][0].eq(7.0).all() and nxt["next_state"][1].eq(1.0).all()
    assert stack.team(stack.rewards(vs)).tolist() == [2.0, 6.0]  # sum over the team


# ------------------------------------------------------------------ legal-action masks
class MaskedMatrix(Game):
    """Two agents, 4 actions; the best payoff sits on action 3, which is illegal for both
    agents in even steps (acting on it raises). Two steps per episode."""

    def __init__(self) -> None:
        ids = ("agent_0", "agent_1")
        self.spec = GameSpec(
            name="test/masked_matrix",
            agents=tuple(AgentSpec(a, a, "team") for a in ids),
            obs_shapes={a: (2,) for a in ids},
            action_spaces={a: ActionSpace("discrete", n=4) for a in ids},
            max_steps=2,
            simultaneous=True,
            state_shape=(2,),
        )
        self.t = 0

    def _reset(self, seed: int | None) -> None:
        self.t = 0

    def _step(self, actions: dict) -> Transition:
        r = float(actions["agent_0"] + actions["agent_1"])
        self.t += 1
        ids = self.spec.agent_ids
        return Transition(
            {a: r for a in ids}, {a: self.t >= 2 for a in ids}, {a: False for a in ids}
        )

    def acting_agents(self) -> tuple[str, ...]:
        return () if self.t >= 2 else self.spec.agent_ids

    def observe(self, agent: str) -> np.ndarray:
        return np.eye(2, dtype=np.float32)[min(self.t, 1)]

    def legal_actions(self, agent: str) -> Sequence[int]:
        if self.t >= 2:
            return []
        return [0, 1, 2] if self.t == 0 else [0, 1, 2, 3]

    def text_observation(self, agent: str) -> str:
        return f"step {self.t}"

    def state(self) -> np.ndarray:
        return self.observe("agent_0")


@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_illegal_actions_never_chosen_and_masked_in_target(mixer):
    vg = VectorGame(MaskedMatrix, 8, seed=0, with_state=True)
    cfg = ValueDecompConfig(mixer=mixer, learning_starts=64, batch_size=32, eps_decay_frames=500)
    learner = ValueDecomp(vg.spec, cfg)
    train(learner, vg, 1500, progress=False)  # an illegal action would raise in Game.step
    assert learner.act(vg.reset(), greedy=True)["agent_0"].tolist() == [2] * 8
    # Poison the illegal action's utility: the target max must skip it.
    with torch.no_grad():
        for net in (learner.qnet, learner.target_qnet):
            net.net[-1].bias[3] = 1e4
    b = learner.buffer.data
    first_step = b["obs"][: len(learner.buffer), 0, 0] == 1.0  # transitions from step 0
    assert not (b["action"][: len(learner.buffer)][first_step] == 3).any()
    learner.buffer.data["next_legal"][:, :, 3] = False
    learner.buffer.data["terminal"][:] = 0.0
    metrics = learner.update()
    assert abs(metrics["losses/target"]) < 1e3


# --------------------------------------------------------------------- matrix games
@pytest.mark.parametrize("seed", [2, pytest.param(0, marks=pytest.mark.benchmark),
                                  pytest.param(1, marks=pytest.mark.benchmark)])
def test_qmix_optimistic_weighting_solves_climbing(seed):
    """Climbing game (Claus & Boutilier 1998): the optimum (0, 0) = 11 neighbours -30s.

    Plain QMIX's monotone mixer cannot represent the payoffs; with uniform data its best
    monotone fit prefers (2, 2), and ε-greedy dynamics drift to (2, 2) or (1, 2) (10 seeds
    of 10 when this test was written). Weighting TD errors of overestimated samples by 0.1
    (the optimistic weighting of OW-QMIX, Rashid et al. 2020) reaches (0, 0) (10 of 10).

    Seed 2 in the suite (0 and 1 are benchmarks; it ran all three, ~4 s of CPU each). Seeds
    0-4 (AMD EPYC, 6 Dec): optimistic weighting (0, 0) on all five; plain QMIX (weight 1.0)
    (1, 2) (1, 2) (1, 2) (1, 2) (1, 1); untrained (0 frames) the greedy joint action is
    already (0, 0) at seeds 0, 1 and 3, but (2, 2) at seed 2: seed 2 fails both untrained
    and plain, where seed 0 would pass a learner that never learned.
    """
    random_payoff = float(np.mean(games.matrix.CLIMBING))  # uniform joint play: -3.44
    vg = VectorGame("matrix/climbing", 16, seed=seed, with_state=True)
    learner = ValueDecomp(vg.spec, _matrix_cfg("qmix", seed, optimistic_weight=0.1))
    train(learner, vg, 8000, progress=False)
    joint = _greedy_joint(learner, vg)
    assert joint == (0, 0), f"seed {seed}: greedy joint action {joint}"
    assert games.matrix.CLIMBING[joint[0]][joint[1]] > random_payoff + 10


@pytest.mark.parametrize("seed", [4, *(pytest.param(s, marks=pytest.mark.benchmark)
                                       for s in range(4))])
def test_vdn_solves_penalty_game(seed):
    """VDN on the penalty game with k = -2: the optima (0, 0) and (2, 2) pay 10.

    Known limitation (documented, not asserted): VDN's additive decomposition fits the
    climbing game badly; with uniform exploration its least-squares fit prefers (2, 2), and
    in 10 of 10 seeds plain VDN ends on (2, 2) there. On penalty k = -10 the row means
    favour the safe (1, 1) early and ε-greedy VDN stops there in about half the seeds.

    Seed 4 in the suite (0-3 are benchmarks; it ran seeds 0-2, ~2 s of CPU each). Seeds 0-4
    (AMD EPYC, 6 Dec) end on (0, 0) (0, 0) (2, 2) (0, 0) (2, 2); untrained (0 frames) their
    greedy joint actions are (0, 0) (0, 0) (2, 2) (0, 0) (0, 2): seeds 0-3 pass before any
    training, seed 4 only once VDN has learned.
    """
    vg = VectorGame("matrix/penalty", 16, seed=seed, with_state=True, k=-2.0)
    learner = ValueDecomp(vg.spec, _matrix_cfg("vdn", seed, eps_decay_frames=3000))
    train(learner, vg, 6000, progress=False)
    assert _greedy_joint(learner, vg) in {(0, 0), (2, 2)}, f"seed {seed}"


# ------------------------------------------------------------------------------- MPE
VMAS_SPREAD = {"n_agents": 2, "max_steps": 25}


def test_vdn_beats_random_on_vmas_spread():
    """VDN with γ=0.95 and Polyak targets, 32 VMAS copies, 32k frames (~970 gradient steps:
    "auto" takes one per vector step below 128 copies); greedy learned and random each play
    256 episodes from the same starts (random: -78.67). Learned - random over seeds 0-4
    (learner and training game; AMD EPYC, 6 Dec): 9.95 8.52 8.10 5.17 9.13 against the bar
    of 3; the standard error of that difference on 256 paired episodes is ~1.0, so the
    lowest is ~2 above it. Untrained (0 frames): -10.12; trained on negated team rewards:
    -17.04. It replaced mpe2 simple_spread N=2 at 8 copies x 24k frames (~2,900 gradient
    steps; margins 6.87-8.40 over a bar of 5): its body took 17.4 -> 6.5 s of CPU, run one
    after the other in a process each (22 -> 16 s for a pytest process running it alone,
    ~5 s of which is pytest's start, on a busier machine for the second)."""
    vg = VectorGame("vmas/simple_spread", 32, seed=0, with_state=True, **VMAS_SPREAD)
    cfg = ValueDecompConfig(
        mixer="vdn", eps_decay_frames=15_000, gamma=0.95, target_update="polyak"
    )
    learner = ValueDecomp(vg.spec, cfg)
    train(learner, vg, 32_000, progress=False)
    ev = VectorGame("vmas/simple_spread", 256, seed=1234, **VMAS_SPREAD)
    pol, rnd = learner.policy(), RandomPolicy(vg.spec, seed=0)
    learned = evaluate(ev, {a: pol for a in vg.spec.agent_ids}, 256, greedy=True).per_team["team"]
    random = evaluate(ev, {a: rnd for a in vg.spec.agent_ids}, 256).per_team["team"]
    assert learned > random + 3.0, f"learned {learned:.2f} vs random {random:.2f}"


# QMIX's run is a benchmark (`make bench-tests`; 132 s of a loaded 3,078 s suite run; 36 s
# of CPU for a pytest process running it alone): the spread path (replay, Polyak targets,
# greedy evaluation) is VDN's (test_vdn_beats_random_on_vmas_spread), and QMIX's mixer
# learns in the suite in test_value_decomp_turns.py's tic-tac-toe test (qmix-6000, a margin
# over random play) and test_qmix_optimistic_weighting_solves_climbing (3 seeds), and equals
# a loop in test_qmix_mix_matches_loop.
@pytest.mark.benchmark
def test_qmix_beats_random_on_simple_spread():
    """simple_spread N=2 (discrete, 25 steps), 24k frames, γ=0.95 with Polyak targets.
    Greedy team return when written (30k frames, seeds 0/1/2): QMIX -14.3/-15.0/-13.9,
    uniform random -21.0. Learned minus random at 24k (seeds 0/1/2, learner and game):
    6.78/5.86/6.42 (margin 4); at 20k seed 1 was 4.72, too close. Seeds 3-11 at 24k (AMD
    EPYC, 4 Dec; seed 0 reproduced): 7.32/6.67/7.07/7.09/5.12/5.83/6.84/7.24/6.65: the
    lowest (seed 7) is 1.1 above its bar, about one standard error of learned - random on
    64 episodes each (~1.0); the random baseline reads -21.05 (-21.08 +- 0.16 on 2048
    episodes). VDN's run of this test (margins 6.87-8.40 over a bar of 5) moved to VMAS."""
    vg = VectorGame(SPREAD, 8, seed=0, with_state=True, N=2, max_cycles=25)
    cfg = ValueDecompConfig(
        mixer="qmix", eps_decay_frames=15_000, gamma=0.95, target_update="polyak"
    )
    learner = ValueDecomp(vg.spec, cfg)
    train(learner, vg, 24_000, progress=False)
    ev = VectorGame(SPREAD, 16, seed=1000, N=2, max_cycles=25)
    pol, rnd = learner.policy(), RandomPolicy(vg.spec, seed=0)
    learned = evaluate(ev, {a: pol for a in vg.spec.agent_ids}, 64, greedy=True).per_team["team"]
    random = evaluate(ev, {a: rnd for a in vg.spec.agent_ids}, 64).per_team["team"]
    assert learned > random + 4.0, f"qmix: learned {learned:.2f} vs random {random:.2f}"


def test_heterogeneous_team_with_opponent_smoke():
    """simple_adversary: obs widths 8 / 10 are padded; VDN controls the 'good' team only."""
    vg = VectorGame(
        "pettingzoo/mpe2.simple_adversary_v3", 4, seed=0, with_state=True, max_cycles=10
    )
    learner = ValueDecomp(
        vg.spec,
        ValueDecompConfig(mixer="qmix", learning_starts=64, batch_size=32),
        agents=("agent_0", "agent_1"),
    )
    assert learner.stack.obs_width == 10
    res = train(
        learner, vg, 400, opponents={"adversary_0": RandomPolicy(vg.spec, 1)}, progress=False
    )
    assert res.updates > 0 and all(np.isfinite(m["losses/td_loss"]) for m in res.metrics)


# ------------------------------------------------------------------ save / load / resume
@pytest.fixture(params=["vdn", "qmix"])
def trained(request):
    vg = VectorGame(SPREAD, 4, seed=0, with_state=True, N=2, max_cycles=25)
    cfg = ValueDecompConfig(mixer=request.param, learning_starts=200, batch_size=32)
    learner = ValueDecomp(vg.spec, cfg, device="cpu")
    train(learner, vg, 600, progress=False)
    return learner, vg


def test_policy_save_load_and_snapshot_act_like_learner(trained, tmp_path):
    learner, vg = trained
    vs = vg.reset()
    pol = learner.policy()
    loaded = load_policy(pol.save(tmp_path / "p.pt"))
    assert loaded.meta.kind == learner.cfg.mixer
    want = learner.act(vs, greedy=True)
    for a in vg.spec.agent_ids:
        np.testing.assert_array_equal(pol.act(a, vs, greedy=True), want[a])
        np.testing.assert_array_equal(loaded.act(a, vs, greedy=True), want[a])


def test_learner_checkpoint_round_trip_continues_identically(trained, tmp_path):
    learner, vg = trained
    learner.save(tmp_path / "learner.pt")
    twin = ValueDecomp(vg.spec, learner.cfg)
    twin.load(tmp_path / "learner.pt")
    assert twin.epsilon == learner.epsilon and twin.frames == learner.frames
    m1, m2 = learner.update(), twin.update()
    assert m1 == m2
    vs = vg.reset()
    mine, theirs = learner.act(vs), twin.act(vs)  # same exploration stream
    for a in vg.spec.agent_ids:
        np.testing.assert_array_equal(mine[a], theirs[a])


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mixer", "qtran"),
        ("state_input", "pixels"),
        ("team_reward", "max"),
        ("target_update", "soft"),
        ("loss", "l1"),
    ],
)
def test_unknown_option_values_name_the_value_and_choices(field, value):
    spec = games.make("matrix/climbing").spec
    with pytest.raises(ValueError, match=rf"{field}={value!r} .*accepted: \[") as err:
        ValueDecomp(spec, ValueDecompConfig(**{field: value}))
    assert "\n" not in str(err.value)


def test_rejects_continuous_and_unknown_seats():
    # turn-based games are played (tests/marl/test_value_decomp_turns.py)
    ValueDecomp(games.make("openspiel/kuhn_poker").spec, ValueDecompConfig(mixer="vdn"))
    cont = games.make(SPREAD, N=2, continuous_actions=True).spec
    with pytest.raises(ValueError, match="does not support continuous actions"):
        ValueDecomp(cont, ValueDecompConfig())
    with pytest.raises(ValueError, match="not seats of"):
        ValueDecomp(games.make("matrix/climbing").spec, agents=("player_9",))


def test_qmix_without_state_in_vecstep_says_how_to_fix():
    vg = VectorGame("matrix/climbing", 2, seed=0)  # built without with_state=True
    learner = ValueDecomp(vg.spec, ValueDecompConfig(mixer="qmix"))
    with pytest.raises(ValueError, match="with_state=True"):
        learner.act(vg.reset())
    obs_learner = ValueDecomp(vg.spec, ValueDecompConfig(mixer="qmix", state_input="obs"))
    train(obs_learner, vg, 20, progress=False)  # concatenated observations work without it


# ------------------------------------------------------------------ seat masks (leagues)
TAG = "pettingzoo/mpe2.simple_tag_v3"


def _tag_step(mixer: str, seat_mask: np.ndarray, seed: int = 0, **kw):
    """A learner on every seat of simple_tag (two teams), one act/observe under ``seat_mask``."""
    vg = VectorGame(TAG, 4, seed=0, with_state=True, max_cycles=25)
    cfg = ValueDecompConfig(mixer=mixer, batch_size=4, learning_starts=1, seed=seed, **kw)
    learner = ValueDecomp(vg.spec, cfg)
    learner.seat_mask = seat_mask
    acts = learner.act(vg.reset())
    return learner, vg, acts


# seats: adversary_0..2 (team 0), agent_0 (team 1); row 0 self-play, row 1 adversaries held
# by an opponent, row 2 the good agent held by one, row 3 held by nobody (no learner seat)
SEATS = np.array([[1, 1, 1, 1], [0, 0, 0, 1], [1, 1, 1, 0], [0, 0, 0, 0]], dtype=bool)


@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_seat_mask_stores_only_rows_where_the_learner_plays(mixer):
    learner, vg, acts = _tag_step(mixer, SEATS)
    assert learner.CAPABILITIES.partial_seats
    learner.observe(vg.step(acts))
    buf = learner.buffer
    assert len(buf) == 3  # the copy where another policy held every seat is not stored
    np.testing.assert_array_equal(buf.data["seated"][:3].numpy(), SEATS[:3])
    assert buf.data["reward"].shape[1:] == (2,)  # one team reward per team
    # a seat another policy held acts nowhere in the stored data, now or next step
    assert not (buf.data["acting"][:3] & ~buf.data["seated"][:3]).any()
    assert not (buf.data["next_acting"][:3] & ~buf.data["seated"][:3]).any()


@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_one_team_learner_skips_copies_an_opponent_plays(mixer):
    vg = VectorGame(TAG, 4, seed=0, with_state=True, max_cycles=25)
    adversaries = ("adversary_0", "adversary_1", "adversary_2")
    learner = ValueDecomp(vg.spec, ValueDecompConfig(mixer=mixer), agents=adversaries)
    learner.seat_mask = np.array([[1] * 3, [0] * 3, [1] * 3, [0] * 3], dtype=bool)
    acts = {**learner.act(vg.reset()), "agent_0": np.zeros(4, np.int64)}
    learner.observe(vg.step(acts))
    assert len(learner.buffer) == 2 and learner.buffer.data["reward"].ndim == 1


def test_the_team_an_opponent_held_is_not_trained_on():
    """Rewards of the team another policy played change nothing in the update (QMIX: its
    team's mixer keeps its weights); the held team's rewards do."""
    mask = np.array([[1, 1, 1, 0]] * 4, dtype=bool)  # the good agent always held elsewhere

    def run(shift_good: float, shift_adv: float = 0.0) -> ValueDecomp:
        learner, vg, acts = _tag_step("qmix", mask)
        vs = vg.step(acts)
        rewards = {a: r + (shift_good if a == "agent_0" else shift_adv)
                   for a, r in vs.rewards.items()}
        learner.observe(dataclasses.replace(vs, rewards=rewards))
        before = [p.clone() for p in learner.mixer.mixers[1].parameters()]
        learner.update()
        for p, q in zip(before, learner.mixer.mixers[1].parameters(), strict=True):
            assert torch.equal(p, q)  # the good team's mixer is untouched
        return learner

    a, b, c = run(0.0), run(-7.0), run(0.0, shift_adv=3.0)
    for p, q in zip(a.qnet.parameters(), b.qnet.parameters(), strict=True):
        assert torch.equal(p, q)
    assert any(not torch.equal(p, r) for p, r in zip(a.qnet.parameters(), c.qnet.parameters(),
                                                     strict=True))


def test_start_episodes_drops_the_pending_half_transition():
    learner, vg, acts = _tag_step("vdn", np.ones((4, 4), bool))
    learner.start_episodes()
    with pytest.raises(RuntimeError, match="without a preceding act"):
        learner.observe(vg.step(acts))
    assert len(learner.buffer) == 0


def test_replay_state_holds_only_the_filled_rows():
    """A league checkpoint of a partly filled buffer was 170 MB: ``torch.save`` of a slice
    writes the whole underlying storage, so every checkpoint held the full capacity."""
    import io

    buf = ReplayBuffer(100_000, {"obs": ((16,), torch.float32)})
    buf.add({"obs": torch.ones(10, 16)})
    out = io.BytesIO()
    torch.save(buf.state_dict(), out)
    assert out.tell() < 50_000  # 10 rows, not 100k rows (6.4 MB)
    again = ReplayBuffer(100_000, {"obs": ((16,), torch.float32)})
    again.load_state_dict(torch.load(io.BytesIO(out.getvalue()), weights_only=True))
    assert len(again) == 10 and torch.equal(again.data["obs"][:10], torch.ones(10, 16))


def test_checkpoint_from_before_seat_masks_loads_with_every_seat_held():
    learner, vg, acts = _tag_step("vdn", SEATS)
    learner.observe(vg.step(acts))
    state = learner.state_dict()
    old = {**state["buffer"], "data": {k: v for k, v in state["buffer"]["data"].items()
                                       if k != "seated"}}
    again, _, _ = _tag_step("vdn", SEATS, seed=1)
    again.load_state_dict({**state, "buffer": old})
    n = len(learner.buffer)
    assert len(again.buffer) == n and again.buffer.data["seated"][:n].all()
    assert torch.equal(again.buffer.data["obs"][:n], learner.buffer.data["obs"][:n])
