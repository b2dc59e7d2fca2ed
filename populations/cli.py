"""Console entry points: ``selfplay-train`` (a Hydra app) and ``selfplay-eval``.

``selfplay-train`` composes ``configs/config.yaml`` with the groups ``game``, ``algo``,
``encoder``, ``population``, ``runner``, ``logger`` and ``experiment`` over the typed schema
:class:`populations.experiment.ExperimentConfig`: a misspelt key, a value of the wrong type
or an unknown group option stops it before anything runs, naming what is accepted.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from populations.experiment import ExperimentConfig, RunSummary, run_experiment

log = logging.getLogger("selfplay")


def _writable(node: Any) -> Any:
    """Structured configs of frozen dataclasses are read-only; overrides must be allowed
    (the dataclasses are rebuilt, and validated, by ``OmegaConf.to_object``)."""
    node._set_flag("readonly", None)
    if isinstance(node, DictConfig):
        for key in node:
            _writable(node._get_node(key))
    return node


ConfigStore.instance().store(name="schema", node=_writable(OmegaConf.structured(ExperimentConfig)))


def to_experiment(cfg: DictConfig) -> ExperimentConfig:
    """The typed experiment of a composed config; a bad value exits with a one-line error."""
    try:
        exp = OmegaConf.to_object(cfg)
    except (ValueError, TypeError) as err:
        sys.exit(f"selfplay-train: bad config: {err}")
    assert isinstance(exp, ExperimentConfig)
    return exp


def print_summary(s: RunSummary) -> None:
    print(f"\nrun folder : {s.run_dir}")
    print(f"database   : {s.database}")
    print(f"snapshots  : {s.snapshots}")
    if s.logger_files is not None:
        print(f"metrics    : {s.logger_files}")
    if (s.run_dir / "checkpoints").is_dir():
        print(f"checkpoints: {s.run_dir / 'checkpoints'} (resume=true hydra.run.dir={s.run_dir})")
    if s.table:
        cols = list(s.table[0])
        print("\n" + "  ".join(f"{c:>12}" for c in cols))
        for row in s.table[:20]:
            print("  ".join(f"{str(row[c]):>12}" for c in cols))
    print(f"\ndashboard  : selfplay-dashboard {s.run_dir}")


@hydra.main(version_base=None, config_path="pkg://configs", config_name="config")
def _train(cfg: DictConfig) -> None:
    exp = to_experiment(cfg)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    log.info("experiment %s in %s", exp.experiment, run_dir)
    print_summary(run_experiment(exp, run_dir))


def train_main() -> None:
    """``selfplay-train``: run one experiment (or a sweep with ``-m``)."""
    _train()


def eval_main(argv: list[str] | None = None) -> None:
    """``selfplay-eval``: round-robin rating of saved policy files into a league database."""
    from games import make
    from marl.core import load_policy
    from populations.db import LeagueDB
    from populations.evaluation import round_robin
    from populations.experiment import league_table
    from populations.runners import make_runner
    from populations.store import PolicyStore

    p = argparse.ArgumentParser(description=eval_main.__doc__)
    p.add_argument("policies", nargs="+", help="policy files (.pt) written by a run")
    p.add_argument("--game", required=True, help="game spec, e.g. openspiel/kuhn_poker")
    p.add_argument("--game-kwargs", default="{}", help="JSON keyword arguments of the game")
    p.add_argument("--db", required=True, help="league database to write (created if missing)")
    p.add_argument("--episodes", type=int, default=16, help="role-swapped pairs per pairing")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runner", default="local", choices=["local", "ray"])
    args = p.parse_args(argv)
    kwargs = json.loads(args.game_kwargs)
    spec = make(args.game, **kwargs).spec
    db = LeagueDB(args.db)
    run_id = db.create_run("eval", experiment="selfplay-eval", game=spec.name)
    store = PolicyStore(Path(args.db).parent / "eval_snapshots", db, run_id)
    snaps = []
    for path in args.policies:
        name = Path(path).stem.replace(" ", "_")
        snaps.append(store.publish(name, load_policy(path)))
    runner = make_runner(args.runner)
    try:
        round_robin(db, run_id, runner, spec, args.game, kwargs, snaps, args.episodes, args.seed)
    finally:
        runner.close()
    for row in league_table(db, run_id):
        print(f"{row['member']:>24}  elo {row['elo']}  mu {row['mu']} ± {row['sigma']}  "
              f"matches {row['matches']}")
    db.close()


if __name__ == "__main__":
    train_main()
