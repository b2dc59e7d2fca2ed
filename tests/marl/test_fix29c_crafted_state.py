"""Crafted learner checkpoints and policy files (real files, written here) that loaded
silently and then failed mid-run with a traceback: NaN or inf weights (torch's
``probability tensor contains either inf, nan`` at the first action), an optimizer state
that ``torch.optim.Optimizer.load_state_dict`` accepts but cannot step with (``lr='x'``:
a ``TypeError`` mid-update; a moment of another shape: a ``RuntimeError``), and policy
metadata nested 20,000 deep (a ``RecursionError`` building the error's repr). Each is now
a one-line refusal naming the file's bad field, and a well-formed file still loads."""

import sys

import pytest
import torch

import games
from marl import registry
from marl.core import POLICY_FORMAT, CheckpointError, PolicyLoadError, load_policy

SPREAD = games.make("pettingzoo/mpe2.simple_spread_v3", N=2, max_cycles=5).spec
OPTIMIZERS = {"mappo": "opt", "maddpg": "critic_opt", "vdn": "optimizer", "qmix": "optimizer"}


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text and len(text) < 400, text
    return text


def _policy_file(path, edit):
    pol = registry.get("mappo").build(SPREAD, seed=0).policy()
    data = {"format": POLICY_FORMAT, "meta": pol.meta.to_dict(), "payload": pol.payload()}
    edit(data)
    torch.save(data, path)
    return path


@pytest.mark.parametrize("value, word", [(float("nan"), "NaN"), (float("inf"), "inf")])
def test_a_policy_file_with_nonfinite_weights_is_refused(tmp_path, value, word):
    def poison(data):
        data["payload"]["actors"]["0.head.0.weight"][0, 0] = value

    path = _policy_file(tmp_path / "p.pt", poison)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert f"{path}: mappo policy holds {word} in actors['0.head.0.weight']" in _one_line(err)


def test_deeply_nested_policy_metadata_is_one_short_line(tmp_path):
    deep: list = []
    cur = deep
    for _ in range(20_000):
        cur.append([])
        cur = cur[0]

    def nest(data):
        data["meta"]["extra"] = deep

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)  # torch.save pickles it recursively; loading does not
    try:
        path = _policy_file(tmp_path / "p.pt", nest)
    finally:
        sys.setrecursionlimit(limit)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert "policy metadata field 'extra' is malformed: [[[[" in _one_line(err)


def _adam_state(opt_sd, params, edit=None):
    """A saved Adam state with every parameter's step and moments (as after a step)."""
    ids = [i for g in opt_sd["param_groups"] for i in g["params"]]
    opt_sd["state"] = {i: {"step": torch.tensor(3.0), "exp_avg": torch.zeros_like(p),
                           "exp_avg_sq": torch.ones_like(p)}
                       for i, p in zip(ids, params, strict=True)}
    return opt_sd


def _learner_file(tmp_path, kind, edit=None):
    learner = registry.get(kind).build(SPREAD, seed=0)
    path = learner.save(tmp_path / f"{kind}.pt")
    data = torch.load(path, weights_only=True)
    name = OPTIMIZERS[kind]
    opt = getattr(learner, name)
    _adam_state(data["learner"][name], [p for g in opt.param_groups for p in g["params"]])
    if edit is not None:
        edit(data["learner"], name)
    torch.save(data, path)
    return registry.get(kind).build(SPREAD, seed=1), path


def _group(state, name):
    return state[name]["param_groups"][0]


def _first(state, name):
    return state[name]["state"][_group(state, name)["params"][0]]


CRAFTED = {  # edit of the learner's state -> what the refusal says
    "lr a string": (lambda s, n: _group(s, n).update(lr="x"),
                    "param_groups[0]['lr'] is 'x'; accepted: a finite number >= 0"),
    "lr NaN": (lambda s, n: _group(s, n).update(lr=float("nan")),
               "param_groups[0]['lr'] is nan; accepted: a finite number >= 0"),
    "lr negative": (lambda s, n: _group(s, n).update(lr=-1.0), "'lr'] is -1.0"),
    "betas": (lambda s, n: _group(s, n).update(betas=(0.9, 2.0)),
              "param_groups[0]['betas'] is (0.9, 2.0); accepted: 2 numbers in [0, 1)"),
    "amsgrad without its moment": (lambda s, n: _group(s, n).update(amsgrad=True),
                                   "param_groups[0]['amsgrad'] is True; accepted: False"),
    "moment of another shape": (lambda s, n: _first(s, n).update(exp_avg=torch.zeros(3)),
                                "['exp_avg'] has shape [3]; its parameter has"),
    "step a vector": (lambda s, n: _first(s, n).update(step=torch.zeros(4)),
                      "['step'] is tensor([0., 0., 0., 0.]); accepted: a finite count >= 0"),
    "moment missing": (lambda s, n: _first(s, n).pop("exp_avg"),
                       "holds ['exp_avg_sq', 'step']; accepted: ['exp_avg', 'exp_avg_sq', "
                       "'step'] (or nothing)"),
    "a parameter too many": (lambda s, n: s[n]["state"].update({10**6: {}}),
                             "state holds parameter 1000000"),
    "group of another size": (lambda s, n: _group(s, n)["params"].pop(),
                              "param_groups[0] has"),
}


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
@pytest.mark.parametrize("craft", sorted(CRAFTED))
def test_a_crafted_optimizer_state_is_refused_on_load(tmp_path, kind, craft):
    edit, expected = CRAFTED[craft]
    learner, path = _learner_file(tmp_path, kind, edit)
    with pytest.raises(ValueError) as err:
        learner.load(path)
    text = _one_line(err)
    assert text.startswith(f"optimizer state {OPTIMIZERS[kind]!r}: ") and expected in text, text


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_a_wellformed_optimizer_state_still_loads(tmp_path, kind):
    learner, path = _learner_file(tmp_path, kind)
    learner.load(path)
    opt = getattr(learner, OPTIMIZERS[kind])
    assert len(opt.state) == sum(len(g["params"]) for g in opt.param_groups)
    assert all(float(st["step"]) == 3.0 for st in opt.state.values())


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
@pytest.mark.parametrize("where", ["weights", "optimizer moment"])
def test_a_learner_checkpoint_with_nan_is_refused(tmp_path, kind, where):
    def poison(state, name):
        if where == "optimizer moment":
            _first(state, name)["exp_avg_sq"].fill_(float("nan"))
            return
        key = next(k for k in ("actors", "actor", "qnet") if k in state)
        state[key][next(iter(state[key]))].view(-1)[0] = float("nan")

    learner, path = _learner_file(tmp_path, kind, poison)
    with pytest.raises(CheckpointError) as err:
        learner.load(path)
    named = "['exp_avg_sq']" if where == "optimizer moment" else "["
    assert f"learner checkpoint {path} holds NaN in " in _one_line(err)
    assert named in str(err.value)


def test_a_learner_state_with_nan_weights_is_refused_by_load_state_dict():
    """The path a resumed single run takes (``load_state_dict`` of the file's state)."""
    learner = registry.get("mappo").build(SPREAD, seed=0)
    state = learner.state_dict()
    state["critics"][next(iter(state["critics"]))].view(-1)[0] = float("inf")
    with pytest.raises(ValueError, match=r"learner state holds inf in critics\[") as err:
        registry.get("mappo").build(SPREAD, seed=1).load_state_dict(state)
    _one_line(err)


@pytest.mark.parametrize("planted", ["fifo", "device link", "dangling link"])
def test_a_policy_path_that_is_no_regular_file_says_what_it_is(tmp_path, planted):
    import os

    path = tmp_path / "p.pt"
    if planted == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero" if planted == "device link" else tmp_path / "gone.pt")
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    said = {"fifo": f"policy {path} is not a regular file but a FIFO",
            "device link": f"policy {path} is not a regular file but a character device "
                           "(through a link)",
            "dangling link": f"policy file {path} is a link to a missing file"}[planted]
    assert said in _one_line(err)


@pytest.mark.parametrize("step", [-1, 10**30])
def test_a_policy_step_below_zero_or_past_sqlite_is_refused(tmp_path, step):
    """selfplay-eval records the step with the policy: 10**30 was an OverflowError there
    (said as "out of memory or a size too large"), -1 a learner step recorded as is."""
    path = _policy_file(tmp_path / "p.pt", lambda d: d["meta"].update(step=step))
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert _one_line(err) == (f"{path}: policy metadata field 'step' is malformed: {step}; "
                              "accepted: a learner step >= 0 below 2**63")


def test_a_policy_file_with_complex_weights_is_refused(tmp_path):
    """Complex weights loaded with torch's two-line warning, their imaginary parts dropped."""
    def complexify(data):
        actors = data["payload"]["actors"]
        actors["0.head.0.weight"] = actors["0.head.0.weight"].to(torch.complex64)

    path = _policy_file(tmp_path / "p.pt", complexify)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert _one_line(err) == (f"{path}: mappo policy holds complex64 values in "
                              "actors['0.head.0.weight']; a policy's weights must be finite "
                              "real numbers")
