"""``selfplay-eval``'s flags (session 37): a valid ``--exploit-*`` value given without
``--exploit`` is said not to be used, in one warning line (it was taken and ignored without
a word), as ``selfplay-train`` says a setting a run does not read; and the unknown-flag-first
check reads no private attribute of argparse (it listed ``ArgumentParser._actions``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import games
from marl import registry
from populations import eval_cli

ROOT = Path(__file__).resolve().parents[1]
WARNING = "selfplay-eval: warning: "


@pytest.fixture(scope="module")
def policy_files(tmp_path_factory):
    spec = games.make("openspiel/kuhn_poker").spec
    folder = tmp_path_factory.mktemp("policies")
    return [str(registry.get("mappo").build(spec, seed=i).policy().save(folder / f"p{i}.pt"))
            for i in range(2)]


def _eval(argv, capsys):
    try:
        eval_cli.eval_main(argv)
        code = 0
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("flags, said", [
    (["--exploit-frames", "500"], "--exploit-frames 500 is not used without --exploit (it "
                                  "sets up the best responses --exploit trains)"),
    (["--exploit-seeds=2", "--exploit-algo", "ippo"],  # the default value given is given too
     "--exploit-algo ippo, --exploit-seeds 2 are not used without --exploit (they set up the "
     "best responses --exploit trains)"),
    (["--exploit-ep", "40"],  # argparse's abbreviation, as the parse read it
     "--exploit-episodes 40 is not used without --exploit"),
])
def test_exploit_settings_without_exploit_are_said_unused(flags, said, policy_files, tmp_path,
                                                         capsys):
    code, out, err = _eval(["--db", str(tmp_path / "e.db"), "--episodes", "1", *flags,
                            *policy_files], capsys)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith(WARNING)]
    assert len(warnings) == 1 and warnings[0].startswith(WARNING + said), err
    assert "p0  vs p1: win rate" in out, out  # the round robin ran


def test_no_warning_with_exploit_or_without_its_settings(policy_files, tmp_path, capsys):
    code, _, err = _eval(["--db", str(tmp_path / "e.db"), "--episodes", "1", *policy_files],
                         capsys)
    assert code == 0 and WARNING not in err, err
    code, _, err = _eval(["--db", str(tmp_path / "x.db"), "--episodes", "1", "--exploit",
                          "--exploit-frames", "64", "--exploit-seeds", "1",
                          "--exploit-episodes", "10", policy_files[0]], capsys)
    assert code == 0 and "not used without --exploit" not in err, err


def test_an_invalid_value_is_refused_alone_without_the_warning(tmp_path, capsys):
    code, _, err = _eval(["--db", str(tmp_path / "e.db"), "--exploit-seeds", "0",
                          "--exploit-frames", "500", "a.pt", "b.pt"], capsys)
    assert code == 2 and err.count("\n") == 1 and "seeds must be" in err, err


def test_the_eval_cli_reads_no_private_attribute_of_argparse():
    """``_actions`` and the like are argparse's own (they changed across Python versions)."""
    path = ROOT / "populations" / "eval_cli.py"
    reads = [f"{node.lineno}: {ast.unparse(node)}"
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr.startswith("_")
             and not node.attr.startswith("__")]
    assert reads == [], reads
