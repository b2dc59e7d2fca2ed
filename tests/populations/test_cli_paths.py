"""Config errors name the setting by the dotted path a user types (``mappo.net.init=...``),
whichever section's dataclass refused it and however its own message spells the field;
mistakes Hydra finds without the schema are found before the schema (and torch) loads."""

import subprocess
import sys

import pytest
from hydra import compose, initialize_config_module
from hydra.errors import MissingConfigException

from populations.cli_common import one_line
from populations.command_line import CLIError
from populations.config_paths import at_path
from populations.experiment import PopulationConfig
from populations.experiment_config import ExploitEvery
from populations.matchmaking import MatchmakingConfig
from populations.psro import PSROConfig
from populations.train_overrides import check_command_line, to_experiment


def _refused(override: str) -> str:
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=[override])
    with pytest.raises(CLIError) as err:
        to_experiment(cfg)
    return str(err.value)


# (override, the start of the message after "bad config: ")
NESTED = [
    ("mappo.optim=bogus", "mappo.optim='bogus' unknown; choose one of ['joint', 'separate']"),
    ("mappo.net.init=bogus", "mappo.net.init='bogus' unknown; choose one of"),
    ("mappo.net.critic=bogus", "mappo.net.critic='bogus' unknown; choose one of"),
    ("mappo.lr=-1", "mappo.lr=-1.0; expected a finite number > 0"),
    ("mappo.gamma=2", "mappo.gamma=2.0; expected a number in [0, 1]"),
    ("mappo.ent_coef=nan", "mappo.ent_coef=nan; expected a finite number >= 0"),
    ("mappo.net.hidden=[64,0]",
     "mappo.net.hidden=[64, 0]; expected one or more widths from 1 to 65536"),
    ("mappo.net.gnn_layers=0", "mappo.net.gnn_layers=0; expected an integer in [1, 1024]"),
    ("maddpg.tau=5", "maddpg.tau=5.0; expected a number in (0, 1]"),
    ("maddpg.state_input=pixels", "maddpg.state_input='pixels' is not supported; accepted:"),
    ("vdn.tau=0", "vdn.tau=0.0; expected a number in (0, 1]"),
    ("qmix.loss=l1", "qmix.loss='l1' is not supported; accepted: ['mse', 'huber']"),
    ("population.kind=x", "population.kind='x' unknown; choose one of"),
    ("population.oracle_frames=0", "population.oracle_frames=0; expected an integer >= 1"),
    ("population.members=[mappo,nope]", "population.members=['mappo', 'nope']: 'nope' unknown"),
    ("population.psro.payoffs=x", "population.psro.payoffs='x' unknown; choose one of"),
    ("population.matchmaking.rule=elo", "population.matchmaking.rule='elo' unknown; choose"),
    ("population.exploit.every=-1", "population.exploit.every=-1; expected an integer >= 0"),
    ("llm.team=solo", "llm.team='solo' unknown; choose one of ['shared', 'per_role']"),
    ("llm.iterations=0", "llm.iterations=0; expected an integer >= 1"),
    ("llm.lora.r=-1", "llm.lora.r=-1; expected 0 (off)"),
    ("llm.grpo.adv_norm=agentwise", "llm.grpo.adv_norm='agentwise' unknown; choose one of"),
    ("llm.grpo.kl_estimator=k9",
     "llm.grpo.kl_estimator='k9' unknown; choose one of ['k1', 'k2', 'k3']"),
    ("llm.grpo.loss_agg=x", "llm.grpo.loss_agg='x' unknown; choose one of ["),
    ("llm.grpo.action.mode=x",
     "llm.grpo.action.mode='x' unknown; choose one of ['generate', 'score']"),
    ("llm.grpo.advantage.eps=-1",
     "llm.grpo.advantage.eps=-1.0; expected a finite number >= 0"),
    ("runner.kind=slurm", "runner.kind='slurm' unknown; choose one of ['local', 'ray']"),
    ("logger.mode=x", "logger.mode='x' unknown; choose one of"),
    ("population.psro.meta_solver=nashx", "population.psro.meta_solver='nashx' unknown; choose"),
    ("llm.model=???", "llm.model: Structured config of type `LLMConfig` has missing mandatory"),
    ("mappo.net.init=???", "mappo.net.init: Structured config of type `NetConfig` has missing"),
]


@pytest.mark.parametrize(("override", "message"), NESTED)
def test_a_refused_value_is_named_by_its_full_path(override, message):
    text = _refused(override)
    assert text.startswith("bad config: " + message), text
    assert "\n" not in text


@pytest.mark.parametrize(("message", "path", "cls", "expected"), [
    ("rule='x' unknown", "population.matchmaking", MatchmakingConfig,
     "population.matchmaking.rule='x' unknown"),
    ("matchmaking rule 'x' unknown", "population.matchmaking", MatchmakingConfig,
     "population.matchmaking.rule='x' unknown"),
    ("MatchmakingConfig.rule must be set", "population.matchmaking", MatchmakingConfig,
     "population.matchmaking.rule must be set"),
    ("population.oracle='x' is not a PSRO oracle", "population", PopulationConfig,
     "population.oracle='x' is not a PSRO oracle"),  # names its path already
    ("no candidate opponents", "population", PopulationConfig,
     "population: no candidate opponents"),  # names no field: the section's path in front
    ("MatchmakingConfig: two settings clash", "population.matchmaking", MatchmakingConfig,
     "population.matchmaking: two settings clash"),
    ("num_envs=0; expected an integer >= 1", "", None, "num_envs=0; expected an integer >= 1"),
    ("unknown meta-solver 'x'; choose one of ['nash']", "population.psro", PSROConfig,
     "population.psro.meta_solver='x' unknown; choose one of ['nash']"),
    ("algo 'x' unknown; choose one of ['ippo']", "population.exploit", ExploitEvery,
     "population.exploit.algo='x' unknown; choose one of ['ippo']"),
    ("approx exploitability: frames must be an integer >= 1, got 0", "population.exploit",
     ExploitEvery, "population.exploit.frames must be an integer >= 1, got 0"),
])
def test_at_path_spellings(message, path, cls, expected):
    assert at_path(message, path, cls) == expected


# ------------------------------------------------- found before the schema (and torch) loads
@pytest.mark.parametrize("override", ["algo=alphazero", "encoder=gnnx", "experiment=nope"])
def test_unknown_option_is_refused_in_hydras_words(override):
    with pytest.raises(CLIError) as ours:
        check_command_line([override])
    with pytest.raises(MissingConfigException) as hydras, \
            initialize_config_module(config_module="configs", version_base=None):
        compose(config_name="config", overrides=[override])
    assert str(ours.value) == one_line(hydras.value)


def test_command_line_mistakes_are_found_without_importing_torch():
    code = ("import sys\nimport populations.cli\n"
            "from populations.train_overrides import check_command_line\n"
            "for args in (['algo=alphazero'], ['seed=[1,'], ['-m', 'algo=mappo,ipo']):\n"
            "    try:\n        check_command_line(args)\n"
            "    except Exception as err:\n        print(type(err).__name__)\n"
            "check_command_line(['algo=ippo', '-m', 'seed=0,1', 'game.name=x'])\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["CLIError", "OverrideParseException", "CLIError", "False"]
