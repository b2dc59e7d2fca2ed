"""A logger of the user's own (walk 23, F7): ``register_logger(name, factory)`` in a module
``imports=[...]`` names, picked by ``logger=NAME`` or ``logger.kind=NAME``, recorded in the
run's settings and repeated by the resume command. Before, ``LOGGERS`` was a private dict
and ``logger.kind=mine`` was refused: ``choose one of ['csv', 'none', 'wandb']``."""

from __future__ import annotations

import json
import os
import sys

import pytest

from populations import loggers
from populations.loggers import LoggerConfig, register_logger
from tests.populations.test_walk18_cli_more import (
    TINY,
    _pasted,
    _train,
    ctrl_c_after_the_run,
)

MODULE = "walk23_mylog"
SOURCE = '''
import json
from pathlib import Path

from populations.loggers import MetricsLogger, register_logger


@register_logger("walk23_jsonl")
class JsonlLogger(MetricsLogger):
    def __init__(self, run_dir, cfg, config):
        self.files = Path(run_dir) / "metrics.jsonl"
        self._fh = self.files.open("a")
        self.algo = config["algo"]

    def log(self, step, metrics, prefix=""):
        for key, value in metrics.items():
            self._fh.write(json.dumps({"step": step, "key": prefix + key, "value": value}) + "\\n")

    def summary(self, values):
        self._fh.write(json.dumps({"summary": len(values["table"])}) + "\\n")

    def close(self):
        self._fh.close()


class Broken(MetricsLogger):
    def log(self, step, metrics, prefix=""):
        raise RuntimeError(f"cannot reach the server at step {step}")  # RAISES


register_logger("walk23_broken", lambda run_dir, cfg, config: Broken())
'''
RAISES_LINE = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "# RAISES" in line)
TINY_CSV = [w for w in TINY if not w.startswith("logger=")]


@pytest.fixture
def mylog(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path``, taken out of the registry after."""
    from hydra.core.config_store import ConfigStore

    from games.registry import IMPORTS_ENV

    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.setattr(loggers, "_LOGGERS", dict(loggers._LOGGERS))
    for name in (IMPORTS_ENV, "PYTHONPATH"):  # import_user_modules sets them for workers
        monkeypatch.setenv(name, os.environ.get(name, ""))
    try:
        yield tmp_path
    finally:
        sys.modules.pop(MODULE, None)
        for name in ("walk23_jsonl", "walk23_broken"):
            ConfigStore.instance().repo.get("logger", {}).pop(f"{name}.yaml", None)


@pytest.mark.parametrize("pick", ["logger=walk23_jsonl", "logger.kind=walk23_jsonl"])
def test_a_registered_logger_gets_the_metrics_and_the_resume_command_names_it(
        pick, mylog, monkeypatch, capsys):
    # before: "bad config: logger.kind='walk23_jsonl' unknown; choose one of ['csv', ...]"
    # (logger=walk23_jsonl: "Could not find 'logger/walk23_jsonl'")
    run = mylog / "run"
    go_on = ctrl_c_after_the_run(monkeypatch)
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", *TINY_CSV, pick, f"hydra.run.dir={run}"], monkeypatch,
               mylog)
    assert stop.value.code == 130
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any(r.get("key", "").startswith("losses/") for r in rows), rows[:5]
    assert rows[-1] == {"summary": 1}  # summary() got the league table
    assert json.loads((run / "settings.json").read_text())["logger"]["kind"] == "walk23_jsonl"
    words = _pasted(capsys.readouterr().err.strip().splitlines()[-1].split("resumes with: ")[1])
    assert f"imports=[{MODULE}]" in words and pick in words, words
    go_on()
    sys.modules.pop(MODULE, None)  # the resume imports it again, as a new process would
    _train(words, monkeypatch, mylog)
    out = capsys.readouterr().out
    assert f"metrics    : {run / 'metrics.jsonl'}" in out, out


def test_a_logger_that_raises_is_one_line_naming_it_and_its_line(mylog, monkeypatch, capsys):
    run = mylog / "run"
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", *TINY_CSV, "logger=walk23_broken",
                f"hydra.run.dir={run}"], monkeypatch, mylog)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    line = err[-1]
    assert line.startswith(
        f"selfplay-train: logger walk23_broken ({MODULE}.<lambda>) failed in log(): "
        "RuntimeError: cannot reach the server at step "), line
    assert f"(at {MODULE}.py:{RAISES_LINE} in log); HYDRA_FULL_ERROR=1 shows the traceback" \
        in line, line
    assert "Traceback" not in "\n".join(err)


def test_a_taken_name_is_refused_naming_who_holds_it(mylog):
    class Mine(loggers.MetricsLogger):
        pass

    with pytest.raises(ValueError, match=r"^logger 'csv' is already registered by "
                                         r"populations\.loggers\.CSVLogger; register yours "
                                         "under another name$"):
        register_logger("csv", Mine)
    register_logger("walk23_mine", Mine)
    assert register_logger("walk23_mine", Mine) is Mine  # the same class again: accepted
    with pytest.raises(ValueError, match=r"already registered by .*Mine"):
        register_logger("walk23_mine", lambda run_dir, cfg, config: Mine())
    with pytest.raises(ValueError, match="a logger name holds letters"):
        register_logger("my logger", Mine)


def test_an_unknown_logger_says_how_to_register_one():
    with pytest.raises(ValueError) as err:
        LoggerConfig(kind="walk23_nowhere")
    assert "choose one of ['csv', 'none', 'wandb']" in str(err.value)
    assert "register_logger" in str(err.value) and "imports=[module]" in str(err.value)


def test_an_entry_point_registers_a_logger(mylog, monkeypatch):
    """``[project.entry-points."selfplay.loggers"]``: loaded the first time a name is not
    found, as the games', learners' and meta-solvers' groups are."""
    import importlib.metadata

    from games import registry

    ep = importlib.metadata.EntryPoint(name="mine", value=MODULE, group=loggers.ENTRY_POINTS)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [ep] if group == loggers.ENTRY_POINTS else [])
    monkeypatch.setattr(registry, "_loaded_groups", set())
    assert LoggerConfig(kind="walk23_jsonl").kind == "walk23_jsonl"


def test_an_entry_points_logger_is_a_logger_option_of_selfplay_train(
        mylog, monkeypatch, capsys):
    """The CLI loads the group at start, as the others: ``logger=NAME`` is an option then.
    Before: "Could not find 'logger/walk23_jsonl'" (loaded only when LoggerConfig is made)."""
    import importlib.metadata

    from games import registry

    ep = importlib.metadata.EntryPoint(name="mine", value=MODULE, group=loggers.ENTRY_POINTS)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [ep] if group == loggers.ENTRY_POINTS else [])
    monkeypatch.setattr(registry, "_loaded_groups", set())
    _train(["logger=walk23_jsonl", "--cfg", "job"], monkeypatch, mylog)
    assert "kind: walk23_jsonl" in capsys.readouterr().out
