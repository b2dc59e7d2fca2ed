"""``python -m games`` lists the names a user can pass as ``game.name`` (fix 30c): README's
"Games" section explained the prefixes, but nothing listed the names (``games.registered()``
holds only the registry's four), so a user guessed. It reads packages from disk: no torch."""

import subprocess
import sys

import pytest

from tests import subprocs

pytest.importorskip("pyspiel")
pytest.importorskip("vmas")
pytest.importorskip("mpe2")

# the listing as a user runs it, then whether it imported torch or built a PettingZoo env
CHILD = ("import runpy, sys\n"
         "sys.argv = ['python -m games', *sys.argv[1:]]\n"
         "try:\n"
         "    runpy.run_module('games', run_name='__main__')\n"
         "except SystemExit as stop:\n"
         "    assert not stop.code, stop.code\n"
         "print('loaded:', sorted(m for m in ('torch', 'vmas', 'mpe2', 'pettingzoo.classic') "
         "if m in sys.modules))\n")


def _list(*args, cwd=None):
    out = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True,
                         timeout=300, cwd=cwd)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


def test_every_family_is_listed_without_torch():
    lines = _list()
    for name in ("matrix/climbing", "tool/relay", "openspiel/kuhn_poker", "openspiel/leduc_poker",
                 "pettingzoo/mpe2.simple_spread_v3", "pettingzoo/pettingzoo.sisl.pursuit_v5",
                 "vmas/balance", "vmas/simple_tag", "vmas/navigation"):
        assert f"  {name}" in lines, name
    assert "  pettingzoo/mpe2._mpe_utils" not in lines and "  vmas/mpe" not in lines
    assert lines[-1] == "loaded: []"


def test_a_users_module_and_one_family(tmp_path):
    (tmp_path / "my_games_30c.py").write_text(
        "import games\n\n\n@games.register('mine/coin')\n"
        "def coin():\n    return games.make('matrix/climbing')\n")
    lines = _list("registered", "--import", "my_games_30c", cwd=tmp_path)
    assert "  mine/coin" in lines and "  matrix/climbing" in lines
    assert not any("openspiel/" in line for line in lines)


def test_an_unknown_family_is_one_line():
    out = subprocs.run([sys.executable, "-m", "games", "chess"], capture_output=True,
                        text=True, timeout=300)
    assert out.returncode == 2
    assert out.stderr.strip() == ("python -m games: unknown family 'chess'; choose from "
                                  "['registered', 'openspiel', 'pettingzoo', 'vmas']")
