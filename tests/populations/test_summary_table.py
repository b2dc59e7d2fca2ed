"""The end-of-run table of selfplay-train and the league CLI (``print_summary``)."""

from pathlib import Path

from populations.cli import print_summary
from populations.experiment import RunSummary


def _table(rows, capsys):
    run = Path("/nowhere/run")
    print_summary(RunSummary(run, run / "league.db", run / "snapshots", None, rows))
    out = capsys.readouterr().out.splitlines()
    return [line for line in out if line and not line.startswith(
        ("run folder", "database", "snapshots", "dashboard"))]


def test_long_names_keep_the_columns_aligned(capsys):
    """PSRO's members (psro-player_0-12, 15 characters) pushed their row's columns right
    of the header's (every column was 12 wide)."""
    rows = [{"member": f"psro-player_{a}-{k}", "seat": f"player_{a}", "meta_weight": w}
            for a, k, w in ((0, 12, 0.5), (1, 3, 1.0))]
    lines = _table(rows, capsys)
    assert len(lines) == 3
    ends = {tuple(i + 1 for i, ch in enumerate(line) if ch != " " and (
        i + 1 == len(line) or line[i + 1] == " ")) for line in lines}
    assert len(ends) == 1  # every column ends where its header does


def test_a_single_run_without_an_ended_episode_says_so(capsys):
    """final_return printed 'None' when no episode ended within the frames (go, chess at
    frames=800 in a CLI walk)."""
    lines = _table([{"member": "mappo", "version": 1, "frames": 800, "seconds": 25.8,
                     "final_return": None}], capsys)
    assert lines[1].endswith("no episode ended") and "None" not in lines[1]


def test_a_return_rounded_to_zero_is_not_negative_zero(capsys):
    """``eval_return -0.0`` on VMAS football: a mean of -0.0001 rounded to 3 places."""
    rows = [{"member": "mappo", "final_return": round(-0.0001, 3), "eval_return": -0.0,
             "frames": 200}]
    cells = _table(rows, capsys)[1].split()
    assert cells == ["mappo", "0.0", "0.0", "200"], cells


def test_a_leagues_legal_rate_column_has_its_legend_and_no_none(capsys):
    """A league table with an LLM member (split27's eval_legal_rate column) printed `None`
    for an LLM snapshot whose evaluation logged nothing, and no legend line: the legend came
    only with a single run's eval_return."""
    rows = [{"member": "llm", "version": 1, "kind": "llm", "elo": 1000.0, "mu": 25.0,
             "sigma": 8.0, "pairs": 0, "eval_legal_rate": None},
            {"member": "mappo", "version": 1, "kind": "mappo", "elo": 1000.0, "mu": 25.0,
             "sigma": 8.0, "pairs": 0, "eval_legal_rate": "-"}]
    lines = _table(rows, capsys)
    assert lines[1].endswith("not recorded") and "None" not in lines[1], lines
    assert any(line.startswith("eval_legal_rate: share of the LLM team's evaluation moves")
               for line in lines), lines


def test_an_llm_runs_columns_each_have_a_legend(capsys):
    """An LLM team run's table (walk 27c): legal_rate and success_rate had no legend line,
    where every other column of a run's table has one."""
    rows = [{"member": "llm", "version": 1, "iterations": 2, "legal_rate": 1.0,
             "success_rate": 0.25, "team_return": 0.25, "eval_return": 0.375,
             "eval_ci95": 0.433, "eval_legal_rate": 1.0}]
    lines = _table(rows, capsys)
    explained = {line.split(":")[0] for line in lines[2:] if ": " in line}
    assert explained == {"legal_rate", "success_rate", "team_return", "eval_return",
                         "eval_ci95", "eval_legal_rate"}, lines
