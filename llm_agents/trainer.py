"""Multi-turn, multi-agent GRPO for LLM teams (group-relative PPO-clip over LLM turns).

One iteration (:meth:`MultiTurnGRPO.step`):

1. **Rollouts** -- ``groups_per_step`` groups of ``group_size`` episodes; the episodes of a
   group share the game, the seed (so the same deal / task instance) and the opponents.
   All games are in flight at once (:class:`~llm_agents.rollout.RolloutEngine`).
2. **Credit** -- per turn: reward until the agent's next turn (plus invalid-output penalty),
   return-to-go over the agent's own turns, normalized by the configured scheme of
   ``marl.advantages`` (``global``, ``agent`` -- Dr. MAS, ``role``, ``role_ema`` -- SPIRAL's
   role-conditioned baseline, ``group_role``...), on the learner's device
   (:mod:`llm_agents.credit`).
3. **Update** -- ``epochs`` passes of minibatches of turns: PPO-clip on the trained units
   only (generated tokens, or the scored choice; prompt and observation tokens never enter
   the loss), optional KL to a frozen reference model and entropy bonus, global gradient
   clipping. Each minibatch is back-propagated role by role so the gradient norm of every
   role is logged (``losses/grad_norm/<role>``).

GRPO: Shao et al., 2024 (arXiv:2402.03300); multi-agent normalizations: Dr. MAS
(arXiv:2602.08847), SPIRAL (arXiv:2506.24119).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

import games
from llm_agents import losses
from llm_agents.actions import behaviour_logprobs
from llm_agents.backends.hf import resolve_device
from llm_agents.credit import KeyIndex, turn_advantages
from llm_agents.opponents import OpponentPool
from llm_agents.policy import LLMPolicy
from llm_agents.records import EpisodeRecord, Turn
from llm_agents.rollout import TEAM_SEAT, EpisodeJob, RolloutBatch, RolloutEngine
from llm_agents.settings import ActionConfig, GRPOConfig  # noqa: F401 - their old home
from llm_agents.team import Team, TeamModel, backend_for
from marl.advantages import RoleEMABaseline, broadcast_to_tokens
from marl.core import ModelChangedError, Policy, seed_from_state
from marl.guards import FiniteGuard, NonFiniteError
from marl.losses import ppo_clip_loss
from marl.state_checks import load_optimizer_state

log = logging.getLogger(__name__)


def _grad_norm(params: Sequence[nn.Parameter]) -> float:
    sq = [p.grad.detach().float().pow(2).sum() for p in params if p.grad is not None]
    return float(torch.stack(sq).sum().sqrt()) if sq else 0.0


@dataclass(frozen=True)
class StepProgress:
    """Where :meth:`MultiTurnGRPO.step` is, for a progress bar (:attr:`MultiTurnGRPO.
    on_progress`): an iteration of a real model runs for minutes."""

    phase: str  # "rollout": episodes played | "update": minibatches of turns done
    done: int  # episodes finished (rollout) | minibatches done (update)
    total: int  # episodes of the iteration | minibatches of the update (epochs included)
    turns: int = 0  # rollout: LLM turns played so far
    tokens: int = 0  # rollout: tokens of those turns' outputs (generated or scored)

    def text(self) -> str:
        """``rollout 12/64 episodes, 230 turns, 5.1k tokens`` / ``update 3/8 minibatches``."""
        if self.phase == "rollout":
            tokens = f"{self.tokens / 1000:.1f}k" if self.tokens >= 1000 else str(self.tokens)
            return (f"rollout {self.done}/{self.total} episodes, {self.turns} turns, "
                    f"{tokens} tokens")
        return f"{self.phase} {self.done}/{self.total} minibatches"


class MultiTurnGRPO:
    """Trains an LLM :class:`Team` on one or more games; see the module docstring.

    Example (a tiny model trained for one iteration of Kuhn poker self-play)::

        >>> import torch
        >>> from llm_agents import MultiTurnGRPO, GRPOConfig, ActionConfig, Team
        >>> from llm_agents.tiny import build_model, build_tokenizer, game_corpus, prompt_corpus
        >>> cfg = GRPOConfig(group_size=4, groups_per_step=4, adv_norm="role", lr=1e-3,
        ...                  action=ActionConfig(mode="score"), device="cpu")
        >>> tok = build_tokenizer(game_corpus("openspiel/kuhn_poker", 50)
        ...                       + prompt_corpus("openspiel/kuhn_poker", cfg.prompt))
        >>> model = build_model(tok)
        >>> before = [p.detach().clone() for p in model.parameters()]
        >>> trainer = MultiTurnGRPO(Team.shared(model, tok), "openspiel/kuhn_poker", cfg)
        >>> metrics = trainer.step()
        >>> sorted(k for k in metrics if k.startswith("losses/grad_norm/"))
        ['losses/grad_norm/player_0', 'losses/grad_norm/player_1']
        >>> any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
        True

    Args:
        team: the team (its models are moved to ``cfg.device`` and trained in place).
        games_: game name(s); groups cycle through them.
        cfg: hyperparameters.
        game_kwargs: ``{game name: games.make keyword arguments}``.
        opponents: league opponents for multi-team games (default: pure self-play).
    """

    def __init__(self, team: Team, games_: str | Sequence[str], cfg: GRPOConfig | None = None,
                 game_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                 opponents: OpponentPool | None = None) -> None:
        self.cfg = cfg = cfg or GRPOConfig()
        self.team = team
        self.games = [games_] if isinstance(games_, str) else list(games_)
        self.game_kwargs = {g: dict((game_kwargs or {}).get(g, {})) for g in self.games}
        self.specs = {g: games.make(g, **self.game_kwargs[g]).spec for g in self.games}
        self.opponents = opponents or OpponentPool()
        self.device = resolve_device(cfg.device)
        for tm in team.models.values():
            tm.model.to(self.device)
            if hasattr(tm.backend, "to"):
                tm.backend.to(self.device)
        self.engine = RolloutEngine(team, cfg.action, cfg.prompt, cfg.max_in_flight, cfg.seed)
        self.mode = self.engine.mode
        self.params = list({id(p): p for _, m in team.modules() for p in m.parameters()
                            if p.requires_grad}.values())
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.ref: dict[str, nn.Module] = {}
        if cfg.kl_coef > 0:
            for name, model in team.modules():
                self.ref[name] = copy.deepcopy(model).eval().requires_grad_(False)
        self.baseline = RoleEMABaseline()
        self.index = KeyIndex()
        self.rng = np.random.default_rng(cfg.seed)
        self.iteration = 0
        self.rollouts: Any = None  # rollout workers (llm_agents.ray_rollouts); None: in-process
        # called with a StepProgress during step(): episodes played (in-process rollouts),
        # then minibatches updated; None: nothing is reported
        self.on_progress: Callable[[StepProgress], None] | None = None
        # called with the same StepProgress as on_progress, for a display alone (a bar's
        # postfix: "update 9/23 minibatches"); on_progress belongs to whoever drives the
        # iterations (a league member counts its episodes with it), this to whoever shows them
        self.on_status: Callable[[StepProgress], None] | None = None
        self._unknown_told = False  # the unknown-token warning: said once per trainer
        self._slow_told = False  # the slow-iteration line: said once per trainer

    # ----------------------------------------------------------------- rollouts
    def jobs(self) -> list[EpisodeJob]:
        """The next iteration's episodes: G groups x K copies of (game, seed, opponents)."""
        out = []
        for g in range(self.cfg.groups_per_step):
            game = self.games[(self.iteration * self.cfg.groups_per_step + g) % len(self.games)]
            seed = int(self.rng.integers(2**31 - 1))
            opp = self.opponents.sample(self.specs[game], self.rng)
            out += [EpisodeJob(game, seed, g, self.game_kwargs[game], opp)
                    for _ in range(self.cfg.group_size)]
        return out

    def collect(self) -> RolloutBatch:
        """Play one iteration's episodes with the current weights (on the rollout workers,
        after a weight push, when ``rollouts`` is set)."""
        if self.rollouts is not None:
            return self.rollouts.collect(self.jobs(), self.iteration)
        self.team.sync()
        jobs = self.jobs()
        if self.on_progress is None and self.on_status is None:
            return self.engine.run(jobs)
        return self.engine.run(jobs, progress=lambda done, turns, tokens: self._report(
            StepProgress("rollout", done, len(jobs), turns, tokens)))

    def _report(self, p: StepProgress) -> None:
        """Tell :attr:`on_progress`, then :attr:`on_status`, where the iteration is."""
        if self.on_progress is not None:
            self.on_progress(p)
        if self.on_status is not None:
            self.on_status(p)

    def step(self) -> dict[str, float]:
        """Collect, then update; returns ``charts/``, ``adv/`` and ``losses/`` metrics."""
        start = time.perf_counter()
        batch = self.collect()
        if not self._unknown_told:
            self._unknown_told = warn_unknown_tokens(self.team, batch.turns)
        metrics = {**batch.metrics, **side_metrics(batch.episodes, self.specs),
                   **self.update(batch)}
        self.iteration += 1
        metrics["charts/iteration"] = float(self.iteration)
        if not self._slow_told:
            self._slow_told = True
            self._say_if_slow(time.perf_counter() - start, batch)
        return metrics

    def _say_if_slow(self, seconds: float, batch: RolloutBatch) -> None:
        """One line after a first iteration of :data:`SLOW_ITERATION_S` or more: how long it
        took and what it played (``selfplay-train algo=llm_grpo`` without ``game=`` plays
        simple_spread, ~389 s an iteration on a CPU, and said nothing of it)."""
        if seconds < SLOW_ITERATION_S:
            return
        cfg = self.cfg
        log.info("GRPO iteration took %.0f s: %d episodes of %s (groups_per_step %d x "
                 "group_size %d), %d turns; later iterations take about as long or less (the "
                 "first also warms up): a smaller game or fewer episodes (groups_per_step, "
                 "group_size) run faster",
                 seconds, len(batch.episodes), ", ".join(self.games), cfg.groups_per_step,
                 cfg.group_size, len(batch.turns))

    def train(self, iterations: int, log_every: int = 10) -> list[dict[str, float]]:
        """``iterations`` steps; logs legal rate, success and return every ``log_every``."""
        history = []
        for i in range(iterations):
            history.append(self.step())
            if log_every and (i + 1) % log_every == 0:
                m = history[-1]
                log.info("iteration %d: legal %.3f success %s return %.3f", self.iteration,
                         m["charts/legal_rate"], m.get("charts/success_rate"),
                         m["charts/team_return"])
        return history

    @torch.no_grad()
    def evaluate(self, episodes: int, greedy: bool = False, seed: int = 10**6,
                 opponents: Mapping[str, Policy] | None = None) -> dict[str, float]:
        """Rollout metrics of ``episodes`` fresh episodes per game (no training)."""
        self.team.sync()
        jobs = [EpisodeJob(g, seed + e, e, self.game_kwargs[g], dict(opponents or {}))
                for g in self.games for e in range(episodes)]
        batch = self.engine.run(jobs, greedy=greedy)
        return {**batch.metrics, **side_metrics(batch.episodes, self.specs)}

    def policy(self, agents: Sequence[str] | None = None, game: str | None = None) -> LLMPolicy:
        """A frozen copy of the team as a population member (independent of later updates)."""
        models = {}
        for name, tm in self.team.models.items():
            frozen = copy.deepcopy(tm.model).requires_grad_(False)
            models[name] = TeamModel(name, frozen, tm.tokenizer,
                                     backend_for(frozen, tm.tokenizer, "transformers",
                                                 seed=self.cfg.seed))
        team = Team(models, dict(self.team.roles))
        spec = self.specs[game or self.games[0]]
        return LLMPolicy.from_team(team, spec, agents, self.cfg.action, self.cfg.prompt,
                                   step=self.iteration, seed=self.cfg.seed)

    # ------------------------------------------------------------------- update
    def _unit_logprobs(self, models: Mapping[str, nn.Module], turns: Sequence[Turn],
                       chunk: int) -> list[Tensor]:
        """Per turn, the log-probabilities of its trained units under ``models`` (no grad)."""
        out: list[Tensor | None] = [None] * len(turns)
        by_model: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(turns):
            by_model[t.model].append(i)
        with torch.no_grad():
            for name, idx in by_model.items():
                pad = self.team.models[name].pad_id
                for s in range(0, len(idx), chunk):
                    part = idx[s : s + chunk]
                    ul = self.mode.unit_logprobs(models[name], [turns[i] for i in part], pad,
                                                 self.device)
                    rows = torch.split(ul.logp[ul.mask], ul.mask.sum(1).tolist())
                    for i, r in zip(part, rows, strict=True):
                        out[i] = r
        return out  # type: ignore[return-value]

    def update(self, batch: RolloutBatch) -> dict[str, float]:
        """One PPO-clip update on the batch's turns; returns ``losses/`` and ``adv/`` metrics."""
        t0 = time.perf_counter()
        turns = batch.turns
        if not turns:
            return {}
        cfg = self.cfg
        self._batch_games = batch.games  # names the game in a non-finite loss error
        res = turn_advantages(turns, batch.games, cfg.adv_norm, self.index, gamma=cfg.gamma,
                              cfg=cfg.advantage_config(), state=self.baseline,
                              device=self.device)  # fmt: skip
        adv = res.advantages.float()  # [N]
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate()
        keep = res.mask.nonzero().squeeze(1).tolist()
        models = {name: tm.model for name, tm in self.team.models.items()}
        chunk = cfg.minibatch_turns
        # One minibatch, one epoch: the weights are still those of the rollout, so the old
        # log-probabilities are the current ones (detached) and need no extra pass.
        single = cfg.epochs == 1 and len(keep) <= chunk
        total, done = cfg.epochs * -(-len(keep) // chunk), 0
        self._report(StepProgress("update", 0, total))  # the old / reference passes first
        old = (self._unit_logprobs(models, turns, chunk)
               if cfg.recompute_old_logprobs and not single else None)
        ref = self._unit_logprobs(self.ref, turns, chunk) if self.ref else None
        stats: dict[str, list[float]] = defaultdict(list)
        for _ in range(cfg.epochs):
            order = [keep[i] for i in self.rng.permutation(len(keep))]
            for s in range(0, len(order), chunk):
                mb = order[s : s + chunk]
                for k, v in self._minibatch(turns, mb, adv, old, ref).items():
                    stats[k].append(v)
                done += 1
                self._report(StepProgress("update", done, total))
        out = {k: float(np.mean(v)) for k, v in stats.items()}
        out.update(res.diagnostics)
        out["charts/update_seconds"] = time.perf_counter() - t0
        out["charts/learning_rate"] = self.learning_rate()
        out["charts/trained_turns"] = float(len(keep))
        return out

    def learning_rate(self) -> float:
        """``cfg.lr``, linearly decayed over ``cfg.lr_decay_iterations`` when set."""
        if not self.cfg.lr_decay_iterations:
            return self.cfg.lr
        return self.cfg.lr * max(0.0, 1.0 - self.iteration / self.cfg.lr_decay_iterations)

    def _minibatch(self, turns: Sequence[Turn], mb: list[int], adv: Tensor,
                   old: list[Tensor] | None, ref: list[Tensor] | None) -> dict[str, float]:
        """Loss, role-by-role backward (per-role gradient norms), clipping and one step."""
        cfg = self.cfg
        chunks: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i in mb:
            chunks[(turns[i].model, turns[i].role)].append(i)
        units = sum(len(turns[i].decision.logprobs) for i in mb)
        agg = losses.resolve(losses.AGGREGATIONS, "loss aggregation", cfg.loss_agg)
        acc: dict[str, float] = defaultdict(float)
        self.optimizer.zero_grad(set_to_none=True)
        for (name, role), idx in chunks.items():
            part = [turns[i] for i in idx]
            tm = self.team.models[name]
            ul = self.mode.unit_logprobs(tm.model, part, tm.pad_id, self.device,
                                         with_entropy=True)
            mask = ul.mask
            if old is not None:
                old_lp = _layout([old[i] for i in idx], mask)
            elif cfg.recompute_old_logprobs:  # single pass: weights unchanged since rollout
                old_lp = ul.logp.detach()
            else:
                old_lp = behaviour_logprobs(part, mask)
            rows = torch.arange(len(idx), device=self.device)[:, None].expand_as(mask)
            adv_u = broadcast_to_tokens(adv[idx], torch.where(mask, rows, -1))  # [n, L]
            w = agg(mask, units, len(mb))
            pg = ppo_clip_loss(ul.logp, old_lp, adv_u, cfg.clip_low, cfg.clip_high, weight=w)
            loss = pg.loss - cfg.ent_coef * (w * ul.entropy).sum()
            if ref is not None:
                kl = losses.KL_ESTIMATORS[cfg.kl_estimator](
                    ul.logp, _layout([ref[i] for i in idx], mask))
                loss = loss + cfg.kl_coef * (w * kl).sum()
                acc["losses/kl"] += (w * kl).sum().item()
            self._check_finite("loss", loss, part)
            acc[f"losses/grad_norm/{role}"] = self._backward(loss)
            with torch.no_grad():
                acc["losses/pg_loss"] += pg.loss.item()
                acc["losses/entropy"] += (w * ul.entropy).sum().item()
                acc["losses/clipfrac"] += pg.clipfrac.item()  # units the clip zeroed
                acc["losses/approx_kl"] += pg.approx_kl.item()
        acc["losses/grad_norm"] = float(nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm))
        self._check_finite("gradient norm", acc["losses/grad_norm"], [turns[i] for i in mb])
        self.optimizer.step()
        return dict(acc)

    def _check_finite(self, quantity: str, value: Tensor | float, part: Sequence[Turn]) -> None:
        """Stop before ``optimizer.step()`` when a loss or gradient norm is NaN or inf."""
        if np.isfinite(float(value.detach() if isinstance(value, Tensor) else value)):
            return
        games_ = sorted({self._batch_games[t.game] for t in part})
        agents = sorted({t.agent for t in part})
        try:
            FiniteGuard(", ".join(games_), tuple(agents), unit="iteration").scalar(
                self.iteration, quantity, value)
        except NonFiniteError as err:  # the settings that scale the loss, as the user types them
            cfg = self.cfg
            raise NonFiniteError(
                f"{err} (here llm.grpo.lr={cfg.lr:g}, max_grad_norm={cfg.max_grad_norm:g}, "
                f"action.invalid_penalty={cfg.action.invalid_penalty:g}, "
                f"kl_coef={cfg.kl_coef:g}, ent_coef={cfg.ent_coef:g})") from None

    def _backward(self, loss: Tensor) -> float:
        """Back-propagate one role's loss; return the norm of that role's gradient alone."""
        stash = [p.grad for p in self.params]
        for p in self.params:
            p.grad = None
        loss.backward()
        norm = _grad_norm(self.params)
        for p, g in zip(self.params, stash, strict=True):
            if g is not None:
                p.grad = g if p.grad is None else p.grad.add_(g)
        return norm

    # -------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Weights, optimizer, role baselines, key ids, counters, RNG and each model's tokenizer
        hash (plain values)."""
        return {
            "models": {name: m.state_dict() for name, m in self.team.modules()},
            "optimizer": self.optimizer.state_dict(),
            "baseline": self.baseline.state_dict(),
            "index": self.index.state_dict(),
            "iteration": self.iteration,
            "rng": self.rng.bit_generator.state,
            "engine_rng": self.engine.rng.bit_generator.state,
            "backend_rng": {name: gen.get_state() for name, gen in self._backend_gens()},
            # a CUDA stream's state does not fit a CPU generator (nor the reverse)
            "backend_rng_device": {name: gen.device.type for name, gen in self._backend_gens()},
            # a resume checks it: a model folder's tokenizer swapped for another of its size
            "tokenizers": self._tokenizer_digests(),
        }

    def _tokenizer_digests(self) -> dict[str, str]:
        """Each model's tokenizer as a hash of its token -> id map and EOS id (computed once:
        a real vocabulary's takes ~0.1 s)."""
        if getattr(self, "_digests", None) is None:
            self._digests = {name: vocab_digest(tm.tokenizer)
                             for name, tm in self.team.models.items()}
        return self._digests

    def _check_models(self, state: dict[str, Any]) -> None:
        """Refuse a checkpoint whose models' tensors (names, shapes) or tokenizers differ from
        this team's, naming the first difference (:class:`ModelChangedError`); torch's own
        error names nothing on its first line."""
        saved_models, digests = state["models"], state.get("tokenizers", {})
        for name, m in self.team.modules():
            saved = saved_models[name]
            if not isinstance(saved, Mapping):
                continue  # left to load_state_dict's own error
            now = m.state_dict()
            for key in [*now, *(k for k in saved if k not in now)]:
                was, cur = saved.get(key), now.get(key)
                if was is None or cur is None or _shape(was) != _shape(cur):
                    raise ModelChangedError(f"model {name!r}: {key} is {_shape(was)} in the "
                                            f"checkpoint, {_shape(cur)} now")
            digest = digests.get(name) if isinstance(digests, Mapping) else None
            if digest is not None and digest != self._tokenizer_digests().get(name):
                raise ModelChangedError(f"model {name!r}: its tokenizer is not the checkpoint's "
                                        "(other tokens, or the same under other ids)")

    def _backend_gens(self) -> list[tuple[str, torch.Generator]]:
        return [(name, tm.backend.generator) for name, tm in self.team.models.items()
                if isinstance(getattr(tm.backend, "generator", None), torch.Generator)]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._check_models(state)
        for name, m in self.team.modules():
            m.load_state_dict(state["models"][name])
        load_optimizer_state(self.optimizer, state["optimizer"], "optimizer")  # torch's: unchecked
        self.baseline.load_state_dict(state["baseline"])
        self.index.load_state_dict(state["index"])
        self.iteration = int(state["iteration"])
        self.rng.bit_generator.state = state["rng"]
        self.engine.rng.bit_generator.state = state["engine_rng"]
        # a checkpoint saved on another kind of device (the device may change on a resume)
        # restarts the sampling stream from its state (one from before the record: by size)
        devices = state.get("backend_rng_device", {})
        for name, rng in state.get("backend_rng", {}).items():
            gen, rng = self.team.models[name].backend.generator, torch.as_tensor(rng)
            if devices.get(name, gen.device.type) == gen.device.type \
                    and rng.numel() == gen.get_state().numel():
                gen.set_state(rng)
            else:
                gen.manual_seed(seed_from_state(rng))


SLOW_ITERATION_S = 60.0
"""A trainer's first iteration that takes this long or longer is said in one line."""
UNKNOWN_SHARE_TOLD = 0.25
"""A batch whose prompts are more than this share of the tokenizer's unknown token (per
model) is warned about: its tokenizer was likely built from another game's texts."""


def warn_unknown_tokens(team: Team, turns: Sequence[Turn]) -> bool:
    """Warn in one line when a model's tokenizer reads more than :data:`UNKNOWN_SHARE_TOLD` of
    the prompt tokens of ``turns`` as its unknown token (a word-level tokenizer built from
    Kuhn poker's texts read 87% of Leduc's prompts so, and training went on, silently).
    Returns whether it warned (or there were prompts to judge): the trainer asks once."""
    ids: dict[str, list[int]] = defaultdict(list)
    for t in turns:
        ids[t.model].extend(t.decision.prompt_ids)
    for name, seen in sorted(ids.items()):
        unk = getattr(team.models[name].tokenizer, "unk_token_id", None)
        if unk is None or not seen:
            continue
        share = float(np.mean(np.asarray(seen) == unk))
        if share > UNKNOWN_SHARE_TOLD:
            log.warning("model %r: %.0f%% of the prompt tokens are its tokenizer's unknown "
                        "token: the tokenizer does not know this game's words (built from "
                        "another game's texts, or texts without this preset's prompt words?); "
                        "build it from these games' texts and prompts", name,
                        100 * share)
            return True
    return bool(ids)


def _shape(tensor: Any) -> str:
    return "absent" if tensor is None else str(list(getattr(tensor, "shape", ())))


def vocab_digest(tokenizer: Any) -> str:
    """A hash of ``tokenizer``'s token -> id map and EOS id (equal for equal tokenizers)."""
    vocab = sorted(tokenizer.get_vocab().items())
    text = json.dumps([vocab, tokenizer.eos_token_id], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def side_metrics(episodes: Sequence[EpisodeRecord],
                 specs: Mapping[str, games.GameSpec]) -> dict[str, float]:
    """How each side the team plays does: ``charts/seat_return/<seat>`` (the mean return of
    each seat the team held) and ``charts/win_rate/<side>`` (per team of the game the team
    held: 1 when that side's score, the mean of its seats' returns, beats every other side's,
    1/k when k sides tie for the best, else 0; averaged over those episodes).

    ``charts/team_return`` averages over every seat the team held, so in zero-sum self-play
    (the team holds every seat) it is 0 by construction; these say which side wins
    (Kuhn: ``win_rate/player_0`` + ``win_rate/player_1`` = 1 in self-play)."""
    seat_ret: dict[str, list[float]] = defaultdict(list)
    wins: dict[str, list[float]] = defaultdict(list)
    for e in episodes:
        spec = specs[e.game]
        held = [a for a in spec.agent_ids if e.seats.get(a) == TEAM_SEAT]  # as team_return
        for a in held:
            seat_ret[a].append(float(e.returns.get(a, 0.0)))
        score = {t: float(np.mean([e.returns.get(a.id, 0.0) for a in spec.agents
                                   if a.team == t])) for t in spec.teams}
        if len(score) < 2:
            continue  # a cooperative game: success and team return say it
        best = max(score.values())
        tied = [t for t, v in score.items() if v >= best - 1e-9]
        for t in dict.fromkeys(a.team for a in spec.agents if a.id in held):  # the game's order
            wins[t].append(1.0 / len(tied) if t in tied else 0.0)
    out = {f"charts/seat_return/{a}": float(np.mean(r)) for a, r in seat_ret.items()}
    out.update({f"charts/win_rate/{t}": float(np.mean(w)) for t, w in wins.items()})
    return out


def _layout(rows: Sequence[Tensor], mask: Tensor) -> Tensor:
    """``[n, L]`` tensor with ``rows[i]`` on the True entries of ``mask[i]``."""
    out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    out[mask] = torch.cat(list(rows)).to(mask.device)
    return out
