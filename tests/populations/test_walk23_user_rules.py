"""A user's own matchmaking rule (walk 23): a taken name is refused, and the rule's exception
or bad weights are one line naming it.

Before: ``@register_rule("pfsp")`` in a user's module silently replaced the built-in (the
league drew by the user's function under ``population=pfsp``); a rule that raised ended
``selfplay-train`` in Hydra's traceback; bad weights failed in numpy's words (``a and p must
have same size``, ``probabilities contain NaN``, ``probabilities do not sum to 1``) naming
no rule; an unknown rule's message did not say how to add one's own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from populations import matchmaking as mm
from populations.matchmaking import MatchmakingConfig, RuleError, opponent_distribution
from tests.populations.user_modules import user_module
from tests.subprocs import run_together

MODULE = "walk23_my_rules"
SOURCE = '''
import os

import numpy as np

from populations.matchmaking import register_rule

BUG = os.environ.get("W23_BUG", "")


@register_rule("w23_rule")
def buggy_rule(win_rates, cfg):
    n = len(win_rates)
    if BUG == "raise":
        raise RuntimeError("my rule exploded")  # RAISES
    if BUG == "shape":
        return np.ones(n + 1) / (n + 1)
    if BUG == "nan":
        return np.full(n, np.nan)
    if BUG == "zero":
        return np.zeros(n)
    if BUG == "neg":
        return np.array([-1.0] + [2.0] * (n - 1))
    if BUG == "none":
        return None
    return np.arange(1.0, n + 1)  # weights: normalized by the league
'''
RAISES_LINE = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "# RAISES" in line)
HIJACK = '''
import numpy as np

from populations.matchmaking import register_rule


@register_rule("pfsp")
def hijack(win_rates, cfg):
    p = np.zeros_like(win_rates)
    p[0] = 1.0
    return p
'''


@pytest.fixture
def rules(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path`` (the working directory), taken out of
    the registry after."""
    with user_module(tmp_path, monkeypatch, MODULE, SOURCE,
                     lambda: mm.RULES.pop("w23_rule", None)) as m:
        yield m


WANT = ("expected 3 weights, one per candidate snapshot (oldest first): finite, non-negative, "
        "not all zero")
BAD = {
    "shape": "returned an array of shape (4,) for 3 candidates",
    "nan": "returned nan for candidate 0 of 3 candidates",
    "neg": "returned -1.0 for candidate 0 of 3 candidates",
    "zero": "returned weights summing to 0.0",
    "none": "returned NoneType for 3 candidates",
}


@pytest.mark.parametrize("bug", sorted(BAD))
def test_bad_weights_are_refused_naming_the_rule(rules, monkeypatch, bug):
    monkeypatch.setattr(rules, "BUG", bug)
    with pytest.raises(RuleError) as err:
        opponent_distribution([0.2, None, 0.9], MatchmakingConfig(rule="w23_rule"))
    assert str(err.value) == f"matchmaking rule 'w23_rule' ({MODULE}.buggy_rule) {BAD[bug]}; {WANT}"
    assert isinstance(err.value, ValueError)  # a user error to the command lines: exit 2


def test_an_exception_names_the_rule_and_the_users_line(rules, monkeypatch):
    monkeypatch.setattr(rules, "BUG", "raise")
    with pytest.raises(RuleError) as err:
        opponent_distribution([0.2, 0.5], MatchmakingConfig(rule="w23_rule"))
    assert str(err.value) == (
        f"matchmaking rule 'w23_rule' ({MODULE}.buggy_rule) raised RuntimeError: my rule "
        f"exploded (at {MODULE}.py:{RAISES_LINE} in buggy_rule); HYDRA_FULL_ERROR=1 shows the "
        "traceback")
    assert isinstance(err.value.__cause__, RuntimeError)


def test_weights_are_normalized(rules):
    got = opponent_distribution([0.2, 0.5, None], MatchmakingConfig(rule="w23_rule"))
    np.testing.assert_allclose(got, [1 / 6, 2 / 6, 3 / 6])
    assert got.sum() == pytest.approx(1.0)


def test_built_in_rules_are_unchanged():
    wr = np.array([0.1, 0.5, 0.97, 1.0])
    for cfg in (MatchmakingConfig(rule="self_play"), MatchmakingConfig(rule="fsp"),
                MatchmakingConfig(), MatchmakingConfig(weighting="variance", smoothing=0.1)):
        np.testing.assert_array_equal(opponent_distribution(list(wr), cfg),
                                      mm.RULES[cfg.rule](wr, cfg))


def test_a_taken_name_is_refused_naming_who_holds_it(rules):
    with pytest.raises(ValueError) as err:
        mm.register_rule("pfsp")(lambda win_rates, cfg: win_rates)
    assert str(err.value) == ("matchmaking rule 'pfsp' is already registered by "
                              "populations.matchmaking._pfsp; register yours under another name")
    assert mm.RULES["pfsp"] is mm._pfsp
    with pytest.raises(ValueError, match=f"^matchmaking rule 'w23_rule' is already registered "
                                         f"by {MODULE}.buggy_rule;"):
        mm.register_rule("w23_rule")(lambda win_rates, cfg: win_rates)
    # the same module's function defined again (a notebook cell run twice) replaces it
    sys.modules.pop(MODULE)
    again = __import__(MODULE)
    assert mm.RULES["w23_rule"] is again.buggy_rule


def test_an_unknown_rule_says_how_to_add_ones_own():
    with pytest.raises(ValueError, match=r"^matchmaking rule 'mine' unknown; choose one of "
                                         r"\[.*\]; a rule of your own is registered by "
                                         r"@register_rule \(populations.matchmaking\) when its "
                                         r"module is imported \(selfplay-train "
                                         r"imports=\[module\]\) or by an installed "
                                         r"package's selfplay.matchmaking_rules entry "
                                         r"point$"):
        MatchmakingConfig(rule="mine")


# ------------------------------------------------------------------ through selfplay-train
def _cli(tmp_path: Path, module: str, *argv: str) -> dict:
    return {"args": [str(Path(sys.executable).parent / "selfplay-train"),
                     f"imports=[{module}]", "game=kuhn", "population.generations=2",
                     "population.frames_per_generation=100", "num_envs=2", "eval_episodes=2",
                     "progress=false", "logger=none", *argv],
            "cwd": tmp_path,
            "env": {**os.environ, "W23_BUG": "raise", "HYDRA_FULL_ERROR": "0",
                    "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]),
                                                   os.environ.get("PYTHONPATH", "")])}}


def test_selfplay_train_refuses_a_hijack_and_names_a_raising_rule(tmp_path):
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    (tmp_path / "walk23_hijack.py").write_text(HIJACK)
    hijack, raised = run_together(
        _cli(tmp_path, "walk23_hijack", "population=pfsp", f"hydra.run.dir={tmp_path / 'h'}"),
        _cli(tmp_path, MODULE, "population=fsp", "population.matchmaking.rule=w23_rule",
             f"hydra.run.dir={tmp_path / 'r'}"))
    assert hijack.returncode == 2, hijack.stderr
    assert hijack.stderr.strip().splitlines()[-1] == (
        f"selfplay-train: imports: cannot import 'walk23_hijack' from {tmp_path}: ValueError: "
        "matchmaking rule 'pfsp' is already registered by populations.matchmaking._pfsp; "
        "register yours under another name")
    assert not (tmp_path / "h").exists()
    assert raised.returncode == 2, raised.stderr
    assert "Traceback" not in raised.stderr
    assert raised.stderr.strip().splitlines()[-1].startswith(
        f"selfplay-train: matchmaking rule 'w23_rule' ({MODULE}.buggy_rule) raised "
        f"RuntimeError: my rule exploded (at {MODULE}.py:{RAISES_LINE} in buggy_rule); "
        "HYDRA_FULL_ERROR=1 shows the traceback")
