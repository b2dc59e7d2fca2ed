"""A snapshot whose continuous box reaches outside the game's is refused before it plays
(fix26c).

A continuous policy maps its outputs onto the box it recorded (``Actor.to_game``), whatever
the game says. ``seats_mismatch`` compared the kind, the number and the shape of actions, not
a box's bounds: kinematic_bicycle snapshots recorded [-1, 1] of steering before boxes had
bounds per dimension (it steers in [-0.52, 0.52]), and such a snapshot was taken and then
refused by ``Game.step`` one step into a match, in words naming no snapshot
(``...: action [-1.0, 0.32, ...] for adversary_0 is outside [0.0, 1.0]``), after the
database was made.
"""

from __future__ import annotations

import dataclasses

import games
from marl import registry
from populations.evaluation import seats_mismatch
from tests.populations.test_cli_inputs import _eval

BICYCLE = "vmas/kinematic_bicycle"
ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"


def _with_box(spec: games.GameSpec, low, high, agents=None) -> games.GameSpec:
    """``spec`` with the boxes of ``agents`` (default: all) bounded by ``low`` and ``high``:
    the spec a snapshot was trained on before the game's bounds changed."""
    boxes = {a: games.ActionSpace("continuous", shape=s.shape, low=low, high=high)
             if agents is None or a in agents else s for a, s in spec.action_spaces.items()}
    return dataclasses.replace(spec, action_spaces=boxes)


def _meta(spec: games.GameSpec):
    return registry.get("mappo").build(spec, seed=0).policy().meta


def test_a_kinematic_bicycle_snapshot_of_the_old_box_is_refused():
    spec = games.make(BICYCLE, continuous_actions=True).spec
    low, high = spec.action_spaces["bicycle_0"].bounds()
    assert high[1] < 0.53  # the game steers in [-0.52, 0.52]
    old = _with_box(spec, -1.0, 1.0, ("bicycle_0",))  # as the adapter said before fix25d
    assert seats_mismatch(_meta(old), spec) == (
        "trained with continuous actions in [-1, 1] in each dimension for bicycle_0; "
        f"{spec.name} gives [-1, 1] x [-0.523599, 0.523599], and its actions would leave "
        "that box")
    assert seats_mismatch(_meta(spec), spec) is None  # trained on the game's own box


def test_a_box_inside_the_games_plays():
    # every action the policy sends is inside the game's box: it plays as it was trained
    spec = games.make(BICYCLE, continuous_actions=True).spec
    inside = _with_box(spec, (-0.5, -0.25), (0.5, 0.25), ("bicycle_0",))
    assert seats_mismatch(_meta(inside), spec) is None
    # one dimension past the game's is enough
    past = _with_box(spec, (-1.0, -0.6), (1.0, 0.25), ("bicycle_0",))
    assert seats_mismatch(_meta(past), spec) == (
        "trained with continuous actions in [-1, 1] x [-0.6, 0.25] for bicycle_0; "
        f"{spec.name} gives [-1, 1] x [-0.523599, 0.523599], and its actions would leave "
        "that box")


def test_selfplay_eval_refuses_snapshots_of_another_box_before_the_match(tmp_path, capsys):
    kwargs = '{"continuous_actions": true}'
    spec = games.make(ADVERSARY, continuous_actions=True).spec  # boxes [0, 1]
    old = _with_box(spec, -1.0, 1.0)
    files = [str(registry.get("mappo").build(old, seed=i).policy().save(tmp_path / f"p{i}.pt"))
             for i in range(2)]
    db = tmp_path / "r.db"
    code, _, err = _eval([*files, "--game", ADVERSARY, "--game-kwargs", kwargs,
                          "--db", str(db)], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.rstrip() == (
        f"selfplay-eval: p0 ({spec.name}) was trained with continuous actions in [-1, 1] in "
        f"each dimension for adversary_0, agent_0, agent_1; {spec.name} gives [0, 1] in each "
        "dimension, and its actions would leave that box"), err
    assert not db.exists()  # refused before anything was made
