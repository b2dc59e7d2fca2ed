"""Files a run reads are untrusted: a crafted policy file, checkpoint or league database row
must not make the loader allocate far more memory than the file holds, nor read files
outside the run folder. Each test crafts such a file and expects a one-line refusal."""

import pytest
import torch

import games
from marl import registry
from marl.actor_critic import Actor, NetConfig, SeatGroup
from marl.core import (
    POLICY_FORMAT,
    CheckpointError,
    PolicyLoadError,
    build_checked,
    load_policy,
    safe_torch_load,
)
from populations.checkpoint import read_checkpoint, save_checkpoint

KUHN = "openspiel/kuhn_poker"


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def _expanded_policy_file(path, hidden=4096):
    """A 3 KB MAPPO policy file whose actor config asks for ``hidden``-wide layers, with
    weights that are one float each, expanded (stride 0) to the shapes the loader builds."""
    spec = games.make(KUHN).spec
    pol = registry.get("mappo").build(spec).policy()
    data = {"format": POLICY_FORMAT, "meta": pol.meta.to_dict(), "payload": pol.payload()}
    payload = data["payload"]
    payload["net"].update(hidden=[hidden, hidden], init="torch")
    net = NetConfig(**{**payload["net"], "hidden": (hidden, hidden)})
    groups = [SeatGroup(g["name"], tuple(g["agents"]), tuple(g["cols"]), g["obs_dim"],
                        g["num_actions"]) for g in payload["groups"]]
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in torch.nn.ModuleList(
            Actor(net, g, payload["node_dim"]) for g in groups).state_dict().items()}
    payload["actors"] = {k: torch.zeros(1).expand(s) for k, s in shapes.items()}
    torch.save(data, path)
    return path


def test_expanded_tensors_in_a_policy_file_are_refused(tmp_path):
    """Stride-0 tensors claimed 67 MB of weights from a 3 KB file, so the size check let the
    loader build a 67 MB network (and 40 GB at hidden=100000)."""
    path = _expanded_policy_file(tmp_path / "big.pt")
    assert path.stat().st_size < 10_000
    with pytest.raises(PolicyLoadError) as err:
        load_policy(path)
    assert "overlaps itself" in _one_line(err) and str(path) in str(err.value)


def test_views_of_one_storage_claim_no_more_than_it_holds(tmp_path):
    """A thousand views of one 1 MB storage claimed 1 GB."""
    data = torch.zeros(2**18)
    torch.save({"format": POLICY_FORMAT, "views": [data[:] for _ in range(1000)]},
               tmp_path / "views.pt")
    with pytest.raises(CheckpointError) as err:
        safe_torch_load(tmp_path / "views.pt", "learner checkpoint")
    assert "1000 MiB" in _one_line(err) and "1 MiB" in str(err.value)


def test_sparse_tensors_are_refused(tmp_path):
    big = torch.sparse_coo_tensor(torch.zeros(2, 1, dtype=torch.long), torch.ones(1),
                                  (10**6, 10**6), check_invariants=True)
    torch.save({"w": big}, tmp_path / "sparse.pt")
    with pytest.raises(CheckpointError, match="sparse_coo") as err:
        safe_torch_load(tmp_path / "sparse.pt")
    _one_line(err)


def test_run_checkpoints_refuse_expanded_tensors(tmp_path):
    path = save_checkpoint(tmp_path, 1, {"members": {"main": torch.zeros(1).expand(10**6)}})
    with pytest.raises(CheckpointError, match="overlaps itself") as err:
        read_checkpoint(path)
    _one_line(err)


def test_build_counts_shared_storage_once():
    """Eight 2048x2048 layers whose weights all view one 16 MiB storage: the module needs
    128 MiB, more than twice what the weights hold plus the slack."""
    module = lambda: torch.nn.Sequential(  # noqa: E731
        *(torch.nn.Linear(2048, 2048, bias=False) for _ in range(8)))
    flat = torch.zeros(2048 * 2048)
    weights = {f"{k}.weight": flat.view(2048, 2048) for k in range(8)}
    with pytest.raises(PolicyLoadError, match="asks for 128 MiB") as err:
        build_checked(module, weights, "stacked layers")
    _one_line(err)


# ------------------------------------------------------------------ league database rows
def _run_with_snapshot(run_dir):
    from populations.db import LeagueDB
    from populations.store import PolicyStore

    db = LeagueDB(run_dir / "league.db")
    store = PolicyStore(run_dir / "snapshots", db, db.create_run("r"))
    spec = games.make(KUHN).spec
    snap = store.publish("main", registry.get("mappo").build(spec).policy())
    return db, store, snap


@pytest.mark.parametrize("where", ["absolute", "dotdot", "symlink"])
def test_snapshot_rows_cannot_point_outside_the_run_folder(tmp_path, where):
    """A league.db row's path (with its hash) was read wherever it pointed: an absolute path,
    ``../`` or a link inside the snapshot folder read any file the user could."""
    from populations.store import PolicyStore, StoreError, file_sha256

    db, store, snap = _run_with_snapshot(tmp_path / "run")
    outside = tmp_path / "elsewhere" / "secret.pt"
    outside.parent.mkdir()
    outside.write_bytes((tmp_path / "run" / "snapshots" / "main" / "v0000.pt").read_bytes())
    stored = {"absolute": str(outside), "dotdot": "../elsewhere/secret.pt",
              "symlink": "snapshots/main/v0001.pt"}[where]
    if where == "symlink":
        (tmp_path / "run" / "snapshots" / "main" / "v0001.pt").symlink_to(outside)
    with db.conn:
        db.conn.execute("UPDATE snapshots SET path = ?, sha256 = ?", (stored, file_sha256(outside)))
    fresh = PolicyStore(tmp_path / "run" / "snapshots", db, db.run_id("r"))
    with pytest.raises(StoreError, match="outside the run's snapshot folder") as err:
        fresh.load(snap.id)
    _one_line(err)
    db.close()


# ------------------------------------------------------------------ run checkpoints
@pytest.mark.parametrize("progress", [False, True])
def test_a_checkpoint_generation_does_not_size_memory(tmp_path, progress):
    """A checkpoint's generation sized a set of every version up to it: generation=10**12
    filled memory instead of naming the first missing snapshot."""
    from populations.league import League, LeagueConfig
    from populations.run_folder import RunFolderError

    cfg = LeagueConfig(game=KUHN, game_kwargs={}, generations=1, frames_per_generation=16,
                       num_envs=2)
    League(cfg, tmp_path).close()  # a league.db and its run, no snapshot yet
    huge = 10**12
    save_checkpoint(tmp_path / "checkpoints", 1, {
        "generation": 0 if progress else huge, "phase": "done", "frames": 0, "members": {},
        "progress": {"main": [huge, "done"]} if progress else {}})
    with pytest.raises(RunFolderError, match="no snapshot v0 of 'main'") as err:
        League(cfg, tmp_path, resume=True)
    _one_line(err)


# ------------------------------------------------------------------ dashboard
HTML = '<a href="https://example.invalid/">click</a>'


def test_dashboard_charts_get_numbers_only_from_number_columns(tmp_path):
    """SQLite keeps text in an INTEGER or REAL column: a crafted league.db put markup in
    rating steps, PSRO iterations, payoff counts and metric steps, which Plotly drew as tick
    labels and hover text (it renders links and styles there). Every chart number the API
    serves is now a number or None."""
    from populations.dashboard import DashboardData
    from populations.db import LeagueDB

    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", game=KUHN)
    mid = db.add_member(run, "main", "mappo", ["player"])
    sid = db.add_snapshot(mid, 0, tmp_path / "snapshots" / "main" / "v0000.pt", "mappo", KUHN,
                          ["player"])
    with db.conn:
        db.conn.execute("INSERT INTO ratings (run_id, snapshot_id, step, elo, mu, sigma, "
                        "matches, created_at) VALUES (?, ?, ?, ?, 1.0, 1.0, ?, 0)",
                        (run, sid, HTML, HTML, HTML))
        db.conn.execute("INSERT INTO payoffs (run_id, row_snapshot, col_snapshot, value, "
                        "win_rate, count, exact, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, 0)",
                        (run, sid, sid, HTML, HTML, HTML))
        db.conn.execute("INSERT INTO psro_iterations (run_id, iteration, meta_strategy, "
                        "nash_conv, seconds, created_at) VALUES (?, ?, '[1.0]', ?, ?, 0)",
                        (run, HTML, HTML, HTML))
        db.conn.execute("INSERT INTO metrics (run_id, member_id, step, key, value, created_at) "
                        "VALUES (?, ?, ?, 'charts/episode_return', ?, 0)", (run, mid, HTML, HTML))
    db.log_metrics(run, 5, {"charts/episode_return": 1.5}, member_id=mid)
    db.close()
    data = DashboardData([tmp_path])
    source = data.runs()["runs"][0]["source"]
    (series,) = data.view(source, run, "ratings")
    payoffs = data.view(source, run, "payoffs")
    psro = data.view(source, run, "psro")
    (curve,) = data.metrics(source, run, ["charts/episode_return"])
    served = [*(series[k] for k in ("step", "elo", "mu", "sigma", "pairs")),
              *(sum(payoffs[k], []) for k in ("value", "win_rate", "count")),
              *(psro[k] for k in ("iteration", "nash_conv", "seconds")),
              curve["step"], curve["value"]]
    for values in served:
        assert all(v is None or type(v) in (int, float) for v in values), values
    assert (curve["step"], curve["value"]) == ([5], [1.5])  # the text row is left out


# ------------------------------------------------------------------ links in a run folder
def _plant(run, name, victim):
    link = run / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)
    return link


def _do(where, run, victim):
    """The real operation that writes (or reads) ``where`` inside run folder ``run``."""
    from populations.db import LeagueDB
    from populations.loggers import CSVLogger, LoggerConfig
    from populations.run_folder import RunLock, resume_settings
    from populations.store import PolicyStore

    if where == ".lock":
        RunLock(run).acquire().release()
    elif where == "settings.json.tmp":
        resume_settings(run, {"seed": 0}, resume=False)
    elif where == "settings.json":
        resume_settings(run, {"seed": 0}, resume=True)
    elif where.startswith("checkpoints/"):
        if where.endswith(".tmp"):
            save_checkpoint(run / "checkpoints", 1, {"generation": 0})
        else:
            read_checkpoint(run / where)
    elif where.startswith("snapshots/"):
        db = LeagueDB(tmp := run / "league.db")
        try:
            PolicyStore(run / "snapshots", db, db.create_run("r")).publish(
                "main", registry.get("mappo").build(games.make(KUHN).spec).policy())
        finally:
            db.close()
            tmp.unlink()
    elif where == "metrics.csv":
        CSVLogger(run, LoggerConfig(), {}).close()
    elif where.startswith("league.db"):
        LeagueDB(run / "league.db").close()


@pytest.mark.parametrize("where, refused", [
    (".lock", "is a link"),
    ("settings.json.tmp", None),
    ("settings.json", "is a link"),
    ("checkpoints/ckpt_000001.pt.tmp", None),
    ("checkpoints/ckpt_000002.pt", "is a link"),
    ("snapshots/main/v0000.pt.tmp", None),
    ("snapshots/main/v0000.json", None),
    ("snapshots/main/v0000.json.tmp", None),
    ("metrics.csv", "is a link"),
    ("league.db", "is a link"),
    ("league.db-wal", "is a link"),
])
def test_links_planted_in_a_run_folder_are_not_followed(tmp_path, where, refused):
    """A run folder from elsewhere may hold links: opening it truncated the file its .lock
    pointed to, saving wrote through a link at a temporary or sidecar file, and resuming
    read checkpoints, settings and metrics wherever their links pointed."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if where == "checkpoints/ckpt_000002.pt":  # a good checkpoint, kept outside the run
        victim = save_checkpoint(tmp_path / "outside", 2, {"generation": 0})
        _plant(tmp_path / "run", where + ".sha256", victim.with_name(victim.name + ".sha256"))
    before = victim.read_bytes()
    link = _plant(tmp_path / "run", where, victim)
    if refused:
        with pytest.raises((ValueError, RuntimeError), match=refused) as err:
            _do(where, tmp_path / "run", victim)
        assert str(link) in _one_line(err)
    else:
        _do(where, tmp_path / "run", victim)
    assert victim.read_bytes() == before


def test_deeply_nested_settings_are_one_line(tmp_path):
    """A settings.json nested 100,000 deep raised RecursionError with a traceback."""
    from populations.run_folder import RunFolderError, resume_settings

    (tmp_path / "settings.json").write_text("[" * 100_000)
    with pytest.raises(RunFolderError, match="cannot read .*settings.json") as err:
        resume_settings(tmp_path, {"seed": 0}, resume=True)
    _one_line(err)


def test_dashboard_tables_are_bounded_in_the_snapshots_rows_name(tmp_path):
    """One 4 KB match row naming 200 snapshots made cross-play bootstrap 19,900 pairs (an
    episode of k snapshots is k(k-1)/2 pairs), and payoff rows naming many snapshots made
    k x k tables; the dashboard keeps the newest MAX_MATRIX_SNAPSHOTS and leaves out
    episodes naming more than MAX_EPISODE_SNAPSHOTS."""
    from populations.dashboard import DashboardData, queries
    from populations.db import LeagueDB, MatchRow

    n = queries.MAX_MATRIX_SNAPSHOTS + 20
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", game=KUHN)
    db.set_payoffs(run, [(k, k + 1, 0.0, 0.5, 1, False) for k in range(1, n)])
    crowd = {f"agent_{k}": k for k in range(200)}
    db.add_matches(run, [MatchRow("crowd", KUHN, crowd, {a: 1.0 for a in crowd}),
                         MatchRow("pair", KUHN, {"a": 1, "b": 2}, {"a": 1.0, "b": -1.0})])
    db.close()
    data = DashboardData([tmp_path])
    source = data.runs()["runs"][0]["source"]
    payoffs = data.view(source, run, "payoffs")
    assert len(payoffs["ids"]) == queries.MAX_MATRIX_SNAPSHOTS == len(payoffs["value"])
    assert payoffs["ids"][-1] == n and payoffs["left_out"] == n - queries.MAX_MATRIX_SNAPSHOTS
    crossplay = data.view(source, run, "crossplay")
    assert [(p["row"], p["col"]) for p in crossplay["pairs"]] == [(1, 2)]


def test_dashboard_psro_charts_are_bounded_by_the_iterations(tmp_path):
    """A meta-strategy row of 100,000 weights made a 100,000 x iterations table (and one of
    many players as many charts); iteration i has at most i + 1 members per player."""
    from populations.dashboard import DashboardData, queries
    from populations.db import LeagueDB

    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", experiment="psro", game=KUHN)
    for it in range(3):
        db.add_psro_iteration(run, it, {"player_0": [1.0] * (it + 1), "player_1": [1.0]}, None,
                              None)
    db.add_psro_iteration(run, 3, {"player_0": [0.0] * 100_000,
                                   **{f"p{k}": [1.0] for k in range(200)}}, None, None)
    db.close()
    data = DashboardData([tmp_path])
    psro = data.view(data.runs()["runs"][0]["source"], run, "psro")
    seats = {s["seat"]: s for s in psro["seats"]}
    assert len(seats) == queries.MAX_PSRO_PLAYERS
    assert len(seats["player_0"]["weights"]) == 5 == len(seats["player_0"]["members"])
    assert seats["player_0"]["weights"][1] == [0.0, 1.0, 1.0, 0.0]


def test_a_linked_checkpoint_folder_is_neither_written_nor_pruned(tmp_path):
    """Files in a run's checkpoints/ were refused as links, the folder itself was not:
    a planted link made a run write there and delete all but the newest 3 ckpt_*.pt."""
    from populations.checkpoint import checkpoint_files

    outside = tmp_path / "outside"
    for step in range(4):
        save_checkpoint(outside, step, {"generation": step})
    before = sorted(p.name for p in outside.iterdir())
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "checkpoints").symlink_to(outside)
    for act in (lambda: save_checkpoint(tmp_path / "run" / "checkpoints", 9, {}),
                lambda: checkpoint_files(tmp_path / "run" / "checkpoints")):
        with pytest.raises(CheckpointError, match="checkpoint folder .* is a link") as err:
            act()
        _one_line(err)
    assert sorted(p.name for p in outside.iterdir()) == before


@pytest.mark.parametrize("linked", ["snapshots", "snapshots/main"])
def test_a_linked_snapshot_folder_is_not_written(tmp_path, linked):
    """Links at the files were replaced, links at the folders were followed: a run folder
    whose snapshots/ or snapshots/<member>/ pointed elsewhere had its v0000.pt and .json
    written (over any files of those names) outside the run."""
    from populations.db import LeagueDB
    from populations.store import PolicyStore, StoreError

    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    (run / linked).parent.mkdir(parents=True, exist_ok=True)
    (run / linked).symlink_to(outside)
    db = LeagueDB(run / "league.db")
    try:
        with pytest.raises(StoreError, match="snapshot folder .* is a link") as err:
            PolicyStore(run / "snapshots", db, db.create_run("r")).publish(
                "main", registry.get("mappo").build(games.make(KUHN).spec).policy())
        _one_line(err)
    finally:
        db.close()
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("sidecar", ["nested", "link"])
def test_a_snapshot_sidecar_is_read_only_as_a_small_regular_file(tmp_path, sidecar):
    """A row without a hash falls back to the ``.json`` sidecar: JSON nested 100,000 deep
    raised RecursionError (a traceback), and a link was followed (to /dev/zero it read
    until memory ran out). Either is now no sidecar: the snapshot loads unverified, as one
    from before hashes does."""
    from populations.store import PolicyStore

    db, store, snap = _run_with_snapshot(tmp_path / "run")
    side = tmp_path / "run" / "snapshots" / "main" / "v0000.json"
    side.unlink()
    if sidecar == "nested":
        side.write_text("[" * 100_000)
    else:  # a sidecar elsewhere whose hash does not match: followed, it failed the load
        (outside := tmp_path / "outside.json").write_text('{"sha256": "' + "0" * 64 + '"}')
        side.symlink_to(outside)
    with db.conn:
        db.conn.execute("UPDATE snapshots SET sha256 = NULL")
    fresh = PolicyStore(tmp_path / "run" / "snapshots", db, db.run_id("r"))
    assert fresh.load(snap.id).meta.kind == "mappo"
    db.close()


def test_a_snapshot_that_is_not_a_regular_file_is_refused(tmp_path):
    """A FIFO in place of a snapshot (a run folder unpacked from elsewhere) blocked the
    hashing before loading for good."""
    import os

    from populations.store import PolicyStore, StoreError

    db, store, snap = _run_with_snapshot(tmp_path / "run")
    (pt := tmp_path / "run" / "snapshots" / "main" / "v0000.pt").unlink()
    os.mkfifo(pt)
    fresh = PolicyStore(tmp_path / "run" / "snapshots", db, db.run_id("r"))
    with pytest.raises(StoreError, match="is not a regular file") as err:
        fresh.load(snap.id)
    _one_line(err)
    db.close()


@pytest.mark.parametrize("planted", ["fifo checkpoint", "linked hash"])
def test_a_checkpoint_and_its_hash_are_read_only_as_regular_files(tmp_path, planted):
    """A FIFO named like a checkpoint blocked resuming for good, and the ``.sha256``
    sidecar was read through a link (to /dev/zero: until memory ran out)."""
    import os

    run = tmp_path / "run" / "checkpoints"
    path = save_checkpoint(run, 1, {"generation": 0})
    side = path.with_name(path.name + ".sha256")
    if planted == "fifo checkpoint":
        path.unlink()
        os.mkfifo(path)
        refused = "not a regular file"
    else:  # the right hash, kept elsewhere
        (outside := tmp_path / "hash.txt").write_bytes(side.read_bytes())
        side.unlink()
        side.symlink_to(outside)
        refused = "checkpoint hash .* a link"
    with pytest.raises(CheckpointError, match=refused) as err:
        read_checkpoint(path)
    _one_line(err)


@pytest.fixture(scope="module")
def league_run(tmp_path_factory):
    """A finished one-generation league run folder (copied by each test that edits it)."""
    from populations.experiment import run_experiment
    from tests.populations.test_untrusted_rows import LEAGUE, _experiment

    run = tmp_path_factory.mktemp("league") / "run"
    run_experiment(_experiment(LEAGUE), run)
    return run


def _resized_first_tensor(state: dict) -> None:
    """Member main's first weight, one row longer: a file of other settings."""
    node = state["members"]["main"]
    while True:
        key, value = next((k, v) for k, v in node.items() if isinstance(v, dict | torch.Tensor))
        if isinstance(value, torch.Tensor):
            node[key] = torch.zeros(value.shape[0] + 1, *value.shape[1:])
            return
        node = value


NOT_LEAGUE = "does not hold a league state this selfplay reads"
CRAFTED_LEAGUE_STATE = {  # what a crafted league checkpoint holds, each once a traceback
    "no generation": (lambda s: s.pop("generation"), f"{NOT_LEAGUE}: generation is missing"),
    "member not a dict": (lambda s: s.update(members={k: "x" for k in s["members"]}),
                          f"{NOT_LEAGUE}: members is"),  # a TypeError
    "generation inf": (lambda s: s.update(generation=float("inf")),  # OverflowError
                       f"{NOT_LEAGUE}: generation is inf; expected a count >= 0 below 2\\*\\*63"),
    "frames 10**30": (lambda s: s.update(frames=10**30), f"{NOT_LEAGUE}: frames is 10+;"),
    "progress 10**30": (lambda s: s.update(progress={"main": [10**30, "done"]}),
                        f"{NOT_LEAGUE}: progress\\['main'\\] generation is 10+;"),
    "weights of another size": (_resized_first_tensor,  # torch's RuntimeError, a traceback
                                "does not fit member 'main' \\(RuntimeError: .*size mismatch"),
}  # progress={"main": 5} and frames=[1] were TypeErrors of the same lines too


@pytest.mark.parametrize("craft", sorted(CRAFTED_LEAGUE_STATE))
def test_resuming_a_crafted_league_checkpoint_is_one_line(tmp_path, league_run, craft, capsys):
    import re
    import shutil

    from populations.checkpoint import checkpoint_files, load_latest
    from populations.command_line import TRAIN
    from populations.experiment import run_experiment
    from populations.run_guard import run_folder_guard
    from tests.populations.test_untrusted_rows import LEAGUE, _experiment

    run = tmp_path / "run"
    shutil.copytree(league_run, run)
    _, state = load_latest(run / "checkpoints")
    for p in checkpoint_files(run / "checkpoints"):
        p.unlink()
    craft_state, expected = CRAFTED_LEAGUE_STATE[craft]
    craft_state(state)
    save_checkpoint(run / "checkpoints", 99, state)  # with its hash: the crafter writes it too
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_, run_folder_guard(TRAIN, run, created=False):
        run_experiment(_experiment(LEAGUE, resume=True), run)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert re.search(expected, err) and "\n" not in err, err
    assert not re.search(r"(\w+Error): \1", err), err  # the type named once


def test_a_fifo_named_metrics_csv_is_refused(tmp_path):
    """Appending to a FIFO planted as metrics.csv blocked the run before its first step."""
    import os

    from populations.loggers import CSVLogger, LoggerConfig

    os.mkfifo(tmp_path / "metrics.csv")
    with pytest.raises(ValueError, match="is not a regular file") as err:
        CSVLogger(tmp_path, LoggerConfig(), {})
    _one_line(err)


def test_a_snapshot_row_path_with_a_nul_byte_is_one_line(tmp_path):
    """A NUL byte in a row's path raised os's bare 'embedded null byte' naming nothing."""
    from populations.store import PolicyStore, StoreError

    db, store, snap = _run_with_snapshot(tmp_path / "run")
    with db.conn:
        db.conn.execute("UPDATE snapshots SET path = ?", ("snapshots/main/v0\0.pt",))
    fresh = PolicyStore(tmp_path / "run" / "snapshots", db, db.run_id("r"))
    with pytest.raises(StoreError, match="main v0 .* NUL byte") as err:
        fresh.load(snap.id)
    _one_line(err)
    db.close()
