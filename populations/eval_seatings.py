"""``selfplay-eval`` on files that each hold some of the game's seats (a PSRO run's members,
one seat each): every seating of them, each file on the seats it holds.

The files' seat sets are the game's *sides*: they must not overlap and together hold every
seat. A seating takes one file per side; every seating plays ``--episodes`` episodes (seed
``--seed`` plus 7,919 per seating, in the order printed), recorded as the round robin's
matches are (``seat/<i>/e<episode>``). The table gives each seating's mean return per side
with its 95 % interval (:func:`populations.single_eval.ci95`), then each file's mean return
over the seatings it sat in: for two one-seat sides this is PSRO's empirical payoff matrix,
row file against column file.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


def play_seatings(db: Any, run_id: int, runner: Any, spec: Any, game: str,
                  kwargs: dict[str, Any], sides: Sequence[Side], snaps: Mapping[str, Any],
                  paths: Mapping[str, str], episodes: int, seed: int) -> list[str]:
    """Play and record every seating of ``sides`` (``snaps``/``paths``: each file's snapshot
    row and policy file); the table's lines, to print."""
    from populations.db import MatchRow
    from populations.runners import MatchJob
    from populations.single_eval import ci95

    seatings = list(itertools.product(*(side.files for side in sides)))
    jobs = [MatchJob(key=f"seat/{i}", game=game, episodes=episodes, seed=seed + 7919 * i,
                     game_kwargs=kwargs, seats={a: paths[name] for side, name in
                                                zip(sides, seating, strict=True)
                                                for a in side.seats})
            for i, seating in enumerate(seatings)]
    results = runner.play(jobs)
    rows, lines = [], []
    per_file: dict[str, list[float]] = {}
    width = max(len(name) for side in sides for name in side.files)
    lines.append(f"each seating on {spec.name} ({len(seatings)}, {episodes} episode"
                 f"{'s' if episodes != 1 else ''} each): a side's mean return per episode "
                 "± 95% interval")
    for job, seating, res in zip(jobs, seatings, results, strict=True):
        ids = {a: snaps[name].id for side, name in zip(sides, seating, strict=True)
               for a in side.seats}
        rows += [MatchRow(f"{job.key}/e{e:04d}", spec.name, ids, ret, job.seed)
                 for e, ret in enumerate(res.returns)]
        cells = []
        for side, name in zip(sides, seating, strict=True):
            values = [sum(ret[a] for a in side.seats) for ret in res.returns]
            mean = sum(values) / len(values) if values else float("nan")
            per_file.setdefault(name, []).append(mean)
            interval = ci95(values)
            ci = "n/a" if interval is None else f"{interval:.3f}"
            cells.append(f"{name:>{width}} {mean:+.3f} ± {ci:<5}")
        lines.append("  " + "   ".join(cells))
    db.add_matches(run_id, rows)
    lines.append("each file over the seatings it sat in (mean of the seatings' mean returns):")
    for side in sides:
        for name in side.files:
            values = per_file[name]
            lines.append(f"  {name:>{width}}  seats {','.join(side.seats)}  return "
                         f"{sum(values) / len(values):+.3f} over {len(values)} seating"
                         f"{'s' if len(values) != 1 else ''}")
    return lines
