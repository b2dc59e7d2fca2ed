"""A league.db's JSON columns are untrusted: a crafted or damaged row (not JSON, nested too
deep for the parser, another type than the column holds) is a one-line ``LeagueDBError``
naming the table, the row and the column, in the library, in resumed runs (what
``selfplay-train`` prints) and in the dashboard; and the dashboard's league table groups
exploitability rows once instead of scanning them per member."""

import pytest

KUHN = "openspiel/kuhn_poker"
NESTED = "[" * 100_000  # deeper than the JSON parser's recursion limit


def _one_line(text: str) -> str:
    assert "\n" not in text.strip() and "Traceback" not in text
    return text


def _db_with_every_json_column(path):
    """A database holding one row in every table that has a JSON column."""
    from populations.db import LeagueDB, MatchRow

    db = LeagueDB(path)
    run = db.create_run("r", game=KUHN, config={"seed": 0})
    mid = db.add_member(run, "main", "mappo", ["player"])
    sid = db.add_snapshot(mid, 0, path.parent / "snapshots" / "main" / "v0000.pt", "mappo",
                          KUHN, ["player"])
    db.add_matches(run, [MatchRow("m/0", KUHN, {"player_0": sid, "player_1": sid},
                                  {"player_0": 1.0, "player_1": -1.0})])
    db.add_exploitability(run, sid, "main v0", "exact", 0.5, details={"interval": [0.4, 0.6]})
    db.add_psro_iteration(run, 0, {"player_0": [1.0], "player_1": [1.0]}, 0.5, 0.1)
    return db, run


# (table, column, what a crafted row holds, the method that reads it, the row it names)
ROWS = [
    ("runs", "config", "[1, 2]", "run_config", "runs row 1"),
    ("members", "roles", '["player"', "members", "members row 1"),
    ("members", "roles", NESTED, "members", "members row 1"),
    ("members", "roles", '"player"', "members", "members row 1"),
    ("snapshots", "roles", NESTED, "snapshots", "snapshots row 1"),
    ("snapshots", "roles", '{"player": 1}', "snapshots", "snapshots row 1"),
    ("snapshots", "version", "v0", "snapshots", "snapshots row 1"),
    ("snapshots", "learner_step", 1.5, "snapshots", "snapshots row 1"),
    ("matches", "seats", '{"player_0": "1"}', "matches", "matches row 1"),
    ("matches", "returns", "[1.0, -1.0]", "matches", "matches row 1"),
    ("matches", "returns", "not json", "matches", "matches row 1"),
    ("exploitability", "details", "[]", "exploitability", "exploitability row 1"),
    ("psro_iterations", "meta_strategy", "[[1.0]]", "psro_iterations",
     "psro_iterations iteration 0"),
    ("psro_iterations", "meta_strategy", '{"player_0": ["x"]}', "psro_iterations",
     "psro_iterations iteration 0"),
    ("psro_iterations", "meta_strategy", NESTED, "psro_iterations",
     "psro_iterations iteration 0"),
]


@pytest.mark.parametrize("table, column, stored, method, row", ROWS,
                         ids=[f"{t}.{c}-{i}" for i, (t, c, *_) in enumerate(ROWS)])
def test_malformed_json_rows_are_one_line_errors(tmp_path, table, column, stored, method, row):
    """Reading such a row raised JSONDecodeError or RecursionError (a traceback), or came back
    as another type (a string's letters as roles) that failed later or silently."""
    from populations.db import LeagueDBError

    db, run = _db_with_every_json_column(tmp_path / "league.db")
    with db.conn:
        db.conn.execute(f"UPDATE {table} SET {column} = ?", (stored,))
    with pytest.raises(LeagueDBError) as err:
        getattr(db, method)(run)
    text = _one_line(str(err.value))
    assert f"{tmp_path / 'league.db'}: {row}, column {column}" in text, text
    assert len(text) < 300  # the stored value is shown by its start only
    db.close()


def test_well_formed_rows_read_back(tmp_path):
    db, run = _db_with_every_json_column(tmp_path / "league.db")
    assert db.run_config(run) == {"seed": 0}
    assert db.members(run)[0]["roles"] == ["player"]
    assert db.snapshots(run)[0].roles == ("player",)
    assert db.matches(run)[0].seats == {"player_0": 1, "player_1": 1}
    assert db.exploitability(run)[0]["details"] == {"interval": [0.4, 0.6]}
    assert db.psro_iterations(run)[0]["meta_strategy"] == {"player_0": [1.0], "player_1": [1.0]}
    db.close()


# ------------------------------------------------------------------ resumed runs, CLI
LEAGUE = ["game=kuhn", "population=self_play", "population.generations=1",
          "population.frames_per_generation=64", "num_envs=4", "eval_episodes=1",
          "progress=false", "logger=none"]
PSRO = ["experiment=kuhn_psro", "population.iterations=1", "eval_episodes=1",
        "progress=false", "logger=none"]
TAMPER = {  # a row each resume reads, made unreadable in a way that was a traceback
    "league": ("snapshots", "roles", NESTED, "snapshots row 1, column roles"),
    "psro": ("psro_iterations", "meta_strategy", "[[1.0]]",
             "psro_iterations iteration 0, column meta_strategy"),
}


def _experiment(overrides, resume=False):
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    import populations.cli  # noqa: F401  (registers the schema)

    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose(config_name="config",
                      overrides=[*overrides, *(["resume=true"] if resume else [])])
    return OmegaConf.to_object(cfg)


@pytest.mark.parametrize("kind", ["league", "psro"])
def test_resuming_a_run_whose_league_db_was_tampered_with_is_one_line(tmp_path, kind, capsys):
    """``selfplay-train resume=true`` of a league run (a RecursionError) and of a PSRO run
    (a TypeError from a meta-strategy of lists) printed a traceback. Run here through the
    guard ``selfplay-train``'s task runs in (populations.run_guard.run_folder_guard), in-process:
    a real run folder, its league.db edited, then resumed."""
    import sqlite3

    from populations.command_line import TRAIN
    from populations.experiment import run_experiment
    from populations.run_guard import run_folder_guard

    overrides = {"league": LEAGUE, "psro": PSRO}[kind]
    run_dir = tmp_path / kind
    run_experiment(_experiment(overrides), run_dir)
    table, column, stored, names = TAMPER[kind]
    conn = sqlite3.connect(run_dir / "league.db")
    with conn:
        conn.execute(f"UPDATE {table} SET {column} = ?", (stored,))
    conn.close()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_, run_folder_guard(TRAIN, run_dir, created=False):
        run_experiment(_experiment(overrides, resume=True), run_dir)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert err.startswith(f"{TRAIN}: league database {run_dir / 'league.db'}: {names}"), err
    _one_line(err)
    assert (run_dir / "league.db").is_file()  # the run folder it did not create is kept


def test_psro_resume_reads_a_deeply_nested_settings_json_as_unreadable(tmp_path):
    """``_resumed_players`` (a PSRO run with no recorded iteration) caught an unreadable
    settings.json but not one nested too deep for the parser: a RecursionError traceback."""
    from populations.psro import PSROConfig
    from populations.psro_run import _resumed_players

    (tmp_path / "settings.json").write_text(NESTED)
    cfg = PSROConfig()
    assert _resumed_players(cfg, tmp_path, KUHN, {}, None) is cfg  # nothing to compare


# ------------------------------------------------------------------ dashboard
def test_dashboard_views_report_a_malformed_row_in_one_line(tmp_path):
    """A malformed row made a view answer 500 ``internal error: JSONDecodeError`` (with a
    traceback in the server's log); now it is the database's one-line message, and the PSRO
    chart (which reads older meta-strategy forms itself) leaves such a row out."""
    from starlette.testclient import TestClient

    from populations.dashboard import DashboardData, create_app

    db, run = _db_with_every_json_column(tmp_path / "league.db")
    db.add_psro_iteration(run, 1, {"player_0": [0.5, 0.5], "player_1": [1.0, 0.0]}, 0.2, 0.1)
    with db.conn:
        db.conn.execute("UPDATE members SET roles = ?", (NESTED,))
        db.conn.execute("UPDATE psro_iterations SET meta_strategy = ? WHERE iteration = 0",
                        ('{"player_0": ["<b>x</b>"], "player_1": ' + NESTED[:5000] + "}",))
    db.close()
    client = TestClient(create_app([tmp_path]))
    source = DashboardData([tmp_path]).runs()["runs"][0]["source"]
    res = client.get(f"/api/runs/{source}/{run}/league")
    assert res.status_code == 503, res.text
    _one_line(res.json()["error"])
    assert "members row 1, column roles: nested too deep" in res.json()["error"]
    psro = client.get(f"/api/runs/{source}/{run}/psro").json()
    assert psro["iteration"] == [0, 1]
    assert {s["seat"]: s["weights"] for s in psro["seats"]} == {
        "player_0": [[0.0, 0.5], [0.0, 0.5]], "player_1": [[0.0, 1.0], [0.0, 0.0]]}


def _reference_nash_conv(rows, own):
    """The league table's NashConv columns as computed before: every exploitability row
    scanned for every member."""
    by_sid = {s.id: s for s in own}
    mine = [r for r in rows if r["snapshot_id"] in by_sid]
    if not mine:
        return {"nash_conv": None, "nash_conv_half": None, "nash_conv_method": None,
                "nash_conv_version": None}
    version = max(by_sid[r["snapshot_id"]].version for r in mine)
    r = [r for r in mine if by_sid[r["snapshot_id"]].version == version][-1]
    half = None if r["low"] is None or r["high"] is None else (r["high"] - r["low"]) / 2
    return {"nash_conv": r["value"], "nash_conv_half": half, "nash_conv_method": r["method"],
            "nash_conv_version": version}


def test_league_table_groups_exploitability_rows_once(tmp_path):
    """``league_table`` scanned every exploitability row for every member (members x rows);
    it groups them by snapshot once, with the same answer: the newest measured version of
    each member, and of its rows the one recorded last."""
    from populations.dashboard import queries
    from populations.db import LeagueDB

    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", game=KUHN)
    snaps = {}
    for m in range(4):
        mid = db.add_member(run, f"m{m}", "mappo", ["player"])
        for v in (2, 0, 1):  # recorded out of version order
            snaps[m, v] = db.add_snapshot(mid, v, tmp_path / f"m{m}v{v}.pt", "mappo", KUHN,
                                          ["player"])
    db.add_member(run, "unmeasured", "mappo", ["player"])
    recorded = [((0, 1), "exact", 0.3, None, None), ((0, 2), "approx/ippo/100", 0.2, 0.1, 0.3),
                ((0, 0), "exact", 0.9, None, None), ((0, 2), "exact", 0.25, None, None),
                ((1, 0), "approx/ippo/100", 0.5, 0.4, 0.7), ((1, 1), "exact", 0.4, None, None),
                ((2, 2), "exact", 0.1, None, None), ((2, 2), "approx/ippo/200", 0.15, 0.1, 0.2),
                ((1, 0), "exact", 0.45, None, None)]
    for (m, v), method, value, low, high in recorded:
        db.add_exploitability(run, snaps[m, v], f"m{m} v{v}", method, value, low, high)
    db.add_exploitability(run, None, "meta-mixture", "exact", 0.05)  # no snapshot
    exploit = queries.exploitability(db, run)
    table = queries.league_table(db, run)
    by_member = {}
    for s in db.snapshots(run):
        by_member.setdefault(s.member_id, []).append(s)
    want = [_reference_nash_conv(exploit, sorted(by_member.get(m["id"], []),
                                                 key=lambda s: (s.version, s.id)))
            for m in db.members(run)]
    db.close()
    got = [{k: row[k] for k in want[0]} for row in table]
    assert got == want
    assert [g["nash_conv"] for g in got] == [0.25, 0.4, 0.15, None, None]


def test_dashboard_answers_say_what_the_tables_left_out(tmp_path, monkeypatch):
    """The page notes the snapshots left out of the payoff table and cross-play (beyond the
    newest MAX_MATRIX_SNAPSHOTS, lowered to 2 here) and the episodes naming more than
    MAX_EPISODE_SNAPSHOTS, from these counts."""
    from populations.dashboard import DashboardData, queries
    from populations.db import LeagueDB, MatchRow

    monkeypatch.setattr(queries, "MAX_MATRIX_SNAPSHOTS", 2)
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", game=KUHN)
    db.set_payoffs(run, [(k, k + 1, 0.0, 0.5, 1, False) for k in range(1, 5)])
    crowd = {f"agent_{k}": k for k in range(queries.MAX_EPISODE_SNAPSHOTS + 1)}
    db.add_matches(run, [MatchRow(f"pair/{a}", KUHN, {"a": a, "b": a + 1},
                                  {"a": 1.0, "b": -1.0}) for a in (1, 2, 3)]
                   + [MatchRow("crowd", KUHN, crowd, {a: 1.0 for a in crowd})])
    db.close()
    data = DashboardData([tmp_path])
    source = data.runs()["runs"][0]["source"]
    payoffs = data.view(source, run, "payoffs")
    assert (payoffs["ids"], payoffs["left_out"], payoffs["max_snapshots"]) == ([4, 5], 3, 2)
    crossplay = data.view(source, run, "crossplay")
    assert crossplay["ids"] == [3, 4] and crossplay["left_out"] == 2
    assert crossplay["left_out_episodes"] == 1
    assert crossplay["max_episode_snapshots"] == queries.MAX_EPISODE_SNAPSHOTS
