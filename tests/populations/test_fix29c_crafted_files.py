"""Crafted files given to the CLIs (real files, written here) that ended in a traceback or
a wrong line: ``selfplay-eval`` of a policy with NaN weights (torch's ``probability tensor
contains either inf, nan`` mid-match, the run recorded as failed) or of a FIFO / a link to
/dev/zero ("policy file not found"); ``selfplay-train resume=true`` of a league whose
checkpoint (hash recomputed) holds NaN weights or an optimizer state torch accepts but cannot
step with; the dashboard echoing a 10,000-character view name whole."""

import os
import re
import shutil

import pytest
import torch

from populations.checkpoint import checkpoint_files, load_latest, save_checkpoint
from tests.populations.eval_cli_run import run_eval


@pytest.fixture(scope="module")
def league_run(tmp_path_factory):
    """A finished one-generation league run folder (copied by each test that edits it)."""
    from populations.experiment import run_experiment
    from tests.populations.test_untrusted_rows import LEAGUE, _experiment

    run = tmp_path_factory.mktemp("league") / "run"
    run_experiment(_experiment(LEAGUE), run)
    return run


def _snapshot(run):
    return run / "snapshots" / "main" / "v0001.pt"


def test_eval_of_a_policy_with_nan_weights_is_one_line(tmp_path, league_run, capsys):
    data = torch.load(_snapshot(league_run), weights_only=True)
    actors = data["payload"]["actors"]
    key = next(iter(actors))
    actors[key].view(-1)[0] = float("nan")
    torch.save(data, tmp_path / "nan.pt")
    code, _, err = run_eval(["--db", str(tmp_path / "e.db"), "--episodes", "2",
                             str(tmp_path / "nan.pt"), str(_snapshot(league_run))], capsys)
    assert code == 2, err
    assert err.strip() == (f"selfplay-eval: {tmp_path / 'nan.pt'}: mappo policy holds NaN in "
                           f"actors[{key!r}]; a policy's weights must be finite real numbers")


@pytest.mark.parametrize("planted", ["fifo", "/dev/zero link"])
def test_eval_of_a_path_that_is_no_regular_file_says_so(tmp_path, league_run, planted, capsys):
    path = tmp_path / "p.pt"
    if planted == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    code, _, err = run_eval(["--db", str(tmp_path / "e.db"), str(path),
                             str(_snapshot(league_run))], capsys)
    kind = "a FIFO" if planted == "fifo" else "a character device (through a link)"
    assert code == 2
    assert err.strip() == (f"selfplay-eval: policy {path} is not a regular file but {kind}; "
                           "give a .pt file")


def _opt_group(member):
    return member["opt"]["param_groups"][0]


def _opt_first(member):
    return member["opt"]["state"][_opt_group(member)["params"][0]]


def _nan_actor(member):
    member["actors"][next(iter(member["actors"]))].view(-1)[0] = float("nan")


CRAFTED = {  # an edit of member main's state -> the line the resume stops with
    "NaN actor weights": (_nan_actor, r"checkpoint \S+ckpt_\d+\.pt holds NaN in actors\['.+'\] "
                          r"of member 'main'; a checkpoint's tensors must be finite real numbers"),
    "lr a string": (lambda m: _opt_group(m).update(lr="x"),
                    r"does not fit member 'main' \(ValueError: optimizer state 'opt': "
                    r"param_groups\[0\]\['lr'\] is 'x'; accepted: a finite number >= 0\)"),
    "moment of another shape": (lambda m: _opt_first(m).update(exp_avg=torch.zeros(3)),
                                r"does not fit member 'main' \(ValueError: optimizer state "
                                r"'opt': state\[\d+\]\['exp_avg'\] has shape \[3\]; its "
                                r"parameter has \[\d+(, \d+)*\]\)"),
}


@pytest.mark.parametrize("craft", sorted(CRAFTED))
def test_resuming_a_league_from_a_crafted_member_state_is_one_line(tmp_path, league_run, craft,
                                                                    capsys):
    from populations.command_line import TRAIN
    from populations.experiment import run_experiment
    from populations.run_guard import run_folder_guard
    from tests.populations.test_untrusted_rows import LEAGUE, _experiment

    run = tmp_path / "run"
    shutil.copytree(league_run, run)
    _, state = load_latest(run / "checkpoints")
    for p in checkpoint_files(run / "checkpoints"):
        p.unlink()
    edit, expected = CRAFTED[craft]
    edit(state["members"]["main"])
    save_checkpoint(run / "checkpoints", 99, state)  # with its hash: the crafter writes it too
    snapshots = sorted(p.name for p in (run / "snapshots" / "main").iterdir())
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_, run_folder_guard(TRAIN, run, created=False):
        run_experiment(_experiment(LEAGUE, resume=True), run)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert re.search(expected, err) and "\n" not in err, err
    assert sorted(p.name for p in (run / "snapshots" / "main").iterdir()) == snapshots


def test_the_dashboard_cuts_a_long_unknown_name_in_its_error(tmp_path):
    from starlette.testclient import TestClient

    from populations.dashboard import create_app
    from populations.db import LeagueDB

    LeagueDB(tmp_path / "league.db").create_run("r")
    client = TestClient(create_app([tmp_path]))
    source = client.get("/api/runs").json()["runs"][0]["source"]
    long = "v" * 10_000
    for path, said in ((f"/api/runs/{source}/1/{long}", "unknown view 'vvv"),
                       (f"/api/runs/{long}/1/league", "unknown database id 'vvv")):
        r = client.get(path)
        assert r.status_code == 404
        error = r.json()["error"]
        assert error.startswith(said) and "...v" in error and len(error) < 400, error[:500]


def test_eval_of_a_policy_step_past_sqlite_is_one_line(tmp_path, league_run, capsys):
    data = torch.load(_snapshot(league_run), weights_only=True)
    data["meta"]["step"] = 10**30
    torch.save(data, tmp_path / "s.pt")
    code, _, err = run_eval(["--db", str(tmp_path / "e.db"), "--episodes", "2",
                             str(tmp_path / "s.pt"), str(_snapshot(league_run))], capsys)
    assert code == 2
    assert err.strip() == (f"selfplay-eval: {tmp_path / 's.pt'}: policy metadata field 'step' "
                           f"is malformed: {10**30}; accepted: a learner step >= 0 below 2**63")
