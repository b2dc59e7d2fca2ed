"""selfplay-train refuses a bad value inside a section (``mappo.lr=-1``, ``mappo.lrr=0.1``,
``population.psro.meta_solver=x``) before torch loads: the section's own dataclass, which
imports without torch, checks it (~0.6 s of CPU instead of ~3.3 s), in the words the full
schema gives, and an unknown key is named with the section's nearest keys."""

import subprocess
import sys
import typing

import pytest
from omegaconf import OmegaConf

from populations.command_line import CLIError
from populations.config_checks import check_section_value, section_schemas, writable
from populations.experiment import ExperimentConfig
from populations.train_overrides import to_experiment

BAD = {  # override: the start of its one line
    "mappo.lr=-1": "mappo.lr=-1.0; expected a finite number > 0",
    "mappo.gamma=2": "mappo.gamma=2.0; expected a number in [0, 1]",
    "mappo.lr=abc": "mappo.lr=abc; expected a finite number > 0",
    "mappo.optim=bogus": "mappo.optim='bogus' unknown; choose one of ['joint', 'separate']",
    "mappo.net.init=x": "mappo.net.init='x' unknown; choose one of ['orthogonal', 'torch']",
    "mappo.net.hidden=[0]": "mappo.net.hidden=[0]; expected one or more widths from 1 to 65536",
    "vdn.batch_size=0": "vdn.batch_size=0; expected an integer in [1, 1000000000] (a batch is "
                        "drawn from the replay buffer)",
    "qmix.loss=l1": "qmix.loss='l1' is not supported; accepted: ['mse', 'huber']",
    "vdn.gamma=1.5": "vdn.gamma=1.5; expected a number in [0, 1]",
    "maddpg.gamma=2": "maddpg.gamma=2.0; expected a number in [0, 1]",
    "maddpg.lr_actor=0": "maddpg.lr_actor=0.0; expected a finite number > 0",
    "maddpg.tau=5": "maddpg.tau=5.0; expected a number in (0, 1]",
    # one rule, one form for every learner (a rate > 0, a weight >= 0, a count >= 1)
    "mappo.lr=inf": "mappo.lr=inf; expected a finite number > 0",
    "vdn.lr=-1": "vdn.lr=-1.0; expected a finite number > 0",
    "qmix.lr=nan": "qmix.lr=nan; expected a finite number > 0",
    "maddpg.lr_critic=0": "maddpg.lr_critic=0.0; expected a finite number > 0",
    "vdn.optimistic_weight=0": "vdn.optimistic_weight=0.0; expected a finite number > 0",
    "maddpg.gumbel_temperature=0": "maddpg.gumbel_temperature=0.0; expected a finite number > 0",
    "maddpg.exploration_noise=-1": "maddpg.exploration_noise=-1.0; expected a finite number >= 0",
    "mappo.epochs=0": "mappo.epochs=0; expected an integer in [1, 10000]",
    "qmix.train_every=0": "qmix.train_every=0; expected an integer >= 1",
    # the rules MAPPO had and VDN/QMIX/MADDPG lacked (each ran: nothing learnt, or always random)
    "qmix.mixing_embed_dim=0": "qmix.mixing_embed_dim=0; expected an integer in [1, 65536]",
    "vdn.hidden=[0]": "vdn.hidden=[0]; expected one or more widths from 1 to 65536",
    "maddpg.hidden=[]": "maddpg.hidden=[]; expected one or more widths from 1 to 65536",
    "vdn.eps_start=2": "vdn.eps_start=2.0; expected a number in [0, 1]",
    "vdn.max_grad_norm=0": "vdn.max_grad_norm=0.0; expected a number > 0 or inf",
    "maddpg.max_grad_norm=0": "maddpg.max_grad_norm=0.0; expected a number > 0 or inf",
    "mappo.max_grad_norm=-inf": "mappo.max_grad_norm=-inf; expected a number > 0 or inf",
    "maddpg.actor_reg=-1": "maddpg.actor_reg=-1.0; expected a finite number >= 0",
    "vdn.learning_starts=-5": "vdn.learning_starts=-5; expected an integer >= 0",
    "population.generations=-1": "population.generations=-1; expected an integer >= 1",
    "population.opponent_prob=2": "population.opponent_prob=2.0; expected a value in [0, 1]",
    "population.kind=leage": "population.kind='leage' unknown; choose one of",
    "population.exploit.every=-1": "population.exploit.every=-1; expected an integer >= 0",
    "population.psro.meta_solver=x": "population.psro.meta_solver='x' unknown; choose one of",
    "population.matchmaking.rule=elo": "population.matchmaking.rule='elo' unknown; choose one",
    "runner.kind=slurm": "runner.kind='slurm' unknown; choose one of ['local', 'ray']",
    "runner.rollout_workers=-1": "runner.rollout_workers=-1; expected an integer >= 0",
    "logger.kind=x": "logger.kind='x' unknown; choose one of ['csv', 'none', 'wandb']",
}
UNKNOWN = {
    "mappo.lrr=0.1": "mappo.lrr: Key 'lrr' not in 'MAPPOConfig'; nearest: mappo.lr",
    "mappo.clip=0.1": "mappo.clip: Key 'clip' not in 'MAPPOConfig'; nearest: mappo.clip_coef",
    "mappo.net.encodr=gnn": "mappo.net.encodr: Key 'encodr' not in 'NetConfig'; nearest: "
                            "mappo.net.encoder",
    "population.iteratons=3": "population.iteratons: Key 'iteratons' not in 'PopulationConfig'"
                              "; nearest: population.iterations",
    "logger.zzz=1": "logger.zzz: Key 'zzz' not in 'LoggerConfig'; keys of logger: kind,",
}
GOOD = ["mappo.lr=0.5", "vdn.batch_size=8", "qmix.mixer=vdn", "maddpg.gamma=1",
        "mappo.net.hidden=[32,32]", "mappo.net.value=shared",
        "population.psro.payoffs=sampled", "population.matchmaking.rule=fsp", "logger.kind=csv",
        "population.members=[mappo,llm_grpo]", "population.kind=psro",
        "runner.kind=ray", "llm.team=per_role", "game.kwargs.cards=4",  # game: later
        # inf: no gradient clipping (torch's clip_grad_norm_ leaves the gradients), review CT-5
        "vdn.max_grad_norm=inf", "maddpg.max_grad_norm=inf", "mappo.max_grad_norm=inf"]


def yaml_value(text):
    """The value as Hydra's parser types it for these overrides (numbers, words, lists)."""
    return OmegaConf.create(f"v: {text}").v


def _refusal(override):
    key, value = override.split("=", 1)
    value = yaml_value(value)
    value = list(value) if OmegaConf.is_list(value) else value
    with pytest.raises(ValueError) as err:
        check_section_value(key, value, override)
    return str(err.value)


@pytest.mark.parametrize("override", [*BAD, *UNKNOWN])
def test_a_sections_bad_value_or_key_is_refused_in_one_line(override):
    message = _refusal(override)
    assert message.startswith({**BAD, **UNKNOWN}[override]) and "\n" not in message, message


@pytest.mark.parametrize("override", [o for o in BAD if "abc" not in o])
def test_the_early_refusal_is_the_schemas_own(override):
    """One source: the full schema (after torch) refuses the value in the same words."""
    key, value = override.split("=", 1)
    value = yaml_value(value)
    cfg = writable(OmegaConf.structured(ExperimentConfig))
    OmegaConf.update(cfg, key, list(value) if OmegaConf.is_list(value) else value, merge=True)
    with pytest.raises(CLIError) as err:
        to_experiment(cfg)
    assert str(err.value) == f"bad config: {_refusal(override)}"


def test_good_values_and_other_sections_pass():
    for override in GOOD:
        key, value = override.split("=", 1)
        value = yaml_value(value)
        check_section_value(key, list(value) if OmegaConf.is_list(value) else value, override)


def test_the_early_sections_are_experiment_configs_own():
    """Each listed section is the dataclass ExperimentConfig holds there, with its default."""
    exp = ExperimentConfig()
    for path, (cls, defaults) in section_schemas().items():
        owner, node = ExperimentConfig, exp
        for name in path.split("."):
            owner, node = typing.get_type_hints(owner)[name], getattr(node, name)
        assert owner is cls and node == cls(**defaults), path


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
heavy = ("torch", "marl.core", "marl.mappo", "marl.maddpg", "populations.psro_run",
         "populations.experiment")
print("heavy:", sorted(m for m in heavy if m in sys.modules))
"""


def test_section_values_are_refused_before_torch_loads(tmp_path):
    bad = [[o] for o in ["mappo.lr=-1", "mappo.lrr=0.1", "population.psro.meta_solver=x",
                         "vdn.batch_size=0", "maddpg.gamma=2", "population.generations=-1"]] + [
        ["-m", "mappo.lr=0,0.1"], ["num_envs=0", "mappo.lr=-1"],  # top-level values first
        # the exponent is checked only with pfsp's hard weighting: the chosen presets count
        ["experiment=tag_pfsp_league", "population.matchmaking.exponent=-1"],
        # a good value whose check imports torch (the learner registry) before a bad one:
        # the checks that need no torch run first (review CC-6)
        ["population.generations=2", "mappo.net.hidden=[8]", "mappo.lr=-1"],
        # fewer game copies (num_envs, 32 by default) than rollout workers
        ["runner.rollout_workers=40"]]
    out = subprocess.run([sys.executable, "-c", CHECK.format(bad=bad)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.splitlines() == [
        f"bad config: {BAD['mappo.lr=-1']}", f"bad config: {UNKNOWN['mappo.lrr=0.1']}",
        "bad config: population.psro.meta_solver='x' unknown; choose one of ['auto', "
        "'least_exploitable', 'nash', 'prd', 'uniform']; a meta-solver of your own is "
        "registered by @register_meta_solver (populations.meta_solvers) when its module is "
        "imported (selfplay-train imports=[module])",
        f"bad config: {BAD['vdn.batch_size=0']}", f"bad config: {BAD['maddpg.gamma=2']}",
        f"bad config: {BAD['population.generations=-1']}",
        "bad config: mappo.lr=0.0; expected a finite number > 0",
        "bad config: num_envs=0; expected an integer >= 1",
        "bad config: population.matchmaking.exponent=-1.0; expected a finite value >= 0 (hard "
        "weighting (1 - p) ** exponent)", f"bad config: {BAD['mappo.lr=-1']}",
        "bad config: num_envs=32 game copies cannot be shared by rollout_workers=40: give "
        "num_envs >= 40 (each worker plays at least one copy)", "heavy: []"], out


def test_the_presets_the_command_line_picks_count():
    """pfsp's exponent is checked only with its hard weighting (an fsp league ignores it):
    population=fsp population.matchmaking.exponent=-1 runs, as the full schema decides."""
    from populations.train_overrides import check_command_line

    check_command_line(["population=fsp", "population.matchmaking.exponent=-1"])
    # and the line's other values of the section (review CC-1)
    check_command_line(["encoder=gnn", "mappo.net.critic=state", "mappo.net.value=shared"])
    check_command_line(["population.matchmaking.rule=fsp", "population.matchmaking.exponent=-1"])
    # a swept group option: each job's presets differ, the schema decides (review CC-3)
    check_command_line(["-m", "population=fsp,self_play", "population.matchmaking.exponent=-1"])
    with pytest.raises(CLIError, match="population.matchmaking.exponent=-1.0; expected"):
        check_command_line(["population=pfsp", "population.matchmaking.exponent=-1"])


ACCEPTED = [  # lines the full schema accepts (Hydra compose + to_object), refused early before
    "encoder=gnn ++mappo.net.critic=state mappo.net.value=shared",  # review CC-5: '++' sets
    "population.matchmaking.exponent=-1 ++population.matchmaking.rule=fsp",
    "encoder=gnn mappo.net.critic=${oc.env:CRIT_UNSET,state} mappo.net.value=shared",
    "mappo.lr=-1 mappo.lr=0.1",  # a key given twice: Hydra keeps the last
    "mappo.net.critic=gnn mappo.net={critic:state} mappo.net.value=shared",  # in line order
    # review CC-4: the command line's group option beats the experiment's 'override /group'
    # (accepted before by a dead branch that never read an experiment's defaults list)
    "experiment=tag_pfsp_league population=fsp population.matchmaking.exponent=-1",
    "experiment=spread_mappo_gnn encoder=mlp mappo.net.value=shared"]
REFUSED = {  # and refused by the full schema: early, in its words
    "experiment=spread_mappo_gnn mappo.net.value=shared":  # its encoder=gnn sets critic=gnn
        "mappo.net.value='shared' needs critic='state', 'concat' or 'auto', not critic='gnn'",
    "experiment=main encoder=mlp_gru mappo.lr=-1": "mappo.lr=-1.0; expected a finite number > 0",
    # llm's own defaults list
    "llm=vllm mappo.lr=-1": "mappo.lr=-1.0; expected a finite number > 0",
    "-m mappo.lr=0.1,0.2 mappo.gamma=2": "mappo.gamma=2.0; expected a number in [0, 1]",
    "mappo.net.value=shared mappo.net={critic:gnn}": "mappo.net.value='shared' needs critic="}


@pytest.mark.parametrize("line", ACCEPTED)
def test_a_line_the_schema_accepts_is_not_refused_early(line):
    """Where the early check cannot apply a section's values as Hydra does (``+``/``++``, an
    interpolation, a key given twice) it leaves the section to the schema; otherwise it
    applies them in the line's order over the presets Hydra would pick."""
    from populations.train_overrides import check_command_line

    check_command_line(line.split())


@pytest.mark.parametrize("line", REFUSED)
def test_a_line_the_schema_refuses_is_refused_early(line):
    from populations.train_overrides import check_command_line

    with pytest.raises(CLIError) as err:
        check_command_line(line.split())
    assert str(err.value).startswith(f"bad config: {REFUSED[line]}"), err.value


def test_a_config_store_preset_leaves_the_section_to_the_schema(tmp_path, monkeypatch):
    """imports=[mod] population=my_fsp (a ConfigStore preset: no file in configs/) sets rule
    fsp, which ignores the exponent: the early check cannot read it and leaves it (review CC-2;
    the class defaults, pfsp and hard, refused it)."""
    from hydra.core.config_store import ConfigStore

    from populations.train_overrides import check_command_line

    (tmp_path / "fixconfig_presets.py").write_text(
        "from hydra.core.config_store import ConfigStore\n"
        "ConfigStore.instance().store(group='population', name='my_fsp', package='_global_', "
        "node={'population': {'kind': 'league', 'matchmaking': {'rule': 'fsp'}}})\n")
    monkeypatch.chdir(tmp_path)
    try:
        check_command_line(["imports=[fixconfig_presets]", "population=my_fsp",
                            "population.matchmaking.exponent=-1"])
    finally:
        sys.modules.pop("fixconfig_presets", None)
        ConfigStore.instance().repo.get("population", {}).pop("my_fsp.yaml", None)


@pytest.mark.parametrize(("key", "hint"), [("llm.tem", "nearest: llm.team"),
                                           ("llm.grpo.lrr", "nearest: llm.grpo.lr"),
                                           ("population.kindd", "nearest: population.kind")])
def test_unknown_keys_of_the_later_sections_name_the_nearest(key, hint):
    """Sections the schema checks after torch (llm, population, runner): Hydra's line for an
    unknown key ends with the nearest keys, from the section's dataclass."""
    from hydra.errors import ConfigCompositionException

    from populations.cli_common import one_line

    cfg = writable(OmegaConf.structured(ExperimentConfig))
    with pytest.raises(Exception) as caught:
        OmegaConf.update(cfg, key, 1, merge=True)
    try:
        raise ConfigCompositionException(f"Could not override '{key}'.") from caught.value
    except ConfigCompositionException as err:
        line = one_line(err)
    assert line.startswith(f"Could not override '{key}'; Key ") and line.endswith(hint), line


def test_hydras_append_hint_is_dropped_for_the_closed_schema():
    """'To append to your config use +llm.tem=1' pointed at a line that ended in a traceback
    (review CC-8): the schema's sections take no new keys, the nearest keys are the hint."""
    from hydra.errors import ConfigCompositionException

    from populations.cli_common import one_line

    cfg = writable(OmegaConf.structured(ExperimentConfig))
    with pytest.raises(Exception) as caught:
        OmegaConf.update(cfg, "llm.tem", 1, merge=True)
    try:
        raise ConfigCompositionException("Could not override 'llm.tem'.\nTo append to your "
                                         "config use +llm.tem=1") from caught.value
    except ConfigCompositionException as err:
        line = one_line(err)
    assert line == "Could not override 'llm.tem'; Key 'tem' not in 'LLMConfig'; nearest: " \
                   "llm.team", line


@pytest.mark.parametrize(("path", "key", "message"), [
    ("mappo", "lrr", "mappo.lrr: Key 'lrr' not in 'MAPPOConfig' (a '+' cannot add keys to the "
                     "schema); nearest: mappo.lr"),
    ("llm", "tem", "llm.tem: Key 'tem' not in 'LLMConfig' (a '+' cannot add keys to the schema)"
                   "; nearest: llm.team")])
def test_a_key_added_with_plus_is_one_line(path, key, message):
    """+mappo.lrr=1 / +llm.tem=1 (Hydra adds the key) ended in FrozenInstanceError's traceback
    from the config check, and left the run folder's log behind (review CC-8)."""
    from omegaconf import open_dict

    cfg = writable(OmegaConf.structured(ExperimentConfig))
    node = OmegaConf.select(cfg, path)
    with open_dict(node):
        node[key] = 1
    with pytest.raises(CLIError) as err:
        to_experiment(cfg)
    assert str(err.value) == f"bad config: {message}"
