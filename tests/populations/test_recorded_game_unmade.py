"""Whatever reads a run folder makes no game name it finds there: a league and a PSRO run
whose every recorded game name (``settings.json``, league.db's runs, snapshots and matches,
each snapshot file's ``meta.game`` and sidecar) was made ``pettingzoo/os:system(command=
'touch <marker>')`` (a name ``games.make`` runs) or an OpenSpiel file game are resumed by
``selfplay-train resume=true`` (its own settings: refused for the other game, in one line;
``resume_override=true``: continued on the game of the command line), shown by
``selfplay-dashboard --export`` and summarized by ``python -m populations.sweep_summary``,
and nothing runs: each takes its game from the command line or makes none
(``selfplay-eval`` makes a recorded name only once ``games.registry.recorded_name_refusal``
passed it: test_eval_recorded_names.py)."""

import json
import shutil
import sqlite3

import pytest

from tests.populations.test_untrusted_rows import LEAGUE, PSRO, _experiment

PWNED = "pettingzoo/os:system(command='touch {marker}')"
NFG = "openspiel/nfg_game(filename={marker})"


def _replaced(value, old, new):
    """``value`` (JSON) with every string ``old`` in it ``new``."""
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    return new if value == old else value


def _craft(run, game):
    """Every game name ``run`` records, ``game``: files and rows, hashes made to match (the
    crafter writes them too)."""
    import dataclasses

    from marl.core import load_policy
    from populations.store import file_sha256

    settings = run / "settings.json"
    old = json.loads(settings.read_text())["game"]["name"]
    settings.write_text(json.dumps(_replaced(json.loads(settings.read_text()), old, game)))
    with sqlite3.connect(run / "league.db") as conn:
        recorded = conn.execute("SELECT game FROM runs").fetchone()[0]
        for table in ("runs", "snapshots", "matches"):
            conn.execute(f"UPDATE {table} SET game = ?", (game,))
        for rid, config in conn.execute("SELECT id, config FROM runs").fetchall():
            config = _replaced(_replaced(json.loads(config), old, game), recorded, game)
            conn.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), rid))
        for sid, path in conn.execute("SELECT id, path FROM snapshots").fetchall():
            path = run / path if not path.startswith("/") else path
            pol = load_policy(path)
            pol.meta = dataclasses.replace(pol.meta, game=game)
            pol.save(path)
            sha = file_sha256(path)
            side = path.with_suffix(".json")
            if side.is_file():
                side.write_text(json.dumps({**json.loads(side.read_text()), "game": game,
                                            "sha256": sha}))
            conn.execute("UPDATE snapshots SET sha256 = ? WHERE id = ?", (sha, sid))
    return old


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished league and PSRO run, each a job folder of a sweep (copied by each test)."""
    from populations.experiment import run_experiment

    sweep = tmp_path_factory.mktemp("recorded") / "sweep"
    out = {}
    for i, (kind, overrides) in enumerate((("league", LEAGUE), ("psro", PSRO))):
        run = sweep / f"{i}_{kind}"
        (run / ".hydra").mkdir(parents=True)
        (run / ".hydra" / "overrides.yaml").write_text(json.dumps(overrides))
        run_experiment(_experiment(overrides), run)
        out[kind] = (run, overrides)
    return sweep, out


@pytest.fixture(params=[PWNED, NFG], ids=["pettingzoo-os-system", "nfg-file"])
def crafted(request, runs, tmp_path):
    sweep, made = runs
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)
    marker = tmp_path / "pwned"
    if request.param == NFG:  # a Gambit file the name would have read (it parses)
        marker.write_text('NFG 1 R "x" { "P1" "P2" } { 2 2 }\n1 1 0 0 0 0 1 1\n')
    game = request.param.format(marker=marker)
    for run, _ in made.values():
        _craft(copy / run.name, game)
    if request.param == NFG:
        marker.unlink()  # its reading makes no marker: games.make is watched instead
    return copy, {k: (copy / r.name, o) for k, (r, o) in made.items()}, marker, game


@pytest.fixture
def made(monkeypatch):
    """The names ``games.make`` was asked for."""
    import games
    import games.registry
    import games.vector

    names: list[str] = []
    real = games.registry.make

    def make(spec, **kwargs):
        names.append(spec)
        return real(spec, **kwargs)

    for module in (games, games.registry, games.vector):  # VectorGame's copies too
        monkeypatch.setattr(module, "make", make)
    return names


@pytest.mark.parametrize("kind", ["league", "psro"])
@pytest.mark.parametrize("how", ["own-settings", "without-settings.json", "resume_override"])
def test_a_resume_makes_no_recorded_game(crafted, made, kind, how, capsys):
    from populations.command_line import TRAIN
    from populations.experiment import run_experiment
    from populations.run_guard import run_folder_guard

    _, found, marker, game = crafted
    run, overrides = found[kind]
    assert json.loads((run / "settings.json").read_text())["game"]["name"] == game
    if how == "without-settings.json":  # a league checks what league.db recorded (514b530)
        (run / "settings.json").unlink()
    override = how == "resume_override"
    extra = ["resume_override=true"] if override else []
    capsys.readouterr()
    try:
        with run_folder_guard(TRAIN, run, created=False):
            run_experiment(_experiment([*overrides, *extra], resume=True), run)
        code = 0
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err.strip()
    assert not marker.exists() and game not in made
    if how == "own-settings" or (how != "resume_override" and kind == "league"):
        # its recorded settings name the other game: refused, in one line
        assert code == 2 and "\n" not in err and "game" in err, err
    else:
        assert code == 0, err


def test_the_dashboard_export_makes_no_recorded_game(crafted, made, tmp_path):
    from populations.dashboard.cli import main

    sweep, found, marker, game = crafted
    html = tmp_path / "out.html"
    main([str(run) for run, _ in found.values()] + ["--export", str(html)])
    assert html.is_file()
    assert not marker.exists() and game not in made


def test_the_sweep_summary_makes_no_recorded_game(crafted, made, capsys):
    from populations.sweep_summary import main

    sweep, _, marker, game = crafted
    main([str(sweep)])
    assert "finished" in capsys.readouterr().out
    assert not marker.exists() and game not in made
