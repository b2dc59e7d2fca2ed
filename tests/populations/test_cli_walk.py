"""What README's walk through ``selfplay-train`` shows a new user: Hydra's inspection flags
(``--cfg``, ``--resolve``, ``--info``) print and make no run folder."""

from __future__ import annotations

import sys

import pytest


def _train(argv, monkeypatch, tmp_path):
    from populations.cli import train_main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["selfplay-train", *argv])
    train_main()


@pytest.mark.parametrize("experiment", [None, "kuhn_psro"])
def test_cfg_hydra_resolve_names_the_run_folder(experiment, monkeypatch, tmp_path, capsys):
    # before: "selfplay-train: Interpolation key 'experiment' not found", exit 2: Hydra drops
    # the job's keys before resolving the hydra node, whose run.dir names runs/${experiment}
    argv = ["--cfg", "hydra", "--resolve", "-p", "hydra.run"]
    _train(argv + ([f"experiment={experiment}"] if experiment else []), monkeypatch, tmp_path)
    out = capsys.readouterr().out
    assert out.startswith("# @package hydra.run\ndir: runs/" + (experiment or "default") + "/")
    assert "${" not in out
    assert list(tmp_path.iterdir()) == []  # printed, nothing made


def test_cfg_hydra_without_resolve_keeps_the_interpolations(monkeypatch, tmp_path, capsys):
    _train(["--cfg", "hydra", "-p", "hydra.run"], monkeypatch, tmp_path)
    assert capsys.readouterr().out == \
        "# @package hydra.run\ndir: runs/${experiment}/${now:%Y-%m-%d_%H-%M-%S}\n"
