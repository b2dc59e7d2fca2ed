"""Match play (league evaluation, ``selfplay-eval``'s round robin, local and Ray runners)
plays each seat as the league evaluates its policy: a snapshot of an off-policy learner
(VDN, QMIX, MADDPG: ``on_policy=False``) by its argmax, other seats by sampling.

Walk 20: matches played every seat as ``MatchJob.greedy`` said, and evaluation never set
it, so a QMIX snapshot on Kuhn poker (ε 0.714 in the file) scored 0.284 against random
(random's 0.29) in league matches and ``selfplay-eval``, 0.516 greedily; PSRO,
``population=none`` evaluation and approximate exploitability played it greedily.
"""

import dataclasses

import numpy as np
import pytest

import games
from marl import registry
from marl.core import load_policy
from populations.approx_exploit import GreedyPolicy, evaluated_greedy
from populations.db import LeagueDB
from populations.evaluation import round_robin
from populations.runners import LocalRunner, MatchJob, RayRunner
from populations.store import PolicyStore
from tests.populations.eval_cli_run import run_eval

RPS = "openspiel/matrix_rps"  # one step: a greedy seat plays one action every episode
KUHN = "openspiel/kuhn_poker"
RPS_SPEC = games.make(RPS).spec
OFF_POLICY = [n for n, e in registry.entries().items()  # from the declarations, not names
              if not e.capabilities.on_policy and registry.compatible(n, RPS_SPEC)]
ON_POLICY = next(n for n, e in registry.entries().items()
                 if e.capabilities.on_policy and e.policy == "mappo")


def test_the_off_policy_learners_are_found():
    assert {"vdn", "qmix", "maddpg"} <= set(OFF_POLICY)


def _save(spec, algo, path, **policy_kw):
    """An untrained snapshot (value decomposition: ε 1 by default at step 0)."""
    return str(registry.get(algo).build(spec, seed=3).policy(**policy_kw).save(path))


@pytest.fixture(scope="module")
def rps_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("rps")
    files = {a: _save(RPS_SPEC, a, root / f"{a}.pt") for a in [*OFF_POLICY, ON_POLICY]}
    for algo in OFF_POLICY:  # the file's own act explores: the test below means something
        pol = load_policy(files[algo])
        vg = games.VectorGame(RPS, 64, seed=0)
        vs = vg.reset()
        assert len(set(pol.act("player_0", vs).tolist())) > 1, algo
        assert len(set(pol.act("player_0", vs, greedy=True).tolist())) == 1, algo
        assert evaluated_greedy(pol)
    assert not evaluated_greedy(load_policy(files[ON_POLICY]))
    return files


def _job(seats, seed=5, episodes=64, game=RPS, **kw):
    return MatchJob("m", game, seats, episodes, seed, num_envs=8, **kw)


def _greedy_reference(job, greedy_files):
    """``job`` played with the policies of ``greedy_files`` wrapped to act by their argmax
    (what PSRO plays), every other seat as loaded."""
    runner = LocalRunner()
    for path in greedy_files:
        runner._cache[path] = GreedyPolicy(load_policy(path))
    (res,) = runner.play([job])
    return res.returns


@pytest.mark.parametrize("algo", OFF_POLICY)
def test_an_off_policy_snapshot_plays_its_argmax_every_episode(algo, rps_files):
    path = rps_files[algo]
    job = _job({"player_0": path, "player_1": path})
    (res,) = LocalRunner().play([job])
    assert len({tuple(sorted(r.items())) for r in res.returns}) == 1  # one joint action
    assert res.returns == _greedy_reference(job, [path])


@pytest.mark.parametrize("algo", OFF_POLICY)
def test_an_on_policy_seat_of_the_same_match_still_samples(algo, rps_files):
    off, on = rps_files[algo], rps_files[ON_POLICY]
    for seats in ({"player_0": off, "player_1": on}, {"player_0": on, "player_1": off}):
        job = _job(seats)
        (res,) = LocalRunner().play([job])
        assert res.returns == _greedy_reference(job, [off])
        assert len({r["player_0"] for r in res.returns}) == 3  # win, draw and loss
        assert res.returns != _greedy_reference(job, [off, on])  # not the MAPPO argmax


def test_greedy_job_still_has_every_seat_play_its_argmax(rps_files):
    off, on = rps_files[OFF_POLICY[0]], rps_files[ON_POLICY]
    job = _job({"player_0": off, "player_1": on}, greedy=True)
    (res,) = LocalRunner().play([job])
    assert res.returns == _greedy_reference(job, [off, on])
    assert len({r["player_0"] for r in res.returns}) == 1


@pytest.fixture(scope="module")
def kuhn_files(tmp_path_factory):
    """A QMIX snapshot exploring with ε 1 and the same weights with ε 0 (its greedy play),
    in folders of their own under one name (one member name in selfplay-eval), and a MAPPO
    snapshot."""
    root = tmp_path_factory.mktemp("kuhn")
    spec = games.make(KUHN).spec
    learner = registry.get("qmix").build(spec, seed=1)
    files = {}
    for eps in (1.0, 0.0):
        (root / f"eps{eps:g}").mkdir()
        files[eps] = str(learner.policy(epsilon=eps).save(root / f"eps{eps:g}" / "qmix.pt"))
    files["mappo"] = _save(spec, ON_POLICY, root / "mappo.pt")
    return files


def _league_matches(tmp_path, name, files, runner):
    db = LeagueDB(tmp_path / f"{name}.db")
    run = db.create_run("eval", game=KUHN)
    store = PolicyStore(tmp_path / name, db, run)
    snaps = [store.publish(n, load_policy(p)) for n, p in files.items()]
    spec = games.make(KUHN).spec
    ratings = round_robin(db, run, runner, spec, KUHN, {}, snaps, episodes=24, seed=9)
    out = [(m.key, m.returns) for m in db.matches(run)]
    db.close()
    return out, ratings


def test_league_evaluation_rates_an_exploring_qmix_snapshot_by_its_greedy_play(kuhn_files,
                                                                              tmp_path):
    explore, _ = _league_matches(tmp_path, "explore",
                                 {"qmix": kuhn_files[1.0], "mappo": kuhn_files["mappo"]},
                                 LocalRunner())
    greedy, _ = _league_matches(tmp_path, "greedy",
                                {"qmix": kuhn_files[0.0], "mappo": kuhn_files["mappo"]},
                                LocalRunner())
    assert len(explore) == 2 * 24 and explore == greedy


def test_ray_workers_play_seats_greedily_as_the_local_runner_does(kuhn_files, tmp_path,
                                                                 ray_local):
    seats = [{"player_0": kuhn_files[1.0], "player_1": kuhn_files["mappo"]},
             {"player_0": kuhn_files["mappo"], "player_1": kuhn_files[1.0]}]
    jobs = [dataclasses.replace(_job(s, seed=20 + i, episodes=16, game=KUHN), key=f"j{i}")
            for i, s in enumerate(seats)]
    local = [r.returns for r in LocalRunner().play(jobs)]
    runner = RayRunner(num_workers=1)  # one match worker plays both jobs, each seat as local
    try:
        remote = [r.returns for r in runner.play(jobs)]
    finally:
        runner.close()
    assert remote == local
    assert local == [_greedy_reference(j, [kuhn_files[1.0]]) for j in jobs]


def test_selfplay_eval_rates_an_exploring_qmix_snapshot_by_its_greedy_play(kuhn_files,
                                                                          tmp_path, capsys):
    tables, returns = [], []
    for eps in (1.0, 0.0):
        db = tmp_path / f"eps{eps:g}.db"
        code, out, err = run_eval(["--game", KUHN, "--db", str(db), "--episodes", "24",
                                "--seed", "4", kuhn_files[eps], kuhn_files["mappo"]], capsys)
        assert code == 0, err
        tables.append([line for line in out.splitlines() if "elo" in line])
        league = LeagueDB(db)
        run = league.run_id("eval")
        returns.append([(m.key, m.returns) for m in league.matches(run)])
        league.close()
    assert len(tables[0]) == 2 and tables[0] == tables[1]
    assert len(returns[0]) == 2 * 24 and returns[0] == returns[1]
    assert np.isfinite([sum(r.values()) for _, r in returns[0]]).all()


# ------------------------------------------------- a policy of other sizes than the game
TAG, VMAS_TAG = "pettingzoo/mpe2.simple_tag_v3", "vmas/simple_tag"
TAG_SEATS = "adversary_0, adversary_1, adversary_2, agent_0"


def _meta(game, **kw):
    from marl.core import PolicyMeta

    spec = games.make(game, **kw.pop("game_kwargs", {})).spec
    return PolicyMeta.from_spec("mappo", spec, spec.agent_ids, **kw)


def test_an_mpe2_snapshot_on_vmas_names_the_action_counts(tmp_path):
    """selfplay-eval with an mpe2 tag snapshot (5 actions) on vmas/simple_tag (9, the same
    observation shapes) ended in "The size of tensor a (9) must match the size of tensor
    b (5)" and a failed run."""
    from populations.evaluation import seats_mismatch

    spec = games.make(TAG).spec
    meta = load_policy(_save(spec, ON_POLICY, tmp_path / "tag.pt")).meta
    assert seats_mismatch(meta, games.make(VMAS_TAG).spec) == (
        f"trained with 5 actions for {TAG_SEATS}; vmas/simple_tag gives 9")
    assert seats_mismatch(meta, spec) is None


def test_a_vmas_gnn_snapshot_on_mpe2_names_the_action_counts(tmp_path):
    """A GNN policy reads graphs of any size (no observation shape is checked), but its
    action head has the 9 outputs of VMAS's tag."""
    from populations.evaluation import seats_mismatch

    entry, spec = registry.get(ON_POLICY), games.make(VMAS_TAG).spec
    cfg = entry.default()
    cfg = dataclasses.replace(cfg, net=dataclasses.replace(cfg.net, encoder="gnn"))
    meta = load_policy(entry.build(spec, cfg).policy().save(tmp_path / "gnn.pt")).meta
    assert meta.inputs == ("graph",)
    assert seats_mismatch(meta, games.make(TAG).spec) == (
        f"trained with 9 actions for {TAG_SEATS}; {TAG} gives 5")
    assert seats_mismatch(meta, spec) is None


def test_observation_shapes_come_first_and_graphs_and_texts_fit_any():
    from populations.evaluation import seats_mismatch

    leduc = games.make("openspiel/leduc_poker").spec  # 3 actions and 30 features; Kuhn 2, 11
    assert seats_mismatch(_meta(KUHN), leduc) == (
        "trained on observations of shape (11,) for player_0, player_1; "
        "openspiel/leduc_poker gives (30,)")
    assert seats_mismatch(_meta(KUHN, inputs=("graph",)), leduc) == (
        "trained with 2 actions for player_0, player_1; openspiel/leduc_poker gives 3")
    assert seats_mismatch(_meta(KUHN, inputs=("text",)), leduc) is None  # legal texts


def test_continuous_and_discrete_actions_and_seats_held():
    from populations.evaluation import seats_mismatch

    spread = "pettingzoo/mpe2.simple_spread_v3"
    box = _meta(spread, game_kwargs={"N": 2, "continuous_actions": True})
    discrete = games.make(spread, N=2).spec
    assert seats_mismatch(box, discrete) == (
        "trained with continuous actions of shape (5,) for agent_0, agent_1; "
        f"{spread}(N=2) gives 5 actions")
    one = dataclasses.replace(_meta(spread, game_kwargs={"N": 2}), agents=("agent_1",))
    wide = games.make(spread, N=2, continuous_actions=True).spec
    assert seats_mismatch(one, wide) == (  # only the seats the policy holds
        f"trained with 5 actions for agent_1; {spread}(N=2,continuous_actions=True) gives "
        "continuous actions of shape (5,)")
    assert seats_mismatch(box, games.make(spread, N=2, continuous_actions=True).spec) is None
