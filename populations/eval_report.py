"""What ``selfplay-eval`` prints of the policies and the database around its matches: which
file each name is (:func:`print_names`, on stderr), the ratings table and each pair's win rate
and margin (:func:`print_ratings`, :func:`print_pairs`), an LLM policy's legal rate
(:func:`print_legal_rates`), and the line Ctrl-C ends with, from what the database kept
(:func:`interrupted_line`). Split out of :mod:`populations.eval_cli`; what the matches play is
:mod:`populations.eval_runs`'.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from populations.eval_checks import escaped
from populations.eval_seatings import seatings_played

NAMES_SHOWN = 10
"""``selfplay-eval`` prints which file each name is up to this many files (the files of
:data:`PAIRS_SHOWN` pairs), else the first ones and a line for the rest: 400 files printed
400 ``name <- file`` lines before the table."""


def print_names(names: Mapping[str, str], db: str) -> None:
    """``name <- file`` on stderr for each of ``names`` (stdout holds the table), when there
    are two or more; above :data:`NAMES_SHOWN`, the first ones and one line saying how many
    more and where they are recorded (the eval run's config in the database ``db``)."""
    if len(names) < 2:
        return
    shown = list(names.items())[:NAMES_SHOWN]
    for name, path in shown:
        print(f"selfplay-eval: {name} <- {escaped(path)}", file=sys.stderr)
    if len(shown) < len(names):
        print(f"selfplay-eval: ... and {len(names) - len(shown)} more name <- file lines, "
              f"each recorded in {escaped(db)} (the eval run's config: policies)",
              file=sys.stderr)


PAIRS_SHOWN = 45
"""``selfplay-eval --pairs``'s default: every pair's line up to 10 files (45 pairs); 40 files
printed 780 lines, 400 would print 79,800."""



def print_ratings(db: Any, run_id: int, snaps: Sequence[Any]) -> list[str]:
    """The ratings table of run ``run_id`` on stdout, best first, one row per snapshot of
    ``snaps`` (none for one: it played no match); returns its members in the table's order."""
    from populations.experiment import league_table

    table = league_table(db, run_id) if len(snaps) > 1 else []  # one: no matches
    for row in table:  # padded: elo 1032.9 and elo 963.1 in one column
        print(f"{row['member']:>24}  elo {row['elo']:>6}  mu {row['mu']:>5} ± "
              f"{row['sigma']:<4}  pairs {row['pairs']}")
    return [row["member"] for row in table]


def print_pairs(db: Any, run_id: int, snaps: Sequence[Any], table: Sequence[str],
                most: int) -> None:
    """Each pair's win rate and margin under the ratings: Elo and mu rate the pairs one
    after another, so over a few pairs they may order two policies against their win rate
    (0.50 over 10 pairs, margin +0.20, rated below). Every pair when there are at most
    ``most`` (``--pairs``), else the pairs of the members next to each other in ``table``
    (the ratings table's order, best first; the better one first), where a rating that
    disagrees with a win rate matters; none for ``most`` 0."""
    names = {s.id: s.member for s in snaps}
    count = len(names) * (len(names) - 1) // 2
    if most == 0 or count == 0:
        return
    if count <= most:
        order = list(itertools.combinations(names, 2))
        head = ("each pair (the first against the second; a role-swapped pair is won on its "
                "summed margin):")
    else:
        ids = {member: sid for sid, member in names.items()}
        order = [(ids[a], ids[b]) for a, b in itertools.pairwise(table)]
        head = (f"each pair of policies next to each other in the table ({len(order)} of "
                f"{count} pairs; --pairs {count} prints every pair; the database holds them "
                "all):")
    from populations.crossplay import wilson
    from populations.eval_notes import pair_note

    cells = {(p["row_snapshot"], p["col_snapshot"]): p for p in db.payoffs(run_id)}
    rows = {s.id: s for s in snaps}
    lines = []
    for a, b in order:
        p = cells.get((a, b))
        if p is None or p["win_rate"] is None:
            continue
        lo, hi = wilson(p["win_rate"] * p["count"], p["count"])
        note = pair_note(db, run_id, rows[a], rows[b])  # one game replayed: walk40a M4
        lines += [f"{names[a]:>24}  vs {names[b]}: win rate {p['win_rate']:.2f} (95% Wilson "
                  f"[{lo:.2f}, {hi:.2f}]) over {p['count']} pair{'s' if p['count'] != 1 else ''}, "
                  f"margin {p['value']:+.3f} "
                  "per episode", *([] if note is None else [f"{'':>24}  {note}"])]
    if lines:
        print(head)
        print("\n".join(lines))


def print_legal_rates(played: Any, snaps: Sequence[Any], policies: dict[str, Any]) -> None:
    """Each LLM policy's legal rate over its moves in the round robin (``played``: the
    ``PairsPlayed`` of :func:`populations.eval_runs.play_round_robin`, whose moves come back
    from Ray workers too), "(the rest its fallback's)" after it below 1.0 (at 1.0 there is
    no rest, as in :func:`populations.single_eval.evaluate_single`'s line), and one warning
    line for each below ``LOW_LEGAL_RATE`` (its rating measures its fallback moves)."""
    from populations.single_eval import LOW_LEGAL_RATE, low_legal_warning

    for snap in snaps:
        rate = played.legal_rate(snap.id)  # None: it counts no moves (a classic learner)
        if rate is None:
            continue
        moves = played.moves[snap.id][0]
        rest = "" if rate == 1.0 else " (the rest its fallback's)"  # at 1.0 there is none
        print(f"{snap.member:>24}  legal rate {rate:.3f} over {moves} moves{rest}")
        if rate < LOW_LEGAL_RATE:
            print("selfplay-eval: warning: " + low_legal_warning(
                snap.member, rate, moves, "its rating", policies[snap.member]),
                file=sys.stderr)


def interrupted_line(db: Any, run_id: int, spec: Any, args: argparse.Namespace, files: int,
                     stage: str, sides: Any = None) -> str:
    """Ctrl-C's line, from what the database kept of run ``run_id`` (``files`` policy files;
    ``stage``: snapshots, matches or exploit, where it stopped): ``interrupted after 3 of 10
    pairings (96 of 320 matches); they are kept in eval.db (run 3, status interrupted; no
    ratings: ...); running the same command again starts a new evaluation ...`` (before a
    match ended: ``interrupted after 0 of 10 pairings (0 of 320 matches): no match had ended;
    the run is kept in ...``). A rerun never resumes run ``run_id``: it adds a new run that
    plays everything again. ``sides``: the files' sides when they played seatings
    (:func:`populations.eval_seatings.seatings_played` counts them)."""
    where = (f"kept in {escaped(args.db)} (run {run_id}, status "
             f"{db.run_status(run_id)}")
    again = "running the same command again starts a new evaluation (a new run that plays"
    if stage == "snapshots":
        return (f"interrupted before the first match; the run is {where}); {again} every "
                "file; this one is not resumed)")
    rows = db.matches(run_id)
    alone = len(spec.teams) == 1 and sides is None
    if sides is not None:  # seat/<i>/e0000
        done, redo = seatings_played(rows, sides, args.episodes)
    elif alone:  # alone/<snapshot>/e00000
        played = {m.key.rsplit("/", 1)[0] for m in rows}
        done = f"{len(played)} of {files} files played alone ({len(rows)} episodes)"
        redo = "every file again"
    else:  # rr/<a>-<b>/ab/e0000
        played = {m.key.rsplit("/", 2)[0] for m in rows}
        pairings = files * (files - 1) // 2
        done = (f"{len(played)} of {pairings} pairings ({len(rows)} of "
                f"{pairings * 2 * args.episodes} matches)")
        redo = f"all {pairings} pairings again"
    if stage == "matches" and not rows:  # "they are kept": there was nothing to keep
        unit = "episode" if alone or sides is not None else "match"
        return (f"interrupted after {done}: no {unit} had ended; "
                f"the run is {where}); {again} {redo}; this one is not resumed)")
    if stage == "matches":
        unrated = "" if alone or sides is not None else \
            "; no ratings: they are computed once every pairing has played"
        return (f"interrupted after {done}; they are {where}{unrated}); {again} {redo}; this one "
                "is not resumed)")
    # stage exploit (the matches were all played): the policies estimated so far
    estimates = len({r["snapshot_id"] for r in db.exploitability(run_id)})
    before = ("each file's episodes alone and " if alone else
              "the round robin's matches and ratings and " if files > 1 else "")
    redo = f"{redo} and estimates every policy again" if before else \
        "estimates every policy again"
    again = again.removesuffix(" plays") if not before else again
    return (f"interrupted in --exploit after {estimates} of {files} policies' approximate "
            f"NashConv; {before}the finished estimates are {where}); {again} {redo}; this one "
            "is not resumed)")
