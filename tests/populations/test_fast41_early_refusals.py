"""``selfplay-train``'s refusals that the composed experiment made after torch and the
learners loaded (~2 s of CPU): a key ``+`` adds to a section (``+mappo.lrr=1``), a knob of the
Python API no experiment reads (``vdn.seed=5``) and a top-level key no learner names
(``+framez=3``) are said before torch loads, in the words the composed config says them
(``populations.override_types``); the order of two refusals in one line is pinned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from populations import train_overrides
from populations.command_line import CLIError
from populations.config_checks import knob_defaults

# each case in a fresh interpreter: its one line, exit status, and whether torch was imported
SCRIPT = r"""
import contextlib, io, json, sys
from populations import cli
cli._train_task = lambda cfg: sys.exit(99)  # a line not refused reaches the task: no run
out, cases, where = [], json.loads(sys.argv[1]), sys.argv[2]
for i, args in enumerate(cases):
    sys.argv = ["selfplay-train", *args, f"hydra.run.dir={where}/run{i}"]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli.train_main()
        code = 0
    except SystemExit as stop:
        code = stop.code
    out.append([code, err.getvalue().strip().splitlines(), "torch" in sys.modules])
print(json.dumps(out))
"""


def _early(cases: list[list[str]], tmp_path: Path) -> list[tuple[int, list[str], bool]]:
    """``selfplay-train`` on each of ``cases`` in turn, in one fresh interpreter: (exit status,
    stderr lines, torch imported by then)."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(cases), str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, check=True)
    return [tuple(r) for r in json.loads(done.stdout.strip().splitlines()[-1])]


REFUSED = {
    ("algo=vdn", "vdn.seed=5"): "bad config: vdn.seed=5 is not read by an experiment: the "
                                "run's seed= seeds the learner too (give seed=5 instead)",
    ("seed=2", "maddpg.seed=3"): "bad config: maddpg.seed=3 is not read by an experiment: the "
                                 "run's seed= seeds the learner too (give seed=3 instead)",
    ("population=psro", "population.psro.seed=5"):
        "bad config: population.psro.seed=5 is not read by an experiment: the run's seed= "
        "seeds PSRO too (give seed=5 instead)",
    ("llm.grpo.device=cuda",): "bad config: llm.grpo.device='cuda' is not read by an "
                               "experiment: the run's device= sets the LLM learner's too "
                               "(give device=cuda instead)",
    ("+mappo.lrr=1",): "bad config: mappo.lrr: Key 'lrr' not in 'MAPPOConfig' (a '+' cannot "
                       "add keys to the schema); nearest: mappo.lr",
    ("++mappo.lrr=1",): "bad config: mappo.lrr: Key 'lrr' not in 'MAPPOConfig' (a '+' cannot "
                        "add keys to the schema); nearest: mappo.lr",
    ("+population.psro.episodes=3",): "bad config: population.psro.episodes: Key 'episodes' not "
                                      "in 'PSROConfig' (a '+' cannot add keys to the schema); "
                                      "nearest: population.psro.episodes_per_entry",
    ("+llm.grpo.lrr=1",): "bad config: llm.grpo.lrr: Key 'lrr' not in 'GRPOConfig' (a '+' "
                          "cannot add keys to the schema); nearest: llm.grpo.lr",
    ("+framez=3",): "framez: not a key of the experiment nor the section of a registered "
                    "learner; nearest: frames, game",
    # two refusals in one line: the first one said (pinned on purpose)
    ("vdn.seed=5", "vdn.mixer=abc"):  # the knob before the mixer registry (torch); was mixer
        "bad config: vdn.seed=5 is not read by an experiment: the run's seed= seeds the "
        "learner too (give seed=5 instead)",
    ("+vdn.lrr=1", "vdn.seed=5"):  # keys before values the experiment refuses; was vdn.seed
        "bad config: vdn.lrr: Key 'lrr' not in 'ValueDecompConfig' (a '+' cannot add keys to "
        "the schema); nearest: vdn.lr",
    ("+vdn.foo=1", "+mappo.lrr=1"):  # the schema's order, as the composed config walks it
        "bad config: mappo.lrr: Key 'lrr' not in 'MAPPOConfig' (a '+' cannot add keys to the "
        "schema); nearest: mappo.lr",
    ("+framez=3", "vdn.seed=5"):  # the experiment's values before check_experiment's keys
        "bad config: vdn.seed=5 is not read by an experiment: the run's seed= seeds the "
        "learner too (give seed=5 instead)",
    ("+mappo.lrr=1", "mappo.epochs=abc"):  # a type Hydra refuses as it composes, first
        "bad config: mappo.epochs=abc; expected an integer in [1, 10000] (passes over each "
        "batch)",
    ("vdn.seed=5", "mappo.lr=-1"):  # a section's own value first, as before
        "bad config: mappo.lr=-1.0; expected a finite number > 0",
}
ACCEPTED = [  # the run's own seed/device, a section's open mapping: not refused early
    ("algo=vdn", "vdn.seed=5", "seed=5"), ("llm.grpo.device=cpu", "device=cpu"),
    ("game=kuhn", "+population.exploit.learner.epochs=4"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[tuple[str, ...], tuple[int, list[str], bool]]:
    tmp = tmp_path_factory.mktemp("fast41")
    cases = [*REFUSED, *ACCEPTED]  # the accepted last: they load torch
    return dict(zip(cases, _early([list(c) for c in cases], tmp), strict=True))


@pytest.mark.parametrize("line", list(REFUSED), ids=" ".join)
def test_refused_in_one_line_before_torch_loads(results, line):
    code, err, torch_loaded = results[line]
    assert code == 2 and err == [f"selfplay-train: {REFUSED[line]}"], err
    assert not torch_loaded, f"{line}: refused after torch was imported"


@pytest.mark.parametrize("line", ACCEPTED, ids=" ".join)
def test_what_the_run_reads_is_not_refused(results, line):
    code, err, _ = results[line]
    assert code == 99, err  # the task was reached


def _composed_refusal(overrides: list[str]) -> str:
    """What the composed experiment (after torch) says of ``overrides``."""
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="configs", version_base=None):
        cfg = compose("config", overrides=overrides)
    with pytest.raises((CLIError, ValueError)) as refused:
        train_overrides.prepare(cfg, overrides, check=True)
    return str(refused.value)


@pytest.mark.parametrize("line", [line for line in REFUSED if len(line) == 1 or
                                  line[0].startswith(("algo=", "seed=", "population="))],
                         ids=" ".join)
def test_the_early_words_are_the_composed_configs(results, line):
    """One refusal per line: the early one is what the composed experiment said (the knobs'
    words are ExperimentConfig's, the keys' to_experiment's and check_learner_sections')."""
    assert _composed_refusal(list(line)) == REFUSED[line]


@pytest.mark.parametrize("key", list(knob_defaults()))
def test_every_knob_is_one_the_experiment_refuses(key):
    """:func:`knob_defaults` keeps step with ExperimentConfig: each knob set apart from the
    run's seed/device is refused there, in :func:`unread_knob`'s words."""
    from populations.config_checks import unread_knob

    value = "cuda:3" if key.endswith(".device") else 7
    assert _composed_refusal([f"{key}={value}"]) == \
        f"bad config: {unread_knob(key, value, seed=0, device='cpu')}"


def test_the_shipped_learners_read_sections_of_the_schema():
    """``refuse_unknown_sections`` reads no registry when no learner of the user's is
    registered: marl's and the LLM team's learners read sections of the schema only."""
    import dataclasses

    import llm_agents.learner  # noqa: F401 - registers llm_grpo
    from marl import registry
    from populations.experiment_config import ExperimentConfig

    fields = {f.name for f in dataclasses.fields(ExperimentConfig)}
    shipped = {e.section for e in registry.entries().values()
               if e.cls.__module__.startswith(("marl.", "llm_agents."))}
    assert shipped and shipped <= fields, shipped - fields
