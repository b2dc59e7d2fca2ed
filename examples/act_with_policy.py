"""Act with a saved policy outside the framework: train a tiny learner, save its policy, load
it and play it (``marl.play``) on a PettingZoo game and on a VMAS game.

A run's policies are its snapshots, ``<run>/snapshots/<member>/vNNNN.pt`` (a single run:
``snapshots/<algo>/v0000.pt``); they load and play the same way as the files saved here.

    python examples/act_with_policy.py [--frames 80]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import games
from marl.actor_critic import NetConfig
from marl.core import load_policy
from marl.mappo import MAPPO, MAPPOConfig
from marl.play import PettingZooActor, PolicyPlayer, play, recorded_game
from marl.train import train

SPREAD = ("pettingzoo/mpe2.simple_spread_v3", {"N": 2, "max_cycles": 10})
VMAS = ("vmas/simple_spread", {"n_agents": 2, "max_steps": 10})


def saved_policy(game: str, kwargs: dict, net: NetConfig, frames: int, path: Path) -> Path:
    """Train MAPPO for ``frames`` frames on ``game`` and save its policy to ``path``."""
    spec = games.make(game, **kwargs).spec
    learner = MAPPO(spec, MAPPOConfig(net=net, rollout_steps=10, epochs=2, minibatches=1), seed=0)
    vg = games.VectorGame(game, 4, seed=0, **kwargs, **learner.vector_game_kwargs)
    train(learner, vg, frames=frames, progress=False)
    return learner.policy().save(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=80, help="training frames per policy")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="act_with_policy_") as tmp:
        run(args.frames, Path(tmp))


def run(frames: int, folder: Path) -> None:

    # 1. whole episodes: the policy in its seats (others random or given), returns per seat
    mlp = saved_policy(*SPREAD, NetConfig(), frames, folder / "spread_mlp.pt")
    result = play(mlp, episodes=4, num_envs=2, seed=0)
    print(f"spread MLP: {result.episodes} episodes, mean returns {result.mean_return}")

    # 2. step by step on the VectorGame's own VecSteps; a GNN reads entity graphs, which
    #    the player asks of the game (policy.meta.inputs), and a GRU keeps its hidden state
    gnn = saved_policy(*VMAS, NetConfig(encoder="gnn", recurrent=True, rnn_hidden=16),
                       frames, folder / "vmas_gnn_gru.pt")
    player = PolicyPlayer(gnn, num_envs=3, seed=0, greedy=True)
    vs = player.reset()
    for _ in range(VMAS[1]["max_steps"]):
        actions = player.act(vs)  # {seat: [B] action ids}
        vs = player.game.step(actions)
    print(f"vmas GNN+GRU: inputs {player.policy.meta.inputs}, episode returns "
          f"{ {a: r.round(2).tolist() for a, r in vs.episode_return.items()} }")

    # 3. one PettingZoo env's observation dicts (policies that read observations only)
    actor = PettingZooActor(load_policy(mlp), greedy=True)
    env = games.to_pettingzoo(games.make(recorded_game(actor.policy)))
    obs, _ = env.reset(seed=0)
    total = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        obs, rewards, _, _, _ = env.step(actor.act(obs))
        for a, r in rewards.items():
            total[a] += r
    print(f"spread MLP on games.to_pettingzoo: returns {total}")


if __name__ == "__main__":
    main()
