"""A run that started and then failed keeps what it wrote (review27 item 1): a resumed run
that met an error of a "refusal" type mid-run (an opponent's snapshot that cannot be loaded,
``PolicyLoadError``) had its ``cli.log`` cut back to its size before the command, erasing
that session's lines, and the failure line was not written there. Only a command refused
before its run started puts the folder back as it was."""

import os
import sys

from tests import subprocs

LEARNER = '''
import os

from hydra.core.config_store import ConfigStore

from marl.core import PolicyLoadError
from marl.mappo import MAPPO, MAPPO_CAPABILITIES, MAPPOConfig, check_game
from marl.registry import register_learner

UPDATES = [0]


@register_learner("fix27g_fails", config=MAPPOConfig, policy="mappo",
                  capabilities=MAPPO_CAPABILITIES, section="mappo", check=check_game)
class FailsAfterUpdates(MAPPO):
    """MAPPO whose update raises PolicyLoadError (an opponent snapshot that cannot be loaded,
    hours into a run) after $FAIL_AFTER updates of this process."""

    def update(self):
        UPDATES[0] += 1
        if UPDATES[0] > int(os.environ["FAIL_AFTER"]):
            raise PolicyLoadError("snapshot boom.pt: has 3 actions but the game has 2")
        return super().update()


ConfigStore.instance().store(group="algo", name="fix27g_fails",
                             node={"algo": "fix27g_fails"}, package="_global_")
'''

ARGS = ["imports=[faillearner]", "algo=fix27g_fails", "game=rps", "frames=100000", "num_envs=2",
        "eval_episodes=2", "progress=false", "logger=none", "checkpoint_every_s=0",
        "hydra.run.dir=runs/r"]


def _cli(args, cwd, fail_after):
    return subprocs.run([sys.executable, "-m", "populations.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "HYDRA_FULL_ERROR": "0",
                               "FAIL_AFTER": str(fail_after)})


def test_a_resumed_run_that_fails_mid_run_keeps_its_cli_log_and_failure_line(tmp_path):
    (tmp_path / "faillearner.py").write_text(LEARNER)
    first = _cli(ARGS, tmp_path, 3)
    assert first.returncode == 2 and "boom.pt" in first.stderr, first.stderr
    run = tmp_path / "runs" / "r"
    assert any((run / "checkpoints").glob("*.pt")), sorted(run.rglob("*"))
    log_before = (run / "cli.log").read_text()
    hydra_before = (run / ".hydra" / "overrides.yaml").read_text()

    second = _cli([*ARGS, "resume=true"], tmp_path, 3)
    assert second.returncode == 2 and "boom.pt" in second.stderr, second.stderr
    log = (run / "cli.log").read_text()
    # the resumed session's lines are kept, after the first session's
    assert log.startswith(log_before) and len(log) > len(log_before), log
    session = log[len(log_before):]
    assert "experiment " in session and "boom.pt" in session, session
    # and the failure line, as the terminal said it
    assert second.stderr.strip().splitlines()[-1].removeprefix("selfplay-train: ") in log
    # .hydra says the command that ran (the same settings plus resume=true)
    assert "resume=true" in (run / ".hydra" / "overrides.yaml").read_text()
    assert "resume=true" not in hydra_before
