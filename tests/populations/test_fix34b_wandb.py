"""walk34b's wandb findings: a project name wandb refuses and an online run without
credentials were 30-line tracebacks (now one line each); a league stopped after a
generation's training lost its evaluation's rows at that step from wandb on its resume;
``logger.mode=auto`` went online only with ``WANDB_API_KEY``, not after ``wandb login``."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import games
from marl.mappo import MAPPO
from populations import run_folder
from populations.experiment import _closing
from populations.league import League
from populations.loggers import (
    LoggerConfig,
    LoggerError,
    WandbLogger,
    offline_records,
    wandb_logged_in,
    wandb_mode,
    wandb_project_refusal,
)
from populations.members import MAPPOMember
from populations.runners import LocalRunner
from tests.populations.test_interrupts_league import _signal_in
from tests.populations.test_league import _kuhn

ROOT = Path(__file__).resolve().parents[2]
TRAIN = [str(Path(sys.executable).parent / "selfplay-train")]  # as a user runs it


@pytest.fixture
def no_key(monkeypatch, tmp_path):
    """No credentials: no key in the environment, no netrc file."""
    for name in ("WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.parametrize("name", ["a/b", "team\\x", "x#1", "what?", "50%", "a:b", "p" * 129,
                                  "selfplay", "my project-1_é", "p" * 128])
def test_a_project_name_is_refused_as_wandb_refuses_it(name):
    """The config check refuses what wandb.Settings refuses (its UsageError came from
    wandb.init once the run had started), and nothing else."""
    import wandb
    from wandb.errors import UsageError

    try:
        wandb.Settings(project=name)
        wandb_refuses = False
    except (UsageError, ValueError):  # pydantic wraps the validator's error in some versions
        wandb_refuses = True
    assert (wandb_project_refusal(name) is not None) == wandb_refuses
    if wandb_refuses:
        with pytest.raises(ValueError, match=r"is not a wandb project name \(.*\): a project "
                                             r"name has 1 to 128 characters, none of"):
            LoggerConfig(kind="wandb", project=name)
    LoggerConfig(kind="csv", project=name)  # another logger's project is its own business


def _train(tmp_path, *args, **env):
    """``selfplay-train`` with ``args`` in ``tmp_path``: (exit status, stdout + stderr)."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("WANDB_API_KEY", "WANDB_MODE", "HYDRA_FULL_ERROR")}
    environ.update(HOME=str(tmp_path), NETRC=str(tmp_path / "no-netrc"),
                   PYTHONPATH=str(ROOT), **env)
    done = subprocess.run([*TRAIN, *args, f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path,
                          env=environ, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_wandb_settings_it_refuses_are_one_line_from_the_cli(tmp_path):
    """walk34b: ``logger.project=a/b`` and ``logger.mode=online`` without an API key ended
    in wandb's UsageError traceback (exit 1); now one line (exit 2) naming the value and
    what is accepted."""
    rc, out = _train(tmp_path, "game=kuhn", "frames=800", "logger=wandb",
                     "logger.project=a/b")
    assert rc == 2 and "Traceback" not in out, out
    assert out.strip().splitlines()[-1] == (
        "selfplay-train: bad config: logger.project='a/b' is not a wandb project name (it "
        "holds /): a project name has 1 to 128 characters, none of / \\ # ? % : (a team goes "
        "in WANDB_ENTITY, not in the project)")
    rc, out = _train(tmp_path, "game=kuhn", "frames=800", "logger=wandb",
                     "logger.mode=online")
    assert rc == 2 and "Traceback" not in out, out
    line = out.strip().splitlines()[-1]
    assert line.startswith("selfplay-train: logger wandb could not start its run (mode "
                           "online): UsageError: No API key configured"), out
    assert ("an online run needs wandb credentials: set WANDB_API_KEY (or run wandb login), "
            "or use logger.mode=offline") in line


def test_a_wandb_init_error_is_a_logger_error(tmp_path, no_key, monkeypatch):
    """In Python too: wandb.init's error is a LoggerError (a ValueError: the CLIs' one
    line, checkpoints kept), its cause wandb's own."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    with pytest.raises(LoggerError, match="could not start its run") as err:
        WandbLogger(tmp_path, LoggerConfig(kind="wandb", mode="online"), {})
    assert type(err.value.__cause__).__module__.startswith("wandb")


def test_auto_mode_goes_online_after_wandb_login(tmp_path, no_key, monkeypatch):
    """README: offline unless you are logged in. ``wandb login`` keeps the key in ~/.netrc
    (no WANDB_API_KEY): auto went offline there. Read without the network."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    assert not wandb_logged_in() and wandb_mode("auto") == "offline"
    netrc = tmp_path / ".netrc"  # what wandb login writes
    netrc.write_text("machine api.wandb.ai\n  login user\n  password " + "a" * 40 + "\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert wandb_logged_in() and wandb_mode("auto") == "online"
    monkeypatch.setenv("WANDB_MODE", "offline")  # wandb's own variable still wins
    assert wandb_mode("auto") == "offline"
    assert wandb_mode("offline") == "offline" and wandb_mode("online") == "online"
    monkeypatch.delenv("WANDB_MODE")
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_API_KEY", "b" * 40)
    assert wandb_mode("auto") == "online"


def _wandb_rows(run_dir) -> list[tuple[int, str]]:
    """Every (step, key) of every offline wandb file of ``run_dir`` (a pair twice if logged
    twice), read with :func:`populations.loggers.offline_records`."""
    import wandb

    wandb.teardown()  # the service writes a finished run's records after finish() returns
    rows = []
    for path in sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb")):
        for rec in offline_records(path):
            if rec.WhichOneof("record_type") == "history":
                rows += [(rec.history.step.num, i.key or "/".join(i.nested_key))
                         for i in rec.history.item
                         if not (i.key or "/".join(i.nested_key)).startswith("_")]
    return rows


def _league(run_dir, resume=False):
    """Two MAPPO members on Kuhn poker, two generations, exact NashConv logged after each
    evaluation at the step its training's last rows have; a real offline wandb logger,
    closed as run_experiment closes it."""
    cfg = _kuhn(frames_per_generation=64, eval_episodes=1, nash_conv=True)
    spec = games.make(cfg.game).spec
    members = [MAPPOMember(name, MAPPO(spec, cfg.mappo, seed=seed))
               for seed, name in enumerate(("a", "b"))]
    league = League(cfg, run_dir, resume=resume, members=members)
    try:
        logger = WandbLogger(run_dir, LoggerConfig(kind="wandb"), {})
        with _closing(logger):
            league.logger = logger
            league.run()
    finally:
        league.close()


def test_a_league_stopped_before_its_evaluation_gives_wandb_every_row_once(
        tmp_path, monkeypatch):
    """walk34b: a league stopped by Ctrl-C at "generation 2 (trained)" had given wandb that
    step's training rows (last_step = the step); its resume evaluated and logged
    ``exploiter/reset`` at the same step, which was left out (every step up to last_step
    was). Here SIGTERM during generation 1's evaluation; the database's rows and the wandb
    files' rows must be the same, each once."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    _signal_in(monkeypatch, LocalRunner, "play",
               lambda r, jobs: jobs[0].key.startswith("g0001/"))
    run = tmp_path / "run"
    with run_folder.sigterm_as_interrupt(), pytest.raises(run_folder.Terminated):
        _league(run)
    monkeypatch.undo()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    _league(run, resume=True)
    db = sqlite3.connect(run / "league.db")
    want = db.execute("SELECT step, key FROM metrics ORDER BY step, key").fetchall()
    db.close()
    stop = max(s for s, k in want if k.startswith("nash_conv/") and s < max(
        s for s, _ in want))  # generation 1's evaluation step
    assert (stop, "nash_conv/a") in want
    got = _wandb_rows(run)
    assert sorted(got) == want  # each row once: none left out, none twice


def test_a_logger_made_and_closed_inside_an_except_block_gives_its_last_step(
        tmp_path, monkeypatch):
    """The last step is held back only when the run itself stops with an error: a caller
    handling an error of its own around the whole run (a notebook's retry) gets every row."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    try:
        raise RuntimeError("the caller's")
    except RuntimeError:
        logger = WandbLogger(tmp_path, LoggerConfig(kind="wandb"), {})
        logger.log(1, {"x": 1.0})
        logger.log(2, {"x": 2.0})
        logger.close()
    assert sorted(_wandb_rows(tmp_path)) == [(1, "x"), (2, "x")]
    assert (tmp_path / "wandb" / "last_step").read_text() == "2\n"
