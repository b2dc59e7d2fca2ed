"""The tool tasks' size arguments are bounded before anything is built (walk35b item 1).

``tool/relay`` builds ``(max_value + 1)**2`` calculator texts per operator and a set of
answers as large: a snapshot whose ``meta.game`` was ``tool/relay(max_value=100000000,
ops='+')`` made ``selfplay-eval`` hang while its memory grew, and ``selfplay-train
experiment=tool_team_llm game.kwargs.max_value=1000000`` hung in its check before the run.
Both now refuse in one line naming the value and the accepted range (exit 2).
"""

from __future__ import annotations

import sys

import pytest

import games
from games.limits import HINT
from games.tool.base import MAX_TURNS
from games.tool.relay import MAX_VALUE
from tests import subprocs
from tests.games.crafted_snapshots import eval_refusal, refused

# a hang guard, not a speed claim: each of these refusals comes before anything is built
# (before the bounds the values here hung games.make, or ran until killed)
pytestmark = pytest.mark.timeout(300)

EVIL = "tool/relay(max_value=100000000,ops='+')"


@pytest.mark.parametrize(("spec", "kwargs", "line"), [
    (EVIL, {}, "tool/relay: max_value=100000000 is too large; accepted: an integer in "
               f"[1, {MAX_VALUE}] ({HINT})"),
    ("tool/relay", {"max_value": MAX_VALUE + 1},
     f"tool/relay: max_value={MAX_VALUE + 1} is too large; accepted: an integer in "
     f"[1, {MAX_VALUE}] ({HINT})"),
    ("tool/relay", {"solver_turns": 10**9},
     f"tool/relay: solver_turns=1000000000 is too large; accepted: an integer in "
     f"[2, {MAX_TURNS}] ({HINT})"),
    ("tool/lookup", {"max_turns": 10**9},
     f"tool/lookup: max_turns=1000000000 is too large; accepted: an integer in "
     f"[5, {MAX_TURNS}] ({HINT})"),
])
def test_a_size_above_its_bound_is_refused_before_anything_is_built(spec, kwargs, line):
    with pytest.raises(games.GameError) as info:
        games.make(spec, **kwargs)
    assert str(info.value) == line


def test_the_bounds_themselves_build():
    """The largest values accepted build in well under a second or two: every operator."""
    g = games.make("tool/relay", max_value=MAX_VALUE, ops="+-*/", solver_turns=MAX_TURNS)
    g.reset(seed=0)
    assert len(g.legal_action_texts("scout_0")) == MAX_VALUE + 1
    games.make("tool/lookup", max_turns=MAX_TURNS).reset(seed=0)


def test_selfplay_eval_refuses_a_snapshot_recording_a_too_large_relay(tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = games.make("tool/relay", max_value=2, ops="+").spec
    name = f"tool/relay(max_value={MAX_VALUE + 1},ops='+')"  # builds, slowly, without a bound
    assert eval_refusal(tmp_path, capsys, spec, name) == refused(
        name, f"tool/relay: max_value={MAX_VALUE + 1} is too large; accepted: an integer in "
              f"[1, {MAX_VALUE}] ({HINT})")


def test_selfplay_train_refuses_in_one_line_before_the_run(tmp_path):
    args = [sys.executable, "-m", "populations.cli", "experiment=tool_team_llm",
            "game.kwargs.max_value=1000000", "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"selfplay-train: tool/relay: max_value=1000000 is too large; accepted: an integer "
        f"in [1, {MAX_VALUE}] ({HINT})"]
    assert not (tmp_path / "runs").exists()
