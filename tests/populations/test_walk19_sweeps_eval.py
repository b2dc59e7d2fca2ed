"""Findings of user-path walk 19 in ``selfplay-train`` sweeps and ``selfplay-eval``: a sweep
over ``experiment=`` in one folder that its printed command resumes, eval labels that say
which file is which, game notes that name the argument that differs, resume hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.populations.test_walk18_cli_more import _pasted, _train

# two tiny experiments in one sweep (each a few seconds)
EXPERIMENTS = ["-m", "experiment=kuhn_psro,psro_maddpg_oracle", "population.iterations=1",
               "population.oracle_frames=300", "progress=false"]


def _jobs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("settings.json"))


def test_a_sweep_over_experiments_is_one_folder_its_command_resumes(
        tmp_path, monkeypatch, capsys):
    # before: multirun.yaml went to multirun/default/<stamp>/, job 0 to
    # multirun/kuhn_psro/<stamp>/0_..., job 1 to multirun/psro_maddpg_oracle/<stamp>/1_...;
    # the printed command (hydra.sweep.dir=<job 1's folder>) retrained job 0 from scratch there
    import populations.experiment as experiment

    real = experiment.run_experiment

    def stopped(exp, run_dir, *args, **kwargs):
        summary = real(exp, run_dir, *args, **kwargs)
        if exp.experiment == "psro_maddpg_oracle":
            raise KeyboardInterrupt  # Ctrl-C in job 1, once it recorded its run
        return summary

    monkeypatch.setattr(experiment, "run_experiment", stopped)
    with pytest.raises(SystemExit) as stop:
        _train(EXPERIMENTS, monkeypatch, tmp_path)
    assert stop.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    jobs = _jobs(tmp_path / "multirun")
    assert [j.name[:2] for j in jobs] == ["0_", "1_"], jobs
    sweep = jobs[0].parent
    assert jobs[1].parent == sweep and (sweep / "multirun.yaml").is_file()
    assert sorted(p.name for p in (tmp_path / "multirun").iterdir()) == [sweep.parent.name]
    assert sweep.parent.name == "kuhn_psro+psro_maddpg_oracle"

    assert "the sweep resumes with: " in err, err
    monkeypatch.setattr(experiment, "run_experiment", real)
    mtime = (jobs[0] / "settings.json").stat().st_mtime_ns
    _train(_pasted(err.split("resumes with: ", 1)[1]), monkeypatch, tmp_path)
    assert _jobs(tmp_path / "multirun") == jobs  # every job where it was, none duplicated
    assert (jobs[0] / "settings.json").stat().st_mtime_ns == mtime  # job 0 not retrained


def test_a_resume_of_an_experiment_sweep_without_its_folder_names_it(
        tmp_path, monkeypatch, capsys):
    # resume=true without hydra.sweep.dir: the newest sweep of these experiments is named
    sweep = tmp_path / "multirun" / "kuhn_psro+psro_maddpg_oracle" / "2026-01-01_00-00-00"
    (sweep / "0_x").mkdir(parents=True)
    (sweep / "0_x" / "settings.json").write_text("{}")
    with pytest.raises(SystemExit) as stop:
        _train([*EXPERIMENTS, "resume=true"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.endswith(f"the newest sweep there: hydra.sweep.dir={sweep}"), err  # absolute


from tests.populations.eval_cli_run import run_eval  # noqa: E402 - selfplay-eval in process
from tests.populations.test_eval_names import KUHN  # noqa: E402


def _kuhn_policy(path: Path) -> str:
    import games
    from marl import registry

    path.parent.mkdir(parents=True, exist_ok=True)
    return str(registry.get("mappo").build(games.make(KUHN).spec).policy().save(path))


def test_two_runs_snapshots_are_named_by_their_run_and_recorded(tmp_path, capsys, monkeypatch):
    # before: runA/snapshots/llm/v0002.pt and runB/...: llm_v0002 and llm_v0002_2 by argument
    # order; neither the table nor the database said which file was which
    import json
    import sqlite3

    monkeypatch.chdir(tmp_path)
    a = _kuhn_policy(Path("runA/snapshots/llm/v0002.pt"))
    b = _kuhn_policy(Path("runB/snapshots/llm/v0002.pt"))
    code, out, err = run_eval(["--game", KUHN, "--db", "ev.db", "--episodes", "1", a, b], capsys)
    assert code == 0, err
    rows = [line.split()[0] for line in out.splitlines() if "  elo " in line]
    assert sorted(rows) == ["runA_llm_v0002", "runB_llm_v0002"], out
    named = [line for line in err.splitlines()  # the round-robin bar's plain lines aside
             if not line.startswith("selfplay-eval round robin:")]
    assert named == [f"selfplay-eval: runA_llm_v0002 <- {a}",  # stdout: the table
                     f"selfplay-eval: runB_llm_v0002 <- {b}"], err
    with sqlite3.connect(tmp_path / "ev.db") as conn:
        (config,) = conn.execute("SELECT config FROM runs").fetchone()
    assert json.loads(config)["policies"] == {
        "runA_llm_v0002": str(tmp_path / a), "runB_llm_v0002": str(tmp_path / b)}


def test_policy_names_go_up_to_the_folder_that_differs():
    from populations.eval_files import policy_names

    assert list(policy_names(["runA/snapshots/llm/v2.pt", "runB/snapshots/llm/v2.pt",
                               "c/x/v2.pt", "m/0_seed=0/snapshots/y/v3.pt",
                               "m/1_seed=1/snapshots/y/v3.pt", "a.pt", "a.pt"])) == [
        "runA_llm_v2", "runB_llm_v2", "x_v2", "0_seed_0_y_v3", "1_seed_1_y_v3", "a", "a_2"]
    long = "r" * 70  # the stem and its folder kept whole, the differing folder's end kept
    names = list(policy_names([f"{long}1/s/llm/v0002.pt", f"{long}2/s/llm/v0002.pt"]))
    assert names == [f"{'r' * 47}1_llm_v0002", f"{'r' * 47}2_llm_v0002"]
    # a run's snapshot is named by its member's folder even when its stem is unique (walk 20:
    # 'v0001' alone lost which member it came from); other names stay bare
    assert list(policy_names(["r/snapshots/ippo/v0001.pt", "r/snapshots/mappo/v0003.pt",
                               "best.pt"])) == ["ippo_v0001", "mappo_v0003", "best"]


ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"


def test_a_game_named_with_its_default_arguments_gets_no_note(tmp_path, capsys):
    # before: 'note: a was trained on ...simple_adversary_v3(max_cycles=25); it plays
    # ...simple_adversary_v3 here': the same game (max_cycles=25 is its default)
    import games
    from marl import registry

    spec = games.make(ADVERSARY, max_cycles=25).spec
    a, b = (str(registry.get("mappo").build(spec).policy().save(tmp_path / f"{n}.pt"))
            for n in "ab")
    code, _, err = run_eval([a, b, "--game", ADVERSARY, "--db", str(tmp_path / "r.db"),
                          "--episodes", "1"], capsys)
    assert code == 0, err
    assert "note" not in err, err


def test_a_game_of_other_arguments_names_them_with_both_values():
    # before: the same note for vmas/simple_tag(max_steps=25) on vmas/simple_tag (100 steps)
    # as for a name that differs only in spelling
    import games
    from populations.eval_notes import game_notes

    tag = games.make("vmas/simple_tag").spec
    assert game_notes("a", "vmas/simple_tag(max_steps=25)", tag) == [
        "a was trained on vmas/simple_tag(max_steps=25); it plays vmas/simple_tag here",
        "a's game differs here in max_steps (25 in training, 100 here)"]
    adversary = games.make(ADVERSARY).spec
    assert game_notes("a", f"{ADVERSARY}(max_cycles=25)", adversary) == []
    assert game_notes("a", f"{ADVERSARY}(max_cycles=5)", adversary)[1] == (
        "a's game differs here in max_cycles (5 in training, the default here), max_steps "
        "(5 in training, 25 here)")
    assert game_notes("a", "openspiel/leduc_poker", games.make(KUHN).spec) == [
        "a was trained on openspiel/leduc_poker; it plays openspiel/kuhn_poker here"]


NAN_LATE = "walk19_sweeps/nan_late"


def _register_nan_late() -> None:
    import math

    import games
    from games.matrix import CLIMBING, MatrixGame
    from games.registry import registered

    if NAN_LATE in registered():
        return

    @games.register(NAN_LATE)
    class NanLate(MatrixGame):
        """Climbing, 4 rounds; each copy's reward is NaN from its 40th step on (per process:
        a resume goes on for 40 more steps a copy)."""

        def __init__(self) -> None:
            super().__init__(NAN_LATE, CLIMBING, repeats=4)
            self.count = 0

        def _step(self, actions):
            tr = super()._step(actions)
            self.count += 1
            if self.count >= 40:
                tr.rewards["agent_0"] = math.nan
            return tr


def test_a_failed_run_with_checkpoints_says_how_it_resumes(tmp_path, monkeypatch, capsys):
    # before: 'selfplay-train: non-finite reward (nan) ... at step 160: ...' and nothing on
    # the run kept with its checkpoints, which a resume goes on from (it does: step 304 next)
    _register_nan_late()
    run = tmp_path / "run"
    argv = [f"game.name={NAN_LATE}", "frames=400", "num_envs=4", "mappo.rollout_steps=4",
            "mappo.epochs=1", "mappo.minibatches=1", "eval_episodes=1", "progress=false",
            "checkpoint_every_s=0", f"hydra.run.dir={run}"]
    with pytest.raises(SystemExit) as stop:
        _train(argv, monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and "at frame 160" in err, err
    assert f"; {run} keeps its checkpoints: once the cause is fixed, it resumes from the " \
        "last one with: selfplay-train " in err, err
    assert err.endswith("(other settings, such as a lower learning rate, also need "
                        "resume_override=true)"), err
    command = err.split("last one with: ", 1)[1].split(" (other settings", 1)[0]
    with pytest.raises(SystemExit):
        _train(_pasted(command), monkeypatch, tmp_path)
    assert "at frame 304" in capsys.readouterr().err  # resumed at its checkpoint of step 144


def test_a_finished_sweep_run_again_says_resume_true_not_fix_the_values(
        tmp_path, monkeypatch, capsys):
    # before: '... already holds a run; set resume=true ... (sweep job 0; the jobs after it
    # did not run: fix the swept values, then ...)' though the values were fine
    sweep = tmp_path / "sweep"
    argv = ["-m", "experiment=kuhn_psro", "population.iterations=1", "progress=false",
            f"hydra.sweep.dir={sweep}"]
    _train(argv, monkeypatch, tmp_path)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        _train(argv, monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    assert "fix the swept values" not in err, err
    assert f"(sweep job 0: the sweep in {sweep} has run; add resume=true to go on with it, " \
        "selfplay-train -m experiment=kuhn_psro population.iterations=1 progress=false " \
        "resume=true hydra.sweep.dir=" in err, err
    assert err.endswith(", or give a new hydra.sweep.dir to start it again)"), err
