"""``selfplay-eval`` on files that each hold some of the game's seats (a PSRO run's members,
one seat each): every seating of them, each file on the seats it holds.

The files' seat sets are the game's *sides*: they must not overlap and together hold every
seat. A seating takes one file per side; every seating plays ``--episodes`` episodes (seed
``--seed`` plus 7,919 per seating, in the order printed), recorded as the round robin's
matches are (``seat/<i>/e<episode>``). Each seating's episodes are recorded as
soon as it has played (a few seatings at a time, as the round robin's pairs, with a bar of
seatings on stderr): Ctrl-C keeps the finished ones and prints their table, marked partial. The
table gives each seating's mean
return per side, the mean over the side's seats as PSRO's payoffs and ``charts/team_return``
take it (a team's total was twice its per-seat return where teammates share the reward), with
its 95 % interval (:func:`populations.single_eval.ci95`), then each file's mean return over the
seatings it sat in: for two one-seat sides this is PSRO's empirical payoff matrix, row file
against column file.

Also here: the refusal of a PSRO member given where seatings cannot be made
(:func:`psro_member_advice`) and Ctrl-C's counts of seatings (:func:`seatings_played`).
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Side:
    """One side of a seating: its ``seats`` (agent ids, the game's order) and the files that
    hold exactly those (their names, in the command line's order)."""

    seats: tuple[str, ...]
    files: tuple[str, ...]


def seating_sides(spec: Any, held: Mapping[str, Sequence[str]]) -> list[Side] | None:
    """The sides of files ``held`` (name -> the seats of ``spec`` it holds) when every file
    holds some but not all of the seats, two files hold the same seats or none in common, and
    together they hold every seat; None otherwise (the caller refuses as before)."""
    every = tuple(spec.agent_ids)
    sides: dict[tuple[str, ...], list[str]] = {}
    for name, seats in held.items():
        own = tuple(a for a in every if a in set(seats))
        if not own or len(own) == len(every):
            return None
        sides.setdefault(own, []).append(name)
    flat = [a for seats in sides for a in seats]
    if len(flat) != len(set(flat)) or set(flat) != set(every) or len(sides) < 2:
        return None
    return [Side(seats, tuple(files)) for seats, files in sides.items()]


def seatings_of(sides: Sequence[Side]) -> list[tuple[str, ...]]:
    """Every seating of ``sides``: one file per side, in the order played and printed."""
    return list(itertools.product(*(side.files for side in sides)))


def play_seatings(db: Any, run_id: int, runner: Any, spec: Any, game: str,
                  kwargs: dict[str, Any], sides: Sequence[Side], snaps: Mapping[str, Any],
                  paths: Mapping[str, str], episodes: int, seed: int) -> list[str]:
    """Play and record every seating of ``sides`` (``snaps``/``paths``: each file's snapshot
    row and policy file), a few at a time (one in process, two per Ray worker), each batch's
    episodes recorded once it has played; the table's lines, to print (:func:`seatings_table`).

    Raises:
        SeatingsInterrupted: Ctrl-C after some seatings finished, with their table.
    """
    from marl.progress import tqdm
    from populations.db import MatchRow
    from populations.runners import MatchJob

    seatings = seatings_of(sides)
    jobs = [MatchJob(key=f"seat/{i}", game=game, episodes=episodes, seed=seed + 7919 * i,
                     game_kwargs=kwargs, seats={a: paths[name] for side, name in
                                                zip(sides, seating, strict=True)
                                                for a in side.seats})
            for i, seating in enumerate(seatings)]
    size = 2 * len(getattr(runner, "workers", ())) or 1
    results: list[Any] = []
    played: list[Any] = []  # the batch in hand: recorded by Ctrl-C's time or not
    start = 0
    try:
        with tqdm(total=len(jobs), desc="selfplay-eval seatings", unit="seating", leave=False,
                  dynamic_ncols=True, file=sys.stderr, smoothing=0) as bar:
            for start in range(0, len(jobs), size):
                batch = jobs[start:start + size]
                played = runner.play(batch)
                rows = []
                for job, seating, res in zip(batch, seatings[start:start + size], played,
                                             strict=True):
                    ids = {a: snaps[name].id for side, name in zip(sides, seating, strict=True)
                           for a in side.seats}
                    rows += [MatchRow(f"{job.key}/e{e:04d}", spec.name, ids, ret, job.seed)
                             for e, ret in enumerate(res.returns)]
                db.add_matches(run_id, rows)  # kept if Ctrl-C stops a later batch
                results += played
                bar.update(len(batch))
    except KeyboardInterrupt:  # SIGTERM too (selfplay-eval): the finished seatings' table
        if played and len(results) == start and db.matches(run_id, f"{jobs[start].key}/"):
            results += played  # its rows committed, then Ctrl-C came: it finished, and is kept
        if not results:
            raise
        raise SeatingsInterrupted(seatings_table(
            spec.name, sides, seatings[:len(results)], results, episodes, len(seatings))
        ) from None
    return seatings_table(spec.name, sides, seatings, results, episodes)


class SeatingsInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during :func:`play_seatings` after some seatings finished:
    ``lines``, their table (marked partial), which ``selfplay-eval`` prints above its count
    line (:func:`seatings_played`)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines


def seatings_table(game: str, sides: Sequence[Side], seatings: Sequence[tuple[str, ...]],
                   results: Sequence[Any], episodes: int, of: int | None = None) -> list[str]:
    """The table's lines: each of ``seatings``' mean return per side with its 95 % interval
    (``results``: their match results, in order), then each file's mean over the seatings it
    sat in. ``of``: the number of seatings there were, when only ``seatings`` finished (a
    table marked partial; a file that sat in none is left out)."""
    from populations.single_eval import ci95

    per_file: dict[str, list[float]] = {}
    table = []  # per seating: (name, mean, interval text) of each side
    for seating, res in zip(seatings, results, strict=True):
        cells = []
        for side, name in zip(sides, seating, strict=True):
            values = [sum(ret[a] for a in side.seats) / len(side.seats) for ret in res.returns]
            mean = sum(values) / len(values) if values else float("nan")
            per_file.setdefault(name, []).append(mean)
            interval = ci95(values)
            cells.append((name, f"{mean:+.3f}", "n/a" if interval is None else f"{interval:.3f}"))
        table.append(cells)
    width = max(len(name) for side in sides for name in side.files)
    means = max(len(cell[1]) for cells in table for cell in cells)
    cis = max(len(cell[2]) for cells in table for cell in cells)
    n = len(seatings)
    count = (f"{n} seating{'s' if n != 1 else ''}" if of is None else
             f"partial: the {n} of {of} seatings that finished before the interrupt")
    lines = [f"each seating on {game} ({count}, {episodes} episode"
             f"{'s' if episodes != 1 else ''} each): a side's mean return per episode (the "
             "mean over its seats) ± 95% interval"]
    lines += ["  " + "   ".join(f"{name:>{width}} {mean:>{means}} ± {ci:<{cis}}"
                                for name, mean, ci in cells).rstrip() for cells in table]
    lines.append("each file over the seatings it sat in (mean of the seatings' mean returns"
                 f"{'' if of is None else '; partial'}):")
    for side in sides:
        for name in side.files:
            values = per_file.get(name, [])
            if values:
                lines.append(f"  {name:>{width}}  seats {','.join(side.seats)}  return "
                             f"{sum(values) / len(values):+.3f} over {len(values)} seating"
                             f"{'s' if len(values) != 1 else ''}")
    return lines


def seatings_played(rows: Sequence[Any], sides: Sequence[Side], episodes: int
                    ) -> tuple[str, str]:
    """Ctrl-C's count of what the database kept of a seatings run (``rows``: its matches,
    ``seat/<i>/e0000``...): ``3 of 4 seatings (600 of 800 episodes)``, and what a rerun plays
    again (``all 4 seatings again``)."""
    count = len(seatings_of(sides))
    played = {m.key.rsplit("/", 1)[0] for m in rows}
    return (f"{len(played)} of {count} seating{'s' if count != 1 else ''} ({len(rows)} of "
            f"{count * episodes} episodes)", f"all {count} seatings again")


PSRO_MEMBER = (
    "a PSRO member plays its own seat: give members that together hold every seat (one file "
    "per seat or more, without --exploit, which needs a policy of every seat) to play each "
    "seating of them; its run's league.db holds every member pair's payoffs and each "
    "iteration's meta-strategy and NashConv{where}")
"""The end of the refusal of a PSRO member's snapshot (:func:`psro_member_advice`)."""

_PSRO_NAME = re.compile(r"psro-.+-\d+")  # populations.psro_run: psro-<player>-<k>


def psro_member_advice(path: str, escape: Any) -> str | None:
    """The refusal's end for snapshot ``path`` when it is a PSRO member's: known by its run
    folder (``<run>/snapshots/<member>/vNNNN.pt``, the run's ``settings.json`` saying
    ``population.kind: psro``: then the dashboard command, shell-quoted, ``escape``d), else by
    its member name (the sidecar ``vNNNN.json``'s ``member``, or its folder's name:
    ``psro-<player>-<k>``) for a file copied elsewhere; None for any other file."""
    file = Path(path).resolve()
    run = file.parent.parent.parent
    try:
        with open(run / "settings.json", encoding="utf-8") as f:
            population = json.load(f).get("population")
    except (OSError, ValueError, AttributeError):
        population = None
    if isinstance(population, dict) and population.get("kind") == "psro":
        return PSRO_MEMBER.format(where=": selfplay-dashboard "
                                  f"{escape(shlex.quote(str(run)))} (views psro and payoffs)")
    if _PSRO_NAME.fullmatch(sidecar_member(file)):
        return PSRO_MEMBER.format(where=" (selfplay-dashboard on that run folder: views psro "
                                  "and payoffs)")
    return None


def sidecar_member(file: Path) -> str:
    """The member a policy file's ``.json`` sidecar names (a string, else its folder's name:
    the store keeps each member's snapshots in a folder of its name)."""
    try:
        with open(file.with_suffix(".json"), encoding="utf-8") as f:
            member = json.load(f).get("member")
    except (OSError, ValueError, AttributeError):
        member = None
    return member if isinstance(member, str) else file.parent.name
