"""walk32's findings on the command lines (M1, M4, L1, L3, L4).

- ``selfplay-eval --game-kwargs`` without ``--game`` on files that record a game with arguments
  plays the recorded game with ``--game-kwargs`` on top (it was refused: "names max_cycles=5
  but its kwargs give max_cycles=7; give one of them", though only one was given).
- A PSRO member's snapshot (one seat) is refused in a line that says where its run rated it
  (the advice was to retrain with population=self_play).
- ``selfplay-dashboard --port 99999``: one line, not argparse's usage block.
- ``progress=maybe`` and ``mappo.net.hidden=[64,abc]``: what is expected, not OmegaConf's words.
- ``device=cuda:7`` on a machine without a GPU driver: refused before the game loads (one
  line; it came after the run's first log line).
"""

import glob
import json
import sys

import pytest

import games
from marl import registry
from populations.command_line import CLIError
from populations.train_overrides import GPU_DEVICE_FILES, check_command_line
from tests.populations.eval_cli_run import run_eval
from tests.subprocs import run

ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"


def _policy(path, game, **kwargs):
    spec = games.make(game, **kwargs).spec
    return str(registry.get("mappo").build(spec).policy().save(path))


def test_game_kwargs_go_on_top_of_the_recorded_game(tmp_path, capsys):
    a = _policy(tmp_path / "a.pt", ADVERSARY, max_cycles=5)
    b = _policy(tmp_path / "b.pt", ADVERSARY, max_cycles=5)
    code, _, err = run_eval([a, b, "--game-kwargs", '{"max_cycles": 7}', "--episodes", "1",
                             "--db", str(tmp_path / "x.db")], capsys)
    assert code == 0, err
    lines = err.splitlines()
    assert (f"selfplay-eval: note: no --game given: playing {ADVERSARY}(max_cycles=7), the game "
            "the policy files record, --game-kwargs on top") in lines, err
    assert any(line.startswith("selfplay-eval: note: a's game differs here in max_cycles (5 in "
                               "training, 7 here)") for line in lines), err


def test_a_mistyped_game_kwarg_on_the_recorded_game_says_what_is_accepted(tmp_path, capsys):
    a = _policy(tmp_path / "a.pt", ADVERSARY, max_cycles=5)
    b = _policy(tmp_path / "b.pt", ADVERSARY, max_cycles=5)
    code, _, err = run_eval([a, b, "--game-kwargs", '{"max_cycles": "x"}',
                             "--db", str(tmp_path / "x.db")], capsys)
    assert code == 2
    assert "max_cycles='x'; accepted: an integer >= 1" in err.splitlines()[-1], err
    assert "give one of them" not in err
    assert not (tmp_path / "x.db").exists()


def _psro_member(run_dir, seat, iteration=0):
    from marl.tabular import TabularPolicy

    spec = games.make("openspiel/kuhn_poker").spec
    pol = TabularPolicy.from_tables(spec, {seat: {}})  # no rows: uniform play
    folder = run_dir / "snapshots" / f"psro-{seat}-{iteration}"
    folder.mkdir(parents=True)
    return str(pol.save(folder / "v0000.pt"))


@pytest.mark.parametrize("exploit", [False, True])
def test_psro_members_of_one_seat_only_are_refused_naming_what_works(tmp_path, capsys, exploit):
    run_dir = tmp_path / "kuhn_psro"
    files = [_psro_member(run_dir, "player_0")]
    if not exploit:  # two members of player_0: no seating holds player_1
        files.append(_psro_member(run_dir, "player_0", 1))
    (run_dir / "settings.json").write_text(json.dumps({"population": {"kind": "psro"}}))
    code, _, err = run_eval([*files, "--db", str(tmp_path / "x.db"),
                             *(["--exploit"] if exploit else [])], capsys)
    assert code == 2
    last = err.splitlines()[-1]
    assert last.startswith("selfplay-eval: psro-player_0-0_v0000 holds the seats ['player_0'] "
                           "of openspiel/kuhn_poker, not ['player_1']: a PSRO member plays its "
                           "own seat: give members that together hold every seat"), err
    assert f"selfplay-dashboard {run_dir} (views psro and payoffs)" in last
    assert "population=self_play" not in last
    assert not (tmp_path / "x.db").exists()


def test_members_that_together_hold_every_seat_play_each_seating(tmp_path, capsys):
    from populations.db import LeagueDB

    run_dir = tmp_path / "kuhn_psro"
    files = [_psro_member(run_dir, "player_0"), _psro_member(run_dir, "player_0", 1),
             _psro_member(run_dir, "player_1")]
    db_path = tmp_path / "x.db"
    code, out, err = run_eval([*files, "--db", str(db_path), "--episodes", "3"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == ("each seating on openspiel/kuhn_poker (2 seatings, 3 episodes each): "
                        "a side's mean return per episode (the mean over its seats) "
                        "± 95% interval"), out
    seatings = [line.split() for line in lines[1:3]]
    assert [(row[0], row[4]) for row in seatings] == [
        ("psro-player_0-0_v0000", "psro-player_1-0_v0000"),
        ("psro-player_0-1_v0000", "psro-player_1-0_v0000")], out
    for row in seatings:  # Kuhn is zero-sum: the two sides' means cancel
        assert float(row[1]) == pytest.approx(-float(row[5])), out
    assert lines[3].startswith("each file over the seatings it sat in"), out
    assert lines[6].startswith("  psro-player_1-0_v0000  seats player_1  return "), out
    assert lines[6].endswith(" over 2 seatings"), out
    db = LeagueDB(db_path, readonly=True)
    try:
        run = 1  # the evaluation's run, the database's first
        ids = {s.member: s.id for s in db.snapshots(run)}
        matches = db.matches(run)
    finally:
        db.close()
    assert len(matches) == 2 * 3
    assert {tuple(sorted(m.seats.items())) for m in matches} == {
        (("player_0", ids[f"psro-player_0-{i}_v0000"]), ("player_1", ids["psro-player_1-0_v0000"]))
        for i in (0, 1)}
    assert all(m.returns["player_0"] == -m.returns["player_1"] for m in matches)


@pytest.mark.parametrize("args", [["--port", "99999"], ["--refresh", "-1"], ["--bogus"]])
def test_dashboard_argument_errors_are_one_line(tmp_path, capsys, args):
    from populations.dashboard import cli

    with pytest.raises(SystemExit) as stop:
        cli.parse_args([str(tmp_path), *args])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("selfplay-dashboard: ") and "usage:" not in err, err


@pytest.mark.parametrize("override,message", [
    ("progress=maybe", "bad config: progress='maybe'; expected true or false"),
    ("mappo.value_norm=maybe", "bad config: mappo.value_norm='maybe'; expected true or false"),
    ("mappo.net.hidden=[64,abc]", "bad config: mappo.net.hidden=[64,abc]; expected a list of "
                                  "integers such as mappo.net.hidden=[64,64]"),
])
def test_override_type_errors_name_what_is_expected(override, message):
    with pytest.raises(CLIError) as refused:
        check_command_line([override])
    assert str(refused.value) == message


def test_omegaconf_true_false_words_still_pass():
    check_command_line(["progress=yes", "progress=off", "mappo.value_norm=false"])


@pytest.mark.skipif(any(glob.glob(p) for p in GPU_DEVICE_FILES),
                    reason="a GPU driver is present: torch decides (the late check)")
@pytest.mark.parametrize("device", ["cuda:7", "cuda"])
def test_cuda_without_a_gpu_driver_is_one_line_before_the_game_loads(tmp_path, device):
    out = run([sys.executable, "-m", "populations.cli", f"device={device}", "frames=10",
               f"hydra.run.dir={tmp_path / 'r'}"], cwd=tmp_path, capture_output=True,
              text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [
        f"selfplay-train: device '{device}' requested but CUDA is not available (this machine "
        "has no GPU driver); use 'cpu' (or 'auto')"], out.stderr
    assert out.stdout == "" and not (tmp_path / "r").exists()

