"""Mutation walk mut41b over llm_agents/team.py (mutation named in the docstring)."""

from llm_agents.team import Team
from llm_agents.tiny import build_model, build_tokenizer


def test_per_role_teams_keep_each_roles_prompt():
    """(mutation: ``Team.per_role`` bound every role with an empty prompt)."""
    tok = build_tokenizer(["send answer calc"])
    team = Team.per_role({r: (build_model(tok), tok) for r in ("scout", "solver")},
                         {"scout": "Send your number."})
    assert team.binding("scout").prompt == "Send your number."
    assert team.binding("solver").prompt == ""
    assert team.model_for("solver").name == "solver"
