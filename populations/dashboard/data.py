"""The dashboard's data service: every JSON document the page reads, by API path.

The web server answers ``GET <path>`` with :meth:`DashboardData.get`, and the static export
calls the same method for every path the page would request and embeds the answers, so
the server and the exported file cannot show different things.

Paths (``S`` a database id from ``api/runs``, ``R`` a run id inside it):

=====================================  ==================================================
``api/config``                         refresh interval, version, whether this is an export
``api/runs``                           every run of every database, and per-database errors
``api/runs/S/R``                       one run and its configuration (also flattened)
``api/runs/S/R/league``                the league table (one row per member, with the
                                       learner settings it trains with)
``api/runs/S/R/payoffs``               the payoff matrix between snapshots (mean margins)
``api/runs/S/R/crossplay``             win/draw/loss, margins, 95 % intervals, α-Rank
``api/runs/S/R/ratings``               Elo and μ/σ history per snapshot
``api/runs/S/R/psro``                  PSRO meta-strategies and NashConv per iteration
``api/runs/S/R/exploitability``        NashConv per snapshot: exact, or approximate ± 95 %
``api/runs/S/R/learner``               learner curves grouped into charts, and all metric keys
``api/runs/S/R/metrics?key=K``         the curve of one metric key (repeat ``key`` for more)
``api/sweeps``                         each sweep's table per setting, pooled over seeds
=====================================  ==================================================

``crossplay`` also takes ``?rows=N``: only the pairs of its last ``N`` rows (those of the
newest snapshots), ``pairs_total`` counting all; the page asks for :data:`CROSSPLAY_ROWS`
(``api/config``'s ``crossplay_rows``) until "show all". ``payoffs``, ``crossplay`` and
``ratings`` take ``?compact=1`` (what the page reads, live
or exported: the static export embeds only these forms): the filled payoff cells only where
most are empty, cross-play without its k x k tables and its pairs as columns, each rating
series at its change points. JSON answers carry an ETag and are revalidated
(``Cache-Control: no-cache``): an unchanged one is a 304 with no body.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from populations import sweep_summary
from populations.dashboard import queries
from populations.dashboard.sources import (
    Source,
    SourceError,
    Sources,
    describe,
    open_source,
    shown,
)
from populations.db import LeagueDB

VERSION = "1"
CROSSPLAY_ROWS = 100  # cross-play pairs the page asks for (and draws) before "show all"
_URI_SAFE = "!'()*"  # characters encodeURIComponent leaves as they are (besides -_.~)

# chart/table name → query(db, run_id, max_points, compact) for the per-run endpoints
RUN_VIEWS: dict[str, Callable[[LeagueDB, int, int, bool], Any]] = {
    "league": lambda db, run, _, __: queries.league_table(db, run),
    "payoffs": lambda db, run, _, compact: queries.payoff_matrix(db, run, compact),
    "crossplay": lambda db, run, _, compact: queries.crossplay(db, run, compact),
    "ratings": lambda db, run, _, compact: queries.rating_history(db, run, compact),
    "psro": lambda db, run, _, __: queries.psro(db, run),
    "exploitability": lambda db, run, _, __: queries.exploitability(db, run),
    "learner": lambda db, run, max_points, _: queries.learner_panels(db, run, max_points),
}
# views with a compact form (``?compact=1``: filled cells, change points, no k x k tables),
# which the page reads (and the export embeds); the plain form is the default
COMPACT_VIEWS = frozenset({"payoffs", "crossplay", "ratings"})


def view_path(base: str, name: str) -> str:
    """The path the page reads view ``name`` of run ``base`` (``api/runs/S/R``) at: its
    compact form where it has one."""
    return f"{base}/{name}?compact=1" if name in COMPACT_VIEWS else f"{base}/{name}"


def crossplay_rows_path(base: str) -> str:
    """The path of the cross-play the page reads first: compact, :data:`CROSSPLAY_ROWS`
    pairs (``api/runs/S/R`` as ``base``)."""
    return f"{view_path(base, 'crossplay')}&rows={CROSSPLAY_ROWS}"


def metrics_path(source: str, run: int, key: str) -> str:
    """The API path of one metric's curve, quoted as the page's ``encodeURIComponent``."""
    return f"api/runs/{source}/{run}/metrics?key={quote(key, safe=_URI_SAFE)}"


def finite(obj: Any) -> Any:
    """``obj`` with NaN and ±inf replaced by None (JSON has no such numbers)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


class DashboardData:
    """Answers the dashboard's API paths from the databases named by ``paths``."""

    def __init__(self, paths: Sequence[str | Path], refresh_s: float = 5.0,
                 max_points: int = queries.MAX_POINTS) -> None:
        self.sources = Sources(paths)
        self.refresh_s = refresh_s
        self.max_points = max_points
        # sweep folder -> (its marker, its table); job folder -> (its database's version,
        # what it holds): a change in one job's database reads that job again, not the sweep
        self._sweeps: dict[Path, tuple[tuple[str, ...], dict[str, Any]]] = {}
        self._jobs: dict[Path, tuple[str, sweep_summary.JobResult]] = {}
        self._sweeps_lock = threading.Lock()

    def config(self, export: bool = False) -> dict[str, Any]:
        return {"refresh_seconds": 0 if export else self.refresh_s, "version": VERSION,
                "export": export, "crossplay_rows": CROSSPLAY_ROWS}

    def runs(self) -> dict[str, Any]:
        """Runs of every readable database; an unreadable one is listed under ``errors``."""
        out: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for src in self.sources.all():
            try:
                with open_source(src) as db:
                    out += queries.runs(db, src)
            except SourceError as err:
                errors.append({"source": src.id, "path": str(src.path), "error": str(err)})
        return {"runs": out, "errors": errors}

    def sweeps(self) -> dict[str, Any]:
        """Each sweep among the databases (jobs ``<n>_<overrides>/league.db`` of one folder,
        :func:`sweep_folders`) as :func:`sweep_table`: ``python -m populations.sweep_summary``'s
        table per setting, pooled over ``seed``. Cached per sweep until one of its jobs'
        databases (or its ``summary.csv``) changes, and per job: only the jobs whose
        database changed are read again."""
        out = []
        seen: set[Path] = set()
        for folder in sweep_folders(self.sources.all()):
            folders = sweep_summary.sweep_jobs(folder)
            seen.update(folders)
            marker = sweep_marker(folder, folders)
            with self._sweeps_lock:
                hit = self._sweeps.get(folder)
            if hit is None or hit[0] != marker:
                hit = (marker, sweep_table(folder, [self._job(folder, j) for j in folders]))
                with self._sweeps_lock:
                    if len(self._sweeps) > 64:  # many sweeps: forget the others
                        self._sweeps.clear()
                    self._sweeps[folder] = hit
            out.append(hit[1])
        with self._sweeps_lock:  # forget the jobs of sweeps no longer served
            self._jobs = {k: v for k, v in self._jobs.items() if k in seen}
        return {"sweeps": out}

    def _job(self, sweep_dir: Path, folder: Path) -> sweep_summary.JobResult:
        """Job ``folder`` of ``sweep_dir`` as :func:`~populations.sweep_summary.job_result`
        reads it, read again only when its database changed (:func:`job_marker`)."""
        marker = job_marker(folder)
        with self._sweeps_lock:
            hit = self._jobs.get(folder)
        if hit is None or hit[0] != marker:
            hit = (marker, sweep_summary.job_result(folder, sweep_dir))
            with self._sweeps_lock:
                self._jobs[folder] = hit
        return hit[1]

    def run(self, source: str, run: int) -> dict[str, Any]:
        src = self.sources.get(source)
        with open_source(src) as db:
            return queries.run_summary(db, src, run)

    def view(self, source: str, run: int, name: str, compact: bool = False,
             rows: int | None = None) -> Any:
        """One per-run view; ``compact``: its compact form (:data:`COMPACT_VIEWS`);
        ``rows``: cross-play's last pairs only."""
        if name not in RUN_VIEWS:
            raise SourceError(f"unknown view {shown(name)}; expected one of {sorted(RUN_VIEWS)}",
                              404)
        src = self.sources.get(source)
        with open_source(src) as db:
            queries.check_run(db, src, run)
            if name == "crossplay" and rows is not None:
                return queries.crossplay(db, run, compact, rows=rows)
            return RUN_VIEWS[name](db, run, self.max_points, compact)

    def metrics(self, source: str, run: int, keys: Sequence[str]) -> list[dict[str, Any]]:
        src = self.sources.get(source)
        with open_source(src) as db:
            queries.check_run(db, src, run)
            return queries.metric_series(db, run, list(keys), self.max_points)

    def snapshot_all(self) -> dict[str, Any]:
        """Every path the page can request, answered now (what the static export embeds)."""
        runs = self.runs()
        answers: dict[str, Any] = {"api/config": {**self.config(export=True),
                                                  "generated_at": time.time()},
                                   "api/runs": runs}
        sweeps = self.sweeps()
        if sweeps["sweeps"]:  # an export without sweeps shows no section (the page skips it)
            answers["api/sweeps"] = sweeps
        by_id = {s.id: s for s in self.sources.all()}
        for r in runs["runs"]:
            sid, rid = r["source"], r["id"]
            base = f"api/runs/{sid}/{rid}"
            try:
                with open_source(by_id[sid]) as db:
                    answers[base] = queries.run_summary(db, by_id[sid], rid)
                    answers[crossplay_rows_path(base)] = queries.crossplay(
                        db, rid, True, fresh=True, rows=CROSSPLAY_ROWS)
                    for name, fn in RUN_VIEWS.items():  # the forms the page reads
                        compact = name in COMPACT_VIEWS
                        answers[view_path(base, name)] = (  # the export never shows stale ones
                            queries.crossplay(db, rid, compact, fresh=True)
                            if name == "crossplay" else fn(db, rid, self.max_points, compact))
                    for key in answers[f"{base}/learner"]["keys"]:
                        answers[metrics_path(sid, rid, key)] = queries.metric_series(
                            db, rid, [key], self.max_points)
            except SourceError as err:
                runs["errors"].append({"source": sid, "path": r["path"], "error": str(err)})
        return finite(answers)


def sweep_folders(sources: Sequence[Source]) -> list[Path]:
    """The sweep folders holding some of ``sources``: a database in a job folder with its
    ``.hydra/overrides.yaml``, named ``<n>_<overrides>``
    (:data:`populations.sweep_summary.JOB_FOLDER`) or nested below such a folder by a value
    with a ``/`` (:func:`populations.sweep_summary.sweep_of`); in the order of their first
    job."""
    out: dict[Path, None] = {}
    for src in sources:
        if src.path.name == "league.db" and (sweep := sweep_summary.sweep_of(src.path.parent)):
            out.setdefault(sweep, None)
    return list(out)


def job_marker(folder: Path) -> str:
    """What changes when a job's figures may: its database's
    :func:`~populations.dashboard.queries.db_version` (every write changes it)."""
    return queries.db_version(folder / "league.db")


def sweep_marker(folder: Path, jobs: Sequence[Path] | None = None) -> tuple[str, ...]:
    """What changes when a sweep's table may: each job folder's name
    (:func:`~populations.sweep_summary.sweep_jobs`, or ``jobs``) and :func:`job_marker`, and
    the sweep's ``summary.csv`` (failed jobs whose folder is gone)."""
    jobs = sweep_summary.sweep_jobs(folder) if jobs is None else jobs
    return (*(f"{sweep_summary.job_name(j, folder)}:{job_marker(j)}" for j in jobs),
            queries.db_version(folder / sweep_summary.CSV_NAME))


def sweep_table(folder: Path, present: Sequence[sweep_summary.JobResult] | None = None
                ) -> dict[str, Any]:
    """One sweep's jobs and its table per setting, read and pooled by
    :mod:`populations.sweep_summary` (its :func:`~populations.sweep_summary.summarize`, or the
    jobs ``present`` as it reads them, :func:`~populations.sweep_summary.removed_jobs` and
    :func:`~populations.sweep_summary.grouped`, as ``python -m populations.sweep_summary``):
    grouped by every swept key but ``seed`` when ``seed`` is swept, else by every swept key
    (one job a setting). Per setting: its values, finished jobs (``n``), the others, and per
    pooled figure ``mean``, ``std`` (n - 1; None for one job), ``n`` and ``text`` (as the
    summary prints it: :func:`~populations.sweep_summary.pooled_text`)."""
    present = sweep_summary.summarize(folder) if present is None else list(present)
    jobs = [*present, *sweep_summary.removed_jobs(folder, present)]
    keys = sweep_summary.swept(jobs)
    by = [k for k in keys if k != "seed"] if "seed" in keys else keys
    pooled = sweep_summary.pooled_columns(jobs)
    groups = []
    for g in sweep_summary.grouped(jobs, by):
        stats = {}
        for c in pooled:
            if c in g.stats:
                mean, std, n = g.stats[c]
                stats[c] = {"mean": mean, "std": std, "n": n,
                            "text": sweep_summary.pooled_text(g.stats[c], len(g.jobs))}
        groups.append({"setting": g.setting, "n": len(g.jobs), "others": g.others,
                       "stats": stats})
    return {"path": str(folder), "jobs": len(jobs),
            "statuses": dict(sorted(Counter(j.status for j in jobs).items())),
            "by": by, "pooled_keys": [k for k in keys if k not in by],
            "columns": [{"key": c, "label": sweep_summary.label(c, by)} for c in pooled],
            "groups": groups}


def source_status(src: Source) -> str:
    """A one-line status of a database for the command line."""
    try:
        with open_source(src) as db:
            n = len(queries.runs(db, src))
        return f"{src.path}: {n} run{'s' if n != 1 else ''}"
    except SourceError as err:
        return str(err)
    except OSError as err:  # pragma: no cover - filesystem trouble
        return describe(err, src.path)
