"""A user's own PSRO meta-solver (walk 23): its exception or bad output is one line naming it.

Before: an exception in a solver registered with ``@register_meta_solver`` (or one returning
None) ended ``selfplay-train`` in Hydra's traceback, exit 1, with a failed run folder left;
what a solver returned was not checked: NaN ran to exit 0 logging ``NashConv nan`` and wrote
``NaN`` (invalid JSON) into ``psro_iterations.meta_strategy``, unnormalized weights were
taken, a wrong length failed in ``sequence_form`` without naming the solver, and too few
distributions ended in ``zip() argument 2 is shorter than argument 1``. A ``keep_going``
sweep whose job failed so ended in the traceback, not its failed-jobs line. A second
registration of a taken name said "already registered" without saying by whom.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from populations import meta_solvers as ms
from populations.meta_solvers import MetaSolverError, solve_meta
from populations.psro import PSRO, ExactBestResponse, PSROConfig
from tests.populations.user_modules import user_module
from tests.subprocs import run_together

MODULE = "walk23_my_solvers"
SOURCE = '''
import os

import numpy as np

from populations.meta_solvers import register_meta_solver

BUG = os.environ.get("W23_BUG", "")


@register_meta_solver("w23_buggy")
def buggy(payoffs, full_game=None):
    sizes = payoffs.shape[1:]
    if BUG == "raise":
        raise RuntimeError("my solver exploded")  # RAISES
    if BUG == "none":
        return None
    if BUG == "nan":
        return [np.full(k, np.nan) for k in sizes]
    if BUG == "unnorm":
        return [np.full(k, 2.0) for k in sizes]
    if BUG == "count":
        return [np.ones(sizes[0]) / sizes[0]]
    if BUG == "shape":
        return [np.ones(k + 1) / (k + 1) for k in sizes]
    if BUG == "neg":
        return [np.array([1.5, -0.5]) if k == 2 else np.ones(k) / k for k in sizes]
    return [np.ones(k) / k for k in sizes]


@register_meta_solver("w23_first")
def first(payoffs, full_game=None):
    """All weight on each player's first member, with LP-like round-off."""
    return [np.array([1.0 + 1e-9] + [-1e-10] * (k - 1)) for k in payoffs.shape[1:]]
'''
RAISES_LINE = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "# RAISES" in line)
KUHN = "openspiel/kuhn_poker"


@pytest.fixture
def solvers(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path`` (the working directory), taken out of
    the registry after."""
    def cleanup() -> None:
        for name in ("w23_buggy", "w23_first"):
            ms._META_SOLVERS.pop(name, None)

    with user_module(tmp_path, monkeypatch, MODULE, SOURCE, cleanup) as m:
        yield m


def _set_bug(module, monkeypatch, bug: str) -> None:
    monkeypatch.setattr(module, "BUG", bug)


def _psro(solver: str) -> PSRO:
    return PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(meta_solver=solver, payoffs="exact"))


WANT = ("expected a list of 2 distributions, one per player (player_0, player_1), of lengths "
        "[{k}, {k}]: finite, non-negative, each summing to 1")
BAD_OUTPUTS = {
    "none": "returned NoneType",
    "nan": "returned a non-finite probability (nan) for player_0",
    "unnorm": "returned a distribution summing to 2 for player_0",
    "count": "returned 1 distribution for 2 players",
    "shape": "returned an array of shape (2,) for player_0, whose population has 1 member",
}


@pytest.mark.parametrize("bug", sorted(BAD_OUTPUTS))
def test_a_bad_output_is_refused_naming_the_solver(solvers, monkeypatch, bug):
    _set_bug(solvers, monkeypatch, bug)
    with pytest.raises(MetaSolverError) as err:
        _psro("w23_buggy")  # PSRO solves its first empirical game when it is made
    assert str(err.value) == (f"meta-solver 'w23_buggy' ({MODULE}.buggy) {BAD_OUTPUTS[bug]}; "
                              + WANT.format(k=1))


def test_a_negative_probability_is_refused_once_a_population_has_two(solvers, monkeypatch):
    psro = _psro("w23_buggy")
    _set_bug(solvers, monkeypatch, "neg")
    with pytest.raises(MetaSolverError, match=r"^meta-solver 'w23_buggy' \(walk23_my_solvers"
                                              r"\.buggy\) returned a negative probability "
                                              r"\(-0\.5\) for player_0; expected .* of "
                                              r"lengths \[2, 2\]"):
        psro.iteration()


def test_an_exception_names_the_solver_and_the_users_line(solvers, monkeypatch):
    _set_bug(solvers, monkeypatch, "raise")
    with pytest.raises(MetaSolverError) as err:
        _psro("w23_buggy")
    assert str(err.value) == (
        f"meta-solver 'w23_buggy' ({MODULE}.buggy) raised RuntimeError: my solver exploded "
        f"(at {MODULE}.py:{RAISES_LINE} in buggy); HYDRA_FULL_ERROR=1 shows the traceback")
    assert isinstance(err.value.__cause__, RuntimeError)  # HYDRA_FULL_ERROR=1: its traceback
    assert isinstance(err.value, ValueError)  # a user error to the command lines: exit 2


def test_a_response_target_solver_is_checked_too(solvers, monkeypatch):
    """``response_target=<meta-solver>`` runs a second solver each iteration."""
    psro = PSRO(KUHN, ExactBestResponse(KUHN), PSROConfig(payoffs="exact", meta_solver="nash",
                                                            response_target="w23_buggy"))
    _set_bug(solvers, monkeypatch, "nan")
    with pytest.raises(MetaSolverError, match="^meta-solver 'w23_buggy' .* returned a "
                                              "non-finite probability"):
        psro.iteration()


def test_round_off_is_accepted_and_cleaned(solvers):
    psro = _psro("w23_first")
    psro.iteration()
    for dist in psro.meta_strategy.values():
        assert dist.shape == (2,) and dist.min() >= 0.0  # -1e-10 clipped: mixtures accept it
    assert np.isfinite(psro.nash_conv())


def test_built_in_solvers_pass_the_check_unchanged():
    payoffs = np.zeros((2, 2, 3))
    payoffs[0] = [[1, -1, 0], [-1, 1, 0.5]]
    payoffs[1] = -payoffs[0]
    for name in ("nash", "prd", "uniform", "auto"):
        got = solve_meta(name, payoffs)
        want = ms.get_meta_solver(name)(payoffs)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


def test_a_built_ins_own_value_error_is_kept():
    with pytest.raises(ValueError) as err:
        solve_meta("least_exploitable", np.zeros((2, 2, 2)))
    assert type(err.value) is ValueError and "needs the exact full game" in str(err.value)


def test_a_taken_name_is_refused_naming_who_holds_it(solvers):
    with pytest.raises(ValueError) as err:
        ms.register_meta_solver("nash")(lambda payoffs, full_game=None: None)
    assert str(err.value) == ("meta-solver 'nash' is already registered by "
                              "populations.meta_solvers.nash; register yours under another "
                              "name")
    with pytest.raises(ValueError, match=f"^meta-solver 'w23_first' is already registered by "
                                         f"{MODULE}.first;"):
        ms.register_meta_solver("w23_first")(lambda payoffs, full_game=None: None)
    # the same module's function defined again (a notebook cell run twice) replaces it
    sys.modules.pop(MODULE)
    again = __import__(MODULE)
    assert ms.get_meta_solver("w23_first") is again.first


# ------------------------------------------------------------------ through selfplay-train
def _cli(tmp_path: Path, bug: str, *argv: str) -> dict:
    return {"args": [str(Path(sys.executable).parent / "selfplay-train"), *argv,  # -m first
                     f"imports=[{MODULE}]", "experiment=kuhn_psro", "progress=false"],
            "cwd": tmp_path,
            "env": {**os.environ, "W23_BUG": bug, "HYDRA_FULL_ERROR": "0",
                    "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]),
                                                   os.environ.get("PYTHONPATH", "")])}}


def test_selfplay_train_says_one_line_exit_2_no_folder_and_a_sweep_goes_on(tmp_path):
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    run, sweep = tmp_path / "runs" / "one", tmp_path / "sweep"
    single, nan, swept = run_together(
        _cli(tmp_path, "raise", "population.psro.meta_solver=w23_buggy",
             "population.iterations=3", f"hydra.run.dir={run}"),
        _cli(tmp_path, "nan", "population.psro.meta_solver=w23_buggy",
             "population.iterations=3", f"hydra.run.dir={run}_nan"),
        _cli(tmp_path, "raise", "-m", "population.iterations=1",
             "population.psro.meta_solver=w23_buggy,uniform", "keep_going=true",
             f"hydra.sweep.dir={sweep}"))
    err = single.stderr.strip().splitlines()
    assert single.returncode == 2, single.stderr
    assert err[-1] == (
        f"selfplay-train: meta-solver 'w23_buggy' ({MODULE}.buggy) raised RuntimeError: my "
        f"solver exploded (at {MODULE}.py:{RAISES_LINE} in buggy); HYDRA_FULL_ERROR=1 shows "
        "the traceback")
    assert "Traceback" not in single.stderr
    # nothing recorded: neither run folder is left; runs/, made by whichever command came
    # first, stays for the other (it existed when that one started: 62aac50), empty
    assert not run.exists() and not (tmp_path / "runs" / "one_nan").exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    assert nan.returncode == 2, nan.stderr
    assert nan.stderr.strip().splitlines()[-1].startswith(
        f"selfplay-train: meta-solver 'w23_buggy' ({MODULE}.buggy) returned a non-finite "
        "probability (nan) for player_0; ")
    assert "Traceback" not in swept.stderr, swept.stderr
    assert swept.returncode == 2
    last = swept.stderr.strip().splitlines()[-1]
    assert last.startswith("selfplay-train: 1 of 2 sweep jobs failed: job 0 "), last
    assert "meta-solver 'w23_buggy'" in swept.stderr
    kept = [p.name for p in sweep.iterdir() if p.is_dir()]  # job 0's, with no checkpoint, gone
    assert len(kept) == 1 and kept[0].startswith("1_") and kept[0].endswith("=uniform"), kept


def test_an_unknown_name_says_how_to_add_ones_own():
    with pytest.raises(ValueError, match=r"unknown meta-solver 'mine'; choose one of \[.*\]; "
                                         r"a meta-solver of your own is registered by "
                                         r"@register_meta_solver \(populations.meta_solvers\) "
                                         r"when its module is imported \(selfplay-train "
                                         r"imports=\[module\]\)"):
        ms.get_meta_solver("mine")


def test_a_psro_run_whose_status_cannot_be_recorded_reports_the_first_error(
        solvers, monkeypatch, tmp_path):
    """The meta-solver's error is the one a PSRO run ends with even when recording the failed
    status fails too (a full disk, a held lock): before, ``run_psro`` called
    ``set_run_status`` in its ``except`` and the second error (``database or disk is
    full``) replaced the first, which the CLI then printed as a traceback."""
    import sqlite3

    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from populations.db import LeagueDB
    from populations.experiment import run_experiment

    _set_bug(solvers, monkeypatch, "raise")
    real = LeagueDB.set_run_status

    def full_when_failing(self, run_id, status, error=None):
        if status != "running":
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, run_id, status, error)

    monkeypatch.setattr(LeagueDB, "set_run_status", full_when_failing)
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config", overrides=[
            "experiment=kuhn_psro", "population.psro.meta_solver=w23_buggy",
            "population.iterations=2", "progress=false", "logger=none"])
    with pytest.raises(MetaSolverError, match="my solver exploded"):
        run_experiment(OmegaConf.to_object(cfg), tmp_path / "run")
