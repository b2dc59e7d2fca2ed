"""How a league's members train (the training half of :class:`populations.league.League`,
which this mixin is a base of): each generation in turn in this process or all at once on
learner actors (``runner="ray"``), with the generation's plan, the matchmaking rule's opponent
draw and a matchmaker; and the asynchronous league (``sync=False``), whose members train,
publish and are evaluated without waiting for each other. The league's state (its ``cfg``,
``members``, ``store``, ``db``, ``learners``, ``progress``...) and checkpoints are
``League``'s."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from marl.core import derive_seed
from populations import league_eval
from populations.evaluation import pfsp_win_rates
from populations.league_progress import (
    AsyncTiming,
    advance_bar,
    async_pairs_left,
    async_time_left,
    count_unit,
    step_postfix,
)
from populations.league_state import published
from populations.learner_actors import LearnerJob, LearnerResult, load_state_bytes, state_bytes
from populations.matchmaking import OWN_SNAPSHOTS, opponent_distribution
from populations.members import (
    GenerationMatchmaker,
    Matchmaker,
    Member,
    OpponentDraw,
    TrainPlan,
)
from populations.run_folder import stop_requested
from populations.store import file_sha256

log = logging.getLogger("populations.league")  # the league's log, as before the move


class LeagueTraining:
    """The members' training of a :class:`~populations.league.League` (its base class)."""

    cfg: Any
    members: list[Member]

    def _train_members(self) -> None:
        """One generation of every member: in turn in this process (metrics logged live),
        or all at once on the learner actors; their results are then applied in member
        order, so metric steps and states are the in-process runner's."""
        g = self.generation
        if self.learners is None:
            for m in self.members:
                if m.name in self.trained:  # before a stop: in the checkpoint resumed from
                    continue
                if stop_requested():  # a Ctrl-C / SIGTERM during the last member's training
                    self._save()  # phase "training": the members trained so far
                    self._stop_if_asked()
                started = time.time()
                with self._bar(m) as bar, _steps_shown(m, bar, self.show_progress):
                    frames = m.train_generation(
                        self.matchmaker(m.name, lambda n, bar=bar: advance_bar(bar, n)))
                self.db.add_generation(self.run_id, m.name, g, frames, started, time.time(),
                                       f"pid {os.getpid()}")
                self._count(m, frames)
                self.trained.append(m.name)
                log.info("generation %d: %s trained %d %s in %.0fs", g, m.name, frames,
                         count_unit(m), time.time() - started)  # several members take long
            return
        # learner actors train every member at once: a stop request waits for them all
        # (about one member's generation), then stops with the "trained" checkpoint. A
        # resume of an in-process stop between members trains only those left (the others'
        # trained states and frames are in the checkpoint)
        todo = [m for m in self.members if m.name not in self.trained]
        for m in todo:
            self.learners.submit(self._job(m, g))
        done = {}
        while self.learners.busy:  # recorded as they finish: the wall-clock order
            r = self.learners.wait()
            self.db.add_generation(self.run_id, r.name, g, r.frames, r.started_at,
                                   r.finished_at, r.worker)
            log.info("generation %d: %s trained %d %s in %.0fs (%s)", g, r.name, r.frames,
                     count_unit(self._member(r.name)), r.finished_at - r.started_at, r.worker)
            done[r.name] = r
        for m in todo:
            self._apply(m, done[m.name])


    def _job(self, m: Member, generation: int) -> LearnerJob:
        """``m``'s generation for a learner actor: its state, plan, draw and snapshots."""
        draw = self.draw(m.name, generation)
        snaps = {}
        for sid in draw.ids:
            s = self.store.verify(self.store.get(sid))  # the bytes the actor gets are checked
            snaps[sid] = self.learners.snapshot(sid, s.path, s.sha256 or file_sha256(s.path))
        return LearnerJob(m.name, self.plan(generation), draw, state_bytes(m.state_dict()), snaps)

    def _apply(self, m: Member, r: LearnerResult) -> None:
        """A learner actor's result: the member's new state, its metrics at the league's
        frame count, the frames."""
        for step, metrics in self._take(m, r):
            self.log_metrics(step, metrics)

    def _take(self, m: Member, r: LearnerResult) -> list[tuple[int, dict[str, float]]]:
        """Load a learner actor's result into member ``m`` and count its frames; returns
        its metrics at the league's frame count before them, to log."""
        m.load_state_dict(load_state_bytes(r.state))
        rows = [(self.frames + f, metrics) for f, metrics in r.metrics]
        self._count(m, r.frames)
        return rows

    def _count(self, m: Member, n: int) -> None:
        """Add member ``m``'s generation (``n`` of what it counts) to the league's step: an
        LLM team's GRPO episodes are not frames, and count only in a league of LLM teams
        alone. (Runs before this counted them as frames: resumed, their step goes on from
        the sum it had.)"""
        if count_unit(m) == self.unit:
            self.frames += n

    def plan(self, generation: int | None = None) -> TrainPlan:
        """What every member trains with in ``generation`` (default: this one)."""
        inputs: dict[str, bool] = {}
        for m in self.members:
            inputs |= m.inputs()
        cfg = self.cfg
        g = self.generation if generation is None else generation
        return TrainPlan(cfg.game, dict(cfg.game_kwargs), cfg.num_envs, cfg.frames_per_generation,
                         cfg.seed, g, tuple(int(t) for t in self.team_of), inputs, self.single)

    def draw(self, member: str, generation: int | None = None) -> OpponentDraw:
        """The matchmaking rule's candidates and probabilities for ``member`` now, and the
        seed of its draw stream for ``generation`` (default: this one)."""
        g = self.generation if generation is None else generation
        snaps = self.store.snapshots()
        if self.phase == "async":  # what each member has published and checkpointed
            snaps = published(snaps, self.progress)
        if self.phase == "training":  # only what came before this generation: a snapshot an
            # interrupted attempt published is not part of the run yet (a resume that fell
            # back to an earlier checkpoint trains that generation again)
            snaps = [s for s in snaps if s.version < self.generation]
        own = [s for s in snaps if s.member == member]  # its latest last
        m = self._member(member)
        if getattr(m, "opponents", None) is not None:
            snaps = [s for s in snaps if s.member in m.opponents]
        elif self.cfg.matchmaking.rule in OWN_SNAPSHOTS and own:  # self-play: itself, not
            snaps = own  # the others; one with none of its own yet (a member a resume added)
            # meets what the league has, as before, not "no candidate opponents"
        if getattr(m, "latest_only", False):
            snaps = [s for s in snaps if s.id == max(t.id for t in snaps if t.member == s.member)]
        probs = opponent_distribution(pfsp_win_rates(self.db, self.run_id, own, snaps),
                                      self.cfg.matchmaking)
        return OpponentDraw(tuple(s.id for s in snaps), tuple(float(p) for p in probs),
                            self.cfg.opponent_prob,
                            derive_seed(self.cfg.seed, "matchmaking", member, g))

    def matchmaker(self, member: str,
                   tick: Callable[[int], None] | None = None) -> Matchmaker:
        """``member``'s matchmaker for this generation, in this process: snapshots from the
        store, metrics logged at the league's frame count when it was made plus the
        member's own; ``tick(done)``: the member's progress (a progress bar)."""
        base = self.frames
        return GenerationMatchmaker(member, self.plan(), self.draw(member), self.store.load,
                                    lambda f, metrics: self.log_metrics(base + f, metrics),
                                    tick)

    def pick_opponents(self, member: str, copies: np.ndarray, opp: np.ndarray,
                       side: np.ndarray, always: bool = False) -> None:
        """Draw, for each copy in ``copies``, an opponent snapshot (or -1: none, with
        probability ``1 - opponent_prob`` unless ``always``) and a side for ``member``, as its
        matchmaker would at the start of this generation."""
        self.draw(member).sampler()(copies, opp, side, always)

    # ------------------------------------------------------------------ asynchronous
    def _run_async(self) -> None:
        """Members train without waiting for each other (``sync=False``, learner actors):
        one that finishes is checkpointed ("trained"), publishes its snapshot, is evaluated
        against every published snapshot (ratings recomputed at step = its place in the
        finishing order), checkpointed again ("done"), and starts its next generation with
        a fresh draw. Which snapshots a draw sees depends on timing, so runs are not
        reproducible; the ``generations`` table records the order. A resume publishes
        members checkpointed "trained" and retrains the others from their checkpoints
        (their unfinished work was never recorded: nothing lost, nothing twice; a member's
        metrics are logged after its "trained" checkpoint, which holds them)."""
        if self.phase != "async":
            self.progress = {m.name: (self.generation, "done") for m in self.members}
            self.phase = "async"
            self._save()
        self._log_unlogged()  # a resume from a "trained" checkpoint: its metrics, once
        for m in self.members:
            if self.progress[m.name][1] == "trained":
                self._finish_async(m, self.progress[m.name][0])
        for m in self.members:
            if self.progress[m.name][0] < self.cfg.generations:
                self.learners.submit(self._job(m, self.progress[m.name][0] + 1))
        # the estimate's timing: the recorded member generations (this process's and those
        # before a resume) trained as the rest will, per member, the learner actors training
        # at once (_async_left); no loop clock, which counted the actors' start and, at the
        # first line, one member generation done for all in flight. AsyncTiming: the table
        # read once here, then each row as it is recorded (not the table per generation)
        timing = AsyncTiming(self.db.generations(self.run_id), self.members, self._parallel())
        while self.learners.busy:
            r = self.learners.wait()
            m = self._member(r.name)
            g = self.progress[m.name][0] + 1
            seq = self.db.add_generation(self.run_id, m.name, g, r.frames, r.started_at,
                                         r.finished_at, r.worker)
            timing.add(m.name, g, r.frames, r.started_at, r.finished_at)
            log.info("generation %d: %s trained %d %s in %.0fs (%s)", g, r.name, r.frames,
                     count_unit(m), r.finished_at - r.started_at, r.worker)  # as sync=True
            # its metrics are logged once the "trained" checkpoint holds them: logged before,
            # a kill before the checkpoint left rows the resume's retraining logs again at
            # other steps (the base step is the league's frames as members finish)
            self._unlogged = self._take(m, r)
            self.progress[m.name] = (g, "trained")
            self._save()
            self._log_unlogged()
            self._stop_if_asked()  # the other members' generations are trained again
            self._finish_async(m, g, seq)
            self._stop_if_asked()
            if g < self.cfg.generations:
                self.learners.submit(self._job(m, g + 1))
            self._gen_seconds, self._gens = timing.estimate()
            log.info("%s generation %d/%d done (#%d), %d %s, %.0fs%s", m.name, g,
                     self.cfg.generations, seq, self.frames, self.unit, self.elapsed(),
                     self._async_left(timing))
        self.generation = min(g for g, _ in self.progress.values())
        self._save()
        self.db.set_run_status(self.run_id, "finished")

    def _async_left(self, timing: AsyncTiming) -> str:
        """The asynchronous loop's time left (:func:`async_time_left`): each member's mean
        recorded generation (``timing``) times its generations left, the learner actors
        training at once, and the evaluation (this process's mean pair, as ``League._left``
        times it) overlapping the other members' training."""
        means = timing.means()
        if means is None:
            return ""
        cfg = self.cfg
        gens = [self.progress[m.name][0] for m in self.members]
        return async_time_left(
            [(means[m.name], cfg.generations - g) for m, g in zip(self.members, gens,
                                                                  strict=True)],
            timing.parallel, self._eval_seconds, self._eval_pairs,
            async_pairs_left(gens, cfg.eval_window, cfg.generations))

    def _finish_async(self, m: Member, g: int, seq: int | None = None) -> None:
        """Publish member ``m``'s snapshot ``g``, evaluate it against every published one
        (the last ``eval_window``), recompute ratings, checkpoint it "done"."""
        if seq is None:
            seq = next(r["seq"] for r in self.db.generations(self.run_id)
                       if r["member"] == m.name and r["version"] == g)
        earlier = published(self.store.snapshots(), self.progress)
        prev = [s for s in earlier if s.member == m.name and s.version < g]
        new = self.store.publish(m.name, m.policy(), version=g,
                                 parent=prev[-1].id if prev else None,
                                 algo=getattr(m, "algo", None), retrained=True)
        rivals = [s for s in earlier if s.id != new.id]
        rivals = rivals[-self.cfg.eval_window:] if self.cfg.eval_window else rivals
        for s in [new, *rivals]:
            self.store.verify(s)
        played = self._play([(new, r) for r in rivals], g, self.cfg.seed + 100_003 * g + seq)
        self._stop_if_asked()
        self.standings.update(step=seq)
        league_eval.log_legal_rates(self, [new], played)
        league_eval.log_nash_conv(self, [new], g)
        self.progress[m.name] = (g, "done")
        # decided from recorded matches: the same if a resume publishes this again
        league_eval.reset_winners(
            self, published(self.store.snapshots(), self.progress, newest=True),
            only=m.name)
        self._save()


@contextmanager
def _steps_shown(m: Member, bar: Any, show: bool) -> Iterator[None]:
    """An LLM member's bar shows where its GRPO iteration is (``update 9/23 minibatches``),
    as a single LLM run's does (:func:`populations.league_progress.step_postfix`): its bar
    counts episodes, which stand still through each update (6 min of one, silent)."""
    trainer = getattr(m, "trainer", None)
    if not show or trainer is None or not hasattr(trainer, "on_status"):
        yield
        return
    trainer.on_status = step_postfix(bar)
    try:
        yield
    finally:
        trainer.on_status = None
