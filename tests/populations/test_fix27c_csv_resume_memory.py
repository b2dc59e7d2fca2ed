"""``metrics.csv`` on resume keeps what deduplication needs, not every row (walk 27a, item 5):
the logger held every (step, key) of the file and of the run in a set for the whole run (a
million-row file: +511 MB to open). Each key's steps only go up within a run, so its last
step is enough; nothing is lost or written twice on a resume."""

from __future__ import annotations

import csv
import tracemalloc

from populations.loggers import CSVLogger, LoggerConfig

KEYS = ("m0/losses/pg_loss", "m0/charts/episode_return", "m1/losses/pg_loss")


def _rows(run_dir) -> list[tuple[int, str, float]]:
    with (run_dir / "metrics.csv").open(newline="") as fh:
        return [(int(s), k, float(v)) for s, k, v in list(csv.reader(fh))[1:]]


def _retained(make) -> int:
    """Bytes still allocated after ``make()`` (what it keeps, not what it used on the way)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = make()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    kept.close()
    return after - before


def _log(logger: CSVLogger, steps: range) -> CSVLogger:
    for step in steps:
        logger.log(step * 64, {k: 0.5 for k in KEYS})
    return logger


def test_logging_and_reopening_a_long_file_keeps_no_row(tmp_path):
    short, long = tmp_path / "short", tmp_path / "long"
    for run_dir, steps in ((short, 10), (long, 10_000)):
        run_dir.mkdir()
        logger = _log(CSVLogger(run_dir, LoggerConfig(), {}), range(1, 2))  # buffers made
        grown = _retained(lambda: _log(logger, range(2, steps + 1)))  # noqa: B023
        logger.close()
        assert len(_rows(run_dir)) == 3 * steps
        # a set of 30,000 (step, key) pairs holds several MB; one step per key, a few bytes
        assert grown < 16 * 1024, (steps, grown)
    opened = [CSVLogger(d, LoggerConfig(), {}) for d in (short, long)]  # imports, caches
    for logger in opened:
        logger.close()
    kept = {d.name: _retained(lambda: CSVLogger(d, LoggerConfig(), {}))  # noqa: B023
            for d in (short, long)}
    assert kept["long"] - kept["short"] < 16 * 1024, kept


def test_a_resume_loses_and_repeats_nothing(tmp_path):
    """A killed run's file (last line cut) reopened: the database's rows it lacks are added,
    the rows the resumed run replays are not written again, and members at lower steps than
    another member's last (a league's members, each from the generation's start) are kept."""
    first = CSVLogger(tmp_path, LoggerConfig(), {})
    for step in range(1, 6):
        first.log(step * 10, {"m0/x": step})
    for step in range(1, 4):
        first.log(step, {"m1/y": step})  # below m0's steps, after them
    first.close()
    path = tmp_path / "metrics.csv"
    path.write_bytes(path.read_bytes()[:-3])  # the kill cut m1/y at step 3
    db = [(s * 10, "m0/x", float(s)) for s in range(1, 8)] + [(s, "m1/y", float(s))
                                                              for s in range(1, 4)]
    again = CSVLogger(tmp_path, LoggerConfig(), {})
    again.backfill(sorted(db))
    for step in range(4, 10):  # replayed from a checkpoint at 40, then on
        again.log(step * 10, {"m0/x": step})
    again.log(4, {"m1/y": 4.0})
    again.close()
    rows = _rows(tmp_path)
    assert sorted((s, k) for s, k, _ in rows) == sorted(
        [(s * 10, "m0/x") for s in range(1, 10)] + [(s, "m1/y") for s in range(1, 5)])


def test_drop_after_forgets_the_dropped_steps(tmp_path):
    """A single run resumed from a checkpoint at step 20 logs 30 anew: the dead run's 30 and
    40 are dropped, and the new 30 is written (its key's last step is 20 again)."""
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    for step in (10, 20, 30, 40):
        logger.log(step, {"a": step, "b": -step})
    logger.close()
    again = CSVLogger(tmp_path, LoggerConfig(), {})
    again.drop_after(20)
    again.backfill([(10, "a", 10.0), (10, "b", -10.0), (20, "a", 20.0), (20, "b", -20.0)])
    again.log(30, {"a": 31.0, "b": -31.0})
    again.close()
    assert _rows(tmp_path) == [(10, "a", 10.0), (10, "b", -10.0), (20, "a", 20.0),
                               (20, "b", -20.0), (30, "a", 31.0), (30, "b", -31.0)]
