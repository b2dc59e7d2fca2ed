"""Ctrl-C / SIGTERM in a CLI stop a league or a PSRO run at the next point a checkpoint
keeps bit for bit (after a member's training, after a batch of evaluation pairs, after a
PSRO best response or iteration); the resume ends with the uninterrupted run's tables. The
handlers are the CLIs' (``sigterm_as_interrupt``); the signal is sent to this process."""

import os
import signal
import sqlite3

import pytest

import games
from marl.mappo import MAPPO
from populations import run_folder
from populations.checkpoint import load_latest
from populations.league import League
from populations.members import MAPPOMember
from populations.runners import LocalRunner
from tests.populations.test_league import _kuhn
from tests.populations.test_psro_resume import _metrics, _run, _state

TABLES = {
    "snapshots": "SELECT m.name, s.version, s.sha256 FROM snapshots s "
                 "JOIN members m ON s.member_id = m.id ORDER BY m.name, s.version",
    "matches": "SELECT key, seats, returns, seed FROM matches ORDER BY id",
    "payoffs": "SELECT row_snapshot, col_snapshot, value, win_rate, count FROM payoffs "
               "ORDER BY row_snapshot, col_snapshot",
    "ratings": "SELECT snapshot_id, step, elo, mu, sigma, matches FROM ratings "
               "ORDER BY snapshot_id, step",
    "metrics": "SELECT IFNULL(member_id, -1), step, key, value FROM metrics "
               "ORDER BY member_id, step, key",
    "generations": "SELECT member, version, frames FROM generations ORDER BY member, version",
}


def _tables(run_dir):
    db = sqlite3.connect(run_dir / "league.db")
    try:
        return {name: db.execute(sql).fetchall() for name, sql in TABLES.items()}
    finally:
        db.close()


def _league(run_dir, resume=False, **settings):
    """Two MAPPO members on Kuhn poker, two generations (about 1 s); ``settings`` add to the
    :class:`LeagueConfig`'s."""
    cfg = _kuhn(frames_per_generation=64, eval_episodes=1, **settings)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, run_dir, resume=resume, members=members)
    try:
        league.run()
    finally:
        league.close()


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    run = tmp_path_factory.mktemp("league") / "whole"
    _league(run)
    return _tables(run)


def _signal_in(monkeypatch, cls, method, when, times=1):
    """Send SIGTERM to this process ``times`` times the first time ``cls.method`` is called
    with arguments for which ``when(self, *args)`` holds, then go on with the call."""
    real = getattr(cls, method)
    sent = []

    def signalled(self, *args, **kwargs):
        if not sent and when(self, *args):
            sent.append(1)
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGTERM)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, method, signalled)


def test_a_league_stops_after_the_members_training_and_resumes_bit_for_bit(
        tmp_path, monkeypatch, whole):
    """SIGTERM while member ``a`` trains generation 2: ``a`` finishes, a checkpoint holds
    it trained and ``b`` not yet, the run stops (Terminated) recorded ``interrupted``; the
    resume trains ``b`` only and ends with every table of the uninterrupted run."""
    _signal_in(monkeypatch, MAPPOMember, "train_generation",
               lambda m, mm: m.name == "a" and mm.plan.generation == 2)
    trained = []
    real = MAPPOMember.train_generation
    monkeypatch.setattr(MAPPOMember, "train_generation",
                        lambda m, mm: trained.append(m.name) or real(m, mm))
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _league(tmp_path / "run")
    assert trained == ["a", "b", "a"]  # generation 1, then a of generation 2
    _, state = load_latest(tmp_path / "run" / "checkpoints")
    assert (state["generation"], state["phase"], state["trained"]) == (2, "training", ["a"])
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    assert db.execute("SELECT status, error FROM runs").fetchone() == (
        "interrupted", "Terminated: SIGTERM")
    db.close()
    trained.clear()
    _league(tmp_path / "run", resume=True)
    assert trained == ["b"]
    assert _tables(tmp_path / "run") == whole


def test_a_league_stops_inside_its_evaluation_and_plays_only_the_pairs_left(
        tmp_path, monkeypatch, whole):
    """SIGTERM while generation 1's first pair plays: that pair is recorded, the others are
    not played, the run stops; its resume plays the pairs left (not the first again)."""
    _signal_in(monkeypatch, LocalRunner, "play", lambda r, jobs: jobs[0].key.startswith(
        "g0001/") and len(plays) == 2)  # generation 0's pair (a0 against b0), then g0001's
    plays = []
    real = LocalRunner.play
    monkeypatch.setattr(LocalRunner, "play", lambda r, jobs: plays.append(
        {j.key.rsplit("/", 1)[0] for j in jobs}) or real(r, jobs))
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _league(tmp_path / "run")
    plays = plays[1:]  # generation 1's
    assert len(plays) == 1 and len(plays[0]) == 1  # one pair, then the stop
    _, state = load_latest(tmp_path / "run" / "checkpoints")
    assert (state["generation"], state["phase"]) == (1, "trained")
    pairs = {k for k, *_ in whole["matches"] if k.startswith("g0001/")}
    assert len({k.rsplit("/", 2)[0] for k in pairs}) == 5  # a: a0, b0; b: a0, b0, a1
    _league(tmp_path / "run", resume=True)
    assert plays[0] not in plays[1:]
    assert _tables(tmp_path / "run") == whole


def test_a_second_signal_stops_the_league_at_once(tmp_path, monkeypatch):
    """Two SIGTERMs while ``a`` trains: it stops in that training, with no new checkpoint."""
    _signal_in(monkeypatch, MAPPOMember, "train_generation",
               lambda m, mm: m.name == "a" and mm.plan.generation == 1, times=2)
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _league(tmp_path / "run")
    _, state = load_latest(tmp_path / "run" / "checkpoints")
    assert (state["generation"], state["phase"]) == (0, "done")


def test_psro_stops_after_the_iteration_at_hand(tmp_path, monkeypatch):
    """SIGTERM during an iteration's recorded matches: the iteration is recorded whole and
    the run stops before the next one."""
    from populations import psro_run

    real = psro_run._record_matches

    def signalled(db, run_id, runner, store, recorder, cfg, iteration, *args):
        if iteration == 0:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(db, run_id, runner, store, recorder, cfg, iteration, *args)

    monkeypatch.setattr(psro_run, "_record_matches", signalled)
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _run(tmp_path / "run", 3)
    got = _state(tmp_path / "run" / "league.db")
    assert len(got["iterations"]) == 1 and len(got["matches"]) == 2


LEAGUE_ARGS = ["--game", "openspiel/kuhn_poker", "--generations", "1",
               "--frames-per-generation", "64", "--num-envs", "4", "--eval-episodes", "1"]


def test_the_league_cli_prints_selfplay_trains_summary(tmp_path, capsys):
    """``python -m populations.league`` ended without the summary table selfplay-train
    prints; the resume it names is the league CLI's own."""
    from populations import league_cli

    league_cli.main(["--run-dir", str(tmp_path / "run"), *LEAGUE_ARGS])
    out = capsys.readouterr().out
    assert f"run folder : {tmp_path / 'run'}" in out
    assert "member" in out and "elo" in out and "pairs" in out
    assert f"--run-dir {tmp_path / 'run'} " in out and out.count("--resume)") == 1
    assert "hydra.run.dir" not in out


def test_the_league_cli_stops_at_sigterm_after_the_training(tmp_path, monkeypatch, capfd):
    """SIGTERM while the only member trains: the generation's training ends, the 'trained'
    checkpoint is written, exit 143 with the league CLI's resume line."""
    from populations import league_cli

    _signal_in(monkeypatch, MAPPOMember, "train_generation", lambda m, mm: True)
    argv = ["--run-dir", str(tmp_path / "run"), *LEAGUE_ARGS]
    with pytest.raises(SystemExit) as stop:
        league_cli.main(argv)
    assert stop.value.code == 143
    err = capfd.readouterr().err  # the note is written to file descriptor 2
    assert "SIGTERM: stopping with a checkpoint after the member in training" in err
    assert "terminated (SIGTERM)" in err and "--eval-episodes 1 --resume" in err
    _, state = load_latest(tmp_path / "run" / "checkpoints")
    assert (state["generation"], state["phase"]) == (1, "trained")


@pytest.mark.parametrize("trained, phase", [(["nobody"], "training"), (["a", "a"], "training"),
                                            ("a", "training"), (["a"], "done")])
def test_a_checkpoints_trained_members_are_checked(trained, phase):
    """The members a stopped generation trained come from an untrusted file: an unknown or
    repeated name, a non-list, or a list outside the 'training' phase is one line."""
    from marl.core import CheckpointError
    from populations.league_state import checked_state

    state = {"generation": 1, "phase": phase, "frames": 0, "members": {}, "trained": trained}
    with pytest.raises(CheckpointError, match="trained is .*; expected a list of distinct"):
        checked_state("ckpt_000002.pt", state, ["a", "b"])
    state["trained"] = ["b"] if phase == "training" else []
    assert list(checked_state("ckpt_000002.pt", state, ["a", "b"]).trained) == state["trained"]


def test_psro_stops_after_a_best_response_and_resumes_bit_for_bit(tmp_path, monkeypatch):
    """SIGTERM while player 0's best response of iteration 1 trains (RL oracle): it is kept
    (published), the run stops before player 1's; the resume trains player 1's only and ends
    with the uninterrupted run's members (their files' hashes too: a member loaded back and
    published again saved equal tensors in other bytes), iterations, matches and metric
    rows (database and metrics.csv)."""
    from populations.psro import RLOracle

    extra = ["population.oracle=rl", "population.oracle_frames=16", "num_envs=2",
             "logger=csv"]

    def tables(summary):
        db = sqlite3.connect(summary.database)
        try:
            hashes = db.execute(TABLES["snapshots"]).fetchall()
        finally:
            db.close()
        return hashes, _state(summary.database), _metrics(summary)

    want = tables(_run(tmp_path / "whole", 2, extra=extra))
    calls = []
    _signal_in(monkeypatch, RLOracle, "best_response", lambda o, *args: len(calls) == 3)
    real = RLOracle.best_response
    monkeypatch.setattr(RLOracle, "best_response", lambda o, agent, *args: (
        calls.append(agent), real(o, agent, *args))[1])
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _run(tmp_path / "run", 2, extra=extra)
    assert len(calls) == 3  # iteration 0's two, iteration 1's first
    got = _state(tmp_path / "run" / "league.db")
    assert len(got["iterations"]) == 1
    assert [n for n, _ in got["snapshots"]].count(f"psro-{calls[2]}-2") == 1
    calls.clear()
    assert tables(_run(tmp_path / "run", 2, resume=True, extra=extra)) == want
    assert len(calls) == 1  # the kept best response was not trained again


def test_a_signal_after_the_leagues_last_stop_check_leaves_it_finished(
        tmp_path, monkeypatch, capfd):
    """SIGTERM as the league records itself finished (after its last stop check): every
    generation is recorded, so the run ends normally, 'finished' (before: the block's end
    raised Terminated and the complete run was recorded 'interrupted', exit 143)."""
    from populations.db import LeagueDB

    _signal_in(monkeypatch, LeagueDB, "set_run_status", lambda db, run_id, status, *a:
               status == "finished")
    with run_folder.sigterm_as_interrupt():
        _league(tmp_path / "run")
    assert "nothing left to resume" in capfd.readouterr().err
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    assert db.execute("SELECT status, error FROM runs").fetchone() == ("finished", None)
    db.close()


def test_a_signal_in_psros_last_iteration_leaves_it_finished(tmp_path, monkeypatch):
    """SIGTERM while the last PSRO iteration records its matches: that iteration is the
    run's last, so it ends 'finished' with every iteration (before: 'interrupted')."""
    from populations import psro_run

    real = psro_run._record_matches

    def signalled(db, run_id, runner, store, recorder, cfg, iteration, *args):
        if iteration == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(db, run_id, runner, store, recorder, cfg, iteration, *args)

    monkeypatch.setattr(psro_run, "_record_matches", signalled)
    with run_folder.sigterm_as_interrupt():
        _run(tmp_path / "run", 2)
    assert len(_state(tmp_path / "run" / "league.db")["iterations"]) == 2
    db = sqlite3.connect(tmp_path / "run" / "league.db")
    assert db.execute("SELECT status FROM runs").fetchone() == ("finished",)
    db.close()


def test_learner_actors_resuming_a_stop_between_members_train_only_those_left(monkeypatch):
    """A 'training' checkpoint of an in-process league (``a`` trained) resumed with
    runner=ray (allowed: the runner may change) submitted every member: ``a`` trained the
    generation again on its trained state and its frames counted twice (review LS-2)."""
    from types import SimpleNamespace

    league = League.__new__(League)
    league.members = [MAPPOMember.__new__(MAPPOMember) for _ in "ab"]
    league.members[0].name, league.members[1].name = "a", "b"
    league.generation, league.trained, league.run_id = 2, ["a"], 1
    submitted, applied = [], []

    class Learners:
        def submit(self, job):
            submitted.append(job)

        @property
        def busy(self):
            return len(submitted) > len(done)

        def wait(self):
            r = SimpleNamespace(name=submitted[len(done)], frames=64, started_at=0.0,
                                finished_at=1.0, worker="actor 0")
            done.append(r)
            return r

    done = []
    league.learners = Learners()
    league.db = SimpleNamespace(add_generation=lambda *a: None)
    monkeypatch.setattr(League, "_job", lambda self, m, g: m.name)
    monkeypatch.setattr(League, "_apply", lambda self, m, r: applied.append(m.name))
    league._train_members()
    assert submitted == ["b"] and applied == ["b"]
