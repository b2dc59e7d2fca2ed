"""Any registered learner is PSRO's RL best-response oracle (``population.oracle=<algo>``):
it is built through the registry for one seat with its own experiment section, trains
against the other seats' meta-mixtures, and each iteration adds one best response per seat;
an oracle that cannot play the game is refused in one line before any run folder."""

import sqlite3

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import games
import populations.cli  # noqa: F401  (registers the schema)
from marl.registry import IncompatibleError
from populations.experiment import ExperimentConfig, PopulationConfig, run_experiment
from populations.psro_run import oracle_learner

SMALL = ["progress=false", "logger=none", "eval_episodes=2", "num_envs=4",
         "population=psro", "population.iterations=2", "population.oracle_frames=200",
         "population.psro.payoffs=sampled", "population.psro.episodes_per_entry=8",
         "population.psro.num_envs=8"]
REPLAY = ["learning_starts=32", "batch_size=16"]  # vdn./maddpg. settings: a few updates


def _cfg(*overrides: str, small: bool = True) -> ExperimentConfig:
    with initialize_config_module(config_module="configs", version_base=None):
        return OmegaConf.to_object(compose(
            config_name="config", overrides=[*(SMALL if small else SMALL[:2]), *overrides]))


def _rows(db_path):
    db = sqlite3.connect(db_path)
    try:
        snaps = db.execute("SELECT m.name, s.kind FROM snapshots s JOIN members m "
                           "ON s.member_id = m.id ORDER BY s.id").fetchall()
        its = db.execute("SELECT iteration, nash_conv FROM psro_iterations "
                         "ORDER BY iteration").fetchall()
        matches = db.execute("SELECT key FROM matches ORDER BY key").fetchall()
        return snaps, its, [k for (k,) in matches]
    finally:
        db.close()


@pytest.mark.parametrize("algo,game", [("vdn", "rps"), ("maddpg", None), ("ippo", "kuhn")])
def test_registered_learner_is_the_psro_oracle(tmp_path, algo, game):
    """Two iterations with sampled payoffs: one best response per seat and iteration, each
    a snapshot of the oracle's learner kind, and one recorded iteration row each."""
    ppo = ["mappo.rollout_steps=10", "mappo.epochs=2"]  # ippo reads the mappo section
    extra = ppo if algo == "ippo" else [f"{algo}.{s}" for s in REPLAY]
    cfg = _cfg(f"game={game}", f"population.oracle={algo}", *extra) if game else \
        _cfg("experiment=psro_maddpg_oracle", *extra)  # the shipped preset, small
    summary = run_experiment(cfg, tmp_path / "run")
    snaps, its, matches = _rows(summary.database)
    seats = games.make(cfg.game.name).spec.agent_ids
    kind = "mappo" if algo == "ippo" else algo  # ippo saves MAPPO policies
    for seat in seats:
        names = [(n, k) for n, k in snaps if n.startswith(f"psro-{seat}-")]
        assert [n for n, _ in names] == [f"psro-{seat}-{k}" for k in range(3)]
        assert [k for _, k in names[1:]] == [kind, kind]  # the initial member is uniform
    assert [i for i, _ in its] == [0, 1]
    assert {m.rsplit("/", 1)[0] for m in matches} == {"psro/it0000", "psro/it0001"}
    assert len(summary.table) == 3 * len(seats)
    if algo == "ippo":  # policies with action probabilities keep the exact NashConv
        assert all(nc is not None and nc >= 0 for _, nc in its)


def test_oracle_uses_its_own_section_settings():
    """``population.oracle=vdn`` builds a one-seat VDN from the experiment's ``vdn:``
    section (as ``algo=vdn`` would); ``rl`` stays a MAPPO with local critics."""
    cfg = _cfg("game=rps", "population.oracle=vdn", "vdn.batch_size=24", "vdn.lr=0.002")
    spec = games.make(cfg.game.name).spec
    learner = oracle_learner(cfg)(spec, "player_1", 3)
    assert learner.agents == ("player_1",)
    assert (learner.cfg.mixer, learner.cfg.batch_size, learner.cfg.lr) == ("vdn", 24, 0.002)
    rl = oracle_learner(_cfg("game=kuhn", "population.oracle=rl"))(spec, "player_0", 3)
    assert type(rl).__name__ == "MAPPO" and rl.cfg.net.critic == "local"


def test_incompatible_oracle_is_refused_in_one_line(tmp_path):
    """MADDPG plays simultaneous-move games only: a turn-based game is refused at config
    time, in one line naming the oracle, the game, why, and the oracles that would play it."""
    cfg = _cfg("game=rps", "game.name=openspiel/first_sealed_auction",
               "population.oracle=maddpg")
    with pytest.raises(IncompatibleError) as err:
        run_experiment(cfg, tmp_path / "run")
    msg = str(err.value)
    assert "\n" not in msg and "algo=maddpg" in msg and "first_sealed_auction" in msg
    assert "simultaneous-move games only" in msg and "no joint action" in msg
    assert "'ippo'" in msg and "'vdn'" in msg and "'maddpg'" not in msg
    assert not (tmp_path / "run").exists()  # refused before the run folder


def test_oracle_that_plays_its_own_episodes_is_refused(tmp_path):
    """An LLM team trains on whole episodes of its own, not one seat next to frozen
    opponents: refused once the game is known, before any run folder, listing the oracles
    that game accepts (b0b8fc9: the settings alone listed some the game refuses); an unknown
    name is refused by the settings alone, listing every oracle."""
    with pytest.raises(ValueError, match=r"population.oracle='nope' is not a PSRO oracle; "
                                         r"choose one of \['auto', 'exact', 'rl', .*'vdn'"):
        PopulationConfig(kind="psro", oracle="nope")
    cfg = _cfg("game=kuhn", "population.oracle=llm_grpo")
    with pytest.raises(IncompatibleError, match=r"algo=llm_grpo cannot be a PSRO oracle: it "
                                                r"plays its own episodes .*oracles that play "
                                                r"it: \['auto', 'exact', 'rl', .*'vdn'\]"):
        run_experiment(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_off_policy_members_are_played_greedily(tmp_path):
    """VDN and MADDPG explore only while training: PSRO plays their members greedily (as
    ``selfplay-train`` evaluates them), so a deterministic member has a behaviour strategy,
    exact payoffs apply and its exact NashConv is recorded."""
    cfg = _cfg("game=rps", "population.oracle=vdn", "population.psro.payoffs=exact",
               "population.iterations=1", *(f"vdn.{s}" for s in REPLAY))
    snaps, its, matches = _rows(run_experiment(cfg, tmp_path / "run").database)
    assert [k for _, k in snaps] == ["tabular", "tabular", "vdn", "vdn"]
    assert len(its) == 1 and its[0][1] is not None and 0 <= its[0][1] <= 2  # RPS: NashConv <= 2


@pytest.mark.benchmark
def test_maddpg_oracle_preset_solves_biased_rps(tmp_path):
    """The shipped preset at its own settings: MADDPG best responses (played greedily, so
    with exact payoffs) reach the equilibrium of biased RPS: exact NashConv ~0."""
    cfg = _cfg("experiment=psro_maddpg_oracle", "population.iterations=4", small=False)
    _, its, _ = _rows(run_experiment(cfg, tmp_path / "run").database)
    assert its[0][1] > 1 and its[-1][1] == pytest.approx(0.0, abs=1e-5)


def test_algo_oracle_run_resumes_to_the_same_rows(tmp_path):
    """A VDN-oracle run stopped after one iteration and resumed ends with the members,
    iterations (NashConv) and matches of an uninterrupted run: resumed members are played
    greedily again and the oracle's learner is seeded from the iteration."""
    extra = ["game=rps", "population.oracle=vdn", *(f"vdn.{s}" for s in REPLAY)]

    def state(run, iterations, resume=False):
        cfg = _cfg(*extra, f"population.iterations={iterations}", f"resume={resume}".lower())
        snaps, its, matches = _rows(run_experiment(cfg, run).database)
        return snaps, [(i, round(n, 9)) for i, n in its], matches

    whole = state(tmp_path / "whole", 2)
    state(tmp_path / "split", 1)
    assert state(tmp_path / "split", 2, resume=True) == whole
