"""A league (``selfplay-train`` with a population) killed anywhere and resumed ends with
the uninterrupted run's whole record, not only its matches: every snapshot's hash, every
match, the ratings at every step (Elo, mu, sigma, pairs), the payoff table, every metric
row, the generations table, the exact NashConv rows, and the members' final weights,
optimizer and random streams, to the bit.

test_league.py's kill test compares matches and snapshots; here each table is compared,
with the run stopped at four places inside a generation: after an evaluation's matches
are recorded (its ratings, payoffs and checkpoint not), between two members' training
(one generation row recorded), in the middle of a member's training (metric rows past
the last checkpoint, which the resume writes again), and between the publishing of two
members' snapshots. The league has a main member and a main exploiter that beats it, so
the exploiter's restart (decided from the recorded matches after each evaluation) happens
around every stop.

Measured (session 40, by hand with ``selfplay-train`` and kill -9 / SIGTERM at 40 points:
Kuhn, MPE simple_adversary and simple_tag with MAPPO/MADDPG/QMIX members, an LLM team,
VMAS simple_tag, nash_conv, approximate NashConv, eval_window, a generation count raised
on resume, two kills in a row, runner=ray): every table equal but for wall-clock metrics
(``llm/charts/*_seconds``, ``tokens_per_second``) and, on Ray learner actors, the
``generations`` table's ``seq`` (the order members finished in, wall-clock by design). An
asynchronous league (``sync=False``) keeps its counts (each pair once, every snapshot
rated) but not the values: its draws depend on when members finish, by design.
"""

import sqlite3

import pytest
import torch

from populations.checkpoint import checkpoint_files, read_checkpoint
from populations.db import LeagueDB
from populations.experiment import run_experiment
from populations.store import PolicyStore
from tests.populations.test_single_resume import _exp

LEAGUE = ["game=kuhn", "population=pfsp", "population.members=[mappo,mappo_exploiter]",
          "population.generations=3", "population.frames_per_generation=256", "num_envs=8",
          "mappo.rollout_steps=16", "mappo.epochs=2", "eval_episodes=2",
          "population.nash_conv=true", "population.exploiter_reset_win_rate=0.3",
          "progress=false", "logger=none"]
EPISODES = 2  # eval_episodes: a pair records 2 * EPISODES rows

TABLES = {
    "snapshots": "SELECT m.name, s.version, s.sha256 FROM snapshots s "
                 "JOIN members m ON m.id = s.member_id ORDER BY 1, 2",
    "matches": "SELECT key, seats, returns, seed FROM matches ORDER BY key",
    "ratings": "SELECT m.name, s.version, r.step, r.elo, r.mu, r.sigma, r.matches "
               "FROM ratings r JOIN snapshots s ON s.id = r.snapshot_id "
               "JOIN members m ON m.id = s.member_id ORDER BY 3, 1, 2",
    "payoffs": "SELECT ma.name, a.version, mb.name, b.version, p.value, p.win_rate, p.count, "
               "p.exact FROM payoffs p JOIN snapshots a ON a.id = p.row_snapshot "
               "JOIN members ma ON ma.id = a.member_id JOIN snapshots b ON b.id = p.col_snapshot "
               "JOIN members mb ON mb.id = b.member_id ORDER BY 1, 2, 3, 4",
    "metrics": "SELECT IFNULL(m.name, ''), x.step, x.key, x.value FROM metrics x "
               "LEFT JOIN members m ON m.id = x.member_id ORDER BY 2, 3, 1",
    "generations": "SELECT member, version, seq, frames FROM generations ORDER BY seq",
    "exploitability": "SELECT label, method, value FROM exploitability ORDER BY 1, 2",
}


class _Killed(Exception):
    """Stands for a kill of the process (what it wrote before stays on disk)."""


def _record(run_dir):
    db = sqlite3.connect(run_dir / "league.db")
    try:
        return {name: db.execute(sql).fetchall() for name, sql in TABLES.items()}
    finally:
        db.close()


def _flat(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flat(v, f"{path}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _flat(v, f"{path}[{i}]")
    else:
        yield path, value


def _members(run_dir):
    """The newest checkpoint's step and its members' whole states, flattened."""
    newest = checkpoint_files(run_dir / "checkpoints")[0]
    state = read_checkpoint(newest)
    return newest.name, state["generation"], state["phase"], dict(_flat(state["members"]))


def _same_states(got, want):
    assert got.keys() == want.keys()
    differ = [k for k, v in want.items()
              if not (torch.equal(got[k], v) if isinstance(v, torch.Tensor) else got[k] == v)]
    assert differ == []


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("ref")
    run_experiment(_exp(*LEAGUE), run_dir)
    return _record(run_dir), _members(run_dir)


def _kill_at(monkeypatch, owner, name, at_call):
    """Die right after the ``at_call``-th call of ``owner.name`` (its writes kept)."""
    real, calls = getattr(owner, name), []

    def dying(self, *args, **kw):
        out = real(self, *args, **kw)
        calls.append(1)
        if len(calls) == at_call:
            raise _Killed(f"killed after {name} #{at_call}")
        return out

    monkeypatch.setattr(owner, name, dying)
    return calls


# (what is patched, the call after which the process dies): each lands inside generation 1
# or 2, past the generation-0 checkpoint
STOPS = {
    "after_matches": (LeagueDB, "add_matches", 2),  # generation 1's pairs recorded, its
    # ratings and "done" checkpoint not (in process, one batch of pairs a generation)
    "between_members": (LeagueDB, "add_generation", 3),  # generation 2: main trained only
    "mid_training": (LeagueDB, "log_metrics", 10),  # generation 2: main trained, the
    # exploiter one update of two
    "between_publishes": (PolicyStore, "publish", 5),  # generation 2: main's v2 only
}


@pytest.mark.parametrize("stop", list(STOPS))
def test_a_league_killed_anywhere_resumes_to_the_uninterrupted_record(
        stop, uninterrupted, tmp_path, monkeypatch):
    want, (want_ckpt, want_gen, want_phase, want_members) = uninterrupted
    owner, name, at = STOPS[stop]
    _kill_at(monkeypatch, owner, name, at)
    with pytest.raises(_Killed):
        run_experiment(_exp(*LEAGUE), tmp_path)
    monkeypatch.undo()
    partial = _record(tmp_path)
    assert 0 < len(partial["matches"]) < len(want["matches"])  # it stopped inside the run
    assert checkpoint_files(tmp_path / "checkpoints")  # past generation 0's checkpoint
    run_experiment(_exp(*LEAGUE, "resume=true"), tmp_path)
    got = _record(tmp_path)
    # nothing lost, nothing twice: every pair's episodes once, keys unique
    keys = [k for k, *_ in got["matches"]]
    assert len(keys) == len(set(keys))
    pairs = {}
    for k in keys:
        pairs[k.rsplit("/", 2)[0]] = pairs.get(k.rsplit("/", 2)[0], 0) + 1
    assert set(pairs.values()) == {2 * EPISODES}
    assert any(v == 1.0 for (_, _, k, v) in want["metrics"] if k.endswith("/reset"))
    for table in TABLES:  # one at a time: the first that differs is named
        assert got[table] == want[table], table
    ckpt, gen, phase, members = _members(tmp_path)
    assert (ckpt, gen, phase) == (want_ckpt, want_gen, want_phase)
    _same_states(members, want_members)
