"""What a league records of each new snapshot's evaluation, after its matches are played
(:meth:`populations.league.League._evaluate`): the exact NashConv of small OpenSpiel games
and the approximate one (``nash_conv/<member>``, the ``exploitability`` table), an LLM
member's share of legal evaluation moves (``eval_legal_rate/<member>``, one warning below
``LOW_LEGAL_RATE``) and the exploiters' resets (``<member>/reset``, AlphaStar's). Each
function takes the :class:`~populations.league.League` (its settings, store, database and
metrics) and writes the same rows when a resume records the generation again.
:func:`league_table` reads the run back as the closing table the command lines print (one
row per snapshot, its rating and, with an LLM member, its legal rate:
:func:`snapshot_legal_rates`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from marl.core import Policy
from populations.approx_exploit import exploit_snapshots
from populations.evaluation import PairsPlayed, win_rates
from populations.members import Member
from populations.run_folder import stop_deferred, stop_requested
from populations.single_eval import LOW_LEGAL_RATE, low_legal_warning

if TYPE_CHECKING:
    from populations.db import LeagueDB, SnapshotRow

log = logging.getLogger("populations.league")  # the league's log, as before the move
LEGAL_RATE = "eval_legal_rate/"  # + <member> (@v<version>): the metrics of log_legal_rates


def log_nash_conv(league: Any, snaps: Sequence[Any], generation: int) -> None:
    """``nash_conv/<member>``: the exact NashConv of each new snapshot of ``generation`` (if
    configured), said on the console (``generation 1: exact NashConv mappo@v1 0.3100``),
    logged and recorded in the database's ``exploitability`` table (method ``exact``,
    labelled as :mod:`populations.approx_exploit` labels a snapshot), which the
    dashboard's league table and NashConv chart read; a resume records it again in
    place (one row per label and method). Then ``approx_nash_conv/<member>``, the
    approximate one (``population.exploit``): a CLI's stop request during that estimate
    drops it unrecorded and stops the league here, from the checkpoint before this
    evaluation (a best response can take minutes), so the resume estimates it again."""
    if league.cfg.nash_conv:
        from populations.exploitability import nash_conv

        exact = [(s, nash_conv(league.spec, scored_policy(league.store.load(s.id))).nash_conv)
                 for s in snaps]
        for s, value in exact:
            league.db.add_exploitability(league.run_id, s.id, f"{s.member}@v{s.version}",
                                         "exact", value)
        league.log_metrics(league.frames, {f"nash_conv/{s.member}": v for s, v in exact})
        log.info("generation %d: exact NashConv %s (nash_conv/<member> in the metrics)",
                 generation, ", ".join(f"{s.member}@v{s.version} {v:.4f}" for s, v in exact))
    approx = exploit_snapshots(league.db, league.run_id, league.store, league.cfg.game,
                               league.cfg.game_kwargs, league.cfg.exploit, list(snaps),
                               league.cfg.seed, league.cfg.device,
                               stop_requested if stop_deferred() else None)
    if approx.values:
        league.log_metrics(league.frames, approx.values)
    if approx.stopped:  # the generation is not done: the stop waits for no later point
        league._stop_if_asked()


def log_legal_rates(league: Any, new: Sequence[Any], played: PairsPlayed) -> None:
    """``eval_legal_rate/<member>``: the share of each new LLM snapshot's evaluation moves
    that named a legal action (the rest were its fallback's, which a match plays also with
    ``on_invalid=end``: its rating measures them too), at the league's step: one point a
    generation per member, the curve the dashboard and wandb draw. A rival the pairs played
    that has no rate yet (:func:`snapshot_legal_rates`: a lone LLM member's v0, which has no
    pair at generation 0 and first plays v1) gets its own, ``eval_legal_rate/<member>@v<version>``
    (:func:`legal_key`), which names the snapshot; a rival with a rate keeps it (an older
    run's per-member row included). A member below ``LOW_LEGAL_RATE`` is warned of once per
    process (one line). Over the pairs this process played: a resume skips those recorded
    before a stop."""
    ids = {s.id for s in new}
    snaps = league.store.snapshots()
    rivals = [s for s in snaps if s.id in played.moves and s.id not in ids]
    if rivals:
        rated = snapshot_legal_rates(league.db, league.run_id, snaps)
        rivals = [s for s in rivals if s.id not in rated.get(s.member, {})]
    rates = {s: played.legal_rate(s.id) for s in [*new, *rivals]}
    rates = {s: r for s, r in rates.items() if r is not None}
    if not rates:
        return
    league.log_metrics(league.frames, {
        f"{LEGAL_RATE}{s.member}" if s.id in ids else legal_key(s): r for s, r in rates.items()})
    for s, rate in rates.items():
        if rate < LOW_LEGAL_RATE and s.member not in league.legal_warned:
            league.legal_warned.add(s.member)
            member = next(m for m in league.members if m.name == s.member)
            log.warning("league member %s", low_legal_warning(
                f"{s.member!r} (snapshot v{s.version})", rate, played.moves[s.id][0],
                "its rating", member.policy()))


def legal_key(snap: Any) -> str:
    """The metric of the legal rate of ``snap``, a rival first rated after its own
    evaluation (:func:`log_legal_rates`): ``eval_legal_rate/<member>@v<version>``. The
    dashboard draws it in its member's ``eval_legal_rate/<member>`` series."""
    return f"{LEGAL_RATE}{snap.member}@v{snap.version}"


def snapshot_legal_rates(db: LeagueDB, run_id: int,
                         snaps: Sequence[SnapshotRow]) -> dict[str, dict[int, float]]:
    """The evaluation legal rate logged for each of ``snaps`` (:func:`log_legal_rates`), by
    member name, then snapshot id, rounded to 3 digits (the newest row of a snapshot: a
    resume's replaces it): a member that logged none is absent, a snapshot whose evaluation
    logged none too. ``eval_legal_rate/<member>@v<version>`` names its snapshot;
    ``eval_legal_rate/<member>`` (its step, the league's frame count, names none) belongs
    to the member's newest snapshot published before the row was written (a snapshot is
    published, then evaluated; publishing it again on a resume keeps its time)."""
    rows = db.conn.execute(
        "SELECT key, value, created_at FROM metrics WHERE run_id = ? AND substr(key, 1, ?) = ? "
        "ORDER BY created_at, id", (run_id, len(LEGAL_RATE), LEGAL_RATE)).fetchall()
    labelled = {legal_key(s): s for s in snaps}
    out: dict[str, dict[int, float]] = {}
    for key, value, at in rows:
        if key in labelled:
            snap = labelled[key]
            out.setdefault(snap.member, {})[snap.id] = round(float(value), 3)
            continue
        member = str(key)[len(LEGAL_RATE):]
        published = [s for s in snaps if s.member == member and s.created_at <= at]
        if published:
            rates = out.setdefault(member, {})
            rates[max(published, key=lambda s: s.version).id] = round(float(value), 3)
    return out


def league_table(db: LeagueDB, run_id: int) -> list[dict[str, Any]]:
    """One row per snapshot: member, version, kind (the member's learner: ``ippo``, whose
    snapshots are ``mappo`` policies), Elo, μ±σ, and the role-swapped pairs the rating is
    from (``pairs``; best first). In a league with an LLM team (a member whose evaluation
    logged ``eval_legal_rate/...``), ``eval_legal_rate`` too: the share of the
    snapshot's evaluation moves that named a legal action (the rest were its fallback's,
    which its rating measures too; None where its evaluation logged none), ``"-"`` for the
    members that count no moves."""
    ratings = db.latest_ratings(run_id)
    kinds = {m["name"]: m["kind"] for m in db.members(run_id)}
    snaps = db.snapshots(run_id)
    legal = snapshot_legal_rates(db, run_id, snaps)
    rows = []
    for s in snaps:
        r = ratings.get(s.id)
        row = {"member": s.member, "version": s.version, "kind": kinds.get(s.member, s.kind),
               "elo": None if r is None else round(r["elo"], 1),
               "mu": None if r is None else round(r["mu"], 2),
               "sigma": None if r is None else round(r["sigma"], 2),
               "pairs": 0 if r is None else int(r["matches"])}
        if legal:
            row["eval_legal_rate"] = legal[s.member].get(s.id) if s.member in legal else "-"
        rows.append(row)
    return sorted(rows, key=lambda x: -(x["mu"] or -1e9))


def reset_winners(league: Any, new: Sequence[Any], only: str | None = None) -> None:
    """Restart members (``only`` one) with ``reset_win_rate`` whose new snapshot beats
    the newest snapshot of every opponent member that often (AlphaStar's exploiter
    resets)."""
    newest = {s.member: s for s in new}
    for m in league.members:
        threshold = getattr(m, "reset_win_rate", None)
        if only is not None and m.name != only:
            continue
        if threshold is None:
            continue
        rivals = [newest[o].id for o in (m.opponents or newest) if o != m.name]
        rates = win_rates(league.db, league.run_id, newest[m.name].id, rivals)
        won = bool(rivals) and all(r is not None and r >= threshold for r in rates)
        league.log_metrics(league.frames, {f"{m.name}/reset": float(won)})
        if won:
            log.info("%s beat %s (win rates %s): restarting it from its initial weights",
                     m.name, m.opponents, rates)
            m.reset()  # type: ignore[attr-defined]


def scored_policy(policy: Any) -> Any:
    """The policy whose exact NashConv a league logs: an off-policy learner's snapshot
    (QMIX/VDN/MADDPG) as it is evaluated, by its greedy actions, one-hot (PSRO's
    :class:`~populations.psro.GreedyPolicy`, by :func:`~populations.psro.plays_greedy`);
    others as they are."""
    from populations.psro import GreedyPolicy, plays_greedy

    return GreedyPolicy(policy) if plays_greedy(policy) else policy


def check_nash_conv_members(members: Sequence[Member]) -> None:
    """``nash_conv=True`` scores every snapshot by its action probabilities: refuse a member
    whose policies have none and are not played greedily (a policy of a user's own kind)."""
    for m in members:
        scored = scored_policy(m.policy())
        if type(scored).action_probs is Policy.action_probs:
            raise ValueError(
                f"nash_conv=True (population.nash_conv): member {m.name!r} plays "
                f"{scored.meta.kind!r} policies, which have no action probabilities and are "
                "not played greedily; exact NashConv accepts members whose policies give "
                "action probabilities (MAPPO/IPPO, LLM teams, tabular) or off-policy "
                "learners' (QMIX/VDN/MADDPG, scored by their greedy play); set it false, or "
                "exploit.every=N (population.exploit.every) for an approximate NashConv")
