"""One-line CLI errors that say how to fix the command."""

import re

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from populations.cli_common import reported


def test_an_unquoted_game_string_gets_a_quoting_hint(capsys):
    with pytest.raises(SystemExit) as stop, reported("selfplay-train"):  # OverrideParseException
        OverridesParser.create().parse_overrides(["game.name=openspiel/goofspiel(num_cards=4)"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("selfplay-train: mismatched input '('")
    assert """'game.name="openspiel/goofspiel(num_cards=4)"'""" in err
    # the hint's own spelling parses
    OverridesParser.create().parse_overrides(['game.name="openspiel/goofspiel(num_cards=4)"'])


def test_other_errors_get_no_quoting_hint(capsys):
    with pytest.raises(SystemExit), reported("selfplay-train"):
        raise ValueError("num_envs=0 must be positive")
    assert "quotes" not in capsys.readouterr().err


def test_frames_beside_a_league_is_named_as_unused():
    """``frames=1000 population=pfsp`` trained 20k frames per generation without a word."""
    from populations.experiment import ExperimentConfig, PopulationConfig
    from populations.train_overrides import unused_overrides

    league = ExperimentConfig(frames=1000, population=PopulationConfig(kind="league"))
    (note,) = unused_overrides(league, ["frames=1000", "population=pfsp"])
    assert "frames=1000" in note and "population.frames_per_generation=20000" in note
    psro = ExperimentConfig(frames=1000, population=PopulationConfig(kind="psro", oracle="rl"))
    assert "population.oracle_frames" in unused_overrides(psro, ["frames=1000"])[0]
    assert unused_overrides(ExperimentConfig(frames=1000), ["frames=1000"]) == []
    assert unused_overrides(league, ["population=pfsp"]) == []  # a preset's frames: no note


def test_ctrl_c_is_one_line_naming_the_resume(tmp_path, capsys, monkeypatch):
    """Ctrl-C during a run printed a KeyboardInterrupt traceback (status 1 from Python)."""
    from populations.run_guard import run_folder_guard

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    run = tmp_path / "my run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "settings.json").write_text("{}")  # a run writes it first, before any checkpoint
    (run / "checkpoints" / "ckpt_000001.pt").write_bytes(b"x")
    with pytest.raises(SystemExit) as stop, run_folder_guard("selfplay-train", run, True):
        raise KeyboardInterrupt
    assert stop.value.code == 130 and run.is_dir()  # kept: it holds a checkpoint
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("selfplay-train: interrupted")
    assert f"""resume=true 'hydra.run.dir="{run}"'""" in err  # quoted: it has a space


def test_ctrl_c_names_a_resume_only_where_resume_goes_on(tmp_path, capsys, monkeypatch):
    """Ctrl-C counted a checkpoints/ folder alone as a run and said "resumes with
    resume=true", which resume=true refuses (no settings.json or league.db)."""
    from populations.run_folder import RunFolderError, resume_settings
    from populations.run_guard import run_folder_guard

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "ckpt_000001.pt").write_bytes(b"x")
    with pytest.raises(SystemExit) as stop, run_folder_guard("selfplay-train", run, False):
        raise KeyboardInterrupt
    assert stop.value.code == 130 and run.is_dir()
    err = capsys.readouterr().err.strip()
    assert err == "selfplay-train: interrupted before the run started (start again)"
    with pytest.raises(RunFolderError, match="holds no run"):
        resume_settings(run, {}, resume=True)


def test_ctrl_c_under_hydra_full_error_keeps_its_traceback_and_the_folder(tmp_path, capsys,
                                                                          monkeypatch):
    """HYDRA_FULL_ERROR=1: the KeyboardInterrupt goes on, before the folder is touched."""
    from populations.cli_common import reported
    from populations.run_guard import run_folder_guard

    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    run = tmp_path / "new"
    run.mkdir()
    with pytest.raises(KeyboardInterrupt), run_folder_guard("selfplay-train", run, True):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt), reported("selfplay-eval"):
        raise KeyboardInterrupt
    assert run.is_dir() and capsys.readouterr().err == ""


@pytest.mark.parametrize("path", ["/r/default/2026", "/r/0_algo=mappo,seed=1", "/r/run#1",
                                  "/r/my run", "/r/ünï cødé/ρ", "/r/it's", '/r/say "x"'])
def test_the_printed_resume_override_reads_back_as_the_folder(path):
    """The summary's ``resume=true hydra.run.dir=...`` of a sweep job (``0_algo=mappo,seed=1``:
    a list to Hydra), of ``run#1`` or of a folder with spaces did not parse when pasted."""
    import shlex
    from pathlib import Path

    from populations.command_line import run_dir_override

    (word,) = shlex.split(run_dir_override(Path(path)))
    (o,) = OverridesParser.create().parse_overrides([word])
    assert o.key_or_group == "hydra.run.dir" and o.value() == path


def test_the_printed_resume_override_names_the_folder_to_hydra(tmp_path):
    """Both quote kinds, a backslash before a quote or at the end, or ``${`` in the name were
    printed as overrides Hydra could not parse, or read as an interpolation."""
    import shlex
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from populations.command_line import run_dir_override

    names = ["/r/it's \"x\"", "/r/x\\", "/r/a\\'b\"", '/r/"\\', "/r/a${b}", "/r/a\\${b}",
             "/r/$HOME !x `y`", "/r/plain"]
    (tmp_path / "c.yaml").write_text("{}")  # Hydra's own config is what reads the folder
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        for name in names:
            (word,) = shlex.split(run_dir_override(Path(name)))
            cfg = compose(config_name="c", overrides=[word], return_hydra_config=True)
            assert OmegaConf.select(cfg, "hydra.run.dir") == name, word


def test_ctrl_c_in_a_plain_league_is_one_line_naming_the_resume(tmp_path, capsys, monkeypatch):
    """``python -m populations.league`` printed a KeyboardInterrupt traceback on Ctrl-C."""
    from populations import league, league_cli

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(league.League, "run", interrupted)
    run = str(tmp_path / "my league")
    with pytest.raises(SystemExit) as stop:
        league_cli.main(["--run-dir", run, "--game", "openspiel/kuhn_poker"])
    assert stop.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"python -m populations.league: interrupted; go on with: python -m "
                   f"populations.league --run-dir '{run}' --game openspiel/kuhn_poker --resume")


def test_ctrl_c_before_a_plain_league_started_says_start_again(tmp_path, capsys, monkeypatch):
    """A Ctrl-C before the league made its database (a user's plugin still importing) printed
    a ``--resume`` command, which then failed: the folder held no run."""
    from populations import cli_common, league_cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_common, "load_plugins", interrupted)
    for made in (False, True):  # a folder the user made first is left, empty
        run = tmp_path / f"made {made}"
        if made:
            run.mkdir()
        with pytest.raises(SystemExit) as stop:
            league_cli.main(["--run-dir", str(run), "--game", "openspiel/kuhn_poker"])
        assert stop.value.code == 130
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            "python -m populations.league: interrupted before the run started (start again)")
        assert run.is_dir() == made


def test_ctrl_c_in_selfplay_eval_is_one_line(capsys, monkeypatch):
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(SystemExit) as stop, reported("selfplay-eval"):
        raise KeyboardInterrupt
    assert stop.value.code == 130
    assert capsys.readouterr().err == "selfplay-eval: interrupted\n"


@pytest.mark.parametrize(("arg", "message"), [
    ("hydra.run.dir=", "hydra.run.dir is empty (an unset shell variable?)"),
    ("hydra.sweep.dir=", "hydra.sweep.dir is empty"),
    ("imports=mygames", "imports=mygames must be a list: imports=[mygames]"),
    ("hydra.sweep.dir=/", "hydra.sweep.dir=/ is the filesystem's root"),
    (r'hydra.run.dir="runs/a\${y}"', "holding a literal '${' cannot be a run folder"),
])
def test_command_line_slips_are_named_with_their_fix(arg, message, monkeypatch):
    """``hydra.run.dir=$UNSET`` wrote league.db, snapshots/ and checkpoints/ into the working
    folder; ``imports=mygames`` got Hydra's "str is not a ListConfig"."""
    import os

    from populations.command_line import CLIError
    from populations.train_overrides import check_command_line

    monkeypatch.setattr(os, "environ", os.environ.copy())  # imports= sets variables for workers

    with pytest.raises(CLIError, match=re.escape(message)):
        check_command_line(["game=kuhn", arg])
    # fine (the listed modules are imported here since d856a16: one that exists)
    check_command_line(["game=kuhn", "hydra.run.dir=x", "imports=[json]"])
    check_command_line(["hydra.run.dir=/tmp/r/${now:%H}", "hydra.sweep.dir=/${oc.env:X}/s"])


def test_new_top_level_run_folder(capsys, monkeypatch):
    """``hydra.run.dir=/results/exp1`` (a new top-level folder, usual in containers run as
    root) was refused as a likely ``$RUN/x`` with ``RUN`` unset: it goes on with a one-line
    note where the process may create it, and is refused (naming the guess) where not."""
    from populations import train_overrides as checks
    from populations.command_line import CLIError

    monkeypatch.setattr(checks.os, "access", lambda path, mode: True)  # root: / is writable
    checks.check_command_line(["game=kuhn", "hydra.run.dir=/no_such_top_folder/exp1"])
    assert capsys.readouterr().err == (
        "note: hydra.run.dir=/no_such_top_folder/exp1 makes the new top-level folder "
        "/no_such_top_folder (if you meant $VAR/..., VAR is unset)\n")
    checks.check_command_line(["hydra.run.dir=/tmp/x"])  # an existing one: nothing to say
    assert capsys.readouterr().err == ""
    with pytest.raises(CLIError, match=re.escape("hydra.sweep.dir=/ is the filesystem's")):
        checks.check_command_line(["hydra.sweep.dir=/"])
    monkeypatch.setattr(checks.os, "access", lambda path, mode: False)
    with pytest.raises(CLIError, match=re.escape(
            "hydra.sweep.dir=/no_such_top_folder/s: /no_such_top_folder does not exist and "
            "cannot be made here (an unset shell variable, as in $RUN/x?)")):
        checks.check_command_line(["hydra.sweep.dir=/no_such_top_folder/s"])


def test_ctrl_c_while_hydra_composes_is_one_line(capsys, monkeypatch):
    """Ctrl-C in the first seconds (Hydra composing the config) printed a traceback."""
    from populations import cli

    def app():
        def run():
            raise KeyboardInterrupt
        return run

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(cli, "_hydra_app", app)
    monkeypatch.setattr(cli.sys, "argv", ["selfplay-train", "game=kuhn"])
    with pytest.raises(SystemExit) as stop:
        cli.train_main()
    assert stop.value.code == 130
    assert capsys.readouterr().err == "selfplay-train: interrupted\n"


def test_a_graph_encoder_on_a_graphless_game_names_the_encoder_that_plays_it():
    """encoder=gnn_gru on kuhn said 'use encoder=mlp' (dropping the GRU) and its list of algos
    that play the game left out mappo and ippo, which do with an mlp encoder."""
    import games
    from marl.configs import MAPPOConfig, NetConfig
    from marl.registry import IncompatibleError, check_compatible

    kuhn = games.make("openspiel/kuhn_poker").spec
    gnn_gru = MAPPOConfig(net=NetConfig(encoder="gnn", critic="gnn", recurrent=True))
    with pytest.raises(IncompatibleError) as err:
        check_compatible("mappo", kuhn, gnn_gru)
    msg = str(err.value)
    assert "; use encoder=mlp_gru; algos that play it: [" in msg, msg
    assert msg.endswith(
        ", and ['ippo', 'mappo'] with mappo.net.encoder='mlp' and "
        "mappo.net.critic='auto', their defaults (set to 'gnn' and 'gnn')"), msg
    check_compatible("mappo", kuhn, MAPPOConfig(net=NetConfig(encoder="mlp", recurrent=True)))
    plain = MAPPOConfig(net=NetConfig(encoder="gnn", critic="gnn"))
    with pytest.raises(IncompatibleError, match=r"use encoder=mlp; algos that play it: .*"
                                                r"\['ippo', 'mappo'\] with mappo"):
        check_compatible("ippo", kuhn, plain)
