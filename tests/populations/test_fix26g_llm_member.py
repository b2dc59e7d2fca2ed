"""An LLM league member's generation as the walker met it (fix26g).

* Its bar moved once per GRPO iteration: with a real model an iteration is minutes, and the
  bar sat still. It now moves as the iteration's episodes finish
  (:attr:`llm_agents.trainer.MultiTurnGRPO.on_progress`).
* Ctrl-C waits for the member's whole generation (the league stops between generations,
  documented); nothing said how long. The member names the iterations left and about how
  long they take, once, after the iteration in which the stop was asked for.
"""

from __future__ import annotations

import logging
import os
import re
import signal

import pytest

from llm_agents.actions import ActionConfig
from llm_agents.build import build_trainer
from llm_agents.prompts import PromptConfig
from llm_agents.settings import GRPOConfig, LLMConfig, TinyModelConfig
from populations.members import GenerationMatchmaker, LLMMember, OpponentDraw, TrainPlan
from populations.run_folder import deferred_stop, sigterm_as_interrupt

KUHN = "openspiel/kuhn_poker"
PER_ITERATION = 2 * 3  # groups_per_step x group_size episodes


def _member(iterations: int) -> LLMMember:
    prompt = PromptConfig(system="{role}", user="{observation} : {legal}",
                          generate_instruction="", score_instruction="", legal_separator=" ")
    grpo = GRPOConfig(group_size=3, groups_per_step=2, minibatch_turns=8, lr=1e-3,
                      max_in_flight=2, action=ActionConfig(mode="score"), prompt=prompt)
    cfg = LLMConfig(tiny=TinyModelConfig(n_layer=1, n_embd=16, n_head=2), corpus_episodes=5,
                    iterations=iterations, grpo=grpo)
    return LLMMember("llm", build_trainer(cfg, [KUHN], device="cpu"), iterations)


def _generation(member: LLMMember) -> list[int]:
    """One generation against the member's own untrained snapshot; the bar's ticks."""
    snapshot = member.trainer.policy()
    plan = TrainPlan(KUHN, {}, num_envs=4, frames=0, seed=0, generation=1, team_of=(0, 1))
    draw = OpponentDraw(ids=(0,), probs=(1.0,), opponent_prob=1.0, seed=0)
    ticks: list[int] = []
    mm = GenerationMatchmaker(member.name, plan, draw, lambda sid: snapshot,
                              lambda f, m: None, tick=ticks.append)
    assert member.train_generation(mm) == member.iterations * PER_ITERATION
    return ticks


def test_the_members_bar_moves_inside_an_iteration():
    member = _member(2)
    ticks = _generation(member)
    assert ticks == sorted(set(ticks)) and ticks[-1] == 2 * PER_ITERATION
    inside = [t for t in ticks if t % PER_ITERATION]
    assert inside, ticks  # before: [6, 12], one tick per iteration
    assert member.trainer.on_progress is None  # the generation's own, taken off after


def test_a_stop_request_names_the_rest_of_the_generation(caplog):
    member = _member(3)
    with (caplog.at_level(logging.WARNING, logger="populations.members"),
          sigterm_as_interrupt(), pytest.raises(KeyboardInterrupt),
          deferred_stop("after the member in training")):  # the stop raises at its end
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C before the first iteration ends
        ticks = _generation(member)
    assert ticks[-1] == 3 * PER_ITERATION  # the whole generation trained, then it stopped
    lines = [r.getMessage() for r in caplog.records if r.name == "populations.members"]
    assert len(lines) == 1, lines
    assert re.fullmatch(r"finishing llm's generation before stopping: 1 of its 3 GRPO "
                        r"iterations done, 2 more \(about \d+s\); a second Ctrl-C or SIGTERM "
                        r"stops now \(the resume trains this generation again\)", lines[0]), lines
