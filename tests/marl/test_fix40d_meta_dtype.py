"""A crafted file holding a meta tensor (``torch.empty(shape, device="meta")``: a shape with no
values) or a float8 tensor in place of a weight is refused in one line naming the entry and
its dtype: the finiteness check raised torch's traceback on either ("Tensor.item() cannot be
called on meta tensors", '"sum_cpu" not implemented for 'Float8_e4m3fn''), from load_policy,
selfplay-eval and a learner checkpoint's resume alike (review 40, M1)."""

import pytest
import torch

import games
from marl import registry
from marl.core import POLICY_FORMAT, CheckpointError, PolicyLoadError, load_policy
from tests.populations.eval_cli_run import run_eval

KUHN = "openspiel/kuhn_poker"
ENTRY = "0.head.0.weight"
BAD = {"meta": lambda t: torch.empty(t.shape, device="meta"),
       "float8_e4m3fn": lambda t: t.to(torch.float8_e4m3fn)}


def _policy_file(path, kind=None):
    pol = registry.get("mappo").build(games.make(KUHN).spec, seed=0).policy()
    data = {"format": POLICY_FORMAT, "meta": pol.meta.to_dict(), "payload": pol.payload()}
    if kind is not None:
        actors = data["payload"]["actors"]
        actors[ENTRY] = BAD[kind](actors[ENTRY])
    torch.save(data, path)
    return path


def _said(path, kind):
    return (f"policy {path}: payload['actors'][{ENTRY!r}] is a {kind} tensor; accepted: "
            "tensors with values, floating (16 to 64 bits), integer or bool")


@pytest.mark.parametrize("kind", sorted(BAD))
def test_load_policy_refuses_a_meta_or_float8_weight_in_one_line(tmp_path, kind):
    path = _policy_file(tmp_path / "p.pt", kind)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert str(err.value) == _said(path, kind)


@pytest.mark.parametrize("kind", sorted(BAD))
def test_selfplay_eval_refuses_it_without_a_traceback(tmp_path, capsys, kind):
    good, bad = _policy_file(tmp_path / "good.pt"), _policy_file(tmp_path / "bad.pt", kind)
    code, out, err = run_eval(["--game", KUHN, "--db", str(tmp_path / "r.db"), "--episodes",
                               "1", str(good), str(bad)], capsys)
    assert code == 2, (out, err)
    assert "Traceback" not in err and _said(bad, kind) in err, err


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_learner_checkpoint_with_it_is_refused(tmp_path, kind):
    learner = registry.get("mappo").build(games.make(KUHN).spec, seed=0)
    path = learner.save(tmp_path / "l.pt")
    data = torch.load(path, weights_only=True)
    state = data["learner"]
    name, tensor = next((k, v) for k, v in _flat(state) if v.is_floating_point())
    _put(state, name, BAD[kind](tensor))
    torch.save(data, path)
    with pytest.raises(CheckpointError) as err:
        learner.load(path)
    assert f"is a {kind} tensor; accepted: tensors with values" in str(err.value)
    assert str(err.value).startswith(f"learner checkpoint {path}: learner")
    assert "\n" not in str(err.value)


def _flat(tree, path=()):
    if isinstance(tree, torch.Tensor):
        yield path, tree
    elif isinstance(tree, dict):
        for k, v in tree.items():
            yield from _flat(v, (*path, k))


def _put(tree, path, value):
    for k in path[:-1]:
        tree = tree[k]
    tree[path[-1]] = value
