"""Metrics loggers chosen by ``logger=`` (none, csv, wandb, or one of your own). The league
database gets every metric whatever the logger; these are extra sinks for the researcher's
usual tools.

A logger of your own is a :class:`MetricsLogger` subclass registered by name with
:func:`register_logger` in a module the command line imports (``imports=[mypkg.mylog]``) or
an installed package's ``selfplay.loggers`` entry point; ``logger=NAME`` (or
``logger.kind=NAME``) then picks it.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import itertools
import locale
import logging
import os
import re
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from games.core import where_raised
from games.registry import defined_at, redefinition
from marl.configs import did_you_mean
from marl.fileio import NoSpaceError, atomic_write, disk_full
from populations.db import refuse_link

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoggerConfig:
    """Where metrics go besides the league database."""

    kind: str = "csv"  # none | csv | wandb | a registered logger (register_logger)
    project: str = "selfplay"  # wandb project
    mode: str = "auto"  # wandb: auto (online if logged in, else offline) | online | offline
    tags: tuple[str, ...] = ()  # wandb run tags

    def __post_init__(self) -> None:
        if self.kind not in _LOGGERS:  # installed packages' ``selfplay.loggers`` entry points
            from games.registry import load_entry_points

            load_entry_points(ENTRY_POINTS)
        if self.kind not in _LOGGERS:
            raise ValueError(f"logger kind {self.kind!r} unknown; choose one of "
                             f"{available_loggers()}; a logger of your own is registered by "
                             "register_logger (populations.loggers) when its module is "
                             "imported: imports=[module] (selfplay-train)"
                             f"{did_you_mean(self.kind, _LOGGERS)}")
        if self.mode not in ("auto", "online", "offline"):
            raise ValueError(f"wandb mode {self.mode!r} unknown; choose one of "
                             "['auto', 'online', 'offline']"
                             f"{did_you_mean(self.mode, ('auto', 'online', 'offline'))}")
        bad = tags_refusal(self.tags, self.kind == "wandb")
        if bad:  # [[a]] reached wandb's pydantic error: its words, not the setting's
            raise ValueError(bad)
        if self.kind == "wandb":  # a logger of your own may name projects otherwise
            bad = wandb_project_refusal(self.project)
            if bad:
                raise ValueError(bad)


WANDB_TAG_MAX = 64  # wandb.Settings' run_tags check (0.31): 1 to 64 characters each


def tags_refusal(tags: object, wandb: bool = True) -> str | None:
    """Why ``logger.tags`` is refused (None: a list of strings; for wandb, each of 1 to
    :data:`WANDB_TAG_MAX` characters, its ``Settings`` check): one line naming the value and
    what is accepted. A plain string was split into one-letter tags by ``list()``."""
    accepted = ("a list of strings" + (f" of 1 to {WANDB_TAG_MAX} characters" if wandb else "")
                + ", e.g. logger.tags=[baseline,kuhn]")
    if isinstance(tags, str) or not isinstance(tags, (list, tuple)):
        return f"logger.tags={tags!r:.80} is not a list; accepted: {accepted}"
    for tag in tags:
        if not isinstance(tag, str) or (wandb and not 1 <= len(tag) <= WANDB_TAG_MAX):
            return f"logger.tags holds {tag!r:.80}; accepted: {accepted}"
    return None


WANDB_PROJECT_MAX = 128  # wandb.Settings' project check (0.31): at most 128 characters
WANDB_PROJECT_BANNED = "/\\#?%:"  # and none of these


def wandb_project_refusal(project: object) -> str | None:
    """Why wandb refuses ``project`` as a project name (its ``Settings`` check, which
    ``wandb.init`` raised as a 30-line traceback after the run had started), or None."""
    if not isinstance(project, str) or not project:
        return f"logger.project={project!r}: a wandb project is a non-empty name"
    found = sorted({c for c in project if c in WANDB_PROJECT_BANNED})
    if len(project) <= WANDB_PROJECT_MAX and not found:
        return None
    why = (f"it is {len(project)} characters long" if not found
           else f"it holds {' '.join(found)}")
    return (f"logger.project={project[:60]!r}{'...' if len(project) > 60 else ''} is not a "
            f"wandb project name ({why}): a project name has 1 to {WANDB_PROJECT_MAX} "
            f"characters, none of {' '.join(WANDB_PROJECT_BANNED)} (a team goes in "
            "WANDB_ENTITY, not in the project)")


class MetricsLogger:
    """Base logger: does nothing (``logger=none``)."""

    files: Path | None = None  # where the logger writes, for the end-of-run summary
    files_note: str = ""  # said after ``files`` there (a wandb run WANDB_MODE disables)

    def log(self, step: int, metrics: dict[str, float], prefix: str = "") -> None:
        """Record scalar ``metrics`` at ``step`` (keys get ``prefix``)."""

    def summary(self, values: dict[str, Any]) -> None:
        """Final values of the run (league table, best ratings...)."""

    def backfill(self, rows: list[tuple[int, str, float]]) -> None:
        """Add recorded ``(step, key, value)`` rows this sink may have missed (a resumed run
        passes the database's rows); sinks that cannot tell what they hold ignore it."""

    def drop_after(self, step: int) -> None:
        """Forget the rows past ``step``: a run resumed from a checkpoint there logs those
        steps anew (sinks that cannot take rows back, e.g. wandb, keep them)."""

    def close(self) -> None:
        """Flush and release."""


HEADER = ("step", "key", "value")
_FORMULA = tuple("=+-@\t\r'")  # cells a spreadsheet may run as a formula (and the quote)
_QUOTED_RECORD = re.compile(rb'\d+,"')  # a record whose key is quoted: step,"key...
_TAIL = 1 << 17  # the last bytes of metrics.csv a resume reads for a record a kill cut
_PIECE = 1 << 18  # what a resume holds of metrics.csv at once
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_cell(text: str) -> str:
    """``text`` safe to open in a spreadsheet: a cell starting with ``= + - @``, a tab or a
    CR (a metric key from a member name or a crafted league.db) gets a leading ``'``, which
    spreadsheets show as text instead of running it (OWASP's "CSV injection"); a number
    such as ``-0.5`` stays a number. A leading ``'`` is doubled, so :func:`csv_key` gives
    every key back exactly."""
    if text.startswith(_FORMULA) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def _last_record_end(text: bytes, odd: int = 0, tail: int = 1 << 16) -> int:
    """Where the last complete CSV record of ``text`` (a file's last bytes, after ``odd``
    quotes: their count's parity) ends: after its last newline outside a quoted field (csv
    doubles quotes inside fields, so an even count of ``"`` before a newline puts it outside).
    A kill can cut a quoted key that holds a newline; only the last record is ever cut, so the
    walk back stays within ``tail`` bytes and must end where a record with a quoted key starts
    (``step,"``); otherwise (a stray quote earlier in the file, not a cut) every line is kept,
    as before."""
    last = end = text.rfind(b"\n")
    odd = (odd + text.count(b'"', 0, end)) % 2 if end >= 0 else 0
    floor = max(0, end - tail)
    while end >= 0 and odd:
        prev = text.rfind(b"\n", floor, end)
        if prev < 0:
            return last + 1
        odd ^= text.count(b'"', prev, end) % 2
        end = prev
    if end != last and not _QUOTED_RECORD.match(text, end + 1):
        return last + 1
    return end + 1


def csv_key(cell: str) -> str:
    """The key a :func:`csv_cell` cell holds (a file from before the quoting: as written,
    except that a key written there as ``'=x``, a quote then a formula character, reads as
    ``=x``)."""
    if cell.startswith("'") and cell[1:].startswith(_FORMULA):
        return cell[1:]
    return cell
RUN_ID = "run_id"  # <run>/wandb/run_id: the wandb run a resume continues
_BLOCK = 32768  # wandb's run file: LevelDB-style log blocks of records after a 7-byte header


def offline_records(path: Path) -> Iterator[Any]:
    """The whole records (wandb's protobuf ``Record``) of one offline run file, in order.
    wandb ships no reader: the format is ``:W&B`` and 3 bytes, then records (4-byte checksum,
    2-byte length, 1-byte kind: 1 whole, 2-4 first, middle, last piece) cut at 32 KiB blocks;
    zero padding or a cut last record (a process killed with SIGKILL) ends the walk.

    Raises:
        ValueError: the file does not start as a wandb run file does.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, buf = path.read_bytes(), 7, b""
    if data[:4] != b":W&B":
        raise ValueError(f"{path} is not a wandb run file")
    while pos + 7 <= len(data):
        if _BLOCK - pos % _BLOCK < 7:  # a block's tail too short for a header
            pos += _BLOCK - pos % _BLOCK
            continue
        n, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        if n == 0 and kind == 0:  # zero padding: the rest of the file is unwritten
            break
        if pos + 7 + n > len(data):  # the last record, cut by the kill
            break
        buf += data[pos + 7:pos + 7 + n]
        pos += 7 + n
        if kind in (1, 4):  # a whole record, or the last piece of one
            rec = pb.Record()
            rec.ParseFromString(buf)
            buf = b""
            yield rec


def offline_last_step(wandb_dir: Path, run_id: str) -> int | None:
    """The last history step the offline files of wandb run ``run_id`` in ``wandb_dir`` hold
    (-1: files but no step; None: no file, or one :func:`offline_records` cannot follow). A
    process killed with SIGKILL loses the rows wandb had not yet written (a 2-core CPU: steps
    2300 to 3100 of a run whose ``last_step`` said 3100)."""
    files = sorted(wandb_dir.glob(f"offline-run-*-{run_id}/run-{run_id}.wandb"))
    if not files:
        return None
    last = -1
    try:
        for path in files:
            for rec in offline_records(path):
                if rec.WhichOneof("record_type") == "history":
                    last = max(last, rec.history.step.num)
    except Exception:  # noqa: BLE001 - another wandb version's format: fall back to last_step
        return None
    return last
LAST_STEP = "last_step"  # <run>/wandb/last_step: the last step given to wandb


DAMAGED_CSV = "delete it to resume: a resume writes it again from the metrics league.db records"
"""What a refusal of a damaged ``metrics.csv`` says to do (every resume backfills the file
from the database's metric rows)."""


def one_line_text(err: BaseException) -> str:
    """``err``'s message on one line."""
    return " ".join(str(err).split())


class CSVLogger(MetricsLogger):
    """``<run>/metrics.csv`` in long form: step, key, value (one row per scalar).

    Keyed like the database's metrics: a (step, key) already in the file is not written
    again, so a resumed run that replays steps ends with the rows of an uninterrupted one.
    What is kept is each key's last step, not every row (a million-row file held every
    (step, key) pair, about 180 MiB, for the whole run): a row past its key's last step is
    new. A key's steps mostly go up, but not always (a mixed LLM and learner league: the
    LLM's episodes do not advance the league's frames; a Ray league whose members' frames
    per generation differ; a resume that replays other steps than the dead run logged): a
    row at or below its key's last step is checked against the file's rows from that step
    on, read once for every key and kept while some key is below its last step (a key
    past it again is let go; one that goes back down reads the file again).
    Keys are written through :func:`csv_cell` (no cell runs as a spreadsheet formula);
    values are Python floats, numbers in any spreadsheet.
    Opening repairs what a kill can leave: an empty file (header lost) or a last line cut
    short. A write that finds the disk full raises :class:`~marl.fileio.NoSpaceError` naming
    the file, as every other file of a run is named.
    """

    def __init__(self, run_dir: Path, cfg: LoggerConfig, config: dict[str, Any]) -> None:
        self.files = run_dir / "metrics.csv"
        refuse_link(self.files, "metrics file", ValueError)  # appended to: the run's own only
        if self.files.exists() and not self.files.is_file():  # a FIFO: opening blocked for good
            raise ValueError(f"metrics file {self.files} is not a regular file; remove it")
        self._repair()
        self._last = self._last_steps()  # key -> the last step the file holds for it
        self._floor = 0  # the step from which self._steps holds the file's rows
        self._steps: dict[str, set[int]] = {}  # key below its last step -> steps >= floor
        with self._writing():
            self._fh = self.files.open("a", newline="")
            self._w = csv.writer(self._fh)
            if self.files.stat().st_size == 0:
                self._w.writerow(HEADER)
                self._fh.flush()  # a kill before the first metric must not lose the header

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Say a full disk (the file's flush or close: ENOSPC, EDQUOT) as
        :class:`NoSpaceError` naming the file; other errors pass unchanged. Runs outside a
        League's log_metrics (single-learner, PSRO) printed ``[Errno 28] No space left on
        device``, naming no file."""
        try:
            yield
        except OSError as err:
            if isinstance(err, NoSpaceError) or not disk_full(err):
                raise
            raise NoSpaceError(self.files, "metrics ") from err

    def _repair(self) -> None:
        """Fix the file a kill left: a header lost, a last record cut short. Reads the first
        line and the last 128 KiB, and counts the quotes before them in 256 KiB pieces: a long
        file is neither held nor copied (a million rows held it whole twice, +87 MiB), unless
        it is repaired (copied then, piece by piece)."""
        if not self.files.is_file():
            return
        size = self.files.stat().st_size
        with self.files.open("rb") as fh:  # bytes: the writer's \r\n line ends as they are
            first = fh.readline(_TAIL)  # the header, or a row: never a long line whole
            start = max(0, size - _TAIL)
            odd = 0
            fh.seek(0)
            while fh.tell() < start:  # the quotes' parity before the tail, without a copy
                odd ^= fh.read(min(_PIECE, start - fh.tell())).count(b'"') % 2
            tail = fh.read()
        end = _last_record_end(tail, odd)
        if end == 0 and start > 0:  # no line end in the last 128 KiB: not a cut record
            end = len(tail)
        cut = start + end  # a last record without its newline was cut
        row = next(csv.reader(io.StringIO(first[:cut].decode(errors="replace"), newline="")),
                   None)
        lost = row is not None and tuple(row) != HEADER  # header lost: data rows first
        if cut == size and not lost:
            return
        log.warning("repairing %s after an interrupted run", self.files)

        def repaired(out: BinaryIO) -> None:
            if lost:
                out.write(",".join(HEADER).encode() + b"\r\n")
            with self.files.open("rb") as fh:
                left = cut
                while left > 0:
                    piece = fh.read(min(_PIECE, left))
                    out.write(piece)
                    left -= len(piece)

        atomic_write(self.files, repaired)

    def _records(self) -> Iterator[tuple[int, list[str]]]:
        """The file's ``(step, key, value)`` rows after its header, row by row (not the whole
        file at once), each with its step read: ``(step, row)``. csv's reader, not
        splitlines: a quoted key may hold a CR (a crafted member name).

        Raises:
            ValueError: one line naming the file and the line that is not text or has a
                step that is not an integer (random bytes, an edited row).
        """
        encoding = locale.getpreferredencoding(False)  # what the file is written in (open)
        seen = [0]  # lines read: a text file decodes ahead, by blocks, not by line

        def lines(fh: BinaryIO) -> Iterator[str]:
            for seen[0], raw in enumerate(fh, 1):
                yield raw.decode(encoding)

        with self.files.open("rb") as fh:
            reader = csv.reader(lines(fh))
            try:
                for r in itertools.islice(reader, 1, None):
                    if len(r) == 3:
                        try:
                            step = int(r[0])
                        except ValueError:
                            raise self._damaged(reader.line_num,
                                                f"its step {r[0][:20]!r} is not an integer"
                                                ) from None
                        yield step, r
            except (UnicodeDecodeError, csv.Error) as err:  # bytes that are not text
                raise self._damaged(seen[0], one_line_text(err)) from None

    def _damaged(self, line: int, why: str) -> ValueError:
        return ValueError(f"metrics file {self.files} is damaged at line {line} ({why}); "
                          f"{DAMAGED_CSV}")

    def _last_steps(self) -> dict[str, int]:
        """Each key's last step in the file, read row by row (not the whole file at once)."""
        cells: dict[str, int] = {}  # by the key's cell as written
        if self.files.is_file():
            for step, r in self._records():
                if step > cells.get(r[1], step - 1):
                    cells[r[1]] = step
        last: dict[str, int] = {}
        for cell, step in cells.items():  # '=x and (an older file's) =x are one key
            key = csv_key(cell)
            last[key] = max(step, last.get(key, step))
        return last

    def _read_steps(self, floor: int) -> None:
        """Every key's steps from ``floor`` on, from the file (what is written is flushed)."""
        steps: dict[str, set[int]] = {}
        for step, r in self._records():
            if step >= floor:
                steps.setdefault(csv_key(r[1]), set()).add(step)
        self._floor, self._steps = floor, steps

    def _add(self, rows: list[tuple[int, str, float]]) -> None:
        """Write the ``(step, key, value)`` rows the file lacks, in order."""
        last, out = self._last, []

        def below(step: int, key: str) -> bool:  # not past the key's last step nor read
            return step <= last.get(key, step - 1) and (key not in self._steps
                                                         or step < self._floor)

        down = [s for s, k, _ in rows if below(s, k)]
        if down:  # one read for every row below its key's last step
            self._read_steps(min(down))
        for step, key, value in rows:
            if step > last.get(key, step - 1):  # past every row the file holds for the key
                last[key] = step
                self._steps.pop(key, None)  # going up again: its rows are let go
            else:
                if below(step, key):  # a key let go earlier in these rows, down again
                    self._write(out)
                    out = []
                    self._read_steps(step)
                steps = self._steps.setdefault(key, set())
                if step in steps:
                    continue
                steps.add(step)
            out.append((step, key, value))
        self._write(out)

    def _write(self, rows: list[tuple[int, str, float]]) -> None:
        with self._writing():
            self._w.writerows((s, csv_cell(k), v) for s, k, v in rows)
            self._fh.flush()

    def log(self, step: int, metrics: dict[str, float], prefix: str = "") -> None:
        self._add([(step, prefix + k, float(v)) for k, v in metrics.items()])

    def backfill(self, rows: list[tuple[int, str, float]]) -> None:
        self._add([(step, key, float(value)) for step, key, value in rows])
        self._steps = {}  # read from step 0 most likely: not kept for the run

    def drop_after(self, step: int) -> None:
        if all(s <= step for s in self._last.values()):
            return
        with self._writing():
            self._fh.close()
        last: dict[str, int] = {}

        def kept(out: BinaryIO) -> None:  # row by row: a long file is not held whole
            text = io.TextIOWrapper(out, newline="")
            w = csv.writer(text)
            w.writerow(HEADER)
            for at, r in self._records():
                if at <= step:
                    key = csv_key(r[1])  # an older file's keys quoted too
                    w.writerow([r[0], csv_cell(key), r[2]])
                    last[key] = max(at, last.get(key, at))
            text.flush()
            text.detach()

        atomic_write(self.files, kept)
        self._last, self._steps = last, {}
        self._fh = self.files.open("a", newline="")
        self._w = csv.writer(self._fh)

    def close(self) -> None:
        with self._writing():
            self._fh.close()


class WandbLogger(MetricsLogger):
    """A real wandb run in ``<run>/wandb`` (``logger.mode=auto``: offline unless wandb finds
    credentials, :func:`wandb_mode`).

    The wandb run's id is kept in ``<run>/wandb/run_id``: a resumed run folder continues the
    same wandb run (``resume="allow"``) instead of starting a second one; offline runs of one
    id sync into one run.

    wandb's steps only go up: a row at a step below the run's last one is dropped (online)
    or logged twice (offline, each process writes its own file from step 0). The last step
    given to wandb is kept in ``<run>/wandb/last_step`` (written before the row), and a later
    process on the folder leaves out every step up to it: a run resumed from a checkpoint
    before that step logs only the steps after it to wandb (those between the checkpoint and
    that step keep the killed process's values; the database and ``metrics.csv`` get the
    resumed ones). :meth:`backfill` gives wandb the database's rows past that step (a run that
    logged to csv before its resume with ``logger=wandb``).

    A step's rows reach wandb, committed, once a later step comes (a live dashboard shows a
    step when the next one begins), or when the run ends: a run stopped by
    Ctrl-C or an error may stop in the middle of a step (a league stopped after a
    generation's training logs its evaluation's rows at the same step on its resume), so its
    last step is left to the resume, which gives wandb that step's rows from the database
    with the ones it adds (before, the resume left out the step's later rows: wandb had the
    step). A stopped run that is never resumed lacks its last step in wandb (the database
    holds it)."""

    def __init__(self, run_dir: Path, cfg: LoggerConfig, config: dict[str, Any]) -> None:
        import wandb

        mode = wandb_mode(cfg.mode)
        self.files = run_dir / "wandb"
        refuse_link(self.files, "wandb folder", ValueError)  # wandb writes there: the run's own
        self.files.mkdir(parents=True, exist_ok=True)
        fresh = not (self.files / RUN_ID).is_file()  # a new wandb run: nothing logged yet
        run_id = self._run_id()
        self._last_file = self.files / LAST_STEP
        self.floor = -1 if fresh else self._last_logged()  # earlier processes' last step
        kept = None if fresh or mode == "online" else offline_last_step(self.files, run_id)
        if kept is not None and kept < self.floor:  # a SIGKILL lost rows wandb had not written
            log.warning("wandb: steps %d to %d given to wandb before the run was killed are "
                        "not in its offline files; logging them again from the league database "
                        "where a resume replays them", kept + 1, self.floor)
            self.floor = kept
        self.last = self.floor
        self._held: list[dict[str, float]] = []  # the rows at step self.last not yet given
        self._raised = sys.exc_info()[1]  # an error the caller was handling: not the run's
        try:
            self.run = wandb.init(project=cfg.project, dir=str(run_dir), config=config,
                                  mode=mode, tags=list(cfg.tags), name=run_dir.name,
                                  reinit=_reinit(wandb), id=run_id, resume="allow",
                                  **sweep_grouping())
        except Exception as err:  # noqa: BLE001 - wandb's UsageError, CommError...: one line
            raise LoggerError(_init_failed(err, mode)) from err
        if mode == "disabled":  # WANDB_MODE=disabled: the summary named <run>/wandb, which
            # held only last_step and run_id; the rows are in the league database alone
            self.files = run_dir / "league.db"
            self.files_note = ("WANDB_MODE=disabled: wandb recorded nothing; the metrics are "
                               "in the database, selfplay-dashboard shows them")
        start = getattr(self.run, "starting_step", 0)  # online resume: the server's next step
        if isinstance(start, int) and start > 0:
            self.floor = self.last = max(self.floor, start - 1)
        self._warned = False

    def _run_id(self) -> str:
        """The id this run folder's wandb run has (a new one, recorded, the first time)."""
        path = self.files / RUN_ID
        refuse_link(path, "wandb run id file", ValueError)
        if path.is_file():
            run_id = path.read_text(encoding="utf-8", errors="replace").strip()
            if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", run_id):
                raise ValueError(f"{path} holds {run_id[:40]!r}, not a wandb run id (letters, "
                                 "digits, - and _); delete it to start a new wandb run")
            return run_id
        run_id = secrets.token_hex(4)  # 8 characters, as wandb's own ids
        atomic_write(path, run_id + "\n")
        return run_id

    def _last_logged(self) -> int:
        """The last step this folder's earlier processes gave wandb (-1: none recorded)."""
        refuse_link(self._last_file, "wandb last-step file", ValueError)
        if not self._last_file.is_file():
            return -1
        text = self._last_file.read_text(encoding="utf-8", errors="replace").strip()
        if not re.fullmatch(r"\d{1,19}", text):
            raise ValueError(f"{self._last_file} holds {text[:40]!r}, not a step (an integer "
                             ">= 0); delete it to log every step to wandb again")
        return int(text)

    def log(self, step: int, metrics: dict[str, float], prefix: str = "") -> None:
        if step <= self.floor or step < self.last:  # wandb would drop or duplicate the row
            if step > self.floor and not self._warned:
                self._warned = True
                log.warning("wandb: step %d after step %d is not logged to wandb (its steps "
                            "only go up); the league database has it", step, self.last)
            return
        if step > self.last:
            self._give()
            self.last = step
        self._held.append({prefix + k: v for k, v in metrics.items()})

    def _give(self) -> None:
        """Give wandb the rows held at step ``self.last`` (the step is complete)."""
        if not self._held:
            return
        atomic_write(self._last_file, f"{self.last}\n")  # before the rows: never logged twice
        held, self._held = self._held, []
        for k, row in enumerate(held, 1):  # as logged: a second call at a step merges into
            # wandb's row; the last one commits it. Uncommitted, wandb held the step until a
            # higher one was logged, the next _give: a live dashboard was two steps late
            self.run.log(row, step=self.last, commit=k == len(held))

    def backfill(self, rows: list[tuple[int, str, float]]) -> None:
        by_step: dict[int, dict[str, float]] = {}
        for step, key, value in rows:
            if step > self.floor:
                by_step.setdefault(step, {})[key] = value
        for step in sorted(by_step):
            self.log(step, by_step[step])

    def summary(self, values: dict[str, Any]) -> None:
        self.run.summary.update(values)

    def close(self) -> None:
        raised = sys.exc_info()[1]  # closed while a Ctrl-C or an error stops the run
        if raised is None or raised is self._raised:
            self._give()
        self.run.finish()


def wandb_mode(mode: str) -> str:
    """The mode ``wandb.init`` gets for ``logger.mode=mode``: ``auto`` is ``WANDB_MODE``
    where set, else ``online`` where :func:`wandb_logged_in`, else ``offline``."""
    if mode != "auto":
        return mode
    return os.environ.get("WANDB_MODE") or ("online" if wandb_logged_in() else "offline")


def wandb_logged_in() -> bool:
    """Whether wandb holds credentials for its server, read without the network:
    ``WANDB_API_KEY`` (or ``WANDB_IDENTITY_TOKEN_FILE``), or the key ``wandb login`` wrote to
    ``~/.netrc`` (``$NETRC``) for ``WANDB_BASE_URL``'s host (``api.wandb.ai``). wandb's own
    lookup where this wandb has it (0.2x), else the netrc file's entry; a file it cannot
    read, or a key it refuses, counts as none."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    try:
        from wandb.sdk import wandb_setup
        from wandb.sdk.lib.wbauth import authenticate
    except ImportError:  # an older wandb: its netrc file
        import netrc
        from urllib.parse import urlsplit

        host = urlsplit(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").netloc
        try:
            found = netrc.netrc(os.environ.get("NETRC") or None).authenticators(host)
        except (OSError, netrc.NetrcParseError):
            return False
        return bool(found and found[2])
    try:
        host = wandb_setup.singleton().settings.base_url
        return authenticate.authenticate_session(
            host=host, source="selfplay", prompt=False, update_session=False) is not None
    except Exception:  # noqa: BLE001 - a key wandb refuses: not logged in, offline
        return False


def _init_failed(err: Exception, mode: str) -> str:
    """The line of a ``wandb.init`` that failed (a project name the server refuses, no API
    key for an online run, the server out of reach), with what the user can do."""
    why = " ".join(str(err).split()) or "no message"
    line = f"logger wandb could not start its run (mode {mode}): {type(err).__name__}: {why}"
    if mode == "online" and not wandb_logged_in():
        line += ("; an online run needs wandb credentials: set WANDB_API_KEY (or run wandb "
                 "login), or use logger.mode=offline")
    elif mode == "online":
        line += "; logger.mode=offline logs without the network (wandb sync uploads it later)"
    return line + "; HYDRA_FULL_ERROR=1 shows the traceback"


LoggerFactory = Callable[[Path, LoggerConfig, dict[str, Any]], MetricsLogger]
"""``(run_dir, cfg, config) -> MetricsLogger``: a :class:`MetricsLogger` subclass, or a
function returning one."""
ENTRY_POINTS = "selfplay.loggers"  # installed packages' modules that register loggers


def _no_logger(run_dir: Path, cfg: LoggerConfig, config: dict[str, Any]) -> MetricsLogger:
    return MetricsLogger()


_LOGGERS: dict[str, LoggerFactory] = {"none": _no_logger, "csv": CSVLogger,
                                      "wandb": WandbLogger}
_BUILTIN = frozenset(_LOGGERS)
_LOGGER_NAME = re.compile(r"[A-Za-z_][\w.-]*")  # what logger.kind= reads back as one word


def register_logger(name: str, factory: LoggerFactory | None = None) -> Any:
    """Register a metrics logger under ``name``, picked by ``logger=NAME`` (or
    ``logger.kind=NAME``): ``register_logger("mine", MyLogger)``, or ``@register_logger("mine")``
    above the class. Its module is imported by ``imports=[mypkg.mylog]`` (``selfplay-train``)
    or an installed package's ``selfplay.loggers`` entry point; ``logger.kind`` is recorded
    in the run's settings, and the printed resume command repeats ``imports=``.

    The protocol (subclass :class:`MetricsLogger`, whose methods do nothing, and override
    what you need): the factory is called once per run as ``factory(run_dir, cfg, config)``
    (the run folder, this :class:`LoggerConfig`, the run's settings as plain data) and returns
    the logger; then ``log(step, metrics, prefix="")`` gets scalar ``metrics`` (``{key:
    float}``, keys such as ``losses/pg_loss``) at each logged ``step``; ``summary(values)``
    the run's final values (``{"table": [rows]}``); a resumed run calls
    ``drop_after(step)`` (forget rows past its checkpoint's step) then ``backfill(rows)``
    (``[(step, key, value)]`` the league database holds); ``close()`` ends it, also when the
    run fails. ``files`` (a path or None) is shown in the end-of-run summary. An exception
    raised by any of them stops the run with one line naming the logger, the error and the
    line of your code (:class:`LoggerError`); checkpoints are kept.

    Raises:
        ValueError: ``name`` is not a word ``logger.kind=`` reads back, or is taken by
            another logger (the message names it).
    """
    if not isinstance(name, str) or not _LOGGER_NAME.fullmatch(name):
        raise ValueError(f"cannot register logger {name!r}: a logger name holds letters, "
                         "digits, '_', '-' and '.', starting with a letter or '_'")

    def deco(fn: LoggerFactory) -> LoggerFactory:
        if not callable(fn):
            raise ValueError(f"logger {name!r}: {fn!r} is not a class or function")
        if name in _LOGGERS and not redefinition(_LOGGERS[name], fn):
            raise ValueError(f"logger {name!r} is already registered by "
                             f"{defined_at(_LOGGERS[name])}; register yours under another name")
        _LOGGERS[name] = fn  # a notebook cell run again: its new class replaces the old
        _store_preset(name)
        return fn

    return deco if factory is None else deco(factory)


def _store_preset(name: str) -> None:
    """``logger=NAME`` as a Hydra group option, as the shipped ``configs/logger/*.yaml`` are
    (a file of the user's search path named so comes first)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group="logger", name=name, node={"logger": {"kind": name}},
                                 package="_global_")


def available_loggers() -> list[str]:
    """Registered logger names (the shipped ones and those of imported modules)."""
    return sorted(_LOGGERS)


class LoggerError(ValueError):
    """A registered logger of the user's raised: one line (exit 2 on the command line) naming
    the logger, its method, the error and the line of its code; ``__cause__`` is the error
    itself (``HYDRA_FULL_ERROR=1`` shows its traceback). Also ``wandb.init``'s error
    (:class:`WandbLogger`: no API key online, the server out of reach)."""


class _UserLogger(MetricsLogger):
    """A user's logger, its errors made :class:`LoggerError`; methods it lacks do nothing."""

    def __init__(self, name: str, factory: LoggerFactory, run_dir: Path, cfg: LoggerConfig,
                 config: dict[str, Any]) -> None:
        self.name, self._where = name, defined_at(factory)
        self._failed = False
        try:  # a ValueError or OSError refusing a setting is already one line, as a learner's
            self._inner = factory(run_dir, cfg, config)
        except (ValueError, OSError):
            raise
        except Exception as err:
            self._raise(err, "its factory")
        if not callable(getattr(self._inner, "log", None)):
            raise LoggerError(f"logger {name} ({self._where}) returned "
                              f"{type(self._inner).__name__}, which has no log(step, metrics, "
                              "prefix) method; subclass populations.loggers.MetricsLogger")

    @property
    def files(self) -> Path | None:  # type: ignore[override]
        files = getattr(self._inner, "files", None)
        return Path(files) if isinstance(files, str | os.PathLike) else None

    def _raise(self, err: Exception, what: str) -> NoReturn:
        self._failed = True
        why = " ".join(str(err).split()) or "no message"
        where = where_raised(err, relative=True)  # the user's file, from here
        raise LoggerError(f"logger {self.name} ({self._where}) failed in {what}: "
                          f"{type(err).__name__}: {why} (at {where}); HYDRA_FULL_ERROR=1 "
                          "shows the traceback") from err

    def _method(self, name: str, *args: Any) -> None:
        fn = getattr(self._inner, name, None)
        if callable(fn):
            try:
                fn(*args)
            except Exception as err:
                self._raise(err, f"{name}()")

    def log(self, step: int, metrics: dict[str, float], prefix: str = "") -> None:
        self._method("log", step, metrics, prefix)

    def summary(self, values: dict[str, Any]) -> None:
        self._method("summary", values)

    def backfill(self, rows: list[tuple[int, str, float]]) -> None:
        self._method("backfill", rows)

    def drop_after(self, step: int) -> None:
        self._method("drop_after", step)

    def close(self) -> None:
        failed = self._failed
        try:
            self._method("close")
        except LoggerError as err:
            if not failed:
                raise
            # closing after its own error: that error is the one the run reports
            log.warning("%s", err)


WANDB_JOB_TYPE_MAX = 64  # characters wandb's server keeps of a run's job_type


def sweep_grouping() -> dict[str, str]:
    """wandb's ``group`` and ``job_type`` of a job of a Hydra sweep (``selfplay-train -m``),
    so the seeds of one setting group together: the sweep folder's name, and the job's
    overrides but ``seed=`` and those that do not name its folder (``resume``, ``device``,
    ``logger``...: ``hydra.job.config.override_dirname.exclude_keys``), sorted, as
    ``algo=qmix,game=climbing`` (``default`` when none is left; a longer one than wandb keeps
    ends in a hash of the whole). ``{}`` outside a sweep: a single run's name is its folder's."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode
    except ImportError:  # pragma: no cover - Hydra is a dependency; the Python API needs none
        return {}
    if not HydraConfig.initialized():
        return {}
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return {}
    # a key left out of folder names but swept with several values names the job too
    # (-m experiment=a,b: two experiments grouped as one setting's seeds); the sweep's own
    # swept keys live in populations.sweeps (set when the sweep starts; none from the Python API)
    swept = getattr(sys.modules.get("populations.sweeps"), "_SWEPT", set())
    left_out = {"seed", *hc.job.config.override_dirname.exclude_keys} - (set(swept) - {"seed"})
    kept = sorted(o for o in hc.overrides.task if not _setting_of(o, left_out))
    job_type = ",".join(kept) or "default"
    if len(job_type) > WANDB_JOB_TYPE_MAX:
        digest = hashlib.sha256(job_type.encode()).hexdigest()[:8]
        job_type = f"{job_type[:WANDB_JOB_TYPE_MAX - 10]}..{digest}"
    return {"group": Path(hc.sweep.dir).name, "job_type": job_type}


def _setting_of(override: str, keys: set[str]) -> bool:
    """Whether ``override`` (``seed=1``, ``+x.y=2``, ``~logger``) sets one of ``keys`` or a
    key under one of them (``logger.project=p`` under ``logger``)."""
    key = override.lstrip("+~").split("=", 1)[0]
    return any(key == k or key.startswith(f"{k}.") for k in keys)


def _reinit(wandb: Any) -> str | bool:
    """``reinit`` for ``wandb.init``: finish a run still open in this process (a notebook's, an
    earlier league's) and start this one; by its name where wandb knows it (0.19.10+ warned
    'Using a boolean value for reinit is deprecated' on every run), else True."""
    field = getattr(getattr(wandb, "Settings", None), "model_fields", {}).get("reinit")
    return "finish_previous" if field and "finish_previous" in str(field.annotation) else True


def make_logger(cfg: LoggerConfig, run_dir: Path, config: dict[str, Any]) -> MetricsLogger:
    """The logger ``cfg.kind`` names, for the run in ``run_dir`` with settings ``config``."""
    factory = _LOGGERS[cfg.kind]
    if cfg.kind in _BUILTIN:
        return factory(Path(run_dir), cfg, config)
    return _UserLogger(cfg.kind, factory, Path(run_dir), cfg, config)
