"""Bad values on the command lines of ``selfplay-demo`` and ``selfplay-eval``: one line naming
the value and what is accepted, exit 2, no traceback; text read from a file is printed escaped."""

import subprocess
import sys
from pathlib import Path

import pytest

from populations import demo

BIN = Path(sys.executable).parent


def _demo(args, capsys):
    with pytest.raises(SystemExit) as stop:
        demo.main(args)
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


@pytest.mark.parametrize("args, said", [
    # before: a GameError traceback (num_envs 0, -1), +nan returns (episodes 0, -3),
    # numpy's "expected non-negative integer" traceback (seed -1)
    (["--num-envs", "0"], "--num-envs: 0: expected an integer from 1 to 1024"),
    (["--num-envs", "-1"], "--num-envs: -1: expected an integer from 1 to 1024"),
    (["--num-envs", "1025"], "--num-envs: 1025: expected an integer from 1 to 1024"),
    (["--num-envs", "1.5"], "--num-envs: '1.5': expected an integer from 1 to 1024"),
    (["--episodes", "0"], "--episodes: 0: expected an integer from 1 to 10000"),
    (["--episodes", "-3"], "--episodes: -3: expected an integer from 1 to 10000"),
    (["--episodes", "x"], "--episodes: 'x': expected an integer from 1 to 10000"),
    (["--seed", "-1"], "--seed: -1: expected an integer >= 0"),
    (["--seed", "1e3"], "--seed: '1e3': expected an integer >= 0"),
])
def test_demo_bad_values_are_one_line(args, said, capsys):
    code, out, err = _demo(args, capsys)
    assert code == 2 and out == ""
    assert err.splitlines() == [f"selfplay-demo: argument {said} (see --help)"]


def test_demo_ctrl_c_is_one_line(monkeypatch, capsys):
    def stop(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "_round_robin", stop)
    code, _, err = _demo(["--episodes", "1"], capsys)
    assert code == 130 and err == "selfplay-demo: interrupted\n"


def test_demo_console_script_num_envs_0():
    # the walk of the review (RA-13), from the installed script
    run = subprocess.run([BIN / "selfplay-demo", "--num-envs", "0"], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    assert run.stderr == ("selfplay-demo: argument --num-envs: 0: expected an integer from 1 "
                          "to 1024 (see --help)\n")


# ----------------------------------------------------------------------- selfplay-eval
KUHN = "openspiel/kuhn_poker"
ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"
SPREAD = "pettingzoo/mpe2.simple_spread_v3"


def _eval(args, capsys):
    from populations.eval_cli import eval_main

    try:
        eval_main([*args, "--episodes", "1"])
        code = 0
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _policy(path, game, agents=None, recorded=None, **kwargs):
    """A policy file of ``game``; ``recorded``: the game name its file holds instead (a
    crafted one, or the bare name files held before 399addf)."""
    import dataclasses

    import games
    from marl import registry

    pol = registry.get("mappo").build(games.make(game, **kwargs).spec, agents=agents).policy()
    if recorded is not None:
        pol.meta = dataclasses.replace(pol.meta, game=recorded)
    return str(pol.save(path))


def test_escaped_shows_control_codes():
    from populations.eval_cli import escaped

    assert escaped("openspiel/kuhn_poker(players=2)") == "openspiel/kuhn_poker(players=2)"
    assert escaped("a\x1b[2Jb\r\n\x07\u202ec é") == "a\\x1b[2Jb\\r\\n\\x07\\u202ec é"


@pytest.mark.parametrize("recorded, seats, game, said", [
    # the note (same seats and shapes), "another game" (other seats), other shapes
    ("\x1b[31mRED\x1b[0m\rfake\nline", None, KUHN,
     "selfplay-eval: note: a was trained on \\x1b[31mRED\\x1b[0m\\rfake\\nline; it plays "
     "openspiel/kuhn_poker here"),
    ("\x1b]0;title\x07evil", ("player_0",), KUHN,
     "selfplay-eval: a was trained on \\x1b]0;title\\x07evil (seats ['player_0']), not on "
     "openspiel/kuhn_poker (seats ['player_0', 'player_1']): evaluate it on its own game"),
    ("\x1b[2Jleduc", None, "openspiel/leduc_poker",
     "selfplay-eval: a was trained on \\x1b[2Jleduc (observations of shape (30,) for "
     "player_0); openspiel/kuhn_poker gives (11,)"),
])
def test_a_snapshots_game_name_is_printed_escaped(recorded, seats, game, said, tmp_path,
                                                   capsys):
    # before: the ESC sequences, \r and \n reached the terminal raw (RA-10)
    a = _policy(tmp_path / "a.pt", game, seats, recorded)
    b = _policy(tmp_path / "b.pt", KUHN)
    code, _, err = _eval([a, b, "--game", KUHN, "--db", str(tmp_path / "r.db")], capsys)
    assert said in err.splitlines(), err
    assert not any(c in err for c in "\x1b\r\x07")


def test_a_file_name_in_a_load_error_is_escaped(tmp_path, capsys):
    bad = tmp_path / "x\x1b[2J.pt"
    bad.write_text("not a policy")
    b = _policy(tmp_path / "b.pt", KUHN)
    code, _, err = _eval([str(bad), b, "--game", KUHN, "--db", str(tmp_path / "r.db")], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "x\\x1b[2J.pt" in err, err
    assert "\x1b" not in err
    code, _, err = _eval([str(tmp_path / "y\x1b[2J.pt"), b, "--game", KUHN, "--db",
                          str(tmp_path / "r.db")], capsys)  # a file that is not there
    assert code == 2 and "policy file not found:" in err and "\x1b" not in err, err


def test_an_old_bare_name_is_not_another_game(tmp_path, capsys):
    """A snapshot written before names held their kwargs (meta.game the bare module) of a
    population=none run (its first team's seats) was 'trained on <bare>, not on
    <bare>(max_cycles=25): evaluate it on its own game' -- the same game."""
    a = _policy(tmp_path / "a.pt", ADVERSARY, ("adversary_0",), ADVERSARY)
    b = _policy(tmp_path / "b.pt", ADVERSARY, None, ADVERSARY)
    code, _, err = _eval([a, b, "--game", ADVERSARY, "--game-kwargs", '{"max_cycles": 25}',
                          "--db", str(tmp_path / "r.db")], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "evaluate it on its own game" not in err
    assert err.startswith(f"selfplay-eval: a holds the seats ['adversary_0'] of {ADVERSARY}, "
                          f"not ['agent_0', 'agent_1'] of {ADVERSARY}(max_cycles=25): "), err
    # its seats are a whole team (the adversaries, whatever N): no word of the arguments
    assert "without arguments" not in err


def test_an_old_bare_name_with_every_seat_plays_with_a_note(tmp_path, capsys):
    a = _policy(tmp_path / "a.pt", ADVERSARY, None, ADVERSARY)
    b = _policy(tmp_path / "b.pt", ADVERSARY, None, ADVERSARY)
    code, out, err = _eval([a, b, "--game", ADVERSARY, "--game-kwargs", '{"max_cycles": 25}',
                            "--db", str(tmp_path / "r.db")], capsys)
    assert code == 0, err
    assert (f"selfplay-eval: note: a's file names its game {ADVERSARY} without arguments (the "
            f"defaults, or not recorded); it plays {ADVERSARY}(max_cycles=25) here"
            ) in err.splitlines()
    assert "was trained on" not in err and out.count("pairs 1\n") == 2


def test_an_old_bare_name_of_other_kwargs_says_so(tmp_path, capsys):
    # an N=2 snapshot of before 399addf, on the default N=3: its seats' refusal says the
    # file does not tell its arguments (the population=none reason alone misled)
    a = _policy(tmp_path / "a.pt", SPREAD, None, SPREAD, N=2)
    b = _policy(tmp_path / "b.pt", SPREAD, None, SPREAD, N=2)
    code, _, err = _eval([a, b, "--game", SPREAD, "--db", str(tmp_path / "r.db")], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"selfplay-eval: a holds the seats ['agent_0', 'agent_1'] of {SPREAD}, "
                          "not ['agent_2']: ")
    assert err.rstrip().endswith("give the --game-kwargs it was trained with"), err


def test_a_bare_openspiel_name_is_still_another_game(tmp_path, capsys):
    # OpenSpiel names always held their parameters: kuhn_poker is not kuhn_poker(players=3)
    a = _policy(tmp_path / "a.pt", KUHN)
    b = _policy(tmp_path / "b.pt", KUHN)
    code, _, err = _eval([a, b, "--game", KUHN, "--game-kwargs", '{"players": 3}',
                          "--db", str(tmp_path / "r.db")], capsys)
    assert code == 2 and "evaluate it on its own game" in err, err


@pytest.mark.parametrize("seed", ["-1", str(2**62), "99999999999999999999999"])
@pytest.mark.parametrize("exploit", [[], ["--exploit"]])
def test_eval_seed_out_of_range_is_one_line(seed, exploit, tmp_path, capsys):
    # before: numpy's "expected non-negative integer" (not naming --seed), and a SQLite
    # "Overflow when unpacking long long" / OverflowError, after the database was made
    a = _policy(tmp_path / "a.pt", KUHN)
    code, _, err = _eval([a, a, "--game", KUHN, "--db", str(tmp_path / "r.db"), "--seed", seed,
                          *exploit], capsys)
    assert code == 2 and err == (f"selfplay-eval: --seed {seed}: expected an integer from 0 to "
                                 f"{2**62 - 1} (2**62 - 1)\n")
    assert not (tmp_path / "r.db").exists()


# ------------------------------------------------------------- selfplay-train's flags
RERUN = ("not supported (Hydra unpickles the file, which runs any code it holds, and "
         "selfplay runs write no .hydra/config.pickle); continue a run with resume=true "
         "hydra.run.dir=<run>")


@pytest.mark.parametrize("argv, said", [
    # before: Hydra's ValueError tracebacks, exit 1 (RA-12)
    (["-r", "-m"], "--run and -m cannot be combined: give one of --run, -m, --cfg, --info, "
                   "--shell-completion"),
    (["--cfg", "job", "--info"], "--cfg and --info cannot be combined: give one of --run, -m, "
                                 "--cfg, --info, --shell-completion"),
    (["--resolve"], "--resolve resolves what --cfg prints: give it with --cfg job, --cfg "
                    "hydra or --cfg all"),
    (["--info", "config", "--resolve"], "--resolve resolves what --cfg prints: give it with "
                                        "--cfg job, --cfg hydra or --cfg all"),
    # before: a missing file or a text file got these checks, and a pickle was unpickled by
    # Hydra (audit29 F2: any code it held ran); refused now whatever the file
    (["--experimental-rerun", "nope.pickle"], "--experimental-rerun 'nope.pickle': " + RERUN),
    (["--experimental-rerun", "."], "--experimental-rerun '.': " + RERUN),
])
def test_train_hydra_flag_misuse_is_one_line(argv, said, monkeypatch, tmp_path, capsys):
    from populations.cli import train_main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "text.txt").write_text("hi\n")
    monkeypatch.setattr(sys, "argv", ["selfplay-train", *argv])
    with pytest.raises(SystemExit) as stop:
        train_main()
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"selfplay-train: {said}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text.txt"]  # no run folder


class _Planted:
    def __reduce__(self):
        return (open, ("planted.txt", "w"))  # runs at unpickling: makes the file


def test_experimental_rerun_of_a_crafted_pickle_runs_nothing(monkeypatch, tmp_path, capsys):
    """audit29 F2: Hydra's --experimental-rerun unpickled the file, so a crafted
    .hydra/config.pickle ran its code (here: making a file); before, the pickle passed our
    check (it starts with \\x80) and planted.txt was made."""
    import pickle

    from populations.cli import train_main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.pickle").write_bytes(pickle.dumps({"x": _Planted()}, protocol=4))
    monkeypatch.setattr(sys, "argv", ["selfplay-train", "--experimental-rerun", "config.pickle"])
    with pytest.raises(SystemExit) as stop:
        train_main()
    assert stop.value.code == 2
    assert capsys.readouterr().err == ("selfplay-train: --experimental-rerun 'config.pickle': "
                                       + RERUN + "\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.pickle"]
