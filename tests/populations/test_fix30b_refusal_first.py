"""A PSRO resume that ``selfplay-train`` refuses (other settings, a damaged snapshot) prints
its one-line refusal and nothing before it: the config checks enumerate the game (to decide
PSRO's ``auto`` settings, which the resume is compared by), and their 'enumerated
openspiel/kuhn_poker: 58 histories...' line came first, as if the run had started. A run
that starts says it once, after its 'experiment ... in' line."""

import os
import shutil
import sys

import pytest

from tests import subprocs
from tests.subprocs import Ahead

ARGS = ["experiment=kuhn_psro", "population.iterations=2", "eval_episodes=2", "progress=false"]
ENUMERATED = "enumerated openspiel/kuhn_poker: 58 histories"


LEAGUE = ["game=kuhn", "population=pfsp", "population.nash_conv=true",
          "population.generations=1", "population.frames_per_generation=200",
          "eval_episodes=2", "progress=false"]


def _job(args, cwd):
    """``selfplay-train args`` in ``cwd``: :func:`subprocess.run`'s arguments."""
    return {"args": [sys.executable, "-m", "populations.cli", *args], "cwd": cwd,
            "env": {**os.environ, "HYDRA_FULL_ERROR": "0"}}


def _out(res):
    return res, res.stdout + res.stderr


def _cli(args, cwd):
    return _out(subprocs.run(**_job(args, cwd), capture_output=True, text=True, timeout=600))


@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory):
    """The two runs the tests below resume, started together (independent commands): a PSRO
    run and a ``nash_conv`` league; ``finished_runs(kind)`` -> ``(res, output, cwd)``."""
    psro, league = tmp_path_factory.mktemp("psro"), tmp_path_factory.mktemp("league")
    ahead = Ahead({"psro": _job([*ARGS, f"hydra.run.dir={psro / 'run'}"], psro),
                   "league": _job([*LEAGUE, f"hydra.run.dir={league / 'run'}"], league)})
    yield lambda kind: (*_out(ahead.result(kind)), ahead.jobs[kind]["cwd"])
    ahead.close()


@pytest.fixture(scope="module")
def psro_run(finished_runs):
    res, out, cwd = finished_runs("psro")
    assert res.returncode == 0, out
    return cwd, cwd / "run", out


@pytest.fixture(scope="module")
def psro_resumes(psro_run):
    """Resumes of copies of the finished PSRO run, independent of each other, started ahead:
    ``other_settings`` (refused), ``damaged`` (a damaged snapshot: refused) and ``intact``
    (goes on); ``psro_resumes(name)`` -> ``(res, output, run folder, damaged snapshot)``."""
    cwd, finished, _ = psro_run
    runs = {name: cwd / name for name in ("other_settings", "damaged", "intact")}
    for run in runs.values():
        shutil.copytree(finished, run)
    (snap,) = (runs["damaged"] / "snapshots" / "psro-player_0-1").glob("*.pt")
    snap.write_bytes(b"not a snapshot")
    extra = {"other_settings": ["population.psro.meta_solver=nash"],
             "damaged": ["population.iterations=3"], "intact": ["population.iterations=3"]}
    ahead = Ahead({name: _job([*ARGS, *extra[name], "resume=true", f"hydra.run.dir={run}"],
                              cwd) for name, run in runs.items()})
    yield lambda name: (*_out(ahead.result(name)), runs[name], snap)
    ahead.close()


def _refused(out):
    """The refused command's output is its one 'selfplay-train: ...' line."""
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("selfplay-train: "), out
    return lines[0]


def test_a_started_run_says_the_enumeration_once_after_its_start_line(psro_run):
    _, _, out = psro_run
    assert out.count(ENUMERATED) == 1, out
    assert out.index("experiment kuhn_psro in") < out.index(ENUMERATED), out


def test_a_resume_with_other_settings_prints_its_refusal_alone(psro_resumes):
    res, out, _, _ = psro_resumes("other_settings")
    assert res.returncode == 2, out
    assert "with other settings" in _refused(out)


def test_a_resume_with_a_damaged_snapshot_prints_its_refusal_alone(psro_resumes):
    res, out, _, snap = psro_resumes("damaged")
    assert res.returncode == 2, out
    assert f"snapshot file {snap} is damaged" in _refused(out)
    res, out, _, _ = psro_resumes("intact")  # the intact run goes on
    assert res.returncode == 0, out
    assert out.count(ENUMERATED) == 1, out
    assert out.index("resumed PSRO: 2 of 3") > out.index(ENUMERATED), out


def test_a_league_refused_at_resume_does_not_say_the_enumeration(tmp_path, caplog):
    """``League(nash_conv=True)`` enumerates the game in its start, before it reads the
    checkpoint: a resume refused for a damaged one logged 'enumerated ...' first."""
    import logging

    from populations import exploitability as ex
    from populations.checkpoint import CheckpointError
    from populations.league import League, LeagueConfig

    cfg = LeagueConfig(game="openspiel/kuhn_poker", game_kwargs={}, generations=1,
                       frames_per_generation=64, num_envs=4, eval_episodes=1, nash_conv=True)
    run = tmp_path / "run"
    ex.forget_trees()  # enumerated again here, as in a new process
    with caplog.at_level(logging.INFO, logger="populations.exploitability"):
        League(cfg, run).close()
        assert [r.getMessage() for r in caplog.records].count(
            "enumerated openspiel/kuhn_poker: 58 histories, [6, 6] information states, "
            "30 terminals") == 1
        (run / "checkpoints").mkdir()
        (run / "checkpoints" / "ckpt_000002.pt").write_bytes(b"not a checkpoint")
        caplog.clear()
        ex.forget_trees()
        with pytest.raises(CheckpointError, match="no readable checkpoint"):
            League(cfg, run, resume=True)
    assert not [r for r in caplog.records if "enumerated" in r.getMessage()], caplog.text


def test_a_nash_conv_league_refused_at_resume_prints_its_refusal_alone(finished_runs):
    """``selfplay-train``'s config checks enumerate a ``nash_conv`` league's game too (perfect
    recall): a resume refused for other settings printed 'enumerated ...' before its line."""
    res, out, cwd = finished_runs("league")
    assert res.returncode == 0, out
    assert out.count(ENUMERATED) == 1, out
    assert out.index("experiment ") < out.index(ENUMERATED), out
    res, out = _cli([*LEAGUE, f"hydra.run.dir={cwd / 'run'}", "mappo.lr=0.01", "resume=true"],
                    cwd)
    assert res.returncode == 2, out
    assert "with other settings" in _refused(out)
