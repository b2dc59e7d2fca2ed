"""metrics.csv keeps every (step, key) the database keeps (review 27, items 4 and 9b).

Keeping each key's last step instead of every row dropped a row at or below it, but a key's
steps can go down: a mixed LLM and learner league (the LLM's episodes do not advance the
league's frames), a Ray league whose members' frames per generation differ, a resume that
replays other steps than the dead run logged. The database (one row per (step, key)) kept
those rows; metrics.csv lost them. And reopening the file read it whole, plus a cut copy."""

from __future__ import annotations

import csv
import tracemalloc

from populations.loggers import CSVLogger, LoggerConfig


def _rows(run_dir) -> list[tuple[int, str, float]]:
    with (run_dir / "metrics.csv").open(newline="") as fh:
        return [(int(s), k, float(v)) for s, k, v in list(csv.reader(fh))[1:]]


def test_a_step_going_down_within_a_run_is_written_once(tmp_path):
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    logger.log(3000, {"llm/episode_return": 1.0})
    logger.log(2000, {"llm/episode_return": 2.0})  # the next generation, fewer frames
    logger.log(2500, {"llm/episode_return": 3.0})
    logger.log(2000, {"llm/episode_return": 4.0})  # already written: not again
    logger.log(3000, {"llm/episode_return": 5.0})
    logger.log(3500, {"llm/episode_return": 6.0})
    logger.log(1000, {"llm/episode_return": 7.0})  # down again, after going up
    logger.log(3500, {"llm/episode_return": 8.0})
    logger.close()
    assert _rows(tmp_path) == [(3000, "llm/episode_return", 1.0),
                               (2000, "llm/episode_return", 2.0),
                               (2500, "llm/episode_return", 3.0),
                               (3500, "llm/episode_return", 6.0),
                               (1000, "llm/episode_return", 7.0)]


def test_a_resume_replaying_other_steps_loses_and_repeats_nothing(tmp_path):
    """A Ray league killed after a checkpoint at 1000: B's result came first (1000+f), then
    A's (2000+f); resumed, A's comes first (1000+f), then B's (2000+f)."""
    dead = CSVLogger(tmp_path, LoggerConfig(), {})
    for f in (500, 1000):
        dead.log(1000 + f, {"B/loss": 1.0})
    for f in (500, 1000):
        dead.log(2000 + f, {"A/loss": 1.0})
    dead.close()
    db = sorted([(1000 + f, "B/loss", 1.0) for f in (500, 1000)]
                + [(2000 + f, "A/loss", 1.0) for f in (500, 1000)])
    again = CSVLogger(tmp_path, LoggerConfig(), {})
    again.backfill(db)
    for f in (500, 1000):
        again.log(1000 + f, {"A/loss": 2.0})
    for f in (500, 1000):
        again.log(2000 + f, {"B/loss": 2.0})
    again.log(3500, {"A/loss": 2.0, "B/loss": 2.0})
    again.close()
    assert sorted((s, k) for s, k, _ in _rows(tmp_path)) == sorted(
        (s, k) for s in (1500, 2000, 2500, 3000, 3500) for k in ("A/loss", "B/loss"))


def test_backfill_adds_what_the_file_lacks_below_the_last_step(tmp_path):
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    logger.log(10, {"a": 1.0})
    logger.log(30, {"a": 3.0})
    logger.close()
    again = CSVLogger(tmp_path, LoggerConfig(), {})
    again.backfill([(10, "a", 1.0), (20, "a", 2.0), (30, "a", 3.0), (40, "a", 4.0)])
    again.close()
    assert sorted(_rows(tmp_path)) == [(10, "a", 1.0), (20, "a", 2.0), (30, "a", 3.0),
                                       (40, "a", 4.0)]


def _write_long(path, rows: int) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("step", "key", "value"))
        for i in range(rows):
            w.writerow((i, "m0,losses" if i % 2 else "m1\nloss", 0.25))  # quoted keys


def test_reopening_holds_no_copy_of_a_long_file(tmp_path):
    peaks = {}
    for name, rows in (("short", 1_000), ("long", 100_000)):
        run_dir = tmp_path / name
        run_dir.mkdir()
        _write_long(run_dir / "metrics.csv", rows)
        CSVLogger(run_dir, LoggerConfig(), {}).close()  # imports, caches
        tracemalloc.start()
        try:
            CSVLogger(run_dir, LoggerConfig(), {}).close()
            peaks[name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    # the long file is about 1.5 MB: read whole, then cut, it peaked at twice that
    assert peaks["long"] - peaks["short"] < 1024 * 1024, peaks


def test_a_cut_quoted_record_at_the_end_of_a_long_file_is_repaired(tmp_path):
    path = tmp_path / "metrics.csv"
    _write_long(path, 20_000)  # past the last block a reopening reads
    whole = path.read_bytes()
    path.write_bytes(whole + b'20000,"m1\n')  # the kill cut a key holding a newline
    CSVLogger(tmp_path, LoggerConfig(), {}).close()
    assert path.read_bytes() == whole
    path.write_bytes(whole[len(b"step,key,value\r\n"):] + b"20000,m0")  # header lost too
    logger = CSVLogger(tmp_path, LoggerConfig(), {})
    logger.log(20000, {"m0,losses": 0.5})
    logger.close()
    assert path.read_bytes() == whole + b'20000,"m0,losses",0.5\r\n'
