"""How a league run opens (the opening half of :class:`populations.league.League`'s
constructor, which this mixin is a base of, as
:class:`~populations.league_training.LeagueTraining` is of its training): the game built and
refused where a league cannot play it (:func:`cooperative_refusal`, two teams, NashConv on a
game it cannot walk), the members built, ``league.db`` made or, on a resume, its run found with
the settings recorded with it checked (:data:`MAY_CHANGE` may change) and its history against
the checkpoints; then the policy store, the Ray match workers and learner actors, the league's
counters, and a resume's checkpoint restored. Everything that refuses does so before
``league.db`` is made (a new run) or before the run is marked running (a resume). ``League``
holds the run folder's lock and closes what was made when opening fails.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

import games
from populations.checkpoint import checkpoint_files, note_resume_threads
from populations.db import LeagueDB
from populations.evaluation import Standings
from populations.league_progress import count_unit
from populations.league_state import (
    check_folder,
    member_changes,
    note_generations,
    recorded_history,
)
from populations.learner_actors import LearnerPool, connect_ray, learner_gpus
from populations.loggers import MetricsLogger
from populations.lru import policy_cache_size
from populations.members import Member
from populations.run_folder import (
    check_settings,
    refuse_changes,
    refuse_lost_history,
    resume_words,
)
from populations.runners import make_runner
from populations.store import PolicyStore

log = logging.getLogger("populations.league")  # the league's log, as before the move
NASH_CONV_WHY = ("for nash_conv=True (exact NashConv needs a small game of perfect recall); "
                 "nash_conv=False skips this walk")
"""The reason the league's ``nash_conv`` check gives its walk of the game
(:func:`populations.exploitability.exact_check`), said on a long one's first progress line."""
# settings a resume may change: where and how fast it runs, and how long it goes on
MAY_CHANGE = ("generations", "runner", "ray_workers", "ray_address", "keep_checkpoints",
              "device", "torch_threads", "ray_learners", "learner_gpus", "max_learner_restarts")



class LeagueOpening:
    """The opening of a :class:`~populations.league.League` run (its base class)."""

    cfg: Any
    members: list[Member]

    def _open(self, resume: bool, members: Sequence[Member] | None, override: bool) -> None:
        cfg = self.cfg
        torch.set_num_threads(cfg.torch_threads)
        resume = check_folder(self.run_dir, resume, override)
        # every check of the settings, the game and the members before league.db: a league
        # refused here leaves nothing in its folder that refuses the corrected rerun
        self._check_game()
        self.members = self._built_members(members)
        self._fresh = not resume  # league.db is made here: a failure before the run removes it
        self.db = LeagueDB(self.run_dir / "league.db")
        run_id = self.db.run_id("league")
        had_run = run_id is not None
        recorded: dict[str, Any] | None = None  # the run's settings, when it has them
        new_config: dict[str, Any] | None = None  # a resume's settings, written once accepted
        if run_id is None:
            run_id = self.db.create_run("league", experiment=self.experiment,
                                        game=self.spec.name, config=_jsonable(cfg))
        else:
            recorded = self.db.run_config(run_id)
            now = _jsonable(cfg)
            # a resume's own settings (any it may change, such as generations: a plain resume
            # goes on to the count the last one set) or all of them, overridden
            if check_settings(f"league {self.run_dir}", recorded, now, MAY_CHANGE,
                              override) or recorded != now:
                new_config = now  # after the checkpoint and snapshots passed (_restore)
            note_generations(recorded, cfg.generations)
            if members is not None:
                refuse_changes(f"league {self.run_dir}",
                               member_changes(self.db, run_id, members), override)
        self.run_id = run_id
        # payoffs and ratings, folded in from each generation's new matches (a resumed run
        # replays the recorded ones once)
        self.standings = Standings(self.db, run_id)
        if cfg.matchmaking.rule == "pfsp" and cfg.eval_window:
            log.info("pfsp with eval_window=%d: a snapshot the learner's latest was not "
                     "evaluated against is weighed by the win rate of the member's newest "
                     "snapshot that was (populations.evaluation.pfsp_win_rates)",
                     cfg.eval_window)
        if resume and had_run and not checkpoint_files(self.run_dir / "checkpoints"):
            # before the run is marked running: a refusal leaves it as it was
            refuse_lost_history(self.run_dir / "checkpoints",
                                recorded_history(self.db, self.run_id), override)
        # a resume's run is marked running (and a failure from then on recorded) once its
        # checkpoint and snapshots passed, below: a resume refused before leaves the run as
        # it was, its status (finished, interrupted) and settings too
        self._started = not resume
        self.store = PolicyStore(self.run_dir / "snapshots", self.db, self.run_id)
        self.single = len(self.members) == 1
        self.needs_text = any(m.kind == "llm" for m in self.members)
        if cfg.runner == "ray":  # CPUs of a local Ray: the match workers and learner actors
            actors = min(len(self.members), cfg.ray_learners or len(self.members))
            connect_ray(cfg.ray_address, cfg.ray_workers + actors)
        # the loaded policies a generation's evaluation reads again (its window's rivals)
        self.runner = make_runner(cfg.runner, max_policies=policy_cache_size(
            len(self.members), cfg.eval_window, cfg.generations), **(
            {"num_workers": cfg.ray_workers, "address": cfg.ray_address}
            if cfg.runner == "ray" else {}))
        if cfg.runner == "ray":
            self.learners = LearnerPool(self.members, actors,
                                        learner_gpus(cfg.device, cfg.learner_gpus),
                                        torch_threads=cfg.torch_threads,
                                        max_restarts=cfg.max_learner_restarts)
        self.team_of = np.array([self.spec.teams.index(a.team) for a in self.spec.agents])
        # the league's step (every metric's, checkpointed as "frames"): the frames its
        # learner members trained; a league of LLM teams alone counts their GRPO episodes
        self.generation, self.phase, self.frames = 0, "new", 0
        self.unit = "frames" if any(count_unit(m) == "frames" for m in self.members) \
            else "episodes"
        self.trained: list[str] = []  # phase "training": members whose generation is trained
        # asynchronous runs: each member's (generation, "trained" | "done")
        self.progress: dict[str, tuple[int, str]] = {}
        self._logger: MetricsLogger = MetricsLogger()  # extra metrics sink (csv, wandb)
        self.legal_warned: set[str] = set()  # members warned of a low eval_legal_rate
        self._resumed = resume
        if resume:
            self._restore()
            if new_config is not None:
                self.db.set_run_config(run_id, new_config)
            self.db.set_run_status(run_id, "running")
            self._started = True
            if had_run and self._left_to_train():
                note_resume_threads(self.run_dir / "checkpoints", cfg.torch_threads,
                                    lambda: recorded)

    def _check_game(self) -> None:
        """Build the game (``self.spec``) and refuse one a league cannot play: a cooperative
        game, one without two teams, NashConv on a game it cannot walk."""
        cfg = self.cfg
        game = games.make(cfg.game, **cfg.game_kwargs)
        self.spec = game.spec  # its name holds the kwargs
        refused = cooperative_refusal(game)
        game.close()
        if refused:
            raise ValueError(refused)
        if cfg.nash_conv and not cfg.game.startswith("openspiel/"):
            raise ValueError(f"nash_conv=True needs a small OpenSpiel game; got {cfg.game!r}")
        if cfg.nash_conv:  # refused now, not after generation 0 trained
            from populations import exploitability as ex

            try:  # its 'enumerated' line: once the start's checks passed (__init__); a
                # game of imperfect recall refused at its first sign, as selfplay-train's
                # check (populations.experiment.check_league_game) refuses it
                with ex.lines_held(), ex.exact_check(NASH_CONV_WHY):
                    ex.require_perfect_recall(ex.game_tree(self.spec))
            except games.GameContractError:  # a bug of the game's code (a ValueError too):
                raise  # one line naming the call; leaving NashConv out is no advice for it
            except ValueError as err:
                why = str(err).replace(f"; {ex.SAMPLED_HINT}", "")
                raise ValueError(f"nash_conv=True (population.nash_conv): {why}; set it false, "
                                 "or exploit.every=N (population.exploit.every) for an "
                                 "approximate NashConv") from None
        if len(self.spec.teams) != 2:
            # teams= regroups seats, PSRO plays two or more: no help for a game of one seat
            # (mpe2.simple_v3), which only population=none trains (experiment.py's words)
            other = ("; it has one seat: population=none trains it" if len(self.spec.agents) < 2
                     else f" ({resume_words().kwarg('teams', '[[...],[...]]')} groups its "
                     "seats); population=psro plays two or more seats, population=none one team")
            raise ValueError(
                f"a self-play league needs two teams; {cfg.game} has {self.spec.teams}; "
                f"accepted: a game with two teams{other}")


def cooperative_refusal(game: games.Game) -> str | None:
    """The one-line refusal of a league on a cooperative ``game`` (its class declares
    ``cooperative = True``, as the tool tasks do: every seat gets one shared reward),
    however ``teams=`` groups its seats: each match gives both sides the same return, so
    every win rate is 1/2 and the ratings rank nothing. None for other games."""
    if not getattr(game, "cooperative", False):
        return None
    return (f"a self-play league plays sides against each other; {game.spec.name} is "
            "cooperative (every seat gets one shared reward: every match is a draw and the "
            "ratings rank nothing, with teams= too); train its team alone (population=none)")


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    return obj
