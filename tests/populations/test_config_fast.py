"""selfplay-train refuses the common bad values (``num_envs=0``, ``seed=abc``, ``device=gpu``,
an unknown game) before the schema loads: it imported torch first (~3 s of CPU to say a
value is wrong; ~0.5 s now), with the same message ExperimentConfig gives."""

import dataclasses
import subprocess
import sys
import typing

import pytest

from populations import config_checks
from populations.experiment import ExperimentConfig, GameConfig
from tests import subprocs

BAD = {
    "num_envs=0": "bad config: num_envs=0; expected an integer >= 1",
    "seed=abc": "bad config: seed='abc'; expected an integer",
    "checkpoint_every_s=-1": "bad config: checkpoint_every_s=-1; expected seconds >= 0",
    "device=gpu": "bad config: device='gpu' unknown; choose one of cpu, cuda",
    "torch_threads=0": "bad config: torch_threads=0; expected an integer >= 1",
    "frames='0'": "bad config: frames=0; expected an integer >= 1",
    "game.name=chesss": "unknown game 'chesss'; registered:",
    "imports=[no_such_module]": "imports: cannot import 'no_such_module'",
}
GOOD = ["num_envs=4", "seed=3", "device=cuda:1", "game.name=openspiel/kuhn_poker",
        "seed='5'", 'checkpoint_every_s="30"',  # quoted numbers: OmegaConf converts them
        "game.name=tool/relay", "frames=${oc.env:FRAMES,100}", "-m", "num_envs=2,4"]

CHECK = """
import sys
from populations.command_line import CLIError
from populations.train_overrides import check_command_line
for args in {bad!r}:
    try:
        check_command_line(args)
        print("accepted", args)
    except CLIError as err:
        print(err)
    except ValueError as err:  # games' UnknownGameError
        print(err)
check_command_line({good!r})
# marl.configs is torch-free (the device refusal's words live there); any other marl module
# (and torch, and the experiment) is heavy
print("heavy:", sorted(m for m in sys.modules if m in ("torch", "populations.experiment")
                       or (m.split(".")[0] == "marl" and m not in ("marl", "marl.configs"))))
"""


def test_common_bad_values_are_refused_before_torch_loads(tmp_path):
    bad = [[override] for override in BAD] + [["-m", "num_envs=4,0"]]
    out = subprocess.run([sys.executable, "-c", CHECK.format(bad=bad, good=GOOD)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    lines = out.splitlines()
    for line, message in zip(lines, [*BAD.values(), BAD["num_envs=0"]], strict=False):
        assert line.startswith(message), (line, message)
    assert lines[len(bad):] == ["heavy: []"], out


COPIES = "num_envs=2 game copies cannot be shared by rollout_workers=3: give num_envs >= 3"
NOT_MAPPO = "rollout workers train MAPPO/IPPO learners (on-policy replay); got algo=vdn: use "


@pytest.mark.parametrize("line, refused", [
    ("runner.rollout_workers=3 num_envs=2", COPIES),
    ("-m runner.rollout_workers=3 num_envs=8,2", COPIES),  # one job of the sweep
    ("algo=vdn num_envs=2 runner.rollout_workers=3", NOT_MAPPO),  # the learner first (CT-3)
    ("algo=vdn num_envs=8 runner.rollout_workers=3", NOT_MAPPO),
    ("encoder=mlp_gru num_envs=8 runner.rollout_workers=2",
     "rollout workers do not carry GRU states between rounds yet; use rollout_workers=0"),
    ("game=vmas_spread game.kwargs.continuous_actions=true num_envs=8 "
     "runner.rollout_workers=2", "rollout workers replay discrete actions only"),
    ("runner.rollout_workers=3 num_envs=3", None),
    ("runner.rollout_workers=0 num_envs=1", None),
    ("algo=vdn num_envs=1", None),  # no workers
    ("algo=llm_grpo runner.rollout_workers=3 num_envs=2", None),  # an LLM team: no copies
    ("experiment=kuhn_llm_selfplay runner.rollout_workers=3 num_envs=2", None),
    ("population=psro runner.rollout_workers=3 num_envs=2", None),  # leagues share none
    ("runner.rollout_workers=3 num_envs=2 population.kind=league", None),
    ("-m algo=mappo,llm_grpo runner.rollout_workers=3 num_envs=2", None),  # schema decides
    ("num_envs=${eval_episodes}", None),  # interpolations: the schema resolves them (CT-2)
    ("runner.rollout_workers=3 num_envs=${runner.rollout_workers}", None),
])
def test_rollout_workers_are_refused_before_torch_where_the_run_refuses_them(line, refused):
    """A population=none run of a learner that steps copies of the game shares num_envs among
    its rollout workers, and only MAPPO/IPPO (feed-forward) train on them: fewer copies than
    workers or another learner is refused before torch (it was refused after the run folder
    was made, ~5 s of CPU), in the run's words."""
    from populations.command_line import CLIError
    from populations.train_overrides import check_command_line

    if refused:
        with pytest.raises(CLIError) as err:
            check_command_line(line.split())
        assert str(err.value).startswith(f"bad config: {refused}"), str(err.value)
    else:
        check_command_line(line.split())


def test_the_learners_sharing_game_copies_are_marls_stepped_ones():
    """config_checks.STEPPED_ALGOS (torch-free) lists marl's learners that do not own their
    rollouts, as the registry declares them."""
    from marl import registry

    stepped = {name for name, entry in registry.entries().items()
               if not entry.capabilities.own_rollouts and entry.cls.__module__.startswith("marl.")}
    assert set(config_checks.STEPPED_ALGOS) == stepped
    from marl.mappo import MAPPO  # what populations.rollouts' workers train

    assert set(config_checks.ROLLOUT_ALGOS) == {
        name for name in stepped if issubclass(registry.get(name).cls, MAPPO)}
    assert ExperimentConfig.num_envs == config_checks.NUM_ENVS


def test_the_fast_checks_cover_experiment_configs_fields():
    """One source: ExperimentConfig runs the same checks, on fields of the listed types."""
    hints = typing.get_type_hints(ExperimentConfig)
    assert {k: hints[k] for k in config_checks.TOP_LEVEL_TYPES} == config_checks.TOP_LEVEL_TYPES
    game = GameConfig(name="openspiel/kuhn_poker")
    for field, value in (("torch_threads", 0), ("num_envs", 0), ("device", "gpu")):
        with pytest.raises(ValueError, match=f"^{field}="):
            dataclasses.replace(ExperimentConfig(game=game), **{field: value})


def test_game_kwargs_a_game_takes_but_cannot_use_are_refused_up_front():
    """selfplay-train game=mpe_adversary game.kwargs.max_cycles='"5"': the game was built,
    the run folder made, and the first step raised a TypeError traceback. The MPE adapter
    now refuses that max_cycles itself; examples/nim.py takes any stones when built."""
    import nim  # noqa: F401 - registers "nim" (examples/ is on sys.path: tests/conftest.py)

    from populations.experiment import check_experiment

    game = GameConfig(name="nim", kwargs={"stones": 1e400})
    with pytest.raises(ValueError, match=r"nim fails at reset\(seed=0\) with the game "
                       r"arguments \{'stones': inf\}: observe raised TypeError: .* \(at .*nim\.py:"
                       r"\d+ in observe\)"):
        check_experiment(ExperimentConfig(game=game))


USER_MODULE = '''
from hydra.core.config_store import ConfigStore
ConfigStore.instance().store(group="algo", name="my_algo", node={"algo": "ippo"},
                             package="_global_")
'''
EARLY_IMPORTS = """
import os, sys
sys.path = [p for p in sys.path if p not in ("", os.getcwd())]  # as the console script has it
from populations.train_overrides import check_command_line
check_command_line(["imports=[mypreset]", "algo=my_algo"])  # the module's preset is known
import importlib.util
print(importlib.util.find_spec("configs").origin)  # the package Hydra will load (not run)
"""


def test_early_imports_keep_the_shipped_configs_and_bring_the_users_presets(tmp_path):
    """The command line's modules are imported before Hydra loads ``pkg://configs``, with the
    working folder first on sys.path: a project's own ``configs/`` there was taken for the
    shipped one (review I6). Imported before the group-option check, a preset the module
    stores in Hydra's ConfigStore is accepted, as Hydra composes it (review I7)."""
    (tmp_path / "mypreset.py").write_text(USER_MODULE)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "__init__.py").write_text("")
    (tmp_path / "configs" / "config.yaml").write_text("lr: 0.1\n")
    out = subprocs.run([sys.executable, "-c", EARLY_IMPORTS], cwd=tmp_path,
                        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert str(tmp_path) not in out.stdout and out.stdout.strip().endswith(
        "configs/__init__.py"), out.stdout
