"""README snippets run as a new user pastes them, so they cannot rot.

Only the cheap ones run here (well under a second each); the training snippets are run by
hand with smaller budgets (see the examples tests for the command lines)."""

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_block(after: str) -> str:
    """The first ```python block of README.md after the line ``after``."""
    text = README.read_text()
    start = text.index(after)
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_readme_games_snippet_runs_as_written():
    ns: dict = {}
    exec(compile(_python_block("## Games"), "README.md (Games)", "exec"), ns)
    g, ts = ns["g"], ns["ts"]
    assert g.spec.name == "openspiel/kuhn_poker"
    assert g.action_text(ns["agent"], ns["action"]) == "Bet"
    assert ts.acting == ("player_1",)  # the step was taken: the other seat acts now


def test_readme_advantages_snippets_run_as_written(monkeypatch):
    from marl import advantages

    monkeypatch.setattr(advantages, "_REGISTRY", dict(advantages._REGISTRY))  # no leak
    ns: dict = {}
    exec(compile(_python_block("### Advantages"), "README.md (Advantages)", "exec"), ns)
    res, adv, returns = ns["res"], ns["adv"], ns["returns"]
    assert res.advantages.shape == adv.shape == returns.shape
    assert bool((res.advantages[~ns["mask"]] == 0).all())
    exec(compile(_python_block("yours too: the function gets"), "README.md (adv_norm)", "exec"), ns)
    out = ns["normalize_advantages"]("agent_median", returns, ns["keys"]).advantages
    a0 = returns[..., 0].reshape(-1)
    want = (a0 - a0.median()) / (a0.std(correction=0) + 1e-6)
    assert torch.allclose(out[..., 0].reshape(-1), want)
    assert advantages.get_adv_norm("agent_median").needs == ("agent",)


def test_readme_yaml_presets_put_the_package_line_first():
    """Hydra reads ``# @package`` only as a file's first line: README's learner preset had a
    comment above it, and a user who pasted it got "In 'algo/my_algo': Cannot convert
    'DictConfig' to string" (walk 21)."""
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)
    packaged = [b for b in blocks if "@package" in b]
    assert len(packaged) >= 2  # the league members preset and the learner preset
    for block in packaged:
        assert block.startswith("# @package _global_\n"), block.splitlines()[:2]
