"""``population.psro.stop_nash_conv``: PSRO stops after the first iteration whose exact
NashConv is at most it (it kept adding members to a solved game: Kuhn from iteration 5 on,
with NashConv 0), records the run ``finished``, and a resume of the converged run adds no
iteration. Set where PSRO computes no NashConv, or to a negative or NaN value, it is refused
in one line before any run folder."""

from __future__ import annotations

import sqlite3

import pytest

from tests.populations.user_modules import train_here

ARGS = ["experiment=kuhn_psro", "population.oracle=exact", "population.psro.payoffs=exact",
        "eval_episodes=2", "progress=false", "logger=none", "population.iterations=8"]
STOP = "population.psro.stop_nash_conv=1e-9"


def _db(tmp_path):
    (db,) = tmp_path.glob("runs/kuhn_psro/*/league.db")
    conn = sqlite3.connect(db)
    try:
        iterations = conn.execute("SELECT iteration, nash_conv FROM psro_iterations "
                                  "ORDER BY iteration").fetchall()
        (status,) = conn.execute("SELECT status FROM runs").fetchone()
    finally:
        conn.close()
    return db.parent, iterations, status


def _log(capfd):
    """What the run logged (Hydra's handler writes it to the terminal)."""
    out, err = capfd.readouterr()
    return [line.split(" - ", 1)[-1] for line in (out + err).splitlines()]


def test_psro_stops_once_nash_conv_reaches_the_threshold(monkeypatch, tmp_path, capfd):
    train_here([*ARGS, STOP, "hydra.run.dir=runs/kuhn_psro/a"], monkeypatch, tmp_path)
    run_dir, iterations, status = _db(tmp_path)
    assert status == "finished"
    assert 0 < len(iterations) < 8  # before: all 8, the last ones at NashConv 0
    k, last = iterations[-1]
    assert last <= 1e-9 and all(n > 1e-9 for _, n in iterations[:-1])
    assert (f"PSRO converged: NashConv {float(last)} <= 1e-09 after iteration {k}; stopping "
            "(population.psro.stop_nash_conv)") in _log(capfd)

    # resumed with the same settings: nothing left to run, no member added
    train_here([*ARGS, STOP, "resume=true", f"hydra.run.dir={run_dir}"], monkeypatch, tmp_path)
    assert _db(tmp_path)[1:] == (iterations, "finished")
    logged = _log(capfd)
    assert not any(m.startswith("PSRO iteration ") for m in logged)
    assert any("converged" in m and "nothing left to run" in m for m in logged)

    # a resume may change stop_nash_conv: off (or below the last NashConv) it runs on
    train_here([*ARGS, "resume=true", f"hydra.run.dir={run_dir}"], monkeypatch, tmp_path)
    assert len(_db(tmp_path)[1]) == 8 and _db(tmp_path)[2] == "finished"


@pytest.mark.parametrize("extra, words", [
    (["population.psro.stop_nash_conv=-1"], ["stop_nash_conv=-1", ">= 0"]),
    (["population.psro.stop_nash_conv=nan"], ["stop_nash_conv=nan", ">= 0"]),
    (["population.psro.nash_conv=false", STOP], ["nash_conv=false", "stop_nash_conv=null"]),
    (["population=psro", "game=climbing", STOP],  # auto: an RL oracle, sampled payoffs
     ["stop_nash_conv=1e-09", "matrix/climbing is not an OpenSpiel game",
      "stop_nash_conv=null"]),
])
def test_stop_nash_conv_refusals(extra, words, monkeypatch, tmp_path, capsys):
    args = ARGS[3:] if "game=climbing" in extra else ARGS
    with pytest.raises(SystemExit) as err:
        train_here([*args, *extra], monkeypatch, tmp_path)
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines
    assert list(tmp_path.iterdir()) == []  # no run folder


def test_sampled_payoffs_stop_on_the_exact_nash_conv():
    """With sampled payoffs on an enumerable game PSRO still computes (and records) the
    exact NashConv of its meta-mixture: that is what the threshold is compared with."""
    from populations.psro import PSRO, ExactBestResponse, PSROConfig

    cfg = PSROConfig(payoffs="sampled", episodes_per_entry=20, num_envs=4, stop_nash_conv=1.0)
    results = PSRO("openspiel/kuhn_poker", ExactBestResponse("openspiel/kuhn_poker"),
                   cfg).run(5)
    assert len(results) == 1 and results[0].nash_conv <= 1.0  # uniform play: 11/12


def test_python_api_refuses_a_threshold_without_nash_conv():
    from populations.psro import PSRO, PSROConfig

    with pytest.raises(ValueError, match="matrix/climbing is not an OpenSpiel game"):
        # prd: nash is refused first on this cooperative game (test_fix40b_psro_settings)
        PSRO("matrix/climbing", object(), PSROConfig(payoffs="sampled", stop_nash_conv=0.1,
                                                     meta_solver="prd"))
    for bad in (-0.5, float("nan"), True, "0.1"):
        with pytest.raises(ValueError, match="stop_nash_conv"):
            PSROConfig(stop_nash_conv=bad)
