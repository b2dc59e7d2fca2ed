"""LLM agent teams: backends, prompts, action parsing, rollouts and the multi-turn trainer."""
