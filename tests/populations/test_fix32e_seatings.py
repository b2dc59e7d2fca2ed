"""review32's findings on ``selfplay-eval``'s seatings (files that each hold some seats, a PSRO
run's members) and its refusals:

- M3: a side of several seats is reported as the mean over its seats, as PSRO's payoffs and
  ``charts/team_return`` take it (the table summed them: a team's total, twice its per-seat
  return in MPE, where teammates share the reward).
- L7: the table's columns line up when the means have different widths.
- M4: Ctrl-C counts seatings and episodes (it counted round-robin pairings of the files), and
  the seatings that finished are kept (all were recorded only at the end); left33: their
  table is printed, marked partial, above the count line (it was printed nowhere).
- L2: a bad ``--game-kwargs`` value on the recorded game names ``--game-kwargs`` (it was blamed
  on the file, with the advice to give ``--game``).
- L5: a Jetson's GPU files count as a GPU driver (``device=cuda`` is not refused there).
- L6: a PSRO member copied out of its run folder is still known by its member name, and the
  dashboard command in the line is shell-quoted.
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

import games
from marl import registry
from tests.populations.eval_cli_run import interrupted_after_first_match, run_eval

ADVERSARY = "pettingzoo/mpe2.simple_adversary_v3"


def _mpe_side(path, agents, seed=0):
    spec = games.make(ADVERSARY, max_cycles=5).spec
    return str(registry.get("mappo").build(spec, agents=agents, seed=seed).policy().save(path))


def test_a_team_side_is_the_mean_over_its_seats_and_the_columns_line_up(tmp_path, capsys):
    from populations.db import LeagueDB

    files = [_mpe_side(tmp_path / "adv.pt", ("adversary_0",)),
             _mpe_side(tmp_path / "adv2.pt", ("adversary_0",), seed=1),
             _mpe_side(tmp_path / "good.pt", ("agent_0", "agent_1"))]
    db_path = tmp_path / "x.db"
    code, out, err = run_eval([*files, "--db", str(db_path), "--episodes", "3"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].endswith("(2 seatings, 3 episodes each): a side's mean return per episode "
                             "(the mean over its seats) ± 95% interval"), out
    rows = lines[1:3]
    assert len({row.index("±") for row in rows}) == 1, out  # first column
    assert len({row.rindex("±") for row in rows}) == 1, out  # second column
    db = LeagueDB(db_path, readonly=True)
    try:
        matches = db.matches(1)
    finally:
        db.close()
    for i, row in enumerate(rows):  # seat/<i>/e0000...: the good side's mean over its seats
        mine = [m.returns for m in matches if m.key.startswith(f"seat/{i}/")]
        per_seat = sum((r["agent_0"] + r["agent_1"]) / 2 for r in mine) / len(mine)
        assert float(row.split()[-3]) == pytest.approx(per_seat, abs=1e-3), out
        assert per_seat != pytest.approx(2 * per_seat, abs=1e-2)  # summing would differ


def _psro_member(folder, seat, name):
    from marl.tabular import TabularPolicy

    spec = games.make("openspiel/kuhn_poker").spec
    pol = TabularPolicy.from_tables(spec, {seat: {}})  # no rows: uniform play
    folder.mkdir(parents=True, exist_ok=True)
    return str(pol.save(folder / f"{name}.pt"))


EPISODES = 20_000  # per seating: long enough that Ctrl-C comes before the last one


def test_ctrl_c_during_seatings_counts_them_keeps_them_and_prints_their_table(tmp_path):
    # M4: the count line and the database; left33: the table of the seatings that finished,
    # marked partial, above the count line (their returns were printed nowhere). One real
    # SIGINT to a real child process.
    files = [_psro_member(tmp_path / "m", seat, f"{seat}_{k}")
             for seat in ("player_0", "player_1") for k in range(2)]  # 4 seatings
    db = tmp_path / "eval.db"
    command = [str(Path(sys.executable).with_name("selfplay-eval")), *files, "--db", "eval.db",
               "--episodes", str(EPISODES)]
    done = interrupted_after_first_match(command, db, tmp_path)
    out, err = done.stdout, done.stderr
    assert done.returncode == 130, err[-3000:]
    last = err.strip().splitlines()[-1]
    found = re.fullmatch(
        rf"selfplay-eval: interrupted after (\d) of 4 seatings \((\d+) of {4 * EPISODES} "
        r"episodes\); they are kept in eval\.db \(run 1, status interrupted\); running the same "
        r"command again starts a new evaluation \(a new run that plays all 4 seatings again; "
        r"this one is not resumed\)", last)
    assert found, last
    seatings, episodes = map(int, found.groups())
    with sqlite3.connect(db) as conn:
        keys = [k for (k,) in conn.execute("SELECT key FROM matches WHERE run_id = 1")]
    assert 1 <= seatings < 4 and episodes == len(keys) == EPISODES * seatings
    assert {k.rsplit("/", 1)[0] for k in keys} == {f"seat/{i}" for i in range(seatings)}

    # the finished seatings' table, on stdout
    lines = out.splitlines()
    heads = [k for k, line in enumerate(lines) if line.startswith("each seating on")]
    assert len(heads) == 1, (out, err[-3000:])
    head = heads[0]
    assert re.fullmatch(
        rf"each seating on \S*kuhn_poker \(partial: the {seatings} of 4 seatings that finished "
        rf"before the interrupt, {EPISODES} episodes each\): a side's mean return per episode "
        r"\(the mean over its seats\) ± 95% interval", lines[head]), out
    rows = lines[head + 1:head + 1 + seatings]
    assert all(row.lstrip().startswith("player_0_0") for row in rows[:2]), out  # seating order
    assert lines[head + 1 + seatings] == ("each file over the seatings it sat in (mean of the "
                                          "seatings' mean returns; partial):"), out
    per_file = lines[head + 2 + seatings:]
    order = [("player_0_0", "player_1_0"), ("player_0_0", "player_1_1"),
             ("player_0_1", "player_1_0"), ("player_0_1", "player_1_1")]
    sat = {name for seating in order[:seatings] for name in seating}
    assert [line.split()[0] for line in per_file] == \
        [f for f in ("player_0_0", "player_0_1", "player_1_0", "player_1_1") if f in sat], out


def test_a_bad_game_kwarg_on_the_recorded_game_names_game_kwargs(tmp_path, capsys):
    spec = games.make(ADVERSARY, max_cycles=5).spec
    files = [str(registry.get("mappo").build(spec, seed=i).policy().save(tmp_path / f"{i}.pt"))
             for i in range(2)]
    code, _, err = run_eval([*files, "--game-kwargs", '{"max_cycles": "x"}',
                             "--db", str(tmp_path / "x.db")], capsys)
    assert code == 2
    assert err.splitlines()[-1] == (
        f"selfplay-eval: --game-kwargs on the game the files record ({ADVERSARY}(max_cycles=5))"
        f": bad parameter for {ADVERSARY}: max_cycles='x'; accepted: an integer >= 1"), err
    assert not (tmp_path / "x.db").exists()


def test_a_psro_member_out_of_its_run_folder_is_known_by_its_member_name(tmp_path, capsys):
    files = [_psro_member(tmp_path / "copied" / "psro-player_0-0", "player_0", "v0000")]
    code, _, err = run_eval([*files, "--exploit", "--db", str(tmp_path / "x.db")], capsys)
    assert code == 2
    last = err.splitlines()[-1]
    assert "a PSRO member plays its own seat" in last, err
    assert "population=self_play" not in last


def test_the_dashboard_command_of_a_psro_member_is_shell_quoted(tmp_path, capsys):
    run_dir = tmp_path / "my runs" / "kuhn_psro"
    files = [_psro_member(run_dir / "snapshots" / "psro-player_0-0", "player_0", "v0000")]
    (run_dir / "settings.json").write_text(json.dumps({"population": {"kind": "psro"}}))
    code, _, err = run_eval([*files, "--exploit", "--db", str(tmp_path / "x.db")], capsys)
    assert code == 2
    assert f"selfplay-dashboard {shlex.quote(str(run_dir))} (views psro" in err, err


@pytest.mark.parametrize("path", ["dev/nvhost-ctrl-gpu", "etc/nv_tegra_release"])
def test_a_jetsons_gpu_files_count_as_a_gpu_driver(tmp_path, path):
    # review32 L5: a Jetson (L4T) has none of /dev/nvidia*: device=cuda was refused up front
    from populations.train_overrides import gpu_driver_present

    assert not gpu_driver_present(str(tmp_path))
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).touch()
    assert gpu_driver_present(str(tmp_path))
