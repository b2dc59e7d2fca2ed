"""A resume command printed for a run folder whose name holds a control character (made
before such names were refused: ``run_guard.refuse_control_characters``) is one line a
shell runs: each such character escaped in the shell's ``$'...'`` form (session 37). Before,
``shlex.quote`` kept them raw: a newline split the command in two lines (the second run as a
command of its own when pasted) and ESC's sequence was run by the terminal.
"""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from populations.command_line import TRAIN, resume_command, shell_word
from populations.sweeps import sweep_resume_command

NAMES = ["runs/a\nb", "runs/red\x1b[31mtext", "runs/it's\t\\x\x7f\x85 é"]


def _shell_words(command: str) -> list[str]:
    """The words bash makes of ``command`` (its program replaced by printf)."""
    assert command.startswith(TRAIN + " ")
    script = "printf '%s\\0' " + command[len(TRAIN) + 1:]
    out = subprocess.run([shutil.which("bash") or "bash", "-c", script], capture_output=True,
                         check=True)
    return out.stdout.decode().split("\0")[:-1]


def _controls(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) == "Cc"]


pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.mark.parametrize("name", NAMES)
def test_the_resume_command_is_one_line_the_shell_reads_back(name):
    command = resume_command(Path(name), ["seed=3", f"note={name}"])
    assert _controls(command) == [], repr(command)
    words = _shell_words(command)
    assert words[:2] == ["seed=3", f"note={name}"] and words[2] == "resume=true", words
    assert words[3].startswith("hydra.run.dir="), words
    assert OverridesParser.create().parse_overrides([words[3]])[0].value() == name


def test_a_sweeps_resume_command_and_plain_words_too(tmp_path):
    command = sweep_resume_command(tmp_path / "sw\neep", ["-m", "seed=0,1"])
    assert _controls(command) == [], repr(command)
    assert _shell_words(command)[-1].startswith("hydra.sweep.dir=")
    # a word without control characters is quoted as before
    assert shell_word("a b") == "'a b'" and shell_word("plain") == "plain"
    assert shell_word("new\nline") == "$'new\\nline'"
    assert shell_word("esc\x1b[0m'q'") == "$'esc\\e[0m\\'q\\''"
