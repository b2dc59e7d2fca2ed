"""A sweep's folder (``selfplay-train -m ...``): its job folders, what identifies each job,
and one table over the jobs' results.

A job folder is ``<n>_<overrides>`` (``hydra.sweep.subdir`` of ``configs/config.yaml``), with
the job's overrides as typed in ``.hydra/overrides.yaml``. The number is the job's place in
the sweep that made the folder: a resumed sweep with a longer list (``seed=0,1,2`` after
``seed=0,1``, seed the inner loop) numbers the same job anew, so a job is found by its
overrides (:func:`find_job_folder`), not by its number. A value with a ``/``
(``game.name=openspiel/kuhn_poker``) made the job a folder deeper in a sweep named by
Hydra's own ``${hydra.job.num}_${hydra.job.override_dirname}`` (before ``job_dirname``, or a
``hydra.sweep.subdir`` of one's own): ``0_game.name=openspiel/kuhn_poker,seed=0``, found by
:func:`sweep_jobs` (the summary's jobs) and :func:`sweep_of`.

:func:`summarize` reads each job's results from its folder (``settings.json``, ``league.db``,
its newest checkpoint), as a resume of the finished job prints them, so a sweep resumed
with finished jobs, or summarised long after, shows the figures of each job's own closing
table; :func:`grouped` pools jobs that differ only by ``seed`` (mean ± std, n)::

    python -m populations.sweep_summary multirun/default/<stamp> [--by encoder]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import logging
import math
import re
import sqlite3
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

JOB_FOLDER = re.compile(r"(\d+)_")
"""A job folder's name starts with its number and ``_`` (``0_algo=mappo,seed=1``)."""


def job_folders(sweep_dir: Path) -> list[Path]:
    """The job folders in ``sweep_dir``, by number then name."""
    if not sweep_dir.is_dir():
        return []
    # a link (planted, or another sweep's folder) is no job of this sweep: a resume would
    # train into its target
    found = [p for p in sweep_dir.iterdir()
             if p.is_dir() and not p.is_symlink() and JOB_FOLDER.match(p.name)]
    return sorted(found, key=lambda p: (job_number(p), p.name))


NESTED_DEPTH = 8
"""Folders below a numbered one a nested job's folder is looked for (each ``/`` of its values
is one)."""


def sweep_jobs(sweep_dir: Path) -> list[Path]:
    """The job folders a summary of ``sweep_dir`` reads: :func:`job_folders`, where a numbered
    folder without ``.hydra/`` stands for the jobs below it that have one (a value with a
    ``/``: ``0_game.name=openspiel`` holding ``kuhn_poker,seed=0``; the numbered folder itself
    when none is there yet, a job not started). By number then name (:func:`job_name`).
    The resume's search (:func:`find_job_folder`) keeps to :func:`job_folders`: a job it
    finds there is one the sweep's own naming made."""
    found: list[Path] = []
    for top in job_folders(sweep_dir):
        below = [] if (top / ".hydra").is_dir() else _nested_jobs(top)
        found += below or [top]
    return sorted(found, key=lambda p: (job_number(p, sweep_dir), job_name(p, sweep_dir)))


def _nested_jobs(top: Path) -> list[Path]:
    """The folders below ``top`` holding ``.hydra/overrides.yaml``, at most
    :data:`NESTED_DEPTH` deep; hidden folders, links and those below a job are not entered."""
    found: list[Path] = []
    level = [top]
    for _ in range(NESTED_DEPTH):
        below = []
        for d in level:
            try:
                below += [p for p in d.iterdir()
                          if not p.name.startswith(".") and p.is_dir() and not p.is_symlink()]
            except OSError:  # unreadable or gone since
                continue
        jobs = [p for p in below if (p / ".hydra" / "overrides.yaml").is_file()]
        found += jobs
        level = [p for p in below if p not in jobs]
    return found


def sweep_of(job: Path) -> Path | None:
    """The sweep folder that holds job folder ``job`` (one with ``.hydra/overrides.yaml``), as
    :func:`sweep_jobs` finds it: its parent when its name is numbered (``0_seed=1``), else the
    parent of the numbered folder at most :data:`NESTED_DEPTH` above it that holds the sweep's
    ``multirun.yaml``, with no job between them (``sw/0_game.name=openspiel/kuhn_poker,seed=0``:
    ``sw``); None for a job of no sweep (a single run's folder)."""
    if not (job / ".hydra" / "overrides.yaml").is_file():
        return None
    if JOB_FOLDER.match(job.name):
        return job.parent
    for top in list(job.parents)[:NESTED_DEPTH]:
        if (top / ".hydra").is_dir():  # a job's own folder holds no sweep's job
            return None
        if JOB_FOLDER.match(top.name) and (top.parent / "multirun.yaml").is_file():
            return top.parent
    return None


def job_name(folder: Path, sweep_dir: Path | None = None) -> str:
    """A job folder's name in its sweep: its path below ``sweep_dir`` (a nested job's
    ``0_game.name=openspiel/kuhn_poker,seed=0``), or its own name."""
    if sweep_dir is not None:
        try:
            return folder.relative_to(sweep_dir).as_posix()
        except ValueError:
            pass
    return folder.name


def job_number(folder: Path, sweep_dir: Path | None = None) -> int:
    """The number a job folder's name (:func:`job_name`) starts with (``-1`` for a name
    without one)."""
    m = JOB_FOLDER.match(job_name(folder, sweep_dir))
    return int(m[1]) if m else -1


def override_key(line: str) -> str:
    """The key (or config group) an override sets: ``+mappo.lr=1`` -> ``mappo.lr``,
    ``game@x=kuhn`` -> ``game``, ``~game`` -> ``game``, as Hydra's ``key_or_group``."""
    return line.split("=", 1)[0].lstrip("+~").split("@", 1)[0]


def job_overrides(folder: Path) -> list[str] | None:
    """A job's overrides as typed (its ``.hydra/overrides.yaml``); None when the folder has
    none or it cannot be read (a folder of another program, a damaged file)."""
    import yaml

    try:
        lines = yaml.safe_load((folder / ".hydra" / "overrides.yaml").read_text())
    except (OSError, ValueError, yaml.YAMLError, RecursionError):
        return None
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        return None
    return lines


def identity(overrides: Iterable[str], ignored: Collection[str]) -> frozenset[str]:
    """What tells a job apart in its sweep: its overrides but those setting an ``ignored``
    key (settings a resume may change, left out of job folder names) and the ``~game`` the
    CLI adds before ``game.name=``."""
    return frozenset(line for line in overrides
                     if override_key(line) not in ignored and not line.startswith("~game"))


def find_job_folder(sweep_dir: Path, overrides: Sequence[str], ignored: Collection[str],
                    preferred: str) -> Path | None:
    """The folder in ``sweep_dir`` of the job with these ``overrides`` (compared but for the
    ``ignored`` keys: :func:`identity`), whatever number the sweep that made it gave it;
    ``preferred`` (the job's own name now) where several match (``seed=0,0``). None when no
    folder matches, or several do and none is ``preferred`` (the caller decides)."""
    mine = identity(overrides, ignored)
    same = [f for f in job_folders(sweep_dir)
            if (theirs := job_overrides(f)) is not None and identity(theirs, ignored) == mine]
    for folder in same:
        if folder.name == preferred:
            return folder
    return same[0] if len(same) == 1 else None


# ------------------------------------------------------------------------------ summary
FLAGS = ("resume", "resume_override", "keep_going", "progress")
"""Overrides that say how a sweep ran, not what a job is: never a column."""
SIZES = ("frames", "iterations", "seconds")
"""Figures that size a job: in the jobs table, not pooled in the grouped one."""
NOT_POOLED = (*SIZES, "eval_ci95")  # a job's own uncertainty: the spread over jobs says more
ORDER = ("frames", "iterations", "final_return", "team_return", "eval_return", "eval_ci95",
         "eval_legal_rate", "nash_conv")
CSV_NAME = "summary.csv"


@dataclass
class JobResult:
    """One job of a sweep, as its folder holds it."""

    folder: Path
    job: int  # the number in its folder's name (the sweep that made it numbered it)
    overrides: dict[str, str]  # key -> value, as typed (``.hydra/overrides.yaml``)
    status: str  # finished | failed | interrupted | running | not started | unreadable
    kind: str | None = None  # population.kind: none | league | psro
    figures: dict[str, Any] = field(default_factory=dict)  # the closing table's key figures
    error: str | None = None  # why it failed (its database's error), or why unreadable
    name: str = ""  # its folder's path below the sweep's (:func:`job_name`); its own name

    def __post_init__(self) -> None:
        self.name = self.name or self.folder.name


@dataclass
class Group:
    """Jobs of one setting (``by`` keys' values), their figures pooled."""

    setting: dict[str, str]
    jobs: list[JobResult]  # finished ones, with figures
    others: int  # jobs of the setting that did not finish
    stats: dict[str, tuple[float, float | None, int]]  # figure -> (mean, std or None, n)


def summarize(sweep_dir: str | Path) -> list[JobResult]:
    """Every job folder of ``sweep_dir`` with its status and its closing table's key figures:
    a single run's ``frames``, ``seconds``, ``final_return``, ``eval_return`` (an LLM team's
    ``iterations``, rates and ``team_return``), a league's ``mu/<member>`` (each member's
    newest snapshot), PSRO's ``iterations`` and last ``nash_conv``. A job that did not
    finish has its status (and error) but no figures. Its jobs: :func:`sweep_jobs`."""
    return [job_result(folder, Path(sweep_dir)) for folder in sweep_jobs(Path(sweep_dir))]


def overrides_of(lines: Iterable[str]) -> dict[str, str]:
    """``key -> value`` of a job's overrides as typed, but for :data:`FLAGS` and deletions."""
    return {override_key(x): x.split("=", 1)[1] for x in lines
            if "=" in x and not x.startswith("~") and override_key(x) not in FLAGS}


def job_result(folder: Path, sweep_dir: Path | None = None) -> JobResult:
    """One job of a sweep as its folder holds it now (what :func:`summarize` reads of each:
    its overrides, status, kind and figures), named by its path below ``sweep_dir``
    (:func:`job_name`). Read-only; a damaged database is the job's ``unreadable`` status."""
    job = JobResult(folder, job_number(folder, sweep_dir),
                    overrides_of(job_overrides(folder) or []), "not started",
                    name=job_name(folder, sweep_dir))
    if not (folder / "league.db").is_file():
        return job
    from populations.db import LeagueDB, LeagueDBError

    try:
        db = LeagueDB(folder / "league.db", readonly=True)
    except (LeagueDBError, sqlite3.Error, OSError) as err:
        job.status, job.error = "unreadable", str(err)
        return job
    try:
        _read(job, db, _settings(folder, db))
    except (LeagueDBError, sqlite3.Error, OSError, ValueError) as err:
        job.status, job.error = "unreadable", f"{type(err).__name__}: {err}"
    finally:
        db.close()
    return job


def _settings(folder: Path, db: Any) -> dict[str, Any]:
    """The job's settings: its ``settings.json``, else the ones its database recorded."""
    from populations.db import EVAL_EXPERIMENT

    try:
        saved = json.loads((folder / "settings.json").read_text())
    except (OSError, ValueError, RecursionError):
        saved = None
    if not isinstance(saved, dict):
        row = db.conn.execute("SELECT id FROM runs WHERE experiment != ? ORDER BY id DESC "
                              "LIMIT 1", (EVAL_EXPERIMENT,)).fetchone()
        saved = (db.run_config(int(row[0])) if row else None) or {}
    return saved


def _read(job: JobResult, db: Any, settings: dict[str, Any]) -> None:
    """Fill ``job``'s status and figures from its database (the newest run in it, not one
    that ``selfplay-eval --db`` added). Without
    torch (``populations.run_figures``) where the run's files allow: ``python -m
    populations.sweep_summary`` imported it through ``populations.experiment``, about 4 s of
    CPU to print a table."""
    from populations import run_figures
    from populations.db import EVAL_EXPERIMENT

    row = db.conn.execute("SELECT id, status, error FROM runs WHERE experiment != ? ORDER BY id "
                          "DESC LIMIT 1", (EVAL_EXPERIMENT,)).fetchone()  # not a selfplay-eval's
    if row is None:
        return
    run_id, job.status, job.error = int(row[0]), str(row[1]), row[2]
    population = settings.get("population")
    job.kind = str(population.get("kind", "none")) if isinstance(population, dict) else "none"
    if job.status != "finished":
        return
    if job.kind == "league":
        job.figures = {f"mu/{m}": mu for m, mu in run_figures.league_mus(db, run_id).items()}
    elif job.kind == "psro":
        its = db.psro_iterations(run_id)
        last = its[-1]["nash_conv"] if its else None
        job.figures = {"iterations": len(its),
                       "nash_conv": None if last is None else round(float(last), 6)}
    else:  # the row a resume of the finished run prints (experiment.finished_run_row)
        members = {s.member for s in db.snapshots(run_id)}
        algo = str(settings.get("algo", ""))
        member = algo if algo in members or "llm" not in members else "llm"
        unit = "iterations" if member == "llm" else "frames"
        try:
            table = run_figures.finished_row(db, run_id, job.folder, member, unit)
        except run_figures.NotPlain:  # read the torch way, with its warnings
            from populations import experiment

            with _quiet(experiment.log):  # its "already finished; nothing to do" line
                table = experiment.finished_run_row(db, run_id, job.folder, member, unit)
        job.figures = {k: v for k, v in (table or {}).items() if k not in ("member", "version")}


@contextlib.contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """``logger``'s INFO lines dropped (its warnings kept)."""
    def drop(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING

    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def swept(jobs: Sequence[JobResult]) -> list[str]:
    """The override keys whose values differ between ``jobs`` (one job lacking a key its
    others set counts), in the order the jobs name them."""
    keys = list(dict.fromkeys(k for j in jobs for k in j.overrides))
    return [k for k in keys if len({j.overrides.get(k) for j in jobs}) > 1]


def label(figure: str, keys: Collection[str]) -> str:
    """A figure's column name: ``frames (run)`` where the sweep sets ``frames`` too."""
    return f"{figure} (run)" if figure in keys else figure


def figure_columns(jobs: Sequence[JobResult]) -> list[str]:
    """The figures any job has, sizes and returns first (:data:`ORDER`), then the others."""
    names = list(dict.fromkeys(k for j in jobs for k in j.figures))
    return [k for k in ORDER if k in names] + sorted(k for k in names if k not in ORDER)


def grouped(jobs: Sequence[JobResult], by: Sequence[str]) -> list[Group]:
    """``jobs`` grouped by their values of the ``by`` keys (the others, ``seed`` among them,
    pooled): per group the mean, standard deviation (n - 1; None for one job) and count of
    each figure over its finished jobs, in the order the groups first appear."""
    groups: dict[tuple[str, ...], list[JobResult]] = {}
    for j in jobs:
        groups.setdefault(tuple(j.overrides.get(k, "-") for k in by), []).append(j)
    pooled = pooled_columns(jobs)
    out = []
    for values, members in groups.items():
        done = [j for j in members if j.status == "finished"]
        stats: dict[str, tuple[float, float | None, int]] = {}
        for c in pooled:
            xs = [float(j.figures[c]) for j in done
                  if isinstance(j.figures.get(c), int | float) and math.isfinite(j.figures[c])]
            if xs:
                mean = sum(xs) / len(xs)
                std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) \
                    if len(xs) > 1 else None
                stats[c] = (mean, std, len(xs))
        out.append(Group(dict(zip(by, values, strict=True)), done, len(members) - len(done),
                         stats))
    return out


def pooled_columns(jobs: Sequence[JobResult]) -> list[str]:
    """The figures :func:`grouped` pools (:func:`figure_columns` but :data:`NOT_POOLED`)."""
    return [c for c in figure_columns(jobs) if c not in NOT_POOLED]


def pooled_text(stat: tuple[float, float | None, int] | None, finished: int) -> str:
    """A pooled cell as the summary prints it: ``mean ± std`` (the mean alone for one job),
    ``(n=...)`` where fewer than the setting's ``finished`` jobs have the figure, ``-``
    without one (``stat``: a :class:`Group`'s ``(mean, std, n)``)."""
    if stat is None or not stat[2]:
        return "-"
    mean, std, n = stat
    if std is None:
        return f"{mean:.3f}"
    return f"{mean:.3f} ± {std:.3f}" + ("" if n == finished else f" (n={n})")


def write_csv(jobs: Sequence[JobResult], path: Path) -> None:
    """One row per job: its number, folder, status, swept overrides, kind, every figure and
    error (cells safe to open in a spreadsheet: :func:`populations.loggers.csv_cell`)."""
    from marl.fileio import atomic_write
    from populations.loggers import csv_cell

    keys, figures = swept(jobs), figure_columns(jobs)
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow([csv_cell(c) for c in ["job", "folder", "status", *keys, "kind",
                                      *(label(c, keys) for c in figures), "error"]])
    for j in jobs:
        cells = [j.job, j.name, j.status, *(j.overrides.get(k, "") for k in keys),
                 j.kind or "", *(j.figures.get(c) for c in figures), j.error or ""]
        w.writerow([csv_cell("" if v is None else str(v)) for v in cells])
    atomic_write(path, f.getvalue())  # whole or not at all; a link at path is refused


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], text: int) -> list[str]:
    """Columns aligned: the first ``text`` (names, values as typed) left, figures right."""
    width = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
             for k, h in enumerate(header)]
    return ["  ".join(f"{c:<{w}}" if k < text else f"{c:>{w}}"
                      for k, (c, w) in enumerate(zip(cells, width, strict=True))).rstrip()
            for cells in [list(header), *rows]]


def report(jobs: Sequence[JobResult], by: Sequence[str] | None = None) -> list[str]:
    """The lines of a sweep's summary: one row per job (folder, swept overrides, status,
    figures), then, when ``seed`` is swept or ``by`` given, one row per setting (mean ± std
    over its finished jobs, n)."""
    if not jobs:
        return []
    keys, figures = swept(jobs), figure_columns(jobs)
    shown = [c for c in figures if c != "seconds"]
    rows = [[j.name, *(j.overrides.get(k, "-") for k in keys), j.status,
             *(_text(j.figures.get(c)) for c in shown)] for j in jobs]
    lines = _table(["folder", *keys, "status", *(label(c, keys) for c in shown)], rows,
                   len(keys) + 2)
    if by is None:
        by = [k for k in keys if k != "seed"] if "seed" in keys else None
    if by is None:
        return lines
    groups = grouped(jobs, by)
    pooled = pooled_columns(jobs)
    if not pooled:
        return lines
    pooled_keys = [k for k in keys if k not in by]
    title = (f"{'by ' + ', '.join(by) if by else 'all jobs'}"
             f"{', pooling ' + ', '.join(pooled_keys) if pooled_keys else ''}: mean ± std "
             "over the finished jobs (n; the std divides by n - 1)")
    grows = []
    for g in groups:
        cells = [_text(g.setting[k]) for k in by] or ["all"]
        cells.append(str(len(g.jobs)) + (f" (+{g.others} not finished)" if g.others else ""))
        cells += [pooled_text(g.stats.get(c), len(g.jobs)) for c in pooled]
        grows.append(cells)
    head = [*(by or ["setting"]), "n", *(label(c, by) for c in pooled)]
    return [*lines, "", title, *_table(head, grows, max(1, len(by)) + 1)]


def print_summary(sweep_dir: Path, by: Sequence[str] | None = None,
                  removed: Sequence[JobResult] = ()) -> None:
    """Print a sweep's summary (:func:`report`) and write ``<sweep_dir>/summary.csv``.
    ``removed``: failed jobs whose folder is gone (``keep_going``: failed before their first
    checkpoint), listed after the folders' jobs."""
    print_jobs(sweep_dir, [*summarize(sweep_dir), *removed], by)


def print_jobs(sweep_dir: Path, jobs: Sequence[JobResult], by: Sequence[str] | None = None
               ) -> None:
    """Print ``jobs``' summary (:func:`report`) and write them to ``<sweep_dir>/summary.csv``."""
    lines = report(jobs, by)
    if not lines:
        return
    try:
        write_csv(jobs, sweep_dir / CSV_NAME)
        where = f"one row each in {sweep_dir / CSV_NAME}"
    except OSError as err:
        where = f"{CSV_NAME} not written: {err}"
    print(f"\nsweep {sweep_dir}: {len(jobs)} jobs ({where})")
    print("\n".join(lines))


def removed_jobs(sweep_dir: Path, present: Sequence[JobResult] = ()) -> list[JobResult]:
    """The failed jobs ``<sweep_dir>/summary.csv`` lists whose folder is gone (``keep_going``:
    failed before their first checkpoint, so the sweep removed their folder): what the
    sweep's own table had and the folders no longer show. Their overrides are the csv's
    swept columns, plus the other keys' values of the ``present`` jobs (a key the csv does
    not list had one value over the sweep's jobs). None when there is no readable csv."""
    from populations.loggers import csv_key

    try:
        with open(sweep_dir / CSV_NAME, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    if not rows or rows[0][:3] != ["job", "folder", "status"] or "kind" not in rows[0]:
        return []
    header = [csv_key(c) for c in rows[0]]
    kind = len(header) - 1 - header[::-1].index("kind")  # the swept keys end there
    keys = header[3:kind]
    shared = {k: v for j in present for k, v in j.overrides.items() if k not in keys}
    there = {j.name for j in present}
    out = []
    for row in rows[1:]:
        if len(row) != len(header):
            continue
        cells = [csv_key(c) for c in row]
        name, status = cells[1], cells[2]
        if status != "failed" or not name or name in there or (sweep_dir / name).exists():
            continue
        swept_values = {k: v for k, v in zip(keys, cells[3:kind], strict=True) if v}
        try:
            number = int(cells[0])
        except ValueError:
            number = job_number(sweep_dir / name, sweep_dir)
        out.append(JobResult(sweep_dir / name, number, {**shared, **swept_values}, status,
                             cells[kind] or None, error=cells[-1] or None, name=name))
    return out


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2 (as every CLI here)
        _fail(f"{message} (see --help)")


PROG = "python -m populations.sweep_summary"


def _fail(message: str) -> NoReturn:
    print(f"{PROG}: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m populations.sweep_summary <sweep dir> [--by KEY ...]``."""
    p = _Parser(prog=PROG, description="One table over a sweep's jobs (selfplay-train -m), "
                "and a grouped one pooling seed; writes <sweep dir>/summary.csv.")
    p.add_argument("sweep_dir", type=Path, help="the sweep's folder (its hydra.sweep.dir)")
    p.add_argument("--by", action="append", metavar="KEY",
                   help="group by this override key (repeat for several); default: every "
                        "swept key but seed, when seed is swept")
    args = p.parse_args(argv)
    folder: Path = args.sweep_dir
    if not folder.is_dir():
        _fail(f"{folder} is not a folder; give a sweep's folder (its hydra.sweep.dir)")
    present = summarize(folder)
    # failed jobs whose folder the sweep removed: its table listed them, and so does this one
    removed = removed_jobs(folder, present)
    jobs = [*present, *removed]
    if not jobs:
        if (folder / CSV_NAME).is_file() or (folder / "multirun.yaml").is_file():
            _fail(f"{folder} is a sweep's folder without jobs: no job folder, and no failed "
                  f"job in its {CSV_NAME}")
        _fail(f"{folder} holds no job folder (<n>_<overrides>, with .hydra/ inside); give a "
              "sweep's folder, not one of its jobs")
    by = [k for arg in args.by for k in arg.split(",") if k] if args.by else None
    unknown = [k for k in by or () if all(k not in j.overrides for j in jobs)]
    if unknown:
        _fail(f"--by {', '.join(unknown)}: no job sets it; the jobs' override keys: "
              f"{', '.join(dict.fromkeys(k for j in jobs for k in j.overrides)) or 'none'}")
    print_jobs(folder, jobs, by)


if __name__ == "__main__":
    main()
