"""Walk 24: VDN/QMIX/MADDPG took one gradient step per update however many copies played.
``selfplay-train algo=qmix game=vmas_spread num_envs=4096 frames=122880`` logged 30 updates:
30 x 128 samples, ~3 % of the frames ever trained on, with ε decayed after 5 steps and a
replay of 12 steps, without a word. Now ``gradient_steps`` (``auto`` by default:
ceil(copies * train_every / batch_size), one sample per frame played) sets the gradient steps
of an update, the hard target copies count gradient steps, and a first step whose settings
waste most of the frames (few samples per frame, a short replay, ε decayed within a few
steps) logs one warning line each naming the keys to change."""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path

import pytest
import torch

import games
from marl.configs import (
    MADDPGConfig,
    ValueDecompConfig,
    gradient_steps_per_update,
    replay_warnings,
)
from marl.maddpg import MADDPG
from marl.train import train
from marl.value_decomp import ValueDecomp
from tests import subprocs

SPREAD = "pettingzoo/mpe2.simple_spread_v3"
REPLAY = ("vdn", "qmix", "maddpg")
ROOT = Path(__file__).resolve().parents[2]


def _learner(algo: str, spec, **kw):
    if algo == "maddpg":
        return MADDPG(spec, MADDPGConfig(hidden=(16,), **kw))
    return ValueDecomp(spec, ValueDecompConfig(mixer=algo, hidden=(16,), mixing_embed_dim=8,
                                               hypernet_hidden=16, **kw))


def _count_steps(learner) -> list[int]:
    """Optimizer steps of each of the learner's optimizers, counted by hooks."""
    opts = [learner.critic_opt, learner.actor_opt] if isinstance(learner, MADDPG) \
        else [learner.optimizer]
    counts = [0] * len(opts)
    for i, opt in enumerate(opts):
        def hook(_opt, _args, _kwargs, i=i):
            counts[i] += 1
        opt.register_step_post_hook(hook)
    return counts


def _run(algo: str, copies: int, frames: int, **kw):
    vg = games.VectorGame("matrix/climbing", copies, seed=0, with_state=True)
    learner = _learner(algo, vg.spec, learning_starts=16, **kw)
    counts = _count_steps(learner)
    res = train(learner, vg, frames, progress=False)
    return learner, res, counts


@pytest.mark.parametrize("algo", REPLAY)
def test_gradient_steps_k_takes_k_optimizer_steps_per_update(algo):
    one, res1, counts1 = _run(algo, 4, 64, batch_size=8, gradient_steps=1)
    three, res3, counts3 = _run(algo, 4, 64, batch_size=8, gradient_steps=3)
    assert res1.updates == res3.updates == 13  # updates every step from frame 16 to 64
    assert counts1 == [res1.updates] * len(counts1)
    assert counts3 == [3 * res3.updates] * len(counts3)  # critic and actor alike (MADDPG)
    assert (one.updates, one.gradient_steps) == (13, 13)
    assert (three.updates, three.gradient_steps) == (13, 39)
    last = res3.metrics[-1]
    assert last["charts/updates"] == 13 and last["charts/gradient_steps"] == 39
    assert three.policy().meta.step == one.policy().meta.step == 13  # updates, as before


@pytest.mark.parametrize("algo", REPLAY)
def test_auto_samples_about_one_transition_per_frame_played(algo):
    # 64 copies x train_every 1 over batches of 16: 4 gradient steps an update
    learner, res, counts = _run(algo, 64, 64 * 5, batch_size=16)
    assert learner.cfg.gradient_steps == "auto" and learner.steps_per_update() == 4
    assert counts == [4 * res.updates] * len(counts) and res.updates == 5
    # ... train_every 2: 128 frames an update, 8 steps of 16
    learner, res, counts = _run(algo, 64, 64 * 6, batch_size=16, train_every=2)
    assert counts == [8 * res.updates] * len(counts) and res.updates == 3
    # as many copies as a batch or fewer: one step, as before the setting
    learner, res, counts = _run(algo, 4, 64, batch_size=8)
    assert counts == [res.updates] * len(counts) and learner.steps_per_update() == 1


def test_gradient_steps_per_update_rounds_up():
    assert gradient_steps_per_update("auto", 4096, 1, 128) == 32  # the walk's 30 updates
    assert gradient_steps_per_update("auto", 1024, 1, 256) == 4  # vmas_tag_league's MADDPG
    assert gradient_steps_per_update("auto", 100, 1, 128) == 1
    assert gradient_steps_per_update("auto", 129, 1, 128) == 2
    assert gradient_steps_per_update("auto", 0, 1, 128) == 1  # nothing observed yet
    assert gradient_steps_per_update(5, 4096, 1, 128) == 5


@pytest.mark.parametrize(("interval", "copied"), [(3, True), (4, False)])
def test_hard_target_copies_count_gradient_steps(interval, copied):
    vg = games.VectorGame("matrix/climbing", 4, seed=0, with_state=True)
    learner = _learner("qmix", vg.spec, batch_size=4, learning_starts=4, gradient_steps=3,
                       target_update_interval=interval)
    vs = vg.reset()
    while not learner.ready():
        vs = vg.step(learner.act(vs))
        learner.observe(vs)
    learner.update()  # 3 gradient steps: a copy at the 3rd (interval 3), none (interval 4)
    same = all(torch.equal(p, t) for p, t in zip(learner.qnet.parameters(),
                                                  learner.target_qnet.parameters(), strict=True))
    assert same == copied and learner.gradient_steps == 3


@pytest.mark.parametrize("algo", ["qmix", "maddpg"])
def test_checkpoint_keeps_gradient_steps_and_reads_old_counters(algo):
    learner, res, _ = _run(algo, 4, 32, batch_size=8, gradient_steps=2)
    state = learner.state_dict()
    twin = _learner(algo, learner.spec, batch_size=8, learning_starts=16, gradient_steps=2)
    twin.load_state_dict(state)
    assert (twin.updates, twin.gradient_steps) == (learner.updates, 2 * learner.updates)
    assert twin._copies == 4  # warned of already: a resumed run does not warn again
    old = {**state, "counters": state["counters"][:3]}  # saved before gradient_steps
    twin.load_state_dict(old)
    assert twin.gradient_steps == twin.updates == learner.updates and twin._copies == 0


# ------------------------------------------------------------------------------ warnings
def _warnings(caplog, algo, vg, **kw):
    learner = _learner(algo, vg.spec, **kw)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        vs = vg.reset()
        for _ in range(2):  # once, at the first step
            vs = vg.step(learner.act(vs))
            learner.observe(vs)
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _keys(notes):
    return [n.split(" ")[0].rstrip(":") for n in notes]


def test_vmas_4096_copies_warns_once_per_setting(caplog):
    vg = games.VectorGame("vmas/simple_spread", 4096, seed=0, with_state=True, max_steps=25)
    notes = _warnings(caplog, "qmix", vg, gradient_steps=1)
    assert len(notes) == 3, notes
    assert notes[0].startswith("qmix: an update samples 128 transitions "
                               "(qmix.gradient_steps=1 x qmix.batch_size=128) for the 4096 "
                               "frames played since the last (4096 copies x "
                               "qmix.train_every=1): about 3.1% of them; raise "
                               "qmix.gradient_steps"), notes
    assert notes[1].startswith("qmix.buffer_size=50000 holds only the last 12 steps of 4096 "
                               "copies; raise it to 819200"), notes
    assert notes[2].startswith("qmix.eps_decay_frames=20000: epsilon reaches eps_end=0.05 "
                               "after 5 steps of 4096 copies"), notes
    # auto (the default) samples every frame: the replay and ε are still short
    notes = _warnings(caplog, "qmix", vg)
    assert _keys(notes) == ["qmix.buffer_size=50000",
                                                "qmix.eps_decay_frames=20000"], notes


def test_maddpg_at_1024_copies_warns_of_its_replay_not_its_updates(caplog):
    vg = games.VectorGame("vmas/simple_spread", 1024, seed=0, with_state=True, max_steps=25)
    notes = _warnings(caplog, "maddpg", vg, gradient_steps=1)
    # 256 of 1024 frames is a quarter: within MAX_UNSAMPLED, not warned
    assert _keys(notes) == ["maddpg.buffer_size=100000"], notes
    assert notes[0].startswith("maddpg.buffer_size=100000 holds only the last 97 steps of "
                               "1024 copies; raise it to 204800 or more (200 steps)"), notes
    notes = _warnings(caplog, "maddpg", vg, gradient_steps=1, batch_size=64)  # 6.2 %
    assert notes[0].startswith("maddpg: an update samples 64 transitions "
                               "(maddpg.gradient_steps=1 x maddpg.batch_size=64) for the "
                               "1024 frames"), notes


def test_a_small_pettingzoo_game_warns_of_what_its_settings_waste(caplog):
    vg = games.VectorGame(SPREAD, 8, seed=0, with_state=True, N=2, max_cycles=25)
    notes = _warnings(caplog, "vdn", vg, gradient_steps=1, train_every=200, buffer_size=1000,
                      eps_decay_frames=100)
    assert _keys(notes) == ["vdn", "vdn.buffer_size=1000",
                                                "vdn.eps_decay_frames=100"], notes
    assert "for the 1600 frames played since the last (8 copies x vdn.train_every=200)" \
        in notes[0]
    assert not _warnings(caplog, "vdn", vg)  # its defaults: nothing


def _experiment(*overrides):
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import populations.cli  # noqa: F401  (registers the schema)

    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=list(overrides)))


def _replay_settings(cfg):
    """(section, settings) of every replay learner an experiment trains."""
    from marl import registry
    from populations.member_specs import member_settings, parse_members

    pop = cfg.population
    out = [(cfg.algo, getattr(cfg, cfg.algo))] if cfg.algo in REPLAY else []
    if pop.kind == "psro" and pop.oracle in REPLAY:
        out.append((pop.oracle, getattr(cfg, pop.oracle)))
    for spec in parse_members(pop.members or []) if pop.kind == "league" else []:
        if spec.algo in REPLAY:
            entry = registry.get(spec.algo)
            out.append((spec.algo, member_settings(getattr(cfg, spec.algo), spec, entry)))
    return out


PRESETS = sorted(p.stem for p in (ROOT / "configs" / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("overrides", [[f"algo={a}"] for a in REPLAY] + [
    [f"experiment={e}"] for e in PRESETS])
def test_the_shipped_presets_warn_of_nothing(overrides):
    cfg = _experiment(*overrides)
    for section, settings in _replay_settings(cfg):
        assert replay_warnings(section, settings, cfg.num_envs) == [], (overrides, section)
    if overrides[0].startswith("algo="):
        assert _replay_settings(cfg)  # the check saw the learner


def test_the_league_presets_hold_replay_learners():
    cfg = _experiment("experiment=mixed_algo_league")
    assert {s for s, _ in _replay_settings(cfg)} == {"qmix", "maddpg"}
    cfg = _experiment("experiment=psro_maddpg_oracle")
    assert [s for s, _ in _replay_settings(cfg)] == ["maddpg"]


# ------------------------------------------------------------------------------ settings
@pytest.mark.parametrize("value", [0, -1, 10_001, 2.5, "4", "fast", True, None])
@pytest.mark.parametrize("cls", [ValueDecompConfig, MADDPGConfig])
def test_bad_gradient_steps_are_one_line(cls, value):
    with pytest.raises(ValueError) as err:
        cls(gradient_steps=value)
    assert str(err.value) == (f"{cls.__name__}.gradient_steps={value!r}; expected an integer "
                              "in [1, 10000] (or 'auto')")


def test_good_gradient_steps_pass():
    for cls in (ValueDecompConfig, MADDPGConfig):
        assert cls().gradient_steps == "auto"
        assert cls(gradient_steps=1).gradient_steps == 1
        assert dataclasses.replace(cls(), gradient_steps=10_000).gradient_steps == 10_000


@pytest.mark.parametrize(("override", "line"), [
    ("qmix.gradient_steps=0", "qmix.gradient_steps=0; expected an integer in [1, 10000] "
                              "(or 'auto')"),
    ("maddpg.gradient_steps=fast", "maddpg.gradient_steps='fast'; expected an integer in "
                                   "[1, 10000] (or 'auto')"),
])
def test_bad_gradient_steps_through_the_cli_are_one_line(override, line, tmp_path):
    proc = subprocs.run(
        [sys.executable, "-m", "populations.cli", override, "frames=4", "progress=false",
         f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [f"selfplay-train: bad config: {line}"], \
        proc.stderr
    assert not (tmp_path / "run").exists()


def test_member_and_command_line_gradient_steps_reach_the_learners():
    cfg = _experiment("experiment=mixed_algo_league", "qmix.gradient_steps=4",
                      "population.members=[mappo,{algo: maddpg, maddpg: {gradient_steps: 2}},"
                      "qmix]")
    got = {s: c.gradient_steps for s, c in _replay_settings(cfg)}
    assert got == {"maddpg": 2, "qmix": 4}
