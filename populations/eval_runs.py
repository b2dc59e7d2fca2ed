"""What ``selfplay-eval`` plays into the league database once every file passed its checks
(:func:`run_evaluation`): the eval run's row and the files' copies, then a round robin of the
files with a bar of pairs (:func:`play_round_robin`), every seating of files of some seats each
(:mod:`populations.eval_seatings`), or each file's episodes alone on a game of one team
(:func:`play_alone`), and with ``--exploit`` each policy's approximate NashConv
(:func:`run_exploit`). The run ends finished, failed or interrupted, Ctrl-C with a line of what
the database kept. Split out of :mod:`populations.eval_cli`, which checks the command line and
the files first; the tables and lines around the matches are :mod:`populations.eval_report`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from populations.eval_notes import seatings_note
from populations.eval_report import (
    interrupted_line,
    print_legal_rates,
    print_pairs,
    print_ratings,
)
from populations.eval_seatings import SeatingsInterrupted, play_seatings, seatings_of


def run_evaluation(args: argparse.Namespace, kwargs: dict[str, Any], spec: Any,
                   names: dict[str, str], policies: dict[str, Any], sides: Any,
                   exploit: Any) -> None:
    """Record the evaluation of ``policies`` (the files ``names``, checked against ``spec``'s
    game) as a new run of the database ``args.db``: the seatings of ``sides`` where the files
    play seatings, each file alone on a game of one team, else the round robin, then
    ``exploit``'s estimates (an ``ApproxConfig``; None without ``--exploit``). The run ends
    finished, or failed or interrupted with what was recorded kept (Ctrl-C: one line saying
    what, :func:`populations.eval_report.interrupted_line`)."""
    from populations.db import EVAL_EXPERIMENT, LeagueDB
    from populations.runners import make_runner
    from populations.store import PolicyStore

    db = LeagueDB(args.db)  # made only once every policy loaded
    run_id = db.create_run("eval", experiment=EVAL_EXPERIMENT, game=spec.name, config={
        "policies": {name: str(Path(path).resolve()) for name, path in names.items()},
        "game_kwargs": kwargs, "episodes": args.episodes, "seed": args.seed})
    store = PolicyStore(eval_snapshot_folder(Path(args.db), run_id), db, run_id)
    snaps: list[Any] = []
    stage = "snapshots"  # what Ctrl-C stopped (interrupted_line)
    try:  # the run ends finished, failed or interrupted (it stayed 'running' in the dashboard)
        snaps += [store.publish(name, pol) for name, pol in policies.items()]
        stage = "matches"
        if sides is not None:  # files of some seats each (PSRO members): every seating
            runner = make_runner(args.runner)
            try:
                for line in play_seatings(db, run_id, runner, spec, args.game, kwargs, sides,
                                          dict(zip(policies, snaps, strict=True)), names,
                                          args.episodes, args.seed):
                    print(line)
                note = seatings_note(db, run_id, seatings_of(sides), {  # '-1.000 ± 0.000'
                    s.member: s.kind for s in snaps})  # of one game replayed: walk40a M4
                if note is not None:
                    print(note)
            finally:
                runner.close()
        elif len(spec.teams) == 1:  # nobody to rate against: each file's return alone
            play_alone(db, run_id, spec, args, kwargs, snaps)
        else:
            runner = make_runner(args.runner)
            try:
                played = play_round_robin(db, run_id, runner, spec, args, kwargs, snaps)
            finally:
                runner.close()
            table = print_ratings(db, run_id, snaps)  # members, best first
            print_pairs(db, run_id, snaps, table, args.pairs)
            print_legal_rates(played, snaps, policies)
        if exploit is not None:
            stage = "exploit"
            run_exploit(db, run_id, args, kwargs, snaps, policies, exploit, spec)
    except BaseException as err:  # Ctrl-C too
        from populations.cli_common import interrupted
        from populations.run_folder import end_status
        from populations.run_folder import one_line as error_line

        db.set_run_status_quietly(run_id, end_status(err), error_line(err))
        line = None
        if isinstance(err, KeyboardInterrupt):  # SIGTERM too: what the database kept
            with contextlib.suppress(Exception):  # the plain line if it cannot be read
                line = interrupted_line(db, run_id, spec, args, len(policies), stage, sides)
        db.close()
        if isinstance(err, SeatingsInterrupted):  # the finished seatings' table, above
            print("\n".join(err.lines), flush=True)
        if line is not None:
            interrupted("selfplay-eval", line)
        raise
    db.set_run_status(run_id, "finished")
    db.close()


def eval_snapshot_folder(db: Path, run_id: int) -> Path:
    """Where ``selfplay-eval`` keeps the copies of the files it rates into ``db`` as run
    ``run_id``: ``eval_snapshots/<db file>/run<id>/`` beside it. Each evaluation its own folder:
    one ``eval_snapshots/`` for all of them had a second evaluation (into the same database or
    another one beside it) of files of the same names (a run's ``v0000.pt``...) overwrite the
    first one's copies, whose rows then named other weights than their recorded SHA-256."""
    return db.parent / "eval_snapshots" / db.name / f"run{run_id:04d}"


def play_round_robin(db: Any, run_id: int, runner: Any, spec: Any, args: argparse.Namespace,
                     kwargs: dict[str, Any], snaps: Sequence[Any]) -> Any:
    """:func:`populations.evaluation.round_robin` of ``snaps`` with a bar of pairs (and
    pairs/s) on stderr (:mod:`marl.progress`, as every selfplay-train bar: on a terminal the
    bar, in a redirected log a plain line every 30 s and one at the end): the pairs are
    played a few at a time (one in process; two per worker on Ray, which plays a call's jobs
    at once), each with the seed the one call gives it (``--seed`` plus
    7,919 per pairing, in the order of the files) under the same key, so the records are
    the same. A round robin over hundreds of files runs for minutes: it said nothing.
    Returns what :func:`populations.evaluation.evaluate_pairs` played (``PairsPlayed``: the
    LLM policies' moves, counted where they were played, in this process or a Ray worker)."""
    from marl.progress import tqdm
    from populations.evaluation import evaluate_pairs, recompute

    pairs = list(itertools.combinations(snaps, 2))
    size = 2 * len(getattr(runner, "workers", ())) or 1
    with tqdm(total=len(pairs), desc="selfplay-eval round robin", unit="pair", leave=False,
              disable=not pairs, dynamic_ncols=True,
              file=sys.stderr, smoothing=0) as bar:  # the overall rate, as every other bar
        played = evaluate_pairs(db, run_id, runner, spec, args.game, kwargs, pairs,
                                args.episodes, args.seed, "rr", batch=size,
                                tick=lambda done: bar.update(done - bar.n))
    recompute(db, run_id, step=0)
    return played


def exploit_config(args: argparse.Namespace, spec: Any) -> Any:
    """The ``--exploit-*`` settings, checked against the game (one line when wrong)."""
    from populations.approx_exploit import ApproxConfig, check_response_algo

    cfg = ApproxConfig(algo=args.exploit_algo, frames=args.exploit_frames,
                       seeds=args.exploit_seeds, eval_episodes=args.exploit_episodes,
                       seed=args.seed)
    check_response_algo(spec, cfg)
    return cfg


def run_exploit(db: Any, run_id: int, args: argparse.Namespace, kwargs: dict[str, Any],
                snaps: list, policies: dict[str, Any], cfg: Any, spec: Any) -> None:
    """Approximate NashConv of each policy, printed and recorded per snapshot. What it trains
    and plays is said first, then each policy's estimate has a bar of its response training's
    frames on stderr, the stage in progress beside it (:mod:`marl.progress`, as the round
    robin's: on a terminal the bar, in a redirected log a plain line every 30 s and one at
    the end): 3 seeds x 20,000 frames on pentago ran for minutes with no word."""
    from tqdm.contrib.logging import logging_redirect_tqdm

    from marl.progress import tqdm
    from populations.approx_exploit import (
        approx_nash_conv,
        estimate_line,
        record,
        response_frames,
        team_seats,
    )

    teams = len(team_seats(spec))
    trained = response_frames(cfg)  # the budget rounded up to whole steps and rollouts
    rounded = f"; --exploit-frames {cfg.frames} rounded up" if trained != cfg.frames else ""
    per_policy = cfg.seeds * teams * trained
    print(f"selfplay-eval: --exploit trains {cfg.seeds} seed{'s' if cfg.seeds != 1 else ''} "
          f"x {teams} best response{'s' if teams != 1 else ''} x {trained} frames "
          f"({cfg.algo}{rounded}; {per_policy} frames) and plays {cfg.seeds} x {teams + 1} "
          "evaluations "
          f"of {cfg.eval_episodes} episodes for each of {len(policies)} "
          f"polic{'ies' if len(policies) != 1 else 'y'} (--exploit-seeds, --exploit-frames, "
          "--exploit-episodes set them)", file=sys.stderr)
    for snap, (name, pol) in zip(snaps, policies.items(), strict=True):
        with tqdm(total=per_policy, desc=f"--exploit {name}", unit="frame", leave=False,
                  dynamic_ncols=True, file=sys.stderr, smoothing=0) as bar, \
                logging_redirect_tqdm(tqdm_class=tqdm):  # its log lines above the bar

            def progress(frames: int, stage: str, bar: Any = bar) -> None:
                if stage != bar.postfix:  # shown at once: an evaluation moves no frames
                    bar.set_postfix_str(stage, refresh=frames == bar.n)
                bar.update(frames - bar.n)

            res = approx_nash_conv(args.game, pol, cfg, kwargs, progress=progress)
        record(db, run_id, snap.id, name, res)
        print(estimate_line(name, res, teams))


def play_alone(db: Any, run_id: int, spec: Any, args: argparse.Namespace,
               kwargs: dict[str, Any], snaps: Sequence[Any]) -> None:
    """A game of one team: each file plays ``--episodes`` episodes alone (seed ``--seed``
    plus 7,919 per file, in their order), in this process; printed as its mean team return
    ± the 95 % half-width (Student's t), its success rate where the game reports whether an
    episode succeeded (a tool task; :func:`games.vector.episode_success`: nothing for one
    that does not say) and, for an LLM policy, its legal rate; recorded as matches
    ``alone/<snapshot id>/e00000``... and metrics ``alone/<name>/return``,
    ``.../return_ci95``, ``.../success_rate`` and ``.../legal_rate`` at step 0. Each file's
    episodes have a bar on stderr while they play (:mod:`marl.progress`, as the round robin's:
    on a terminal the bar, in a redirected log a plain line every 30 s and one at the end),
    gone before its line is printed: 64 episodes of a VMAS or tool game ran for minutes with
    no word."""
    from marl.progress import tqdm
    from populations.db import MatchRow
    from populations.single_eval import LOW_LEGAL_RATE, evaluate_alone, low_legal_warning

    if args.runner != "local":
        print(f"selfplay-eval: note: a game of one team is played in this process (--runner "
              f"{args.runner} plays round robins)", file=sys.stderr)
    cache: dict[str, Any] = {}
    print(f"each policy alone on {spec.name}: mean team return over "
          f"{args.episodes} episode{'s' if args.episodes != 1 else ''} ± the half-width of its "
          "95 % interval (Student's t)")
    for i, snap in enumerate(snaps):
        key = f"alone/{snap.id}"
        with tqdm(total=args.episodes, desc=f"selfplay-eval {snap.member} alone",
                  unit="episode", leave=False, dynamic_ncols=True, file=sys.stderr,
                  smoothing=0) as bar:  # the overall rate, as every other bar
            res = evaluate_alone(snap.path, args.game, kwargs, args.episodes,
                                 args.seed + 7919 * i, key, cache,
                                 tick=lambda done, bar=bar: bar.update(done - bar.n))
        db.add_matches(run_id, [MatchRow(f"{key}/e{e:05d}", spec.name, dict.fromkeys(r, snap.id),
                                         r, args.seed + 7919 * i)
                                for e, r in enumerate(res.returns)])
        ev = res.evaluation
        metrics = {f"alone/{snap.member}/return": ev.mean}
        ci = "± n/a (one episode)" if ev.ci95 is None else f"± {ev.ci95:.3f}"
        if ev.ci95 is not None:
            metrics[f"alone/{snap.member}/return_ci95"] = ev.ci95
        said = [bool(s) for s in res.successes if s is not None]  # episodes the game told
        success = ""
        if said:
            rate = sum(said) / len(said)
            metrics[f"alone/{snap.member}/success_rate"] = rate
            of = "" if len(said) == len(res.successes) else f" of {len(res.successes)}"
            plural = "s" if len(res.successes) != 1 else ""
            success = f"  success rate {rate:.3f} over {len(said)}{of} episode{plural}"
        legal = ""
        if ev.legal_rate is not None:
            metrics[f"alone/{snap.member}/legal_rate"] = ev.legal_rate
            legal = f"  legal rate {ev.legal_rate:.3f} over {res.moves.decisions} moves"
        db.log_metrics(run_id, 0, metrics)
        print(f"{snap.member:>24}  return {ev.mean:+.3f} {ci}{success}{legal}")
        if ev.legal_rate is not None and ev.legal_rate < LOW_LEGAL_RATE:
            print("selfplay-eval: warning: " + low_legal_warning(
                snap.member, ev.legal_rate, res.moves.decisions, "its return",
                cache[snap.path]), file=sys.stderr)
