"""A numeric flag given no integer (``selfplay-eval --episodes ten``,
``python -m populations.league --generations many``): one line naming the flag, the value and
what the flag accepts, in the words of its range error (``--episodes 0: expected an integer
>= 1``); argparse's own "invalid int value: 'ten'" did not say what is accepted."""

import pytest

from populations.eval_cli import eval_main
from populations.experiment_config import POPULATION_SIZES
from populations.league_cli import main as league_main

SEED_RANGE = f"an integer from 0 to {2**62 - 1} (2**62 - 1)"


def _fails(main, argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("flag, accepted", [
    ("--episodes", "an integer from 1 to 1000000 (10**6: each match is a row of the database)"),
    ("--seed", SEED_RANGE),
    ("--pairs", "an integer >= 0 (the most pairs printed one a line; 0: none)"),
    ("--torch-threads", "an integer from 1 to "),
    ("--exploit-frames", "an integer from 1 to "),
    ("--exploit-seeds", "an integer from 1 to 1000000 (10**6 repetitions"),
    ("--exploit-episodes", "an integer from 2 to "),
])
def test_eval_flag_given_no_integer(flag, accepted, tmp_path, capsys):
    err = _fails(eval_main, ["--db", str(tmp_path / "r.db"), flag, "ten", "a.pt", "b.pt"],
                 capsys)
    assert err.startswith(f"selfplay-eval: argument {flag}: 'ten': expected {accepted}"), err
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("flag, accepted", [
    # the words of LeagueConfig's range errors (rfix33a: '>= 1' where num_envs takes 1 to 10**9)
    ("--generations", f"an integer from 1 to {POPULATION_SIZES['generations'][0]}"),
    ("--frames-per-generation", f"an integer from 1 to {10**12}"),
    ("--num-envs", f"an integer from 1 to {10**9}"),
    ("--eval-episodes", f"an integer from 1 to {10**6}"),
    ("--seed", SEED_RANGE),
    ("--keep-checkpoints", "an integer >= 1 (the newest checkpoints kept on disk)"),
])
def test_league_flag_given_no_integer(flag, accepted, tmp_path, capsys):
    err = _fails(league_main, ["--run-dir", str(tmp_path / "run"), flag, "many"], capsys)
    assert err == (f"python -m populations.league: argument {flag}: 'many': expected "
                   f"{accepted} (see --help)\n")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flag, too_many", [
    ("--num-envs", 10**9 + 1), ("--eval-episodes", 10**6 + 1),
    ("--frames-per-generation", 10**12 + 1), ("--seed", 2**62),
])
def test_league_flag_words_are_its_range_errors(flag, too_many, tmp_path, capsys):
    """``--num-envs ten`` said '>= 1' while the range error of 10**9 + 1 says '1 to 10**9'
    (rfix33a): both say the range."""
    words = _fails(league_main, ["--run-dir", str(tmp_path / "run"), flag, "ten"], capsys)
    words = words.split("'ten': expected ", 1)[1].removesuffix(" (see --help)\n")
    err = _fails(league_main, ["--run-dir", str(tmp_path / "run"), flag, str(too_many)], capsys)
    assert err.rstrip("\n").endswith(f"; expected {words}"), (err, words)
    assert not (tmp_path / "run").exists()
