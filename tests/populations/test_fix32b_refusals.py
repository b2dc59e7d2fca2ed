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


def _psro_member(run_dir, seat):
    from marl.tabular import TabularPolicy

    spec = games.make("openspiel/kuhn_poker").spec
    pol = TabularPolicy.from_tables(spec, {seat: {}})
    folder = run_dir / "snapshots" / f"psro-{seat}-0"
    folder.mkdir(parents=True)
    return str(pol.save(folder / "v0000.pt"))


@pytest.mark.parametrize("exploit", [False, True])
def test_a_psro_member_is_refused_naming_where_its_run_rated_it(tmp_path, capsys, exploit):
    run_dir = tmp_path / "kuhn_psro"
    files = [_psro_member(run_dir, "player_0")]
    if not exploit:
        files.append(_psro_member(run_dir, "player_1"))
    (run_dir / "settings.json").write_text(json.dumps({"population": {"kind": "psro"}}))
    code, _, err = run_eval([*files, "--db", str(tmp_path / "x.db"),
                             *(["--exploit"] if exploit else [])], capsys)
    assert code == 2
    last = err.splitlines()[-1]
    assert last.startswith("selfplay-eval: psro-player_0-0_v0000 holds the seats ['player_0'] "
                           "of openspiel/kuhn_poker, not ['player_1']: a PSRO member plays its "
                           "own seat"), err
    assert f"selfplay-dashboard {run_dir} (views psro and payoffs)" in last
    assert "population=self_play" not in last
    assert not (tmp_path / "x.db").exists()


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

