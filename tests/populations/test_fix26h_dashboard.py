"""The dashboard draws what a researcher looks for first (fix26h): advantage diagnostics by
agent and role name (``adv/role_adversary/...``: MAPPO names them now), and an LLM team's
action and task metrics (legal rate, success rate, invalid turns, tokens per second), which
were reachable only by typing their keys into the free chart."""

from __future__ import annotations

import games
from llm_agents.rollout import batch_metrics
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from populations.dashboard import queries
from populations.db import LeagueDB
from populations.single_eval import EVAL_LEGAL_RATE

RAW = "Raw advantage per agent and role"
LLM = "LLM actions / task success"


def _panels(tmp_path, *steps: dict[str, float]) -> dict[str, set[str]]:
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", experiment="default", game="g")
    for i, metrics in enumerate(steps):
        db.log_metrics(run, 100 * (i + 1), metrics)
    try:
        return {p["title"]: {s["key"] for s in p["series"]}
                for p in queries.learner_panels(db, run)["panels"]}
    finally:
        db.close()


def test_a_mappo_runs_named_advantage_keys_reach_the_panels(tmp_path):
    game = "pettingzoo/mpe2.simple_adversary_v3"
    spec = games.make(game, max_cycles=25).spec
    learner = MAPPO(spec, MAPPOConfig(adv_norm="role", rollout_steps=25, epochs=1,
                                      minibatches=1), seed=0)  # fmt: skip
    vg = games.VectorGame(game, 4, seed=0, max_cycles=25, **learner.vector_game_kwargs)
    metrics = train(learner, vg, frames=4 * 25, progress=False).metrics[-1]
    panels = _panels(tmp_path, metrics)
    assert panels["Advantage per role"] == {f"adv/role_{r}/adv_{s}" for r in
                                            ("adversary", "agent") for s in ("mean", "std")}
    agents = ("agent_adversary_0", "agent_0", "agent_1")  # not agent_agent_0 (marl27)
    assert panels["Advantage per agent"] == {f"adv/{a}/adv_{s}" for a in agents
                                             for s in ("mean", "std")}
    assert panels[RAW] == {f"adv/{k}/raw_{s}" for k in ("role_adversary", "role_agent", *agents)
                           for s in ("mean", "std")}


def test_escaped_and_empty_names_and_a_members_keys_are_drawn(tmp_path):
    panels = _panels(tmp_path, {"adv/role_a%2Fb/adv_mean": 0.0, "adv/role_/adv_std": 1.0,
                                "adv/agent_3/raw_mean": 0.5,  # an older, numbered run
                                "main/adv/role_scout/raw_std": 1.0})
    assert panels["Advantage per role"] == {"adv/role_a%2Fb/adv_mean", "adv/role_/adv_std"}
    assert panels[RAW] == {"adv/agent_3/raw_mean", "main/adv/role_scout/raw_std"}


def test_an_llm_runs_action_and_task_metrics_have_panels(tmp_path):
    rollout = batch_metrics([], [], 2.0, 0)  # the keys an LLM team's iteration logs
    step = {**rollout, "charts/success_rate": 0.25, EVAL_LEGAL_RATE: 0.9}
    panels = _panels(tmp_path, step, {**step, "charts/legal_rate": 0.8})
    assert panels[LLM] == {"charts/success_rate", "charts/legal_rate", EVAL_LEGAL_RATE}
    assert panels["LLM invalid turns"] == {"charts/invalid_turns"}
    assert panels["LLM throughput"] == {"charts/tokens_per_second"}
    # a league member's keys (<member>/charts/..., members.py) too; nothing of a MAPPO run's
    member = _panels(tmp_path / "m", {"llm/charts/legal_rate": 1.0,
                                      "llm/charts/tokens_per_second": 50.0,
                                      "eval_legal_rate/llm": 0.5})  # league_eval.py's
    assert member[LLM] == {"llm/charts/legal_rate", "eval_legal_rate/llm"}
    assert member["LLM throughput"] == {"llm/charts/tokens_per_second"}
    mappo = _panels(tmp_path / "p", {"charts/episode_return": 1.0, "charts/frames": 8.0})
    assert not {LLM, "LLM invalid turns", "LLM throughput"} & set(mappo)


def test_a_leagues_legal_rate_is_one_curve_per_member(tmp_path):
    """A league logs ``eval_legal_rate/<member>`` for each new snapshot and
    ``eval_legal_rate/<member>@v<version>`` for a rival with no rate yet (a lone LLM member's
    v0, league_eval.legal_key), and runs made with 6dbec56 logged every snapshot's rate under
    its own key: one point a key, which the chart's lines did not draw (rfix33b). Each key of
    a member is drawn in its member's curve; a bin holding two averages them."""
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", experiment="league", game="g")
    db.log_metrics(run, 0, {"eval_legal_rate/mixed@v0": 0.5})  # a 6dbec56 run's key
    db.log_metrics(run, 64, {"eval_legal_rate/llm": 0.75, "eval_legal_rate/llm@v0": 0.25,
                             "eval_legal_rate/mixed@v1": 0.625})
    db.log_metrics(run, 128, {"eval_legal_rate/llm": 1.0, "eval_legal_rate/mixed": 0.875,
                              "eval_legal_rate/llm2@v0": 0.125})  # one point: its own curve
    doc = queries.learner_panels(db, run)
    (panel,) = [p for p in doc["panels"] if p["title"] == LLM]
    curves = {s["key"]: (s["step"], s["value"]) for s in panel["series"]}
    assert curves == {"eval_legal_rate/llm": ([64, 128], [0.5, 1.0]),
                      "eval_legal_rate/llm2": ([128], [0.125]),
                      "eval_legal_rate/mixed": ([0, 64, 128], [0.5, 0.625, 0.875])}
    # the free chart's keys are the curves; either key of a member asks for its curve
    assert [k for k in doc["keys"] if k.startswith("eval_legal_rate/")] == list(curves)
    for key in ("eval_legal_rate/mixed", "eval_legal_rate/mixed@v1"):
        (series,) = queries.metric_series(db, run, [key])
        assert (series["key"], series["step"], series["value"]) == (
            "eval_legal_rate/mixed", [0, 64, 128], [0.5, 0.625, 0.875])
    db.close()
