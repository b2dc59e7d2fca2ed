"""Batched multi-game rollouts: many games in flight, one backend call per model per step.

:class:`RolloutEngine` plays a list of :class:`EpisodeJob` (game, seed, GRPO group, and the
seats that fixed policies play) with up to ``max_in_flight`` games at once. Every step it
collects the pending decisions of all games, sends all LLM decisions of each team model to
its backend in **one** batched call (whatever game they come from), asks fixed policies
(snapshots, classic MARL members) for their seats through a synthetic ``VecStep``, and steps
every game. A finished game's slot takes the next job at once.

Each LLM decision becomes a :class:`~llm_agents.records.Turn` holding its prompt ids,
completion ids, behaviour log-probabilities and reward: the rewards an agent receives are
credited to its latest turn (turn-based games pay an agent on another agent's turn), plus
the invalid-output penalty.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import games
from games import Game, TimeStep, VecStep
from games.tool.base import ToolTask
from llm_agents.actions import ActionConfig, game_parser, make_mode
from llm_agents.prompts import PromptBuilder, PromptConfig
from llm_agents.records import Decision, EpisodeRecord, Request, Turn
from llm_agents.team import Team
from marl.core import Policy
from marl.registry import played_greedy

log = logging.getLogger(__name__)
TEAM_SEAT = "team"


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to play.

    Attributes:
        game: registered game name or adapter spec.
        seed: reset seed; the K episodes of a GRPO group share it.
        group: GRPO group id.
        game_kwargs: keyword arguments of ``games.make``.
        opponents: seats played by fixed policies; every other seat is the team's.
    """

    game: str
    seed: int
    group: int = 0
    game_kwargs: Mapping[str, Any] = field(default_factory=dict)
    opponents: Mapping[str, Policy] = field(default_factory=dict)


@dataclass
class RolloutBatch:
    """Turns and episodes of one :meth:`RolloutEngine.run` call, plus ``charts/`` metrics."""

    turns: list[Turn]
    episodes: list[EpisodeRecord]
    games: list[str]  # Turn.game indexes this list
    metrics: dict[str, float]


@dataclass
class _Slot:
    job: int
    game: Game
    ts: TimeStep
    last_turn: dict[str, int] = field(default_factory=dict)
    turn_ids: list[int] = field(default_factory=list)
    carry: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    turns: int = 0
    # on_invalid="end": the agents whose invalid output ends it (in a simultaneous step,
    # every seat that spoke out of turn at once: each turn was charged, so is each return)
    forfeit: list[str] = field(default_factory=list)


def vecstep_of(game_list: Sequence[Game], steps: Sequence[TimeStep]) -> VecStep:
    """A text-carrying ``VecStep`` over copies of one game at arbitrary states, so any
    :class:`~marl.core.Policy` can act in them."""
    spec = game_list[0].spec
    B, ids = len(game_list), spec.agent_ids
    obs = {a: np.zeros((B, *spec.obs_shapes[a]), np.float32) for a in ids}
    legal = {a: np.zeros((B, spec.action_spaces[a].n), bool) for a in ids
             if spec.action_spaces[a].discrete}
    acting = {a: np.zeros(B, bool) for a in ids}
    text = {a: [""] * B for a in ids}
    legal_text: dict[str, list[list[str]]] = {a: [[] for _ in range(B)] for a in ids}
    for b, (g, ts) in enumerate(zip(game_list, steps, strict=True)):
        for a in ts.acting:
            obs[a][b], acting[a][b] = ts.obs[a], True
            # asked outside reset/step: a user game's bug here is one line naming the game,
            # the step, the call and the user's line (Game.guarded), as in VectorGame
            text[a][b] = g.guarded(g.text_observation, a)
            if a in legal:
                legal[a][b] = ts.legal[a]
                legal_text[a][b] = g.guarded(g.legal_action_texts, a)
    zeros = {a: np.zeros(B, np.float32) for a in ids}
    false = {a: np.zeros(B, bool) for a in ids}
    graph, agent_node = None, None
    if spec.has_entity_graph:  # a GNN snapshot drawn as an opponent reads the entity graph
        graphs = [g.guarded(g.entity_graph) for g in game_list]
        graph, agent_node = np.stack([e.nodes for e in graphs]), dict(graphs[0].agent_node)
    return VecStep(obs=obs, legal=legal, acting=acting, rewards=zeros, terminated=false,
                   truncated=dict(false), done=np.zeros(B, bool),
                   final_obs={a: np.zeros_like(o) for a, o in obs.items()},
                   episode_return=dict(zeros), episode_length=np.zeros(B, np.int64),
                   graph=graph, agent_node=agent_node, text=text, legal_text=legal_text)


class RolloutEngine:
    """Plays episode jobs with a team; see the module docstring.

    Example (16 Kuhn poker games in flight, legal-action scoring)::

        >>> import games
        >>> from llm_agents.tiny import build_model, build_tokenizer, game_corpus, prompt_corpus
        >>> from llm_agents.team import Team
        >>> from llm_agents.actions import ActionConfig
        >>> from llm_agents.prompts import PromptConfig
        >>> tok = build_tokenizer(game_corpus("openspiel/kuhn_poker", 50)
        ...                       + prompt_corpus("openspiel/kuhn_poker", PromptConfig()))
        >>> engine = RolloutEngine(Team.shared(build_model(tok), tok), ActionConfig(mode="score"))
        >>> batch = engine.run([EpisodeJob("openspiel/kuhn_poker", seed=s) for s in range(4)])
        >>> len(batch.episodes), batch.metrics["charts/legal_rate"]
        (4, 1.0)

    Args:
        team: the LLM team (roles -> models).
        action: action mode, sampling, invalid-output penalty and fallback.
        prompt: prompt templates.
        max_in_flight: games stepped together.
        seed: seed of the engine's sampling / fallback RNG.
    """

    def __init__(self, team: Team, action: ActionConfig | None = None,
                 prompt: PromptConfig | None = None, max_in_flight: int = 64,
                 seed: int = 0) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight={max_in_flight}; expected >= 1")
        self.team = team
        self.action = action or ActionConfig()
        self.mode = make_mode(self.action)
        self.builder = PromptBuilder(prompt)
        self.max_in_flight = max_in_flight
        self.rng = np.random.default_rng(seed)
        self._games: dict[tuple[int, str], Game] = {}

    # ------------------------------------------------------------------ helpers
    def _game(self, slot: int, job: EpisodeJob) -> Game:
        key = (slot, job.game + repr(sorted(job.game_kwargs.items())))
        if key not in self._games:
            self._games[key] = games.make(job.game, **job.game_kwargs)
        return self._games[key]

    def _request(self, game: Game, agent: str) -> tuple[Request, list[int]]:
        if not game.spec.action_spaces[agent].discrete:
            raise ValueError(f"{game.spec.name}: {agent} has continuous actions; LLM agents act "
                             "through legal action texts and need discrete actions")
        role = game.spec.agent(agent).role
        tm, binding = self.team.model_for(role), self.team.binding(role)
        legal_ids = list(game.guarded(game.legal_actions, agent))  # a user game's bug: one line
        legal = game.guarded(game.legal_action_texts, agent)
        req = self.builder.request(
            tm.tokenizer, game=game.spec.name, agent=agent, role=role, role_prompt=binding.prompt,
            observation=game.guarded(game.text_observation, agent), legal=legal,
            instruction=self.mode.instruction(self.builder.cfg),
            parse=game_parser(game, agent, legal_ids, legal))
        return req, legal_ids

    # --------------------------------------------------------------------- run
    def run(self, jobs: Sequence[EpisodeJob], greedy: bool = False,
            progress: Callable[[int, int, int], None] | None = None) -> RolloutBatch:
        """Play every job; episodes come back in job order. ``progress(episodes finished,
        turns played, tokens generated)`` is called after each round of backend calls (a
        progress bar inside a GRPO iteration: :attr:`MultiTurnGRPO.on_progress`)."""
        t0 = time.perf_counter()
        names = list(dict.fromkeys(j.game for j in jobs))
        turns: list[Turn] = []
        episodes: list[EpisodeRecord | None] = [None] * len(jobs)
        slots: dict[int, _Slot] = {}
        next_job = 0
        calls = 0

        def start(slot_id: int) -> None:
            nonlocal next_job
            while next_job < len(jobs) and slot_id not in slots:
                job = jobs[next_job]
                game = self._game(slot_id, job)
                slots[slot_id] = _Slot(next_job, game, game.reset(job.seed))
                seats = {a: (job.opponents[a].meta.kind if a in job.opponents else TEAM_SEAT)
                         for a in game.spec.agent_ids}
                episodes[next_job] = EpisodeRecord(job.game, job.seed, job.group,
                                                   dict.fromkeys(game.spec.agent_ids, 0.0), 0,
                                                   seats=seats)
                next_job += 1
                if slots[slot_id].ts.done:  # an episode over at reset has nothing to play
                    del slots[slot_id]

        for s in range(min(self.max_in_flight, len(jobs))):
            start(s)
        tokens = counted = 0
        while slots:
            actions, n = self._decide(jobs, slots, turns, names, greedy)
            calls += n
            for sid in list(slots):
                if self._advance(slots[sid], actions[sid], turns, episodes):
                    del slots[sid]
                    start(sid)
            if progress is not None:
                tokens += sum(len(t.decision.completion_ids) for t in turns[counted:])
                counted = len(turns)
                progress(next_job - len(slots), len(turns), tokens)
        done = [e for e in episodes if e is not None]
        return RolloutBatch(turns, done, names,
                            self._metrics(turns, done, time.perf_counter() - t0, calls))

    def _decide(self, jobs: Sequence[EpisodeJob], slots: dict[int, _Slot], turns: list[Turn],
                names: list[str], greedy: bool) -> tuple[dict[int, dict[str, int]], int]:
        """Actions of every acting agent in every slot; returns them and the backend calls."""
        actions: dict[int, dict[str, int]] = {sid: {} for sid in slots}
        by_model: dict[str, list[tuple[int, str, Request, list[int]]]] = defaultdict(list)
        by_policy: dict[tuple[int, str, str], list[int]] = defaultdict(list)
        for sid, slot in slots.items():
            job = jobs[slot.job]
            for agent in slot.ts.acting:
                if agent in job.opponents:
                    by_policy[(id(job.opponents[agent]), agent, slot.game.spec.name)].append(sid)
                    continue
                req, legal_ids = self._request(slot.game, agent)
                model = self.team.binding(slot.game.spec.agent(agent).role).model
                by_model[model].append((sid, agent, req, legal_ids))
        for model, items in by_model.items():
            decisions = self.mode.decide(self.team.models[model].backend,
                                         [it[2] for it in items], self.rng, greedy)
            for (sid, agent, _, legal_ids), d in zip(items, decisions, strict=True):
                actions[sid][agent] = legal_ids[d.index]
                self._record(slots[sid], jobs, agent, model, d, legal_ids[d.index], turns, names)
        for (_, agent, _), sids in by_policy.items():
            policy = jobs[slots[sids[0]].job].opponents[agent]
            vs = vecstep_of([slots[s].game for s in sids], [slots[s].ts for s in sids])
            # an off-policy learner's snapshot (QMIX/VDN/MADDPG) plays its argmax, as in
            # league matches and members' training: its exploration was its training's
            acts = policy.act(agent, vs, greedy=greedy or played_greedy(policy.meta.kind))
            for s, a in zip(sids, acts, strict=True):
                actions[s][agent] = int(a)
        return actions, len(by_model)

    def _record(self, slot: _Slot, jobs: Sequence[EpisodeJob], agent: str, model: str,
                d: Decision, action: int, turns: list[Turn], names: list[str]) -> None:
        job = jobs[slot.job]
        reward = slot.carry.pop(agent, 0.0)
        if not d.valid:
            reward += self.action.invalid_penalty
            if self.action.on_invalid == "end":
                slot.forfeit.append(agent)
        turns.append(Turn(episode=slot.job, group=job.group, game=names.index(job.game),
                          agent=agent, role=slot.game.spec.agent(agent).role, model=model,
                          index=slot.turns, decision=d, action=action, reward=reward))
        slot.last_turn[agent] = len(turns) - 1
        slot.turn_ids.append(len(turns) - 1)
        slot.turns += 1

    def _advance(self, slot: _Slot, actions: dict[str, int], turns: list[Turn],
                 episodes: list[EpisodeRecord | None]) -> bool:
        """Step one game; credit rewards; True when its episode ended."""
        ep = episodes[slot.job]
        assert ep is not None
        if slot.forfeit:  # SPIRAL: an invalid move ends the game unplayed
            for agent in slot.forfeit:
                ep.returns[agent] += self.action.invalid_penalty
            ep.info = {"invalid_end": ", ".join(slot.forfeit)}
            ep.turns = list(slot.turn_ids)
            if isinstance(slot.game, ToolTask):  # a task unfinished: failed (batch_metrics
                ep.info["success"] = False  # counts a user game's that reports successes)
            return True
        ts = slot.game.step(actions)
        ep.length += 1
        for agent, r in ts.rewards.items():
            ep.returns[agent] += r
            if agent in slot.last_turn:
                turns[slot.last_turn[agent]].reward += r
            else:  # paid before its first turn: credited to that turn
                slot.carry[agent] += r
        slot.ts = ts
        if ts.done:
            ep.info = dict(ts.info)
            ep.turns = list(slot.turn_ids)
        return ts.done

    def _metrics(self, turns: list[Turn], episodes: list[EpisodeRecord], seconds: float,
                 calls: int) -> dict[str, float]:
        return batch_metrics(turns, episodes, seconds, calls)


def merge_batches(batches: Sequence[RolloutBatch], seconds: float) -> RolloutBatch:
    """One batch of ``batches`` in order (episode, turn and game indices renumbered; the
    records are moved, not copied), as if one :meth:`RolloutEngine.run` had played them all;
    ``seconds`` is the wall time of the whole collection."""
    names = list(dict.fromkeys(g for b in batches for g in b.games))
    turns: list[Turn] = []
    episodes: list[EpisodeRecord] = []
    calls = 0
    for b in batches:
        for t in b.turns:
            t.episode += len(episodes)
            t.game = names.index(b.games[t.game])
        for e in b.episodes:
            e.turns = [i + len(turns) for i in e.turns]
        turns += b.turns
        episodes += b.episodes
        calls += int(b.metrics.get("charts/backend_calls", 0))
    return RolloutBatch(turns, episodes, names, batch_metrics(turns, episodes, seconds, calls))


def batch_metrics(turns: Sequence[Turn], episodes: Sequence[EpisodeRecord], seconds: float,
                  calls: int) -> dict[str, float]:
    """``charts/`` metrics of a rollout: legal rate, tokens, success, returns per role."""
    n = max(1, len(turns))
    gen = sum(len(t.decision.completion_ids) for t in turns)
    prompt = sum(len(t.decision.prompt_ids) for t in turns)
    m = {
        "charts/episodes": float(len(episodes)),
        "charts/turns": float(len(turns)),
        "charts/legal_rate": sum(t.valid for t in turns) / n,
        "charts/invalid_turns": float(sum(not t.valid for t in turns)),
        "charts/generated_tokens": float(gen),
        "charts/prompt_tokens": float(prompt),
        "charts/backend_calls": float(calls),
        "charts/rollout_seconds": seconds,
        "charts/tokens_per_second": (gen + prompt) / max(seconds, 1e-9),
    }
    # an episode ended by invalid output (on_invalid=end) failed, where its game reports
    # success: without it, a batch of such episodes only dropped success_rate
    said = {e.game for e in episodes if e.success is not None}
    succ = [e.success if e.success is not None else 0.0 for e in episodes
            if e.success is not None or ("invalid_end" in e.info and e.game in said)]
    if succ:
        m["charts/success_rate"] = float(np.mean(succ))
    team = [np.mean([r for a, r in e.returns.items() if e.seats.get(a) == TEAM_SEAT] or [0.0])
            for e in episodes]
    m["charts/team_return"] = float(np.mean(team)) if team else 0.0
    by_role: dict[str, list[float]] = defaultdict(list)
    for t in turns:
        by_role[t.role].append(t.reward)
    for role, rs in by_role.items():
        m[f"charts/turn_reward/{role}"] = float(np.mean(rs))
    return m
