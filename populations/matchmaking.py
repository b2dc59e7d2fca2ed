"""Opponent selection rules: who a learner trains against next.

Each rule maps the candidate snapshots (oldest first) and the learner's estimated win
rate against each to a probability distribution over them; rules are registered by name.

* ``self_play``: always the latest snapshot (latest vs latest).
* ``fsp``: fictitious self-play, uniform over all past snapshots (Heinrich et al., 2015).
* ``pfsp``: prioritized fictitious self-play (Vinyals et al., 2019, AlphaStar): weights
  ``f(p)`` of the learner's win rate ``p`` against each snapshot, with ``hard``
  ``f(p) = (1 - p)^exponent`` (focus on opponents the learner loses to) or ``variance``
  ``f(p) = p (1 - p)`` (focus on even matches). Unknown win rates count as 0.5.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MatchmakingConfig:
    """Settings of the opponent selection rules."""

    rule: str = "pfsp"  # self_play | fsp | pfsp
    weighting: str = "hard"  # pfsp: hard | variance
    exponent: float = 2.0  # pfsp hard: f(p) = (1 - p) ** exponent
    smoothing: float = 0.0  # pfsp: mix this much of uniform into the weights (exploration)

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(
                f"matchmaking rule {self.rule!r} unknown; choose one of {sorted(RULES)}"
            )
        if self.weighting not in PFSP_WEIGHTINGS:
            raise ValueError(f"pfsp weighting {self.weighting!r} unknown; choose one of "
                             f"{sorted(PFSP_WEIGHTINGS)}")
        if self.rule == "pfsp" and self.weighting == "hard" and (
                not self.exponent >= 0.0 or self.exponent == float("inf")):  # NaN fails too
            raise ValueError(f"pfsp exponent={self.exponent!r}; expected a finite value >= 0 "
                             "(hard weighting (1 - p) ** exponent)")
        if not 0.0 <= self.smoothing <= 1.0:
            raise ValueError(f"smoothing={self.smoothing!r}; expected a value in [0, 1]")


Rule = Callable[[np.ndarray, MatchmakingConfig], np.ndarray]
RULES: dict[str, Rule] = {}


def register_rule(name: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        RULES[name] = fn
        return fn

    return deco


def _log_hard(p: np.ndarray, e: float) -> np.ndarray:
    if e == 0.0:  # (1 - p) ** 0 = 1, at p = 1 too (0 * log 0 would be NaN)
        return np.zeros_like(p)
    with np.errstate(divide="ignore"):
        return e * np.log1p(-p)  # -inf at p = 1


# log f(p): weights are compared in log space, so (1 - p) ** 2000 (0.0 in float64 for every
# p >= 0.3) still prefers the opponent the learner loses to
PFSP_WEIGHTINGS: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {
    "hard": _log_hard,
    "variance": lambda p, e: np.log(p * (1.0 - p), where=(p > 0) & (p < 1),
                                    out=np.full_like(p, -np.inf)),
}


@register_rule("self_play")
def _self_play(win_rates: np.ndarray, cfg: MatchmakingConfig) -> np.ndarray:
    probs = np.zeros_like(win_rates)
    probs[-1] = 1.0
    return probs


@register_rule("fsp")
def _fsp(win_rates: np.ndarray, cfg: MatchmakingConfig) -> np.ndarray:
    return np.full_like(win_rates, 1.0 / len(win_rates))


@register_rule("pfsp")
def _pfsp(win_rates: np.ndarray, cfg: MatchmakingConfig) -> np.ndarray:
    log_w = PFSP_WEIGHTINGS[cfg.weighting](np.clip(win_rates, 0.0, 1.0), cfg.exponent)
    if np.isneginf(log_w).all():  # e.g. the learner beats everyone surely: uniform
        log_w = np.zeros_like(log_w)
    w = np.exp(log_w - log_w.max())
    w = w / w.sum()
    return (1.0 - cfg.smoothing) * w + cfg.smoothing / len(w)


def opponent_distribution(win_rates: Sequence[float | None], cfg: MatchmakingConfig) -> np.ndarray:
    """Probabilities over candidate snapshots (oldest first); ``None`` win rates count as 0.5."""
    if len(win_rates) == 0:
        raise ValueError("no candidate opponents: publish a snapshot first")
    p = np.array([0.5 if w is None else float(w) for w in win_rates], dtype=np.float64)
    return RULES[cfg.rule](p, cfg)
