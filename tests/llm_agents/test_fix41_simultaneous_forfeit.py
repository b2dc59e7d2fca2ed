"""on_invalid="end" in a simultaneous game: when both seats answer invalid output in the same
step, both turns carry the penalty and so do both episode returns (mut41b: only the first
agent's return and info named it, an arbitrary pick between the two)."""
from __future__ import annotations

import torch

from llm_agents.actions import ActionConfig
from llm_agents.rollout import EpisodeJob, RolloutEngine
from llm_agents.team import RoleBinding, Team, TeamModel
from llm_agents.tiny import build_tokenizer
from tests.llm_agents.test_actions import ScriptedBackend


def _batch(replies):
    tok = build_tokenizer(["Rock Paper Scissors"])
    team = Team({"m": TeamModel("m", torch.nn.Linear(1, 1), tok, ScriptedBackend(tok, replies))},
                {"*": RoleBinding("m")})
    action = ActionConfig(mode="generate", on_invalid="end", invalid_penalty=-1.0)
    return RolloutEngine(team, action).run([EpisodeJob("openspiel/matrix_rps", 0)])


def test_both_seats_invalid_at_once_are_both_charged():
    batch = _batch(["no idea"])
    ep = batch.episodes[0]
    assert [(t.agent, t.reward) for t in batch.turns] == [("player_0", -1.0), ("player_1", -1.0)]
    assert ep.returns == {"player_0": -1.0, "player_1": -1.0}
    assert ep.info == {"invalid_end": "player_0, player_1"} and ep.length == 0
    # the returns are what the turns were paid: nothing charged twice or left out
    assert sum(t.reward for t in batch.turns) == sum(ep.returns.values())
