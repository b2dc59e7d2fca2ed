"""Agent, entity and round counts of VMAS, PettingZoo MPE and the matrix games are bounded
before anything is built (bounds35).

A game name read from a file is untrusted text: ``vmas/simple_spread(n_agents=100000000)``
and ``pettingzoo/mpe2.simple_spread_v3(N=100000000)`` made ``games.make`` hang (over 25 s,
memory growing), ``matrix/climbing(repeats=100000000)`` built at once but each observation
was 400 MB (10**9: a MemoryError at reset). Each is now refused in one line naming the value
and the accepted range, by ``games.make``, ``selfplay-eval`` (a snapshot's recorded name) and
``selfplay-train`` (``game.kwargs``), exit 2, no run folder, no league database.
"""

from __future__ import annotations

import sys

import pytest

import games
from games.limits import HINT
from games.matrix import MAX_REPEATS
from games.pettingzoo_params import MAX_MPE_COUNT
from games.vmas_params import MAX_COUNT
from tests import subprocs
from tests.games.crafted_snapshots import eval_refusal, refused

# a hang guard, not a speed claim: each of these refusals comes before anything is built
# (before the bounds the values here hung games.make, or ran until killed)
pytestmark = pytest.mark.timeout(300)

BIG = 100000000


def _line(game: str, arg: str, value: object, low: int, high: int) -> str:
    # each names the switch that lifts the limits (bounds36)
    return f"{game}: {arg}={value} is too large; accepted: an integer in [{low}, {high}] ({HINT})"


CASES = [
    ("vmas/simple_spread", {"n_agents": BIG},
     _line("vmas/simple_spread", "n_agents", BIG, 1, MAX_COUNT)),
    ("vmas/simple_tag", {"num_landmarks": MAX_COUNT + 1},
     _line("vmas/simple_tag", "num_landmarks", MAX_COUNT + 1, 0, MAX_COUNT)),
    ("pettingzoo/mpe2.simple_spread_v3", {"N": BIG},
     _line("pettingzoo/mpe2.simple_spread_v3", "N", BIG, 1, MAX_MPE_COUNT)),
    ("pettingzoo/mpe2.simple_tag_v3", {"num_adversaries": MAX_MPE_COUNT + 1},
     _line("pettingzoo/mpe2.simple_tag_v3", "num_adversaries", MAX_MPE_COUNT + 1, 1,
           MAX_MPE_COUNT)),
    ("matrix/climbing", {"repeats": BIG}, _line("matrix/climbing", "repeats", BIG, 1,
                                                  MAX_REPEATS)),
    ("matrix/penalty", {"repeats": 10**9}, _line("matrix/penalty", "repeats", 10**9, 1,
                                                   MAX_REPEATS)),
]


@pytest.mark.parametrize(("spec", "kwargs", "line"), CASES)
def test_a_count_above_its_bound_is_refused_before_anything_is_built(spec, kwargs, line):
    with pytest.raises(games.GameError) as info:
        games.make(spec, **kwargs)
    assert str(info.value) == line


def test_the_largest_repeats_builds_and_plays():
    g = games.make("matrix/climbing", repeats=MAX_REPEATS)
    g.reset(seed=0)
    assert g.observe("agent_0").shape == (MAX_REPEATS,)


@pytest.mark.parametrize(("small", "name", "line"), [
    ({"spec": "matrix/climbing"}, f"matrix/climbing(repeats={BIG})", CASES[4][2]),
    ({"spec": "vmas/simple_spread", "n_agents": 2}, f"vmas/simple_spread(n_agents={BIG})",
     CASES[0][2]),
    ({"spec": "pettingzoo/mpe2.simple_spread_v3", "N": 2},
     f"pettingzoo/mpe2.simple_spread_v3(N={BIG})", CASES[2][2]),
])
def test_selfplay_eval_refuses_a_snapshot_recording_a_too_large_count(tmp_path, capsys,
                                                                      monkeypatch, small,
                                                                      name, line):
    monkeypatch.chdir(tmp_path)
    kwargs = dict(small)
    spec = games.make(kwargs.pop("spec"), **kwargs).spec
    assert eval_refusal(tmp_path, capsys, spec, name) == refused(name, line)


@pytest.mark.parametrize(("game", "override", "line"), [
    ("vmas_spread", f"game.kwargs.n_agents={BIG}", CASES[0][2]),
    ("mpe_spread", f"game.kwargs.N={BIG}", CASES[2][2]),
    ("climbing", f"+game.kwargs.repeats={BIG}", CASES[4][2]),
])
def test_selfplay_train_refuses_in_one_line_before_the_run(tmp_path, game, override, line):
    args = [sys.executable, "-m", "populations.cli", f"game={game}", override,
            "hydra.run.dir=runs/r1"]
    res = subprocs.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [f"selfplay-train: {line}"]
    assert not (tmp_path / "runs").exists()
