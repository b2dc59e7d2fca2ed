"""Opponent selection rules: who a learner trains against next.

Each rule maps the candidate snapshots (oldest first) and the learner's estimated win
rate against each to a probability distribution over them; rules are registered by name.

* ``self_play``: always the latest snapshot (latest vs latest). Its candidates are the
  learner's own snapshots (:data:`OWN_SNAPSHOTS`), so in a league of several members each
  plays its own latest; a member with an ``opponents`` filter (a main exploiter) meets
  the newest snapshot of those members instead.
* ``fsp``: fictitious self-play, uniform over all past snapshots (Heinrich et al., 2015).
* ``pfsp``: prioritized fictitious self-play (Vinyals et al., 2019, AlphaStar): weights
  ``f(p)`` of the learner's win rate ``p`` against each snapshot, with ``hard``
  ``f(p) = (1 - p)^exponent`` (focus on opponents the learner loses to) or ``variance``
  ``f(p) = p (1 - p)`` (focus on even matches). Unknown win rates count as 0.5.

A rule of your own is a function ``rule(win_rates [N], cfg: MatchmakingConfig) -> [N]``
registered with ``@register_rule("name")`` (``population.matchmaking.rule=name``; its module
reaches the command line by ``imports=[module]``, or an installed package's
``selfplay.matchmaking_rules`` entry point, loaded when a command line starts and when an
unknown rule is named, as the other ``selfplay.*`` groups are). It returns non-negative
weights over the ``N`` candidates, normalized here (a distribution is weights summing to 1);
an exception, or weights of another length, NaN, negative or all zero, is refused in one line
naming the rule (:class:`RuleError`). A taken name is refused: a built-in is never replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from games.registry import OWN_PACKAGES, defined_at, redefinition
from marl.configs import did_you_mean
from populations.meta_solvers import code_line


@dataclass(frozen=True)
class MatchmakingConfig:
    """Settings of the opponent selection rules."""

    rule: str = "pfsp"  # self_play | fsp | pfsp
    weighting: str = "hard"  # pfsp: hard | variance
    exponent: float = 2.0  # pfsp hard: f(p) = (1 - p) ** exponent
    smoothing: float = 0.0  # pfsp: mix this much of uniform into the weights (exploration)

    def __post_init__(self) -> None:
        if self.rule not in RULES:  # installed packages' ``selfplay.matchmaking_rules``
            from games.registry import load_entry_points

            load_entry_points(ENTRY_POINTS)
        if self.rule not in RULES:
            raise ValueError(
                f"matchmaking rule {self.rule!r} unknown; choose one of {sorted(RULES)}; a "
                "rule of your own is registered by @register_rule (populations.matchmaking) "
                "when its module is imported (selfplay-train imports=[module]) or by an "
                f"installed package's {ENTRY_POINTS} entry point{did_you_mean(self.rule, RULES)}"
            )
        if self.weighting not in PFSP_WEIGHTINGS:
            raise ValueError(f"pfsp weighting {self.weighting!r} unknown; choose one of "
                             f"{sorted(PFSP_WEIGHTINGS)}"
                             f"{did_you_mean(self.weighting, PFSP_WEIGHTINGS)}")
        if self.rule == "pfsp" and self.weighting == "hard" and (
                not self.exponent >= 0.0 or self.exponent == float("inf")):  # NaN fails too
            raise ValueError(f"pfsp exponent={self.exponent!r}; expected a finite value >= 0 "
                             "(hard weighting (1 - p) ** exponent)")
        if not 0.0 <= self.smoothing <= 1.0:
            raise ValueError(f"smoothing={self.smoothing!r}; expected a value in [0, 1]")


Rule = Callable[[np.ndarray, MatchmakingConfig], np.ndarray]
RULES: dict[str, Rule] = {}
# rules whose candidates are the learner's own snapshots (when its member sets no
# ``opponents``): self-play is a learner against itself, also beside other members (the
# league's newest snapshot would be whichever member the store lists last)
OWN_SNAPSHOTS = frozenset({"self_play"})
ENTRY_POINTS = "selfplay.matchmaking_rules"  # installed packages' modules that register rules


def register_rule(name: str) -> Callable[[Rule], Rule]:
    """Decorator registering a matchmaking rule ``rule(win_rates [N], cfg) -> weights [N]``
    under ``name``; a name already taken (a built-in, or another function) is refused."""

    def deco(fn: Rule) -> Rule:
        if name in RULES and not redefinition(RULES[name], fn):
            raise ValueError(f"matchmaking rule {name!r} is already registered by "
                             f"{defined_at(RULES[name])}; register yours under another name")
        RULES[name] = fn  # a notebook cell run again: its new function replaces
        return fn

    return deco


class RuleError(ValueError):
    """A matchmaking rule raised, or returned something other than non-negative weights over
    the candidates: one line naming the rule, what went wrong and, for an exception, the line
    of the rule's code (``__cause__`` is the exception). A ``ValueError``: the command lines
    report it as a user error (exit 2)."""


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
    fn = RULES[cfg.rule]
    try:
        weights = fn(p.copy(), cfg)
    except Exception as err:
        if getattr(fn, "__module__", "").split(".")[0] in OWN_PACKAGES:
            raise
        why = " ".join(str(err).split()) or "no message"
        raise RuleError(f"matchmaking rule {cfg.rule!r} ({defined_at(fn)}) raised "
                        f"{type(err).__name__}: {why} (at {code_line(fn, err)}); "
                        "HYDRA_FULL_ERROR=1 shows the traceback") from err
    return _checked_weights(cfg.rule, fn, weights, len(p))


def _checked_weights(name: str, fn: Rule, weights: object, n: int) -> np.ndarray:
    """``[n]`` probabilities from the weights a rule returned for ``n`` candidates, or a
    :class:`RuleError` naming the rule and what is wrong with them."""
    cands = f"{n} candidate{'s' if n != 1 else ''}"
    want = (f"expected {n} weight{'s' if n != 1 else ''}, one per candidate snapshot (oldest "
            "first): finite, non-negative, not all zero")
    where = f"matchmaking rule {name!r} ({defined_at(fn)})"
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise RuleError(f"{where} returned {type(weights).__name__}, not numbers; "
                        f"{want}") from None
    if w.shape != (n,):
        what = type(weights).__name__ if w.ndim == 0 else f"an array of shape {w.shape}"
        raise RuleError(f"{where} returned {what} for {cands}; {want}")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RuleError(f"{where} returned {w[i]} for candidate {i} of {cands}; {want}")
    total = w.sum()
    if not total > 0.0 or not np.isfinite(total):
        raise RuleError(f"{where} returned weights summing to {total}; {want}")
    return w if abs(total - 1.0) <= 1e-12 else w / total  # the built-ins' sums: as they are
