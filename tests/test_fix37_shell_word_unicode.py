"""A printed command escapes Unicode's unseen characters too (session 37): ``shell_word``
escaped control characters only, so a run folder or override holding U+202E (right-to-left
override: the rest of the command showed reversed), U+2028 / U+2029 (line and paragraph
separators: a line break in some terminals and editors) or another format character (a
zero-width space) was printed raw. Each is written ``\\uHHHH`` (``\\UHHHHHHHH`` past U+FFFF) in
the shell's ``$'...'`` form, and bash reads the word back as it was."""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from populations.command_line import TRAIN, resume_command, shell_word

UNSEEN = {"Cc", "Cf", "Zl", "Zp"}
NAMES = ["runs/abc\u202edef", "runs/line\u2028para\u2029end", "runs/zero\u200bwidth é",
         "runs/tag\U000e0041 it's"]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _bash_words(words: str) -> list[str]:
    out = subprocess.run([shutil.which("bash") or "bash", "-c", "printf '%s\\0' " + words],
                         capture_output=True, check=True)
    return out.stdout.decode().split("\0")[:-1]


def _unseen(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) in UNSEEN]


@pytest.mark.parametrize("name", NAMES)
def test_the_word_has_no_unseen_character_and_bash_reads_it_back(name):
    word = shell_word(name)
    assert word.startswith("$'") and _unseen(word) == [], repr(word)
    assert _bash_words(word) == [name]


@pytest.mark.parametrize("name", NAMES)
def test_a_resume_command_for_such_a_run_folder(name):
    command = resume_command(Path(name), ["seed=3"])
    assert _unseen(command) == [], repr(command)
    words = _bash_words(command[len(TRAIN) + 1:])
    assert words[:2] == ["seed=3", "resume=true"], words
    assert OverridesParser.create().parse_overrides([words[2]])[0].value() == name


def test_the_escapes_written():
    assert shell_word("a\u202eb") == "$'a\\u202eb'"
    assert shell_word("a\u2028b\u2029") == "$'a\\u2028b\\u2029'"
    assert shell_word("t\U000e0041") == "$'t\\U000e0041'"
    assert shell_word("café") == "'café'"  # letters are quoted as before
