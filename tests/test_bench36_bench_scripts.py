"""The bench scripts' command lines (walk36c): a size they cannot run is refused by argparse
(exit 2, naming the flag) before any work, where ``games.py --steps 0`` was a
ZeroDivisionError, ``vmas.py --sizes 0`` an AssertionError, ``psro_kuhn.py --iters 0`` an
IndexError and ``mappo_spread.py --frames 0`` a table of nan; ``--device cuda`` without CUDA
is the one line the others print (``vmas_profile.py`` ended in a traceback,
``llm_rollouts.py`` exited 1 in other words); ``--help`` gives the docstring's first
paragraph, not its first line cut mid-sentence; psro_kuhn says why OpenSpiel did not run;
vmas_train names ``--big-frames`` only when ``ours_big`` ran.

Every case runs in one child process (the suite's zygote: torch is loaded once), each script
through ``runpy`` as ``python bench/<script>`` would run it, under a time limit of its own so
that a script which stopped refusing cannot hang the suite."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from tests import subprocs

BENCH = Path(__file__).resolve().parents[1] / "bench"

CHILD = r"""
import contextlib, io, json, os, runpy, signal, sys
bench, limit, cases = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
os.environ["COLUMNS"] = "1000"  # --help: each paragraph on one line


def _timeout(signum, frame):
    raise TimeoutError(f"still running after {limit} s")


signal.signal(signal.SIGALRM, _timeout)
results = []
for script, args, env in cases:
    path = os.path.join(bench, script)
    saved_path, saved_argv = list(sys.path), sys.argv
    sys.path.insert(0, bench)  # as python puts a script's folder first
    sys.argv = [path, *args]
    os.environ.update(env)
    out, err = io.StringIO(), io.StringIO()
    signal.alarm(limit)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(path, run_name="__main__")
                code = 0
            except SystemExit as exc:  # what the interpreter makes of sys.exit(...)
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException as exc:
        code = f"{type(exc).__name__}: {exc}"
    finally:
        signal.alarm(0)
        sys.path[:] = saved_path
        sys.argv = saved_argv
        for key in env:
            os.environ.pop(key, None)
    results.append({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
print("RESULTS " + json.dumps(results))
"""

# script, arguments (the refused flag and value last), the flag's lower bound
REFUSED = [
    ("games.py", ["--steps", "0"], 1),
    ("games.py", ["--steps", "-5"], 1),
    ("vmas.py", ["--sizes", "0"], 1),
    ("psro_kuhn.py", ["--no-peer", "--iters", "0"], 1),
    ("mappo_spread.py", ["--no-peer", "--frames", "0"], 1),
    ("advantages.py", ["--samples", "0"], 1),
    ("approx_exploit.py", ["--budgets", "0"], 1),
    ("approx_exploit.py", ["--episodes", "1"], 2),  # ApproxConfig: eval_episodes >= 2
    ("encoders.py", ["--repeats", "0"], 1),
    ("gnn_vocab_startup.py", ["--runs", "0"], 1),
    ("league_ray.py", ["--members", "0"], 1),
    ("league_scale.py", ["--repeats", "0"], 1),
    ("learning_seeds.py", ["maddpg-gumbel", "--seeds", "-1"], 0),
    ("llm_real.py", ["--iterations", "0"], 1),
    ("llm_rollouts.py", ["--games", "0"], 1),
    ("maddpg_target.py", ["--frames", "0"], 1),
    ("psro_sampled.py", ["--sims", "0"], 1),
    ("psro_teams.py", ["--max-steps", "0"], 1),
    ("vmas_gpu.py", ["--device", "cpu", "--max-copies", "0"], 1),
    ("vmas_profile.py", ["--device", "cpu", "--copies", "0"], 1),
    ("vmas_train.py", ["--big-frames", "0"], 1),
]
# --help of every script (startup.py is another's): 8 were cut mid-sentence, one had none
HELP = sorted(p.name for p in BENCH.glob("*.py") if p.name not in ("startup.py", "_args.py"))
# run only where there is no CUDA: on a GPU machine these would run the benchmarks
NO_CUDA = [] if torch.cuda.is_available() else ["vmas_profile.py", "llm_rollouts.py"]
PSRO_SMALL = ["--games", "kuhn_poker", "--iters", "1", "--cfr-iters", "0"]
PSRO = {"no-peer": (["--no-peer"], {}, "--no-peer given"),
        "no-peer-env": ([], {"PEERS_ROOT": "/nonexistent/selfplay-peers"},
                        "no peer environment: /nonexistent/selfplay-peers/os/bin/python is "
                        "missing")}
VMAS_TRAIN = ["--settings", "defaults", "--frames", "1", "--no-peer", "--seeds", "0"]
# a width TinyModelConfig refuses: refused before the corpus and tokenizer are built
LLM_WIDTH = ["--n-embd", "6"]


def _cases() -> dict[str, tuple[str, list[str], dict]]:
    """Case id -> (script, arguments, environment)."""
    cases = {f"refused {i}": (script, args, {}) for i, (script, args, _) in enumerate(REFUSED)}
    cases |= {f"help {script}": (script, ["--help"], {}) for script in HELP}
    cases |= {f"cuda {script}": (script, ["--device", "cuda"], {}) for script in NO_CUDA}
    cases |= {f"psro {k}": ("psro_kuhn.py", PSRO_SMALL + a, env) for k, (a, env, _) in PSRO.items()}
    cases["vmas_train"] = ("vmas_train.py", VMAS_TRAIN, {})
    cases["llm width"] = ("llm_rollouts.py", LLM_WIDTH, {})
    return cases


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    """Case id -> its exit code (or the exception it ended in), stdout and stderr."""
    cases = _cases()
    proc = subprocs.run([sys.executable, "-c", CHILD, str(BENCH), "120",
                         json.dumps(list(cases.values()))],
                        capture_output=True, text=True, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(zip(cases, json.loads(lines[-1].removeprefix("RESULTS ")), strict=True))


@pytest.mark.parametrize("i", range(len(REFUSED)),
                         ids=[f"{s} {' '.join(a)}" for s, a, _ in REFUSED])
def test_a_size_it_cannot_run_is_refused_naming_the_flag(results, i):
    script, args, low = REFUSED[i]
    res = results[f"refused {i}"]
    assert res["code"] == 2, res
    assert res["stderr"].splitlines()[-1] == (
        f"{script}: error: argument {args[-2]}: {args[-1]}: expected an integer >= {low}"), res


def _first_paragraph(script: str) -> str:
    doc = ast.get_docstring(ast.parse((BENCH / script).read_text()), clean=True)
    return " ".join(doc.split("\n\n")[0].split())


@pytest.mark.parametrize("script", HELP)
def test_help_gives_the_docstrings_first_paragraph_whole(results, script):
    res = results[f"help {script}"]
    assert res["code"] == 0, res
    text = " ".join(res["stdout"].split())
    paragraph = _first_paragraph(script)
    assert paragraph.endswith(".") and paragraph in text, (paragraph, text)


@pytest.mark.skipif(not NO_CUDA, reason="this machine has a CUDA device")
@pytest.mark.parametrize("script", NO_CUDA or ["-"])
def test_device_cuda_without_cuda_is_one_line_exit_2(results, script):
    res = results[f"cuda {script}"]
    assert res["code"] == 2, res
    assert res["stderr"] == f"--device cuda: no CUDA device here (torch {torch.__version__})\n"


@pytest.mark.parametrize("case", PSRO)
def test_psro_kuhn_says_why_openspiel_did_not_run(results, case):
    res, why = results[f"psro {case}"], PSRO[case][2]
    assert res["code"] == 0, res
    out = res["stdout"]
    assert f"(peer: not run: {why}" in out, out
    assert f"OpenSpiel's psro_v2 not run: {why}" in out, out
    assert "| payoffs |" not in out, out  # no table header with no rows under it


def test_advantages_speed_up_keeps_two_significant_digits_below_10():
    spec = importlib.util.spec_from_file_location("bench_advantages", BENCH / "advantages.py")
    module = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    assert [module._speed_up(x) for x in (0.4, 0.534, 1.0, 8.26, 12.4, 1234.4)] == [
        "0.4", "0.53", "1", "8.3", "12", "1,234"]


def test_vmas_train_names_ours_big_frames_only_when_it_ran(results):
    res = results["vmas_train"]
    assert res["code"] == 0, res
    assert "vmas/navigation, discrete actions: 1 frames per run, seeds [0]" in (
        res["stdout"].splitlines()), res["stdout"]
    assert "ours_big" not in res["stdout"], res["stdout"]


def test_llm_rollouts_refuses_a_model_size_before_building_anything(results):
    res = results["llm width"]
    assert res["code"] == 2, res
    assert res["stderr"].splitlines()[-1] == (
        "llm_rollouts.py: error: n_embd=6 is not a multiple of n_head=4; each head takes "
        "n_embd / n_head of the width"), res
