"""``selfplay-demo``: a round-robin of simple scripted policies on three games.

Every ordered pair of policies plays a batch of episodes with the first policy filling
the first team's seats and the second the other team's (cooperative games have one team,
so each policy plays alone). It exercises the whole ``games`` stack — registry, adapters,
``VectorGame`` with auto-reset, legal masks — and prints mean returns per team.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable

import numpy as np

import games
from populations.cli_common import OneLineParser, interrupted

# legal_BN [B, N] bool, rng -> actions [B]
ScriptedPolicy = Callable[[np.ndarray, np.random.Generator], np.ndarray]


def uniform(legal_BN: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random legal action."""
    return (rng.random(legal_BN.shape) * legal_BN).argmax(axis=1)


def first_legal(legal_BN: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Always the lowest legal action id."""
    return legal_BN.argmax(axis=1)


def last_legal(legal_BN: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Always the highest legal action id."""
    return legal_BN.shape[1] - 1 - legal_BN[:, ::-1].argmax(axis=1)


POLICIES: dict[str, ScriptedPolicy] = {"uniform": uniform, "first": first_legal, "last": last_legal}
DEMO_GAMES = (
    ("openspiel/kuhn_poker", {}),
    ("pettingzoo/mpe2.simple_tag_v3", {"max_cycles": 25}),
    ("pettingzoo/pettingzoo.classic.tictactoe_v3", {}),
)


def play(
    spec: str, kwargs: dict, lineup: dict[str, str], episodes: int, num_envs: int, seed: int
) -> dict[str, float]:
    """Mean episode return per team when ``lineup[team]`` names the policy of each team."""
    vg = games.VectorGame(spec, num_envs=num_envs, seed=seed, **kwargs)
    team_of = {a.id: a.team for a in vg.spec.agents}
    rng = np.random.default_rng(seed)
    returns = {t: [] for t in vg.spec.teams}
    vs = vg.reset()
    while min(len(r) for r in returns.values()) < episodes:
        actions = {a: POLICIES[lineup[team_of[a]]](vs.legal[a], rng) for a in vg.spec.agent_ids}
        vs = vg.step(actions)
        for b in np.flatnonzero(vs.done):
            for t in returns:
                members = [a for a in vg.spec.agent_ids if team_of[a] == t]
                returns[t].append(np.mean([vs.episode_return[a][b] for a in members]))
    vg.close()
    return {t: float(np.mean(r[:episodes])) for t, r in returns.items()}


MAX_NUM_ENVS = 1024
"""``--num-envs``' largest value: the demo's games step copy by copy in Python, and 1,000
copies of simple_tag took 2 GB and 9 s to make (100,000 would exhaust the memory)."""


MAX_EPISODES = 10_000
"""``--episodes``' largest value: 27 pairings, stepped in Python. Measured with ``time``
(user CPU, 2026-12-07, a shared 2-core machine, default ``--num-envs 16``): ``--episodes 20``
6.8 s, 100 17.6 s, the default 200 31.3 s (3 min wall at load 8), about 0.14 s of CPU per
episode of all 27 pairings (simple_tag's nine ~90 % of it) after ~4 s of imports: 10,000 some
23 minutes of CPU. ``--episodes 99999999`` was accepted and played its first pairing for
hours, printing nothing (a line comes after each pairing)."""


def _bounded(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer ``low <= n (<= high)``; anything else raises
    ``ArgumentTypeError`` naming the value and what is accepted (one line, exit 2)."""
    accepted = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {accepted}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{value}: expected {accepted}")
        return value

    convert.__name__ = "int"
    return convert


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(  # the docstring's first line, without its reST markup
        prog="selfplay-demo",
        description=(__doc__ or "selfplay-demo").splitlines()[0].replace("``", ""))
    parser.add_argument("--episodes", type=_bounded(1, MAX_EPISODES), default=200,
                        help=f"episodes per pairing (1 to {MAX_EPISODES}; 27 pairings stepped "
                             "in Python, measured: the default 200 about 30 s of CPU, each "
                             "episode more about 0.14 s, the most some 23 minutes)")
    parser.add_argument("--num-envs", type=_bounded(1, MAX_NUM_ENVS), default=16,
                        help=f"copies stepped together (1 to {MAX_NUM_ENVS})")
    parser.add_argument("--seed", type=_bounded(0), default=0, help="seed (>= 0)")
    args = parser.parse_args(argv)
    from populations.run_folder import sigterm_as_interrupt

    try:  # SIGTERM (kill, timeout) as Ctrl-C: it ended with exit 143 and no word
        with sigterm_as_interrupt():
            _round_robin(args)
    except KeyboardInterrupt:  # Ctrl-C: one line, exit 130 (a traceback before); SIGTERM: 143
        interrupted(parser.prog)


def _round_robin(args: argparse.Namespace) -> None:
    rows = []
    start = time.perf_counter()
    for spec, kwargs in DEMO_GAMES:
        teams = games.make(spec, **kwargs).spec.teams
        for pair in itertools.product(POLICIES, repeat=len(teams)):
            lineup = dict(zip(teams, pair, strict=True))
            t0 = time.perf_counter()
            means = play(spec, kwargs, lineup, args.episodes, args.num_envs, args.seed)
            rows.append((spec, lineup, means))
            print(
                f"[{time.perf_counter() - start:6.1f}s] {spec} {lineup}: "
                f"{args.episodes} episodes in {time.perf_counter() - t0:.1f}s",
                flush=True,
            )
    print()
    print(f"{'game':45s} {'lineup (team=policy)':45s} mean return per team")
    for spec, lineup, means in rows:
        who = ", ".join(f"{t}={p}" for t, p in lineup.items())
        ret = ", ".join(f"{t}: {m:+.3f}" for t, m in means.items())
        print(f"{spec:45s} {who:45s} {ret}")


if __name__ == "__main__":
    main()
