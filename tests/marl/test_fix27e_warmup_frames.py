"""``learning_starts`` counts frames (steps of one copy, whoever moved), as its doc says.

On a turn-based game a VDN/QMIX team stores one transition per own turn, fewer than the
frames played: its warm-up waited for ``learning_starts`` *transitions*, so a run on Texas
hold'em with the default 1,000 made 1 update in 2,000 frames, Kuhn poker 50 where the
frames promised 251. MADDPG (simultaneous games: one transition per copy and step) waited
for ``learning_starts`` stored transitions too, for ever when it was above ``buffer_size``.
"""

import pytest

import games
from marl.maddpg import MADDPG, MADDPGConfig
from marl.train import RandomPolicy, train
from marl.value_decomp import ValueDecomp, ValueDecompConfig

COPIES = 4


def _small(**kw) -> dict:
    return dict(hidden=(8,), batch_size=16, **kw)


def _vdn(spec, mixer: str, agents=None, **kw) -> ValueDecomp:
    return ValueDecomp(spec, ValueDecompConfig(mixer=mixer, mixing_embed_dim=8,
                                               hypernet_hidden=8, **_small(**kw)),
                       agents=agents)


def _updates_at(learner, vg, frames: int, **kw) -> tuple[list[int], list[float]]:
    """The frames at each update of a :func:`train` loop, and the replay's size at each."""
    at, held = [], []

    def hook(frame: int, metrics: dict[str, float]) -> None:
        at.append(frame)
        held.append(metrics["charts/buffer_size"])

    train(learner, vg, frames, progress=False, on_update=hook, **kw)
    return at, held


@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_a_turn_based_run_updates_from_learning_starts_frames(mixer):
    """Kuhn poker, the learner in player_0's seat against random play (a single run's
    setting): the first update comes at ``learning_starts`` frames and one follows every step
    (``train_every=1``), though the replay holds about half as many transitions."""
    vg = games.VectorGame("openspiel/kuhn_poker", COPIES, seed=0, with_state=True)
    learner = _vdn(vg.spec, mixer, agents=("player_0",), learning_starts=200)
    at, held = _updates_at(learner, vg, 400,
                           opponents={"player_1": RandomPolicy(vg.spec, seed=1)})
    assert at[0] == 200
    assert len(at) == (400 - 200) // COPIES + 1  # 51
    assert held[0] < 150  # fewer transitions than frames: one per own turn


def test_self_play_holding_both_seats_updates_from_learning_starts_frames():
    """Both seats of Kuhn poker held: each move is a transition of its team, but the ones
    still open (waiting for the team's next turn) are not stored yet."""
    vg = games.VectorGame("openspiel/kuhn_poker", COPIES, seed=0, with_state=True)
    at, held = _updates_at(_vdn(vg.spec, "vdn", learning_starts=200), vg, 400)
    assert at[0] == 200 and held[0] < 200
    assert len(at) == (400 - 200) // COPIES + 1


def test_one_seat_against_a_fixed_opponent_counts_the_opponents_frames_too():
    """Tic-tac-toe, the learner holds player_0 against random play: frames are steps of the
    game, the opponent's turns included (the replay fills at about half that rate)."""
    vg = games.VectorGame("openspiel/tic_tac_toe", COPIES, seed=0, with_state=True)
    learner = _vdn(vg.spec, "vdn", agents=("player_0",), learning_starts=120)
    at, held = _updates_at(learner, vg, 240,
                           opponents={"player_1": RandomPolicy(vg.spec, seed=1)})
    assert at[0] == 120
    assert len(at) == (240 - 120) // COPIES + 1  # 31
    assert held[0] <= 120 // 2 + COPIES


def test_batch_size_still_bounds_the_first_update():
    """A minibatch must be there to sample: ``batch_size`` transitions above the frames'
    warm-up keep the first update back until the replay holds them."""
    vg = games.VectorGame("openspiel/kuhn_poker", COPIES, seed=0, with_state=True)
    learner = _vdn(vg.spec, "vdn", learning_starts=8)
    learner.cfg.batch_size = 64
    at, held = _updates_at(learner, vg, 200)
    assert held[0] >= 64 > held[0] - COPIES * 2  # the first step that holds a minibatch
    assert at[0] > 64  # frames past the batch: fewer transitions than frames


def test_a_resume_without_the_replay_refills_learning_starts_frames():
    """``checkpoint_buffer=false``: the resumed learner's replay starts empty and it collects
    ``learning_starts`` frames again before its next update (README); with the replay it
    goes on updating at once."""
    def run(learner, seed):
        vg = games.VectorGame("openspiel/kuhn_poker", COPIES, seed=seed, with_state=True)
        return _updates_at(learner, vg, 240,
                           opponents={"player_1": RandomPolicy(vg.spec, seed=seed)})[0]

    spec = games.make("openspiel/kuhn_poker").spec
    for keep, first in ((False, 200), (True, COPIES)):
        learner = _vdn(spec, "vdn", agents=("player_0",), learning_starts=200,
                       checkpoint_buffer=keep)
        assert run(learner, 0)[0] == 200
        resumed = _vdn(spec, "vdn", agents=("player_0",), learning_starts=200,
                       checkpoint_buffer=keep)
        resumed.load_state_dict(learner.state_dict())
        assert resumed.buffer.frames == (240 if keep else 0)
        assert run(resumed, 1)[0] == first, keep


def test_maddpg_learning_starts_above_the_replay_capacity_still_starts():
    """MADDPG waited for ``learning_starts`` stored transitions: above ``buffer_size`` it
    never updated. Frames reach it."""
    vg = games.VectorGame("matrix/climbing", COPIES, seed=0, with_state=True)
    learner = MADDPG(vg.spec, MADDPGConfig(**_small(learning_starts=80, buffer_size=40)))
    at, held = _updates_at(learner, vg, 120)
    assert at[0] == 80 and held[0] == 40
    assert len(at) == (120 - 80) // COPIES + 1


def test_a_resumed_learners_warm_up_left_counts_the_frames_played():
    """The budget notes' warm-up left (``marl.train._replay_held``) subtracted the replay's
    transitions from ``learning_starts`` frames: on a turn-based game a resumed learner was
    told its warm-up had about twice as far to go as it had."""
    from marl.train import _replay_held

    vg = games.VectorGame("openspiel/kuhn_poker", COPIES, seed=0, with_state=True)
    learner = _vdn(vg.spec, "vdn", agents=("player_0",), learning_starts=10_000)
    train(learner, vg, 400, progress=False,
          opponents={"player_1": RandomPolicy(vg.spec, seed=1)})
    assert len(learner.buffer) < learner.buffer.frames == 400
    assert _replay_held(learner) == 400
