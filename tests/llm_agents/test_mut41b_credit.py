"""Mutation walk mut41b over llm_agents/credit.py (mutation named in the docstring)."""

from llm_agents.credit import KeyIndex


def test_key_ids_survive_a_checkpoint_whatever_order_names_appear_in_next():
    """A resumed run keeps its role ids (the ``role_ema`` baselines are stored per role id)
    even when the next batch meets the roles in another order (mutation: loading the state
    kept no names, so ids went by the next batch's order)."""
    index = KeyIndex()
    assert [index.id("role", r) for r in ("scout", "solver")] == [0, 1]
    resumed = KeyIndex()
    resumed.load_state_dict(index.state_dict())
    assert [resumed.id("role", r) for r in ("solver", "scout", "judge")] == [1, 0, 2]
    assert resumed.state_dict()["role"] == ["scout", "solver", "judge"]
    assert index.state_dict()["role"] == ["scout", "solver"]  # a copy, not shared lists
