"""``population.generations=1e20`` was refused with "(write 100000000000000000000)", and that
integer was then refused with the range; ``population.exploit.frames`` / ``.seeds`` /
``.eval_episodes`` (``selfplay-eval --exploit-*``) and ``llm.iterations`` had no upper bound
(``population.exploit.frames=10**20`` made its run folder and its first estimate trained
without end). A whole float past a section's bound is refused with that bound, named as
typed; each size is refused in one line with its range, before the run folder or database."""

from __future__ import annotations

import pytest

from populations.command_line import CLIError
from populations.config_checks import EXPLOIT_SIZES
from populations.train_overrides import check_command_line
from tests.populations.eval_cli_run import run_eval
from tests.populations.test_walk18_cli_more import _train

LEAGUE = "experiment=tag_pfsp_league"
TYPED = [  # (overrides, the one line)
    ([LEAGUE, "population.generations=1e20"],
     "bad config: population.generations=1e20; expected an integer in [1, 1000000] (10**6 "
     "snapshots, each checkpointed and evaluated)"),
    ([LEAGUE, "population.exploit.every=1", "population.exploit.frames=1e13"],
     "bad config: population.exploit.frames must be an integer from 1 to 1000000000000 "
     "(10**12: 12 days at a million frames a second), got 1e13"),
    (["experiment=kuhn_llm_selfplay", "llm.iterations=1e20"],
     "bad config: llm.iterations=1e20; expected an integer in [1, 1000000] (10**6 GRPO "
     "iterations)"),
]
TOO_MANY = [
    ([LEAGUE, "population.exploit.every=1", "population.exploit.frames=100000000000000000000"],
     "bad config: population.exploit.frames must be an integer from 1 to 1000000000000 ("),
    ([LEAGUE, "population.exploit.every=1", "population.exploit.seeds=10000000000"],
     "bad config: population.exploit.seeds must be an integer from 1 to 1000000 ("),
    ([LEAGUE, "population.exploit.every=1", "population.exploit.eval_episodes=10000000"],
     "bad config: population.exploit.eval_episodes must be an integer from 2 to 1000000 ("),
    (["experiment=kuhn_llm_selfplay", "llm.iterations=100000000000000000000"],
     "bad config: llm.iterations=100000000000000000000; expected an integer in [1, 1000000] ("),
    (["experiment=kuhn_llm_selfplay", "llm.corpus_episodes=10000000"],
     "bad config: llm.corpus_episodes=10000000; expected an integer in [1, 1000000] ("),
]


@pytest.mark.parametrize(("overrides", "message"), TYPED)
def test_a_whole_float_past_the_bound_is_refused_with_the_range_as_typed(overrides, message):
    with pytest.raises(CLIError) as err:
        check_command_line(overrides)
    assert str(err.value) == message


@pytest.mark.parametrize(("overrides", "message"), TOO_MANY)
def test_a_size_past_its_bound_is_refused_in_one_line(overrides, message):
    with pytest.raises(CLIError) as err:
        check_command_line(overrides)
    text = str(err.value)
    assert text.startswith(message) and "\n" not in text, text


@pytest.mark.parametrize(("override", "write"), [
    ("population.generations=1e3", "population.generations=1e3; expected an integer "
                                   "(write 1000)"),
    ("llm.iterations=1e3", "llm.iterations=1e3; expected an integer (write 1000)")])
def test_a_whole_float_within_the_bound_still_names_the_integer(override, write):
    preset = LEAGUE if override.startswith("population") else "experiment=kuhn_llm_selfplay"
    with pytest.raises(CLIError) as err:
        check_command_line([preset, override])
    assert str(err.value) == f"bad config: {write}"


def test_the_run_folder_is_not_made(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        _train([LEAGUE, "population.exploit.every=1",
                "population.exploit.frames=100000000000000000000", f"hydra.run.dir={run}"],
               monkeypatch, tmp_path)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "selfplay-train: bad config: population.exploit.frames must be an integer from 1 to "), err
    assert not run.exists()


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    import games
    from marl import registry

    spec = games.make("openspiel/kuhn_poker").spec
    return registry.get("mappo").build(spec).policy().save(
        tmp_path_factory.mktemp("pol") / "a.pt")


@pytest.mark.parametrize(("flag", "name"), [
    ("--exploit-frames", "frames"), ("--exploit-seeds", "seeds"),
    ("--exploit-episodes", "eval_episodes")])
def test_eval_exploit_sizes_are_bounded_before_the_database(policy_file, tmp_path, capsys, flag,
                                                            name):
    top = EXPLOIT_SIZES[name][0]
    code, _, err = run_eval(["--game", "openspiel/kuhn_poker", "--db", str(tmp_path / "r.db"),
                             "--exploit", flag, str(top + 1), str(policy_file)], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"selfplay-eval: approx exploitability: {name} must be an integer from "), lines
    assert f"to {top} (" in lines[0] and f"got {top + 1}" in lines[0]
    assert not (tmp_path / "r.db").exists()
