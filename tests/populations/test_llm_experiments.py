"""LLM teams as league members through the experiment layer: the mixed league trains and
rates an LLM team and a MAPPO learner together, logs exact NashConv for both, and resumes
without losing or repeating snapshots and matches; a cooperative tool-task run records its
success rate; the LLM config fails clearly on bad values."""

import sqlite3

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import populations.cli  # noqa: F401  (registers the schema)
from llm_agents.build import LLMConfig, build_team
from populations.experiment import run_experiment

TINY_LLM = ["llm.iterations=1", "llm.grpo.group_size=2", "llm.grpo.groups_per_step=4",
            "llm.corpus_episodes=20", "eval_episodes=2", "num_envs=4", "progress=false",
            "logger=none"]


def _experiment(overrides):
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(config_name="config", overrides=overrides))


def _rows(db_path, sql):
    db = sqlite3.connect(db_path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_mixed_league_trains_rates_and_resumes_both_kinds(tmp_path):
    base = ["experiment=mixed_league", "population.frames_per_generation=256", *TINY_LLM]
    run_experiment(_experiment([*base, "population.generations=1"]), tmp_path)
    summary = run_experiment(_experiment([*base, "population.generations=2", "resume=true"]),
                             tmp_path)
    snaps = _rows(summary.database, "SELECT m.name, m.kind, s.version FROM snapshots s "
                                    "JOIN members m ON s.member_id = m.id")
    assert sorted(snaps) == sorted((n, k, v) for n, k in (("mappo", "mappo"), ("llm", "llm"))
                                   for v in range(3))
    # generation g: each new snapshot meets every earlier one, and the two new ones meet
    # each other: 2 * 2g + 1 pairs (generation 0: the two untrained ones, 1), each played as
    # eval_episodes role-swapped episode pairs
    pairs = sum(2 * 2 * g + 1 for g in (0, 1, 2))
    assert _rows(summary.database, "SELECT COUNT(*) FROM matches")[0][0] == pairs * 2 * 2
    kinds = _rows(summary.database, "SELECT DISTINCT key FROM metrics WHERE key LIKE 'nash%'")
    assert {k for (k,) in kinds} == {"nash_conv/mappo", "nash_conv/llm"}
    trained = _rows(summary.database, "SELECT DISTINCT key FROM metrics WHERE key LIKE 'llm/%'")
    assert ("llm/charts/legal_rate",) in trained
    assert {r["member"] for r in summary.table} == {"mappo", "llm"}
    assert all(r["pairs"] > 0 for r in summary.table)


def test_kuhn_llm_selfplay_logs_nash_conv_of_every_snapshot(tmp_path):
    exp = _experiment(["experiment=kuhn_llm_selfplay", "population.generations=2", *TINY_LLM])
    summary = run_experiment(exp, tmp_path)
    values = _rows(summary.database,
                   "SELECT value FROM metrics WHERE key = 'nash_conv/llm' ORDER BY step")
    assert len(values) == 3  # v0, v1, v2
    assert all(0.0 <= v <= 4.0 for (v,) in values)  # Kuhn's NashConv is at most the pot


def test_tool_team_run_records_success_and_evaluation_matches(tmp_path):
    exp = _experiment(["experiment=tool_team_llm", *TINY_LLM])
    assert exp.llm.team == "per_role"
    summary = run_experiment(exp, tmp_path)
    (row,) = summary.table
    assert 0.0 <= row["success_rate"] <= 1.0 and row["legal_rate"] == 1.0
    assert _rows(summary.database, "SELECT COUNT(*) FROM matches")[0][0] == 2
    keys = {k for (k,) in _rows(summary.database, "SELECT DISTINCT key FROM metrics")}
    assert {"charts/success_rate", "losses/grad_norm/scout", "losses/grad_norm/solver"} <= keys


def test_per_role_team_gives_each_role_its_own_model():
    team = build_team(LLMConfig(team="per_role", corpus_episodes=10), ["tool/relay"],
                      {"tool/relay": {"max_value": 2, "ops": "+"}})
    assert sorted(team.models) == ["scout", "solver"]
    a, b = (next(team.models[r].model.parameters()) for r in ("scout", "solver"))
    assert not (a == b).all()  # different initializations


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (dict(model="???"), "llm.model is not set"),
        (dict(model="/no/such/model/dir"), "llm.model='/no/such/model/dir' could not be loaded"),
    ],
)
def test_bad_model_fails_with_a_clear_message(cfg, message):
    with pytest.raises(ValueError, match=message):
        build_team(LLMConfig(**cfg), ["openspiel/kuhn_poker"])


def test_llm_config_rejects_unknown_backend():
    with pytest.raises(ValueError, match="llm backend 'tgi' unknown"):
        LLMConfig(backend="tgi")


@pytest.mark.parametrize("preset", ["hf", "vllm"])
def test_a_real_model_preset_without_a_model_is_refused(preset):
    """``experiment=kuhn_llm_selfplay llm=hf`` (no llm.model) trained the tiny model with the
    real-model settings (256 new tokens a turn: 588 s a generation) without a word."""
    from hydra import compose, initialize_config_module

    from populations.command_line import CLIError
    from populations.train_overrides import to_experiment

    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=["experiment=kuhn_llm_selfplay",
                                                       f"llm={preset}"])
    with pytest.raises(CLIError, match=r"llm\.model is empty; llm=hf and llm=vllm"):
        to_experiment(cfg)


def test_a_model_path_that_does_not_exist_is_named_as_such(tmp_path):
    with pytest.raises(ValueError, match="could not be loaded \\(no such directory\\)"):
        build_team(LLMConfig(model="/path/to/your/model"), ["openspiel/kuhn_poker"])
    with pytest.raises(ValueError, match="could not be loaded \\(no config.json in it\\)"):
        build_team(LLMConfig(model=str(tmp_path)), ["openspiel/kuhn_poker"])
