"""``selfplay-train`` composes its config once: Hydra composed it a first time only to read
``hydra.mode`` (~0.2 s CPU of every run). The mode still comes from ``-m``, from a
``hydra.mode=`` override, or from a user's config file that sets it."""

import subprocess
import sys
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from tests.subprocs import run_together

CONFIGS = Path(__file__).parents[2] / "configs"
FAST = ["game=kuhn", "frames=64", "num_envs=4", "mappo.rollout_steps=4", "mappo.epochs=1",
        "mappo.minibatches=1", "eval_episodes=2", "progress=false", "logger=none"]
# selfplay-train in a child process, printing the run mode of each config Hydra composed
COUNTED = """
import atexit, sys
from hydra._internal.config_loader_impl import ConfigLoaderImpl
composed = []
load = ConfigLoaderImpl.load_configuration
def counted(self, config_name, overrides, run_mode, *args, **kwargs):
    composed.append(run_mode.name)
    return load(self, config_name, overrides, run_mode, *args, **kwargs)
ConfigLoaderImpl.load_configuration = counted
atexit.register(lambda: print("composed", *composed))
from populations.cli import train_main
sys.argv = ["selfplay-train", *sys.argv[1:]]
train_main()
"""


def _job(cwd: Path, *args: str) -> dict:
    """The counting ``selfplay-train args`` in ``cwd``: :func:`subprocess.run`'s arguments."""
    return {"args": [sys.executable, "-c", COUNTED, *args], "cwd": cwd, "timeout": 300}


def _composed(res: subprocess.CompletedProcess) -> list[str]:
    assert res.returncode == 0, res.stderr[-3000:]
    return next(line for line in res.stdout.splitlines() if line.startswith("composed")).split()[1:]


def _jobs(sweep: Path) -> list[str]:
    """The job folders' number and swept seed (their names list every override)."""
    return sorted(f"{p.name.split('_')[0]}_{p.name.rsplit(',', 1)[-1]}"
                  for p in sweep.iterdir() if p.is_dir())


def test_a_run_composes_once_and_a_sweep_once_before_its_jobs(tmp_path):
    sweep = tmp_path / "sweep"
    run, swept = run_together(  # independent commands: two at a time
        _job(tmp_path, *FAST, f"hydra.run.dir={tmp_path / 'run'}"),
        _job(tmp_path, "-m", *FAST, "seed=1,2", f"hydra.sweep.dir={sweep}"))
    # before: ['MULTIRUN', 'RUN'] (Hydra's get_mode composed the whole config first)
    assert _composed(run) == ["RUN"]
    assert (tmp_path / "run" / "cli.log").is_file()
    composed = _composed(swept)
    assert composed.count("MULTIRUN") == 1, composed  # before: 2, the first for get_mode
    assert _jobs(sweep) == ["0_seed=1", "1_seed=2"]


def test_hydra_mode_from_an_override_or_a_user_config_still_makes_a_sweep(tmp_path):
    sweep = tmp_path / "sweep"
    mine = tmp_path / "mine" / "experiment"
    mine.mkdir(parents=True)
    (mine / "two_seeds.yaml").write_text(
        "# @package _global_\nhydra:\n  mode: MULTIRUN\n  sweeper:\n    params:\n"
        "      seed: 3,4\n")
    sweep2 = tmp_path / "sweep2"
    for res in run_together(  # independent commands: two at a time
            _job(tmp_path, *FAST, "seed=1,2", "hydra.mode=MULTIRUN", f"hydra.sweep.dir={sweep}"),
            _job(tmp_path, "--config-dir", str(tmp_path / "mine"), "experiment=two_seeds", *FAST,
                 f"hydra.sweep.dir={sweep2}")):
        _composed(res)
    assert _jobs(sweep) == ["0_seed=1", "1_seed=2"]
    assert _jobs(sweep2) == ["0_seed=3", "1_seed=4"]


def _keys(node: object, prefix: str) -> list[str]:
    if not isinstance(node, dict):
        return [prefix]
    return [k for key, value in node.items() if key != "defaults"
            for k in _keys(value, f"{prefix}.{key}".lstrip("."))]


def test_no_packaged_config_sets_hydra_mode():
    # what lets selfplay-train skip Hydra's first compose: with our configs alone the mode is
    # what -m says
    files = sorted(CONFIGS.rglob("*.yaml"))
    assert CONFIGS / "config.yaml" in files
    keys = []
    for path in files:
        header = next((line.split("@package", 1)[1].strip()
                       for line in path.read_text().splitlines()[:5] if "@package" in line), None)
        group = ".".join(path.relative_to(CONFIGS).parent.parts)
        package = header if header is not None else ("" if path.parent == CONFIGS else group)
        package = "" if package == "_global_" else package.replace("_group_", group)
        keys += _keys(yaml.safe_load(path.read_text()) or {}, package)
    assert "game.name" in keys or any(k.startswith("game.") for k in keys)
    assert not [k for k in keys if k == "hydra.mode" or k.startswith("hydra.mode.")]
    assert OmegaConf.load(CONFIGS / "config.yaml").hydra.get("mode") is None
