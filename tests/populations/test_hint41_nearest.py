"""hint41: the choice settings hint40 left without a nearest name (runner and population kinds,
PSRO oracles, adv_norm typos, devices, gnn layers, rollout worker kinds, LLM presets and
backends, selfplay-eval --exploit-algo) were refused with their choices only; each refusal now
ends in '; did you mean ...?' (marl.configs.did_you_mean), its existing text and one line
kept."""

from __future__ import annotations

import sys

import pytest

from tests.populations.test_cli_paths import _refused  # composed, then to_experiment

# (override, the start of the message after "bad config: ", the nearest name)
TYPOS = [
    ("runner.kind=rey", "runner.kind='rey' unknown; choose one of ['local', 'ray']", "ray"),
    ("population.kind=leage", "population.kind='leage' unknown; choose one of ['none', "
     "'league', 'psro']", "league"),
    ("population.oracle=exat", "population.oracle='exat' is not a PSRO oracle; choose one of "
     "['auto', 'exact', 'rl', ", "exact"),
    ("population.oracle=mapo", "population.oracle='mapo' is not a PSRO oracle", "mappo"),
]


@pytest.mark.parametrize("override, start, nearest", TYPOS, ids=[t[0] for t in TYPOS])
def test_a_typo_on_the_command_line_gets_the_nearest_name(override, start, nearest):
    msg = _refused(override)
    assert "\n" not in msg
    assert msg.startswith(f"bad config: {start}"), msg
    assert msg.endswith(f"; did you mean {nearest!r}?"), msg


@pytest.mark.parametrize("override", ["mappo.adv_norm=agnet", "llm.grpo.adv_norm=agnet"])
def test_a_misspelt_adv_norm_gets_the_nearest_after_how_to_bring_ones_own(override):
    # only a name in another case (adv_norm=Role) was named before
    key = override.split("=")[0]
    msg = _refused(override)
    assert msg.startswith(f"bad config: {key}='agnet' unknown; choose one of ["), msg
    assert "; an adv_norm of your own is registered by" in msg, msg
    assert msg.endswith("; did you mean 'agent'?"), msg  # the nearest last, as every site
    assert "\n" not in msg


def test_a_name_in_another_case_keeps_its_own_words():
    from marl.advantages import check_adv_norm

    with pytest.raises(ValueError) as err:
        check_adv_norm("Role", {"role", "agent"})
    assert "(names are case-sensitive: 'role')" in str(err.value)
    assert "did you mean" not in str(err.value)


@pytest.mark.parametrize("override", ["runner.kind=slurm", "population.kind=zzz",
                                      "population.oracle=nope", "mappo.adv_norm=dr_mas"])
def test_a_value_near_no_name_gets_no_guess(override):
    assert "did you mean" not in _refused(override)


def test_selfplay_eval_names_the_nearest_exploit_algo(tmp_path):
    # a process of its own: no learner registry loaded, so the early check answers
    from tests import subprocs

    proc = subprocs.run([sys.executable, "-c", "from populations.eval_cli import eval_main; "
                         "eval_main()", "--db", str(tmp_path / "e.db"), "--exploit-algo", "mapo",
                         str(tmp_path / "a.pt"), str(tmp_path / "b.pt")],
                        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr == (
        "selfplay-eval: --exploit-algo 'mapo' cannot train best responses; choose one of "
        "['mappo', 'ippo', 'vdn', 'qmix', 'maddpg'] (one compatible with the game); did you "
        "mean 'mappo'?\n"), proc.stderr


def _refusal(call) -> str:
    with pytest.raises(ValueError) as err:
        call()
    assert "\n" not in str(err.value)
    return str(err.value)


def _python_api():
    from llm_agents.backends import make_backend
    from llm_agents.backends.vllm_backend import VLLMBackend
    from llm_agents.ray_rollouts import RolloutWorkersConfig
    from llm_agents.real_models import load_llm_preset
    from marl.core import resolve_device
    from marl.gnn import GraphEncoder
    from populations.experiment_config import PopulationConfig, RunnerConfig
    from populations.league import LeagueConfig
    from populations.rollouts import RolloutCollector
    from populations.runners import make_runner

    return [
        (lambda: RunnerConfig(kind="lcoal"), "runner kind 'lcoal' unknown; choose one of "
         "['local', 'ray']; did you mean 'local'?"),
        (lambda: PopulationConfig(kind="psor"), "population kind 'psor' unknown; choose one of "
         "['none', 'league', 'psro']; did you mean 'psro'?"),
        (lambda: make_runner("rey"), "runner 'rey' unknown; choose one of ['local', 'ray']; did "
         "you mean 'ray'?"),
        (lambda: LeagueConfig(runner="rey"), "runner 'rey' unknown; choose one of ['local', "
         "'ray']; did you mean 'ray'?"),
        (lambda: RolloutCollector(None, kind="rey"), "rollout worker kind 'rey' unknown; choose "
         "one of ['local', 'ray']; did you mean 'ray'?"),
        (lambda: RolloutWorkersConfig(kind="lcoal"), "rollout workers kind 'lcoal' unknown; "
         "choose one of ['ray', 'local']; did you mean 'local'?"),
        (lambda: resolve_device("cdua"), "device='cdua' unknown; choose one of cpu, cuda, "
         "cuda:N (N a GPU index), auto; did you mean 'cuda'?"),
        (lambda: resolve_device("gpu"), "device='gpu' unknown; choose one of cpu, cuda, "
         "cuda:N (N a GPU index), auto; did you mean 'cuda'?"),  # not 'cpu', spelt alike
        (lambda: GraphEncoder(4, layer="gatv3"), "gnn layer 'gatv3' unknown; choose one of "
         "['gatv2', 'transformer']; did you mean 'gatv2'?"),
        (lambda: load_llm_preset("tiniy"), "llm preset 'tiniy' not found; choose one of ['hf', "
         "'smollm2_kuhn', 'tiny', 'tiny_kuhn', 'vllm']; did you mean 'tiny'?"),
        (lambda: make_backend("vlm"), "backend 'vlm' unknown; choose one of ['transformers', "
         "'vllm']; did you mean 'vllm'?"),
        (lambda: VLLMBackend(None, score_with="engin"), "score_with='engin' unknown; choose one "
         "of ['auto', 'transformers', 'engine']; did you mean 'engine'?"),
    ]


@pytest.mark.parametrize("case", range(12))
def test_the_python_api_names_the_nearest(case):
    call, message = _python_api()[case]
    assert _refusal(call) == message


def test_the_python_api_guesses_nothing_when_nothing_is_near():
    from marl.core import resolve_device
    from populations.runners import make_runner

    assert _refusal(lambda: make_runner("slurm")).endswith("choose one of ['local', 'ray']")
    assert _refusal(lambda: resolve_device("mps")).endswith("(N a GPU index), auto")


def test_every_python_api_case_is_run():
    assert len(_python_api()) == 12


@pytest.mark.parametrize("device, nearest", [("cdua", "'cuda'"), ("gpu", "'cuda'"),
                                             ("cpuu", "'cpu'")])
def test_the_command_lines_check_before_torch_names_the_nearest_device(device, nearest):
    """selfplay-train's torch-free check (config_checks) words a bad device as resolve_device
    does, nearest name included (it named none before)."""
    from populations import config_checks

    with pytest.raises(ValueError) as err:
        config_checks.check_run_values({"device": device})
    assert str(err.value).endswith(f"; did you mean {nearest}?")


@pytest.mark.parametrize("device, nearest", [("cuda0", "'cuda:0'"), ("cuda-1", "'cuda:1'"),
                                             ("CUDA 2", "'cuda:2'")])
def test_a_gpu_index_without_its_colon_gets_cuda_n(device, nearest):
    """review41 L3: cuda0 was told 'cuda', not the GPU it named."""
    from marl.configs import unknown_device

    assert unknown_device(device).endswith(f"; did you mean {nearest}?")
