"""An ImportError raised while the config package ``configs`` imports (its ``__init__``
registers the schema: a module it imports fails, a dependency is missing) is one line that
names the package and the error, exit 2, no traceback (session 37). Hydra reported it as
"Primary config module 'configs' not found; Check that it's correct and contains an
__init__.py file", hiding the error. A real failure: a copy of the package, first on the
path, whose ``__init__`` imports a module that does not exist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MISSING = "selfplay_priv37_no_such_module"


def test_an_import_error_of_configs_is_named_in_one_line(tmp_path):
    shadow = tmp_path / "path"
    shutil.copytree(ROOT / "configs", shadow / "configs",
                    ignore=shutil.ignore_patterns("__pycache__"))
    init = shadow / "configs" / "__init__.py"
    init.write_text(init.read_text() + f"\nimport {MISSING}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), str(ROOT)]),
           "HYDRA_FULL_ERROR": "0"}
    run = subprocess.run(
        [sys.executable, "-c", "import sys; from populations.cli import train_main; "
         "sys.argv = ['selfplay-train', *sys.argv[1:]]; train_main()",
         "frames=10", f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("selfplay-train: cannot import the config package configs ("), \
        lines[0]
    assert str(init.parent) in lines[0] and f"No module named '{MISSING}'" in lines[0], lines[0]
    assert "Traceback" not in run.stderr and "Primary config module" not in run.stderr
    assert not (tmp_path / "run").exists()
