"""A meta or float8 tensor in a learner's state given in memory (``load_state_dict(state)``,
the path a resumed single run takes) was met by the finiteness check's ``t.sum()``: torch's
traceback ("Cannot copy out of meta tensor", "sum_cpu not implemented for 'Float8_e4m3fn'").
Files are refused before (marl.core.check_tensors, d0ca883); the state is refused alike, in
one line naming the tensor and what is accepted."""

import pytest
import torch

import games
from marl import registry
from marl.state_checks import nonfinite_tensor, refuse_nonfinite

SPREAD = games.make("pettingzoo/mpe2.simple_spread_v3", N=2, max_cycles=5).spec
ACCEPTED = "accepted: tensors with values, floating (16 to 64 bits), integer or bool"


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text and len(text) < 400, text
    return text


def _unreadable(kind: str, like: torch.Tensor) -> torch.Tensor:
    if kind == "meta":
        return torch.empty_like(like, device="meta")
    return like.to(torch.float8_e4m3fn)


@pytest.mark.parametrize("kind", ["meta", "float8_e4m3fn"])
def test_nonfinite_tensor_names_a_tensor_it_cannot_read(kind):
    tree = {"actors": {"w": torch.zeros(2), "b": _unreadable(kind, torch.zeros(3))}}
    assert nonfinite_tensor(tree) == f"a {kind} tensor in actors['b'] ({ACCEPTED})"
    with pytest.raises(ValueError) as err:
        refuse_nonfinite(tree, "learner state")
    assert _one_line(err).startswith(f"learner state holds a {kind} tensor in actors['b'] (")


@pytest.mark.parametrize("kind", ["meta", "float8_e4m3fn"])
def test_a_learner_state_with_a_tensor_without_values_is_refused_by_load_state_dict(kind):
    learner = registry.get("mappo").build(SPREAD, seed=0)
    state = learner.state_dict()
    name = next(iter(state["critics"]))
    state["critics"][name] = _unreadable(kind, state["critics"][name])
    with pytest.raises(ValueError) as err:
        registry.get("mappo").build(SPREAD, seed=1).load_state_dict(state)
    assert f"learner state holds a {kind} tensor in critics[{name!r}] ({ACCEPTED})" \
        in _one_line(err)


def test_readable_tensors_still_pass():
    tree = {"a": torch.zeros(2, dtype=torch.int64), "b": torch.ones(2, dtype=torch.bfloat16),
            "c": torch.tensor([True])}
    assert nonfinite_tensor(tree) is None
    refuse_nonfinite(tree, "learner state")
