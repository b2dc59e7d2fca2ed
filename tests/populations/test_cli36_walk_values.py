"""Bad values walk36c gave the league, eval and dashboard CLIs: each is one line naming the
value and what is accepted, exit 2, before any folder, database or policy file is touched."""

import sys

import pytest

from populations import eval_cli
from populations.dashboard import cli as dashboard
from populations.league_cli import main as league

LEAGUE = "python -m populations.league: "


def _league_err(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        league(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    return err.strip().removeprefix(LEAGUE)


def test_an_empty_run_dir_is_refused_as_selfplay_train_refuses_it(tmp_path, monkeypatch,
                                                                   capsys):
    # before: the league trained in the working folder (Path('') is '.')
    monkeypatch.chdir(tmp_path)
    err = _league_err(["--run-dir", "", "--game", "openspiel/kuhn_poker"], capsys)
    assert err == ("--run-dir is empty (an unset shell variable?), which writes the run into "
                   "this folder; give the run's folder")
    assert list(tmp_path.iterdir()) == []


def test_a_file_as_run_dir_is_named_as_a_file(tmp_path, capsys):
    # before: "[Errno 17] File exists: 'a.pt'"
    (tmp_path / "a.pt").write_bytes(b"x")
    err = _league_err(["--run-dir", str(tmp_path / "a.pt")], capsys)
    assert err == (f"--run-dir {tmp_path / 'a.pt'} is a file; give a folder (a new one, or the "
                   "run's own to --resume)")
    assert (tmp_path / "a.pt").read_bytes() == b"x"


def test_a_ray_address_without_the_ray_runner_is_refused(tmp_path, capsys):
    # before: a local league trained, the address unused and unsaid
    run = tmp_path / "run"
    err = _league_err(["--run-dir", str(run), "--ray-address", "127.0.0.1:1"], capsys)
    assert err == ("--ray-address 127.0.0.1:1 needs --runner ray (runner local joins no "
                   "cluster); add --runner ray, or drop --ray-address")
    assert not run.exists()


@pytest.mark.parametrize("flag, most", [("--generations", 10**6),
                                        ("--frames-per-generation", 10**12),
                                        ("--num-envs", 10**9), ("--eval-episodes", 10**6)])
@pytest.mark.parametrize("value", ["0", "-1", "x", "2.5", "most+1"])
def test_a_count_out_of_range_says_the_same_range_as_no_integer(flag, most, value, tmp_path,
                                                                capsys):
    # before: '--generations 0; expected an integer >= 1' but '--generations x: ... expected
    # an integer from 1 to 1000000'
    value = str(most + 1) if value == "most+1" else value
    run = tmp_path / "run"
    err = _league_err(["--run-dir", str(run), flag, value], capsys)
    if value.lstrip("-").isdigit():  # LeagueConfig's range error, as the flag's
        assert err == f"{flag} {value}; expected an integer from 1 to {most}", err
    else:
        assert err == (f"argument {flag}: {value!r}: expected an integer from 1 to {most} "
                       "(see --help)"), err
    assert not run.exists()


def test_a_negative_seed_says_the_seeds_range(tmp_path, capsys):
    # before: '--seed -1; expected an integer >= 0' where '--seed x' says 0 to 2**62 - 1
    err = _league_err(["--run-dir", str(tmp_path / "run"), "--seed", "-1"], capsys)
    assert err == "--seed -1; expected an integer from 0 to 4611686018427387903 (2**62 - 1)"


def test_the_league_help_describes_every_option(capsys):
    # before: --run-dir, --resume, --game, --frames-per-generation, --num-envs,
    # --eval-episodes and --seed had no description
    parser_help = _help(league, capsys)
    for flag in ("--run-dir RUN_DIR", "--resume ", "--game GAME",
                 "--frames-per-generation FRAMES_PER_GENERATION", "--num-envs NUM_ENVS",
                 "--eval-episodes EVAL_EPISODES", "--seed SEED"):
        assert _described(parser_help, flag), flag


def test_the_eval_help_describes_seed_and_runner(capsys):
    parser_help = _help(eval_cli.eval_main, capsys)
    for flag in ("--seed SEED", "--runner {local,ray}"):
        assert _described(parser_help, flag), flag


def _help(main, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def _described(text, flag):
    """Whether ``flag``'s line in ``--help`` is followed by words (on it or the next line)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(flag.strip()):
            rest = line.strip()[len(flag.strip()):].strip()
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            return bool(rest) or (nxt.startswith(" " * 10) and not nxt.strip().startswith("-"))
    raise AssertionError(f"{flag} not in --help")


def _eval_err(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        eval_cli.eval_main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    return err.strip().removeprefix("selfplay-eval: ")


@pytest.mark.parametrize("flags, message", [
    (["--exploit-frames", "-1"],
     "approx exploitability: frames must be an integer >= 1, got -1 (--exploit-frames)"),
    (["--exploit-frames", str(10**20)],
     "approx exploitability: frames must be an integer from 1 to 1000000000000 (10**12: 12 "
     f"days at a million frames a second), got {10**20} (--exploit-frames)"),
    (["--exploit-seeds", "0"],
     "approx exploitability: seeds must be an integer >= 1, got 0 (--exploit-seeds)"),
    (["--exploit-algo", "nope"],
     "--exploit-algo 'nope' cannot train best responses; choose one of ['mappo', 'ippo', "
     "'vdn', 'qmix', 'maddpg'] (one compatible with the game)"),
])
def test_exploit_values_are_refused_without_exploit_too(flags, message, tmp_path, capsys):
    # README: these are refused early; without --exploit they were taken and the round
    # robin ran. The files do not exist: the values come first, and no database is made
    db = tmp_path / "e.db"
    err = _eval_err(["--db", str(db), *flags, str(tmp_path / "a.pt"), str(tmp_path / "b.pt")],
                    capsys)
    if flags[0] == "--exploit-algo" and "marl.registry" in sys.modules:  # in this process:
        message = "algo 'nope' unknown; choose one of "  # the registry's words (--exploit's)
    assert err.startswith(message), err
    assert not db.exists()


def test_episodes_are_checked_before_the_files(tmp_path, capsys):
    # before: a missing file was named, --episodes 0 said only once the files loaded
    err = _eval_err(["--db", str(tmp_path / "e.db"), "--episodes", "0",
                     str(tmp_path / "missing.pt"), str(tmp_path / "other.pt")], capsys)
    assert err.startswith("--episodes 0: expected an integer from 1 to 1000000"), err


@pytest.mark.parametrize("argv", [["--bogus"], ["a.pt", "--bogus"], ["--db", "e.db", "--bogus"]])
def test_an_unknown_flag_is_said_before_a_missing_argument(argv, capsys):
    # before: 'the following arguments are required: --db' for selfplay-eval --bogus
    assert _eval_err(argv, capsys) == "unrecognized arguments: --bogus (see --help)"


def test_a_missing_db_is_still_said(capsys):
    assert _eval_err(["a.pt"], capsys) == ("the following arguments are required: --db "
                                           "(see --help)")


def test_the_dashboard_says_its_name_on_every_line_of_its_own(tmp_path, capsys):
    # before: 'league database not found: ...' with no 'selfplay-dashboard: ', and an export
    # over an empty folder wrote a page of no run, exit 1
    (tmp_path / "empty").mkdir()
    out = tmp_path / "o.html"
    assert dashboard.main([str(tmp_path / "empty"), "--export", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"selfplay-dashboard: --export {out}: nothing to export: league database "
                   f"not found: {tmp_path / 'empty' / 'league.db'} (has the run started? is "
                   "the path right?)\n"), err
    assert not out.exists()


def test_the_dashboards_export_notes_and_warnings_carry_its_name(tmp_path, capsys):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "league.db").write_text("not a database")
    out = tmp_path / "new" / "o.html"
    assert dashboard.main([str(tmp_path / "bad"), "--export", str(out)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(x.startswith("selfplay-dashboard: ") for x in lines), lines
    assert lines[0].startswith("selfplay-dashboard: note: --export ")
    assert lines[1].startswith("selfplay-dashboard: warning: cannot open league database ")


def test_the_dashboard_server_says_a_missing_database_with_its_name(tmp_path, capsys):
    # the server's status lines (stdout): a missing database with the command's name; a
    # port this test holds stops the server before it listens
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert dashboard.main([str(tmp_path / "nothing"), "--port", str(port)]) == 2
    out = capsys.readouterr()
    assert out.out == (f"selfplay-dashboard: league database not found: "
                       f"{tmp_path / 'nothing' / 'league.db'} (has the run started? is the "
                       "path right?)\n"), out
    assert out.err.startswith(f"selfplay-dashboard: cannot listen on 127.0.0.1:{port}"), out


def test_the_console_script_refuses_an_unknown_exploit_algo_without_exploit(tmp_path):
    # a process of its own (no learner registry loaded): the early check's words
    from tests import subprocs

    proc = subprocs.run([sys.executable, "-c", "from populations.eval_cli import eval_main; "
                         "eval_main()", "--db", str(tmp_path / "e.db"), "--exploit-algo", "nope",
                         str(tmp_path / "a.pt"), str(tmp_path / "b.pt")],
                        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr == (
        "selfplay-eval: --exploit-algo 'nope' cannot train best responses; choose one of "
        "['mappo', 'ippo', 'vdn', 'qmix', 'maddpg'] (one compatible with the game)\n"), proc.stderr
    assert not (tmp_path / "e.db").exists()


def test_the_demo_help_states_measured_cpu_time(capsys):
    # before: 'the default takes seconds, the most about 10 minutes' (unmeasured; walk36c:
    # 21 of 27 pairings took 35.6 s of CPU); now the figures measured with `time`
    from populations import demo

    text = " ".join(_help(demo.main, capsys).split())
    assert "about 10 minutes" not in text and "takes seconds" not in text
    assert "the default 200 about 30 s of CPU" in text, text
