"""``metrics.csv`` on a full disk (a single-learner or PSRO run, whose csv logger writes
outside the League's wrapper): one line naming the file, as every other file of a run is
named (:class:`marl.fileio.NoSpaceError`).

Before: the logger's flush raised the bare ``[Errno 28] No space left on device`` (no file
name), and ``selfplay-train population=none`` / ``population=psro`` printed that line.
The full disk is a file object whose ``write``, ``flush`` and ``close`` refuse with ENOSPC."""

from __future__ import annotations

import errno
import os

import pytest

from marl.fileio import NoSpaceError
from populations.loggers import CSVLogger, LoggerConfig
from tests.populations.test_walk23_storage import _failed


class Full:
    """A file on a disk that filled up: every write, flush and close refuses with ``code``."""

    def __init__(self, fh, code: int = errno.ENOSPC) -> None:
        self.fh, self.code = fh, code

    def write(self, data):
        raise OSError(self.code, os.strerror(self.code))

    def flush(self):
        self.write("")

    def close(self):
        self.fh.close()  # the descriptor is released, as a real close's is
        self.write("")


def _full_after_opening(monkeypatch, code: int = errno.ENOSPC) -> None:
    """Every CSVLogger's file fills up right after its header is written."""
    init = CSVLogger.__init__

    def opened(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._fh = Full(self._fh, code)
        self._w = __import__("csv").writer(self._fh)

    monkeypatch.setattr(CSVLogger, "__init__", opened)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_names_metrics_csv(tmp_path, monkeypatch, code):
    _full_after_opening(monkeypatch, code)
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    csv_file = tmp_path / "metrics.csv"
    with pytest.raises(NoSpaceError) as err:
        logger.log(1, {"charts/x": 1.0})
    assert str(err.value).startswith(f"no space left on device writing metrics {csv_file}")
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(csv_file)
    assert err.value.__cause__.errno == code
    with pytest.raises(NoSpaceError, match=f"^no space left on device writing metrics "
                                           f"{csv_file}"):
        logger.close()  # its flush of the rows buffered before


def test_another_os_error_passes_unchanged(tmp_path, monkeypatch):
    _full_after_opening(monkeypatch, errno.EIO)
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    with pytest.raises(OSError) as err:
        logger.log(1, {"charts/x": 1.0})
    assert not isinstance(err.value, NoSpaceError) and err.value.errno == errno.EIO
    with pytest.raises(OSError):
        logger.close()


def test_a_full_disk_while_dropping_rows_names_metrics_csv(tmp_path, monkeypatch):
    """A resume's drop_after rewrites the file (atomic_write names it) and reopens it."""
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    logger.log(1, {"a": 1.0})
    logger.log(2, {"a": 2.0})
    logger._fh = Full(logger._fh)
    logger._w = __import__("csv").writer(logger._fh)
    with pytest.raises(NoSpaceError, match="^no space left on device writing metrics "):
        logger.drop_after(1)  # the close before the rewrite flushes into the full disk


SMALL = ["game=kuhn", "num_envs=4", "eval_episodes=1", "mappo.rollout_steps=4",
         "mappo.epochs=1", "mappo.minibatches=1", "progress=false"]


@pytest.mark.parametrize("kind", [
    ["population=none", "frames=64"],
    ["population=psro", "population.iterations=1", "population.oracle_frames=32",
     "population.psro.episodes_per_entry=2", "population.psro.num_envs=2"],
], ids=["single", "psro"])
def test_selfplay_train_says_one_line_naming_metrics_csv(tmp_path, monkeypatch, capsys, kind):
    run = tmp_path / "run"
    _full_after_opening(monkeypatch)
    line = _failed([*SMALL, *kind, f"hydra.run.dir={run}"], tmp_path, monkeypatch, capsys)
    assert line.startswith("selfplay-train: no space left on device writing metrics "
                           f"{run / 'metrics.csv'}"), line
    assert "[Errno 28]" not in line, line
