"""selfplay-train refuses a bad ``llm.*`` value or ``llm=`` preset, and selfplay-eval a bad
``--exploit-*`` value, before torch loads (~0.6 s of CPU instead of ~2.6-8 s): the LLM
settings live in the torch-free :mod:`llm_agents.settings` (their old homes re-export them),
``llm_agents`` loads its torch modules on first use, and the early section check builds
:class:`LLMConfig` over the ``llm=`` preset Hydra would pick; its checks of names against torch
registries (``grpo.adv_norm``, ``grpo.action.mode``...) run last."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from populations.command_line import CLIError
from populations.train_overrides import check_command_line, to_experiment

CHECK = """
import sys
import llm_agents, llm_agents.settings
from populations.command_line import CLIError
from populations.train_overrides import check_command_line
from populations.eval_cli import eval_main
for line in {lines!r}:
    try:
        check_command_line(line)
        print("accepted", line)
    except CLIError as err:
        print(err)
for extra in {evals!r}:
    try:
        eval_main(["--game", "openspiel/kuhn_poker", "--db", "r.db", "p.pt", "--exploit", *extra])
    except SystemExit as stop:
        print("exit", stop.code)
print("torch:", "torch" in sys.modules)
"""
LINES = [["experiment=kuhn_llm_selfplay", "llm.grpo.lr=-1"],
         ["experiment=tool_team_llm", "llm.team=solo"],
         ["llm.grpo.action.sampling.temperature=0"],
         ["llm.tem=1"],
         ["experiment=kuhn_llm_selfplay", "llm=hf"],  # a preset alone: llm.model is empty
         ["llm=smollm2_kuhn", "llm.model=m", "llm.grpo.lr=-1"]]  # its defaults list: [hf]
EVALS = [["--exploit-frames", "-1"], ["--exploit-seeds", "0"], ["--exploit-algo", "nope"]]


def test_llm_values_and_exploit_values_are_refused_before_torch(tmp_path):
    (tmp_path / "p.pt").write_bytes(b"")  # exists; never read
    run = subprocess.run([sys.executable, "-c", CHECK.format(lines=LINES, evals=EVALS)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    empty = ("bad config: llm.model is empty; llm=hf and llm=vllm (and smollm2_kuhn) train "
             "your model: llm.model=<a model directory or hub name> (llm=tiny builds one)")
    assert run.stdout.splitlines() == [
        "bad config: llm.grpo.lr=-1.0; expected a finite number > 0",
        "bad config: llm.team='solo' unknown; choose one of ['shared', 'per_role']",
        "bad config: llm.grpo.action.sampling.temperature=0.0; expected a finite number > 0 "
        "(for argmax decoding set greedy=True, on the command line "
        "llm.grpo.action.sampling.greedy=true; a greedy group's GRPO episodes play alike, "
        "leaving little variety to learn from)",
        "bad config: llm.tem: Key 'tem' not in 'LLMConfig'; nearest: llm.team",
        empty, "bad config: llm.grpo.lr=-1.0; expected a finite number > 0",
        "exit 2", "exit 2", "exit 2", "torch: False"], run.stdout
    assert run.stderr.splitlines() == [
        "selfplay-eval: approx exploitability: frames must be an integer >= 1, got -1 "
        "(--exploit-frames)",
        "selfplay-eval: approx exploitability: seeds must be an integer >= 1, got 0 "
        "(--exploit-seeds)",
        "selfplay-eval: --exploit-algo 'nope' cannot train best responses; choose one of "
        "['mappo', 'ippo', 'vdn', 'qmix', 'maddpg'] (one compatible with the game)"], run.stderr
    assert not (tmp_path / "r.db").exists()


def test_the_llm_settings_import_no_torch():
    """Importing them, and refusing a value (a good one's registry checks import torch)."""
    code = ("import sys, llm_agents, llm_agents.settings, populations.config_checks as c\n"
            "try:\n    c.check_section_value('llm.grpo.lr', 0)\nexcept ValueError:\n    pass\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "[]", out


OLD_HOMES = {  # name -> the modules it was imported from before llm_agents.settings
    "LLMConfig": ["llm_agents.build"], "TEAMS": ["llm_agents.build"],
    "BACKENDS": ["llm_agents.build"], "DTYPES": ["llm_agents.build"],
    "GRPOConfig": ["llm_agents.trainer", "llm_agents", "llm_agents.build"],
    "ActionConfig": ["llm_agents.actions", "llm_agents", "llm_agents.trainer"],
    "FALLBACKS": ["llm_agents.actions"], "ON_INVALID": ["llm_agents.actions"],
    "MAX_POLICY_SAMPLES": ["llm_agents.actions"],
    "SamplingConfig": ["llm_agents.backends.base", "llm_agents.backends", "llm_agents"],
    "TinyModelConfig": ["llm_agents.tiny", "llm_agents.build"],
    "LoRAConfig": ["llm_agents.lora", "llm_agents.build"], "MAX_RANK": ["llm_agents.lora"]}


def test_every_old_name_still_imports():
    import llm_agents
    import llm_agents.settings as settings
    from marl.advantages import AdvantageConfig
    from marl.configs import AdvantageConfig as moved

    for name, homes in OLD_HOMES.items():
        for home in homes:
            assert getattr(importlib.import_module(home), name) is getattr(settings, name), home
    assert AdvantageConfig is moved
    for name in llm_agents.__all__:  # the package's names, loaded on first use
        assert getattr(llm_agents, name) is not None and name in dir(llm_agents)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        llm_agents.nope  # noqa: B018
    # a submodule as an attribute of the bare package, as when it imported them all
    assert not hasattr(llm_agents, "nope.x") and not hasattr(llm_agents, "prompts.x")
    code = "import llm_agents; print(llm_agents.prompts.PromptConfig.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "PromptConfig"


def _schema(line):
    """The full schema's answer to ``line`` (Hydra composes it; None: accepted)."""
    with initialize_config_module("configs", version_base=None):
        cfg = compose("config", line)
    try:
        to_experiment(cfg)
    except CLIError as err:
        return str(err)
    return None


def _early(line):
    try:
        check_command_line(line)
    except CLIError as err:
        return str(err)
    return None


PRESETS = sorted(p.stem for p in (Path(__file__).parents[2] / "configs" / "llm").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in
                     (Path(__file__).parents[2] / "configs" / "experiment").glob("*.yaml"))
ANSWERS = {  # lines refused by the schema and early, in the same words
    "llm.grpo.lr=0": "llm.grpo.lr=0.0; expected a finite number > 0",  # the boundary
    "llm.lora.r=-1": "llm.lora.r=-1; expected 0 (off) .. 1024",
    # accepted before, then trained nothing (a clip or grad clip of 0, alpha 0) or failed late
    "llm.grpo.clip_low=-1": "llm.grpo.clip_low=-1.0; expected a finite number > 0",
    "llm.grpo.max_grad_norm=0": "llm.grpo.max_grad_norm=0.0; expected a number > 0 or inf",
    "llm.grpo.kl_coef=-0.1": "llm.grpo.kl_coef=-0.1; expected a finite number >= 0",
    "llm.lora.alpha=0": "llm.lora.alpha=0; expected a finite number > 0",
    "llm.corpus_episodes=0": "llm.corpus_episodes=0; expected an integer >= 1",
    "llm.tiny.n_head=3": "llm.tiny.n_embd=64 is not a multiple of n_head=3",
    "llm.tiny.arch=llama llm.tiny.n_embd=20": "llm.tiny.n_embd=20 / n_head=4 is an odd head",
    "llm.grpo.weight_decay=-1": "llm.grpo.weight_decay=-1.0; expected a finite number >= 0",
    "llm.grpo.adv_norm=nope": "llm.grpo.adv_norm='nope' unknown; choose one of",
    "llm.grpo.action.mode=nope": "llm.grpo.action.mode='nope' unknown; choose one of",
    "llm.grpo.kl_estimator=k9": "llm.grpo.kl_estimator='k9' unknown; choose one of",
    "llm=vllm llm.model=m llm.dtype=float8": "llm.dtype='float8' unknown; choose one of",
    "llm=hf mappo.lr=-1": "mappo.lr=-1.0; expected",  # the schema's order: mappo first
    "llm=hf llm.grpo.lr=-1": "llm.grpo.lr=-1.0"}  # its parts' checks before llm's (model)


@pytest.mark.parametrize("line", [[f"llm={p}"] for p in PRESETS] +
                         [[f"experiment={e}", "llm.iterations=2"] for e in EXPERIMENTS] +
                         [["experiment=kuhn_llm_selfplay", f"llm={p}", "llm.model=m"]
                          for p in PRESETS] + [a.split() for a in ANSWERS])
def test_the_early_llm_check_answers_as_the_schema(line):
    """No false refusal of a shipped preset or experiment, and a refusal in the schema's
    words (accepted lines and refused ones alike)."""
    early = _early(line)
    assert early == _schema(line)
    if " ".join(line) in ANSWERS:
        assert early.startswith(f"bad config: {ANSWERS[' '.join(line)]}"), early


def test_the_exploit_minimums_are_approx_configs():
    from populations.approx_exploit import ApproxConfig
    from populations.eval_checks import EXPLOIT_MINIMUMS

    for name, low in EXPLOIT_MINIMUMS.items():
        ApproxConfig(**{name: low})
        with pytest.raises(ValueError, match=f"{name} must be an integer >= {low}, got"):
            ApproxConfig(**{name: low - 1})


@pytest.mark.parametrize("line, answer", [
    (["llm.grpo.device=cuda"], "llm.grpo.device='cuda' is not read by an experiment: the run's "
                               "device= sets the LLM learner's too (give device=cuda instead)"),
    (["experiment=kuhn_llm_selfplay", "llm.grpo.seed=3"], "llm.grpo.seed=3 is not read by an "
     "experiment: the run's seed= sets the LLM learner's too (give seed=3 instead)")])
def test_llm_grpo_device_and_seed_given_to_an_experiment_are_refused_not_ignored(line, answer):
    """An experiment builds its LLM learner with the run's device and seed, so these two
    GRPOConfig fields (the Python API's) were silently ignored on the command line."""
    assert _schema(line) == f"bad config: {answer}"


def test_llm_grpo_seed_equal_to_the_run_seed_is_accepted_and_a_resume_may_change_both():
    """A config that says ``llm.grpo.seed: ${seed}`` asks for nothing the run ignores; and a
    run recorded with these two (never read) resumes without them."""
    from populations.experiment import RESUME_MAY_CHANGE
    from populations.run_folder import settings_diff

    assert _schema(["seed=5", "llm.grpo.seed=5"]) is None
    assert _schema(["device=cpu", "llm.grpo.device=cpu"]) is None
    saved = {"seed": 0, "llm": {"grpo": {"seed": 5, "device": "cuda", "lr": 1.0}}}
    now = {"seed": 0, "llm": {"grpo": {"seed": 0, "device": "auto", "lr": 1.0}}}
    assert settings_diff(saved, now, RESUME_MAY_CHANGE) == []
