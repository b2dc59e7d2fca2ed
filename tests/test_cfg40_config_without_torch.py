"""Composing the experiment's config loads no torch: ``selfplay-train --cfg job`` (and
``--cfg hydra``, ``hydra.compose`` in a script) imported torch and every learner (~2 s CPU of
its ~2.4 s here) only because Hydra's schema was made from ``populations.experiment`` and the
sections' defaults ran their registry checks (``adv_norm``, the mixers, the population's
oracles). :class:`populations.experiment_config.ExperimentConfig` is the schema now, built
without those checks; they run on the composed values when the experiment is made
(``OmegaConf.to_object``), as before.

Each case is a fresh interpreter (what a command imports is the property tested)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "marl.registry", "marl.mappo", "populations.experiment", "populations.psro_run",
         "pyspiel")

CLI = """
import json, sys
sys.argv = ["selfplay-train", *{args!r}]
from populations.cli import train_main
code = 0
try:
    train_main()
except SystemExit as stop:
    code = stop.code
print(json.dumps({{"code": code, "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def _cli(args: list[str], cwd) -> tuple[list[str], dict]:
    res = subprocess.run([sys.executable, "-c", CLI.format(args=args, heavy=HEAVY)], cwd=cwd,
                         capture_output=True, text=True, timeout=300, check=True)
    lines = res.stdout.strip().splitlines()
    return lines[:-1], json.loads(lines[-1]) | {"stderr": res.stderr}


def test_cfg_job_prints_the_config_without_torch(tmp_path):
    out, end = _cli(["--cfg", "job"], tmp_path)
    assert end["code"] in (0, None) and end["heavy"] == [], end
    text = "\n".join(out)
    assert "algo: mappo" in text and "adv_norm: global" in text and "mixer: qmix" in text
    assert "oracle: exact" in text and list(tmp_path.iterdir()) == []  # no run folder


def test_an_experiments_cfg_job_and_cfg_hydra_load_no_torch(tmp_path):
    out, end = _cli(["experiment=kuhn_psro", "--cfg", "job"], tmp_path)
    assert end["heavy"] == [] and "kind: psro" in "\n".join(out), end
    out, end = _cli(["--cfg", "hydra"], tmp_path)
    assert end["heavy"] == [] and any(line.startswith("hydra:") for line in out), end


COMPOSE = """
import json, sys
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

with initialize_config_module(config_module="configs", version_base=None):
    cfgs = [compose("config", overrides=o) for o in {overrides!r}]
heavy = [m for m in {heavy!r} if m in sys.modules]
made = []
for cfg in cfgs:
    try:
        exp = OmegaConf.to_object(cfg)
        made.append(type(exp).__module__ + "." + type(exp).__name__ + " " + exp.algo)
    except Exception as err:
        made.append(str(err).splitlines()[0])
from populations import experiment, experiment_config
print(json.dumps({{"heavy": heavy, "made": made,
                   "same": experiment.ExperimentConfig is experiment_config.ExperimentConfig
                   and experiment.GameConfig is experiment_config.GameConfig}}))
"""


def test_hydra_compose_loads_no_torch_and_making_the_experiment_still_checks(tmp_path):
    overrides = [[], ["algo=llm_grpo"], ["mappo.adv_norm=nope"], ["vdn.mixer=nope"],
                 ["population=psro", "population.oracle=nope"]]
    res = subprocess.run([sys.executable, "-c", COMPOSE.format(overrides=overrides,
                                                               heavy=HEAVY)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["heavy"] == [], got  # composed: torch not loaded
    made = got["made"]
    assert made[0] == "populations.experiment_config.ExperimentConfig mappo"
    assert made[1] == "populations.experiment_config.ExperimentConfig llm_grpo"  # registered
    # the registry checks the schema's defaults skipped run on the composed values
    assert made[2].startswith("adv_norm='nope' unknown; choose one of"), made
    assert made[3].startswith("ValueDecompConfig.mixer='nope' is not supported"), made
    assert made[4].startswith("population.oracle='nope' is not a PSRO oracle"), made
    assert got["same"] is True  # populations.experiment's names are these classes


def test_the_schemas_deferred_checks_run_outside_it():
    import pytest

    from llm_agents.settings import GRPOConfig
    from marl.configs import MAPPOConfig, ValueDecompConfig
    from populations.experiment_config import PopulationConfig, registry_checks_later

    bad = [(MAPPOConfig, {"adv_norm": "nope"}, "adv_norm='nope' unknown"),
           (ValueDecompConfig, {"mixer": "nope"}, "ValueDecompConfig.mixer='nope'"),
           (GRPOConfig, {"adv_norm": "nope"}, "adv_norm='nope' unknown"),
           (PopulationConfig, {"kind": "psro", "oracle": "nope"}, "not a PSRO oracle")]
    for cls, kwargs, words in bad:
        with pytest.raises(ValueError, match=words):
            cls(**kwargs)
    with registry_checks_later() as later:
        made = [cls(**kwargs) for cls, kwargs, _ in bad]
        with pytest.raises(ValueError, match="lr=-1"):  # the torch-free checks run inside
            MAPPOConfig(lr=-1)
        assert later == []  # filled when the block ends
    checks = {id(owner): check for owner, check in later}
    for obj, (_, _, words) in zip(made, bad, strict=True):
        with pytest.raises(ValueError, match=words):  # each one's own check, run now
            checks[id(obj)]()


SECTION_HINT = ("; llm is the settings section of the learner llm_grpo: algo=llm_grpo picks "
                "it, llm.KEY=VALUE sets its settings")


def test_a_section_given_as_algo_names_its_learner_on_both_paths(tmp_path):
    """``algo=llm`` refused by Hydra (a config folder of the user's own) named llm_grpo because
    the schema had loaded every learner; the learners now load for that hint alone, so the
    early refusal (no config folder) says the same."""
    (tmp_path / "conf").mkdir()
    for args in (["algo=llm"], ["--config-dir", str(tmp_path / "conf"), "algo=llm"]):
        res = subprocess.run([sys.executable, "-c", CLI.format(args=args, heavy=())],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        line = res.stderr.strip().splitlines()[-1]
        assert line.startswith("selfplay-train: In 'config': Could not find 'algo/llm'"), line
        assert line.endswith(SECTION_HINT), (args, line)
