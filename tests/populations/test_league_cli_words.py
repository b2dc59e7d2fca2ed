"""``python -m populations.league``: its messages name its own options (``--resume``,
``--resume-override``, ``--game-kwargs``), and ``--game-kwargs`` reaches the game, checked
before a run folder is made. In process: each case stops before anything trains."""

import pytest

from populations import league_cli, run_folder

GAME = ["--game", "openspiel/kuhn_poker"]


def _fails(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        league_cli.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err.removeprefix("python -m populations.league: ")


def test_league_cli_messages_name_its_own_options(tmp_path, capsys):
    """They said ``pass resume_override=True`` (the Python API's spelling) to a user of
    ``--resume-override``."""
    missing = _fails(["--run-dir", str(tmp_path / "nope"), "--resume", *GAME], capsys)
    assert missing.startswith("--resume but run folder") and "add --resume-override" in missing
    held = tmp_path / "held"
    held.mkdir()
    (held / "league.db").touch()
    err = _fails(["--run-dir", str(held), *GAME], capsys)
    assert "already holds a league; add --resume to continue" in err
    err = _fails(["--run-dir", str(tmp_path / "three"), *GAME, "--game-kwargs",
                  '{"players": 3}'], capsys)  # the game got its argument: three teams
    assert "needs two teams" in err and """--game-kwargs '{"teams": [[...],[...]]}'""" in err
    assert "resume_override" not in missing + err and not (tmp_path / "three").exists()
    # the Python API's and selfplay-train's own spellings
    with pytest.raises(run_folder.RunFolderError, match=r"pass resume_override=True to"):
        run_folder.resume_settings(tmp_path / "empty", {}, resume=True)
    with run_folder.spelled(run_folder.HYDRA_WORDS), \
            pytest.raises(run_folder.RunFolderError, match=r"set resume_override=true to"):
        run_folder.resume_settings(tmp_path / "empty", {}, resume=True)


NIM = ["--import", "nim", "--game", "nim"]  # examples/nim.py (tests/conftest.py: on sys.path)


@pytest.mark.parametrize(("game", "kwargs", "message"), [
    (GAME, '{"players": 3', "--game-kwargs is not JSON ("),
    (GAME, "[3]", "--game-kwargs must be a JSON object"),
    (GAME, '{"cards": 4}', "bad parameter for openspiel/kuhn_poker: 'cards' unknown; accepted:"),
    # the MPE adapter refuses a max_cycles that is not an integer >= 1 (c22b40d); it took
    # "5" and failed at the first step with a traceback once the folder was made (review I1)
    ([], '{"max_cycles": "5"}', "bad parameter for pettingzoo/mpe2.simple_adversary_v3: "
                                "max_cycles='5'; accepted: an integer >= 1"),
    # a game that takes what it is given when built, failing when built or at its first step
    (NIM, '{"stones": "5"}', "nim cannot be built with the game arguments {'stones': '5'} "
                             "(TypeError: "),
    (NIM, '{"stones": 1e400}', "nim fails at reset(seed=0) with the game arguments "
                               "{'stones': inf}: observe raised TypeError: "),
])
def test_bad_game_kwargs_are_one_line_and_make_no_folder(game, kwargs, message, tmp_path,
                                                          capsys, monkeypatch):
    from games.registry import IMPORTS_ENV

    monkeypatch.setenv(IMPORTS_ENV, "")  # --import records its modules there for workers
    err = _fails(["--run-dir", str(tmp_path / "run"), *game, "--game-kwargs", kwargs], capsys)
    assert err.startswith(message), err
    assert not (tmp_path / "run").exists()


def test_game_kwargs_reach_the_league(tmp_path, monkeypatch):
    """The league CLI could not pass a game's arguments at all (selfplay-train can)."""
    seen = []

    class Started:
        db, run_id = None, None  # the summary's table: none (league_table below)

        def __init__(self, cfg, run_dir, **kwargs):
            seen.append(cfg)

        def run(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(league_cli, "League", Started)
    monkeypatch.setattr("populations.experiment.league_table", lambda db, run_id: [])
    league_cli.main(["--run-dir", str(tmp_path / "a"), *GAME, "--game-kwargs", '{"players": 2}'])
    league_cli.main(["--run-dir", str(tmp_path / "b"), *GAME])  # another game: its own defaults
    league_cli.main(["--run-dir", str(tmp_path / "c")])  # the default game's max_cycles
    assert [c.game_kwargs for c in seen] == [{"players": 2}, {}, {"max_cycles": 25}]


def test_a_resume_without_the_runs_game_kwargs_is_another_setting():
    """A game argument given at the start and left out on a resume was a key only one side
    had (taken for one another selfplay version added), so the league resumed on the game's
    default silently (review I4); selfplay-train's +game.kwargs.X alike."""
    league_run = {"game": "g", "game_kwargs": {"dynamic_rescaling": True, "max_cycles": 25}}
    diff = run_folder.settings_diff(league_run, {"game": "g", "game_kwargs": {"max_cycles": 25}})
    assert diff == ["game_kwargs={'dynamic_rescaling': True, 'max_cycles': 25} (run) vs "
                    "{'max_cycles': 25} (now)"]
    assert run_folder.settings_diff({"game": {"name": "g", "kwargs": {"N": 3}}},
                                    {"game": {"name": "g", "kwargs": {}}})
    assert not run_folder.settings_diff(league_run, dict(league_run))
    assert not run_folder.settings_diff({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}})  # added key
