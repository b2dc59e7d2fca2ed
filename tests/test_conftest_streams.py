"""The suite's own setup (tests/conftest.py) keeps pytest's captured output open."""

from pathlib import Path

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]

TESTS = '''
import logging.config

import games


def test_a_first_openspiel_game_imports_absl_logging():
    # a game written in Python: its package, open_spiel.python.games, imports absl.logging
    games.make("openspiel/python_kuhn_poker")


def test_an_in_process_cli_configures_logging(capsys):
    # Hydra's job logging: dictConfig closes every handler ever made (logging.shutdown)
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})


def test_a_later_test_still_prints():
    print("still captured")
'''


def test_absl_logging_does_not_close_pytests_captured_stderr(pytester, monkeypatch):
    """absl.logging's handler is made on the sys.stderr of its import (pytest's captured
    stderr, in a test without capsys) and closes that stream when closed unless it is the
    sys.stderr of that moment; a later in-process selfplay-train's dictConfig (with capsys)
    closed it, and the run of the caplog test modules died at test_sweep_summary with
    'ValueError: I/O operation on closed file' and 'lost sys.stderr'."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest("pytest_plugins = ['tests.conftest']\n")
    pytester.makepyfile(test_streams=TESTS)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(passed=3)
