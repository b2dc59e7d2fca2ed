"""selfplay-train's command line as Hydra's own argparse reads it, after the CLI's rewrites
(``game.name=X`` drops the game preset with an added ``~game``)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("argv", [
    ["-m", "game.name=openspiel/goofspiel", "seed=0,1"],  # a sweep: -m first, as README has it
    ["--multirun", "seed=0,1", "game.name=openspiel/goofspiel"],
    ["game.name=openspiel/kuhn_poker", "--cfg", "job"],
    ["--cfg", "job", "game.name=openspiel/kuhn_poker"],
    ["game.name=openspiel/kuhn_poker", "-m"],
])
def test_game_name_keeps_the_command_line_parseable(argv):
    # before: ~game went first, so `-m game.name=X ...` read as `~game -m game.name=X ...`,
    # and Hydra refused every override after -m ("unrecognized arguments")
    from hydra._internal.utils import get_args_parser

    from populations.command_line import game_overrides

    args = get_args_parser().parse_args(game_overrides(argv))
    assert "~game" in args.overrides
    assert [a for a in args.overrides if a != "~game"] == \
        [a for a in argv if "=" in a]
    assert args.multirun == ("-m" in argv or "--multirun" in argv)


def test_a_sweep_job_folder_is_one_folder(monkeypatch):
    # before: 0_game.name=openspiel/kuhn_poker,seed=0,~game=null nested the job a folder
    # deeper, where the sweep's resume, its Ctrl-C hint and the dashboard did not look
    from pathlib import Path

    from omegaconf import OmegaConf

    from populations.sweeps import job_dirname

    if not OmegaConf.has_resolver("job_dirname"):
        OmegaConf.register_new_resolver("job_dirname", job_dirname)
    cfg = OmegaConf.load(Path(__file__).resolve().parents[2] / "configs" / "config.yaml")
    cfg.hydra.job.num = 0
    cfg.hydra.job.override_dirname = "game.name=openspiel/kuhn_poker,seed=0,~game=null"
    assert cfg.hydra.sweep.subdir == "0_game.name=openspiel_kuhn_poker,seed=0"


def test_the_sweep_resume_hint_repeats_the_typed_command(tmp_path, monkeypatch):
    # the CLI adds ~game for game.name=; the Ctrl-C hint printed it back ('-m '~game' ...')
    import sys

    import populations.cli_common as cli_common
    import populations.run_guard as run_guard
    from populations.command_line import game_overrides

    sweep = tmp_path / "sweep"
    (sweep / "0_seed=0").mkdir(parents=True)
    (sweep / "0_seed=0" / "settings.json").write_text("{}")
    typed = ["-m", "game.name=openspiel/kuhn_poker", "seed=0,1"]
    monkeypatch.setattr(cli_common, "_TYPED", list(typed))
    monkeypatch.setattr(sys, "argv", ["selfplay-train", *game_overrides(typed)])
    hint = run_guard._how_to_go_on(sweep / "0_seed=0", False, sweep)
    assert "~game" not in hint
    assert "-m game.name=openspiel/kuhn_poker seed=0,1 resume=true" in hint


def test_a_failed_sweep_job_says_the_rest_did_not_run(tmp_path, monkeypatch, capsys):
    # -m game=kuhn game.kwargs.players=2,11,3: job 1 failed on players=11 and the sweep
    # ended there, in a line that said neither that job 2 never ran nor how to go on
    import populations.cli_common as cli_common
    import populations.run_guard as run_guard
    from populations.command_line import CLIError

    sweep = tmp_path / "sweep"
    (sweep / "0_players=2").mkdir(parents=True)
    (sweep / "0_players=2" / "settings.json").write_text("{}")
    (sweep / "1_players=11").mkdir()
    monkeypatch.setattr(cli_common, "_TYPED", ["-m", "game=kuhn", "game.kwargs.players=2,11,3"])
    with pytest.raises(SystemExit) as stop, run_guard.run_folder_guard(
            "selfplay-train", sweep / "1_players=11", created=True, sweep_dir=sweep, job=1):
        raise CLIError("bad parameter for openspiel/kuhn_poker: players=11")
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1
    assert "players=11 (sweep job 1; the jobs after it did not run: fix the swept values, " \
        "then selfplay-train -m game=kuhn game.kwargs.players=2,11,3 resume=true " \
        "hydra.sweep.dir=" in err
    assert not (sweep / "1_players=11").exists()  # the failed job's folder is removed


@pytest.mark.parametrize(("argv", "flag"), [
    (["-m", "game.name=openspiel/goofspiel", "seed=0,1", "--cfg", "job"], "--cfg"),
    (["-m", "--info", "config", "game.name=openspiel/kuhn_poker"], "--info"),
    (["--multirun", "--cfg", "job"], "--cfg"),
])
def test_a_sweep_with_cfg_or_info_is_one_line(argv, flag, monkeypatch, capsys):
    # before: Hydra's "ValueError: Only one of --run, --multirun, --cfg, ..." traceback, rc 1
    import sys

    from populations.cli import train_main

    monkeypatch.setattr(sys, "argv", ["selfplay-train", *argv])
    with pytest.raises(SystemExit) as stop:
        train_main()
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        f"selfplay-train: -m cannot be combined with {flag}; --cfg job prints one job's "
        "config: drop -m and give one value of each swept key\n")


def test_an_unparsed_line_does_not_name_the_added_game_deletion(monkeypatch, capsys):
    # overrides split around a flag: Hydra's refusal named '~game', which nobody typed
    import sys

    from populations.cli import train_main

    monkeypatch.setattr(sys, "argv", ["selfplay-train", "seed=3", "--cfg", "job", "--resolve",
                                      "game.name=openspiel/kuhn_poker"])
    with pytest.raises(SystemExit) as stop:
        train_main()
    assert stop.value.code == 2
    assert capsys.readouterr().err == ("selfplay-train: unrecognized arguments: "
                                       "game.name=openspiel/kuhn_poker (see --help)\n")
