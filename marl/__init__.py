"""Classic MARL learners, networks, buffers and the advantage math shared with ``llm_agents``."""
