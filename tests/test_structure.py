"""The import direction of the packages: ``populations -> {marl, llm_agents} -> games``, and
``llm_agents -> marl`` (advantage math, the PPO loss, the protocols), never back.

Every ``.py`` file of ``games``, ``marl``, ``llm_agents`` and ``populations`` is parsed (not
imported) and everything it could import is collected: ``import`` and ``from`` statements
(lazy ones inside functions and ``TYPE_CHECKING`` blocks too), constant module names handed
to ``importlib.import_module`` / ``__import__`` (an f-string's constant head), and strings
that spell one of our modules (a tuple of module names a loop imports). A second check
keeps ``populations`` off the learners' insides: it reaches learners through the registry
and the ``Learner``/``Policy`` protocols; what remains besides is listed in
``POPULATIONS_KNOWN`` with the reason.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("games", "marl", "llm_agents", "populations")
OURS = (*CHECKED, "configs", "tests")

# package -> the packages of ours it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "games": set(),
    "marl": {"games"},
    "llm_agents": {"marl", "games"},
    "populations": {"marl", "llm_agents", "games", "configs"},
}

# What populations may import of the learner packages: the protocols and the registry
# (marl.core, marl.registry), the learner-agnostic loops over them (marl.train), and the
# module whose import registers llm_grpo in marl's registry (marl never imports llm_agents,
# so someone above both must: the counterpart of marl.registry.BUILTIN_MODULES), and the
# torch-free atomic file writer that policies and run files share (marl.fileio), and the
# progress bars every selfplay command shows (marl.progress).
POPULATIONS_PUBLIC = {"marl", "marl.core", "marl.fileio", "marl.progress", "marl.registry",
                      "marl.train", "llm_agents.learner"}

# Known reaches into learner internals, (file, module) -> why it is there. A new one fails
# the test; make it go through the registry (registry.get(algo).build(...), entry.config,
# entry.capabilities) instead of adding it here.
POPULATIONS_KNOWN: dict[tuple[str, str], str] = {
    # the typed Hydra schema (populations.experiment_config, torch-free) has one field per
    # learner section, typed with the learner's config dataclass; populations.experiment, its
    # old home, still hands them out from the learners' modules
    ("populations/experiment.py", "marl.mappo"): "MAPPOConfig re-exported from its old home",
    ("populations/experiment.py", "marl.value_decomp"): "ValueDecompConfig re-exported",
    ("populations/experiment.py", "marl.maddpg"): "MADDPGConfig re-exported",
    ("populations/experiment.py", "llm_agents.build"): "LLMConfig; vocabulary_said",
    ("populations/experiment_config.py", "llm_agents.settings"): "LLMConfig field of the "
    "schema; its registry checks wait while the schema is made",
    # selfplay-train checks section values (mappo.lr=-1) with the learners' own dataclasses
    # before torch loads: marl.configs holds them without torch
    ("populations/config_checks.py", "marl.configs"): "MAPPOConfig of the early checks",
    ("populations/config_checks.py", "llm_agents.settings"): "LLMConfig of the early checks",
    # the config check asks whether a learner's net reads entity graphs before torch_geometric
    ("populations/cli.py", "marl.configs"): "reads_graphs of the early entity-graph check",
    # the population/runner dataclasses check their values as the learners' do (ec9fea6)
    # and the schema's learner sections (MAPPOConfig...) and their deferred registry checks
    ("populations/experiment_config.py", "marl.configs"): "check_number, COUNT, RATE, the "
    "learner sections of the schema",
    # a misspelt choice value's refusal ends with the nearest name (hint40): one torch-free
    # helper for every package's settings
    ("populations/loggers.py", "marl.configs"): "did_you_mean of logger.kind/mode",
    ("populations/matchmaking.py", "marl.configs"): "did_you_mean of matchmaking rules",
    ("populations/meta_solvers.py", "marl.configs"): "did_you_mean of meta-solver names",
    ("populations/psro_config.py", "marl.configs"): "did_you_mean of population.psro.*",
    ("populations/eval_checks.py", "marl.configs"): "did_you_mean of --exploit-algo",
    ("populations/league.py", "marl.configs"): "did_you_mean of LeagueConfig.runner",
    ("populations/rollouts.py", "marl.configs"): "did_you_mean of rollout worker kinds",
    ("populations/runners.py", "marl.configs"): "did_you_mean of make_runner's kinds",
    # the Python API's League() without members builds one MAPPO member from LeagueConfig
    ("populations/league.py", "marl.mappo"): "LeagueConfig.mappo and the default member",
    ("populations/league.py", "marl.actor_critic"): "NetConfig in LeagueConfig's default",
    # psro.mappo_learner, the Python API's default RL oracle (config runs use the registry)
    ("populations/psro.py", "marl.mappo"): "mappo_learner: the default RL oracle",
    ("populations/psro.py", "marl.actor_critic"): "mappo_learner: NetConfig(critic='local')",
    # rollout workers replay MAPPO's on-policy buffer layout; they refuse other learners
    ("populations/rollouts.py", "marl.mappo"): "isinstance check: workers serve MAPPO only",
    # exact best responses and CFR+ are tables: TabularPolicy is a Policy, not a learner
    ("populations/exploitability.py", "marl.tabular"): "TabularPolicy of exact responses",
    # the LLM member drives a GRPO trainer (type hint only) and hands it an opponent pool
    ("populations/members.py", "llm_agents.trainer"): "TYPE_CHECKING: MultiTurnGRPO hint",
    ("populations/members.py", "llm_agents.opponents"): "OpponentPool of the LLM member",
    # the SmolLM2 recipe (bench/llm_real.py): where the converted model is, its preset, and
    # a bare GRPO trainer on Kuhn measured before and after, with populations' NashConv
    ("populations/real_models.py", "llm_agents.real_models"): "smollm2_path, its preset",
    ("populations/real_models.py", "llm_agents.build"): "build_trainer of the recipe",
}

_MODULE_STRING = re.compile(rf"(?:{'|'.join(OURS)})(?:\.[A-Za-z_]\w*)+")


@dataclass(frozen=True)
class Ref:
    """One thing a file may import: ``module`` at ``line``, found as ``how``."""

    module: str
    line: int
    how: str  # import | from | import_module | string


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path) -> bool:
    base = root.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
    return out


def _import_module_target(call: ast.Call) -> str | None:
    """The constant (head of the) module name handed to ``import_module`` / ``__import__``."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rstrip(".") or None
    if isinstance(arg, ast.BinOp) and isinstance(arg.left, ast.Constant):  # "pkg." + name
        return str(arg.left.value).rstrip(".") or None
    return None


def references(path: Path, root: Path = ROOT) -> list[Ref]:
    """Every module ``path`` imports or names for import (see the module docstring)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    skip = _docstrings(tree)  # docstrings, and strings already counted as import_module
    refs = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            refs += [Ref(a.name, line, "import") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the file's package
                head = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*head, *([node.module] if node.module else [])])
            for a in node.names:  # `from marl import mappo` imports the module marl.mappo
                sub = f"{base}.{a.name}"
                refs.append(Ref(sub if _is_module(sub, root) else base, line, "from"))
        elif isinstance(node, ast.Call) and (target := _import_module_target(node)):
            refs.append(Ref(target, line, "import_module"))
            skip.add(id(node.args[0]))  # counted once, not again as a string
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in skip and _MODULE_STRING.fullmatch(node.value)):
            refs.append(Ref(node.value, line, "string"))
    return refs


def _files(root: Path = ROOT) -> list[Path]:
    return sorted(p for pkg in CHECKED for p in (root / pkg).rglob("*.py"))


def direction_violations(root: Path = ROOT) -> list[str]:
    """``file:line: <package> must not import <module> (how)`` for each arrow pointing the
    wrong way."""
    bad = []
    for path in _files(root):
        own = path.relative_to(root).parts[0]
        for ref in references(path, root):
            top = ref.module.split(".")[0]
            if top in OURS and top != own and top not in ALLOWED[own]:
                bad.append(f"{path.relative_to(root)}:{ref.line}: {own} must not import "
                           f"{ref.module} ({ref.how})")
    return bad


def populations_internals(root: Path = ROOT) -> dict[tuple[str, str], int]:
    """``(file, module) -> line`` for each learner module ``populations`` reaches besides
    ``POPULATIONS_PUBLIC`` (submodules of a public module count as internals)."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted((root / "populations").rglob("*.py")):
        for ref in references(path, root):
            top = ref.module.split(".")[0]
            if top not in ("marl", "llm_agents") or ref.module in POPULATIONS_PUBLIC:
                continue
            mod = ref.module
            while mod.count(".") > 1 and not _is_module(mod, root):
                mod = mod.rpartition(".")[0]  # a string naming marl.core.Policy: the module
            if mod not in POPULATIONS_PUBLIC:
                found.setdefault((str(path.relative_to(root)), mod), ref.line)
    return found


def test_every_package_is_parsed():
    counts = {pkg: sum(1 for p in _files() if p.relative_to(ROOT).parts[0] == pkg)
              for pkg in CHECKED}
    assert all(n >= 3 for n in counts.values()), counts


def test_imports_point_populations_to_learners_to_games():
    assert direction_violations() == []


def test_populations_reaches_learners_through_the_registry_and_protocols():
    new = {f"{f}:{line}: {m}": line for (f, m), line in populations_internals().items()
           if (f, m) not in POPULATIONS_KNOWN}
    assert not new, ("populations imports learner internals; go through marl.registry "
                     f"(or list it in POPULATIONS_KNOWN with the reason): {sorted(new)}")


# ---------------------------------------------------------------- the checks can fail
_MARL_BAD = '''"""docstring naming llm_agents.policy is fine"""
import importlib
import llm_agents
from llm_agents import policy
from llm_agents.trainer import MultiTurnGRPO
MODULES = ("marl.mappo", "llm_agents.learner")


def load(kind):
    importlib.import_module("llm_agents.policy")
    importlib.import_module(f"llm_agents.{kind}")
    __import__("populations.store")
'''


@pytest.fixture
def fake_repo(tmp_path):
    for pkg in CHECKED:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    for mod in ("policy.py", "trainer.py", "learner.py"):
        (tmp_path / "llm_agents" / mod).write_text("")
    (tmp_path / "marl" / "mappo.py").write_text("import games\nfrom . import core\n")
    (tmp_path / "marl" / "core.py").write_text("")
    return tmp_path


def test_every_way_marl_could_reach_llm_agents_is_caught(fake_repo):
    (fake_repo / "marl" / "bad.py").write_text(_MARL_BAD)
    bad = direction_violations(fake_repo)
    lines = sorted(int(v.split(":")[1]) for v in bad)
    # import, from-import, from-import of a class, the tuple's string, import_module with a
    # constant and with an f-string, __import__ of populations; not the docstring
    assert lines == [3, 4, 5, 6, 10, 11, 12], bad
    assert all(v.startswith("marl/bad.py:") for v in bad)  # `from . import core` is fine
    assert "marl must not import llm_agents.policy (from)" in "\n".join(bad)


def test_games_may_import_none_of_ours_and_llm_agents_not_populations(fake_repo):
    (fake_repo / "games" / "g.py").write_text("from marl import core\n")
    (fake_repo / "llm_agents" / "x.py").write_text("import marl.core\nimport populations\n")
    assert direction_violations(fake_repo) == [
        "games/g.py:1: games must not import marl.core (from)",
        "llm_agents/x.py:2: llm_agents must not import populations (import)",
    ]


def test_a_new_reach_into_a_learner_from_populations_is_caught(fake_repo):
    (fake_repo / "populations" / "p.py").write_text(
        "from marl import registry\nfrom marl.core import Policy\n"
        "def f():\n    from marl.mappo import MAPPO\n    return 'marl.core.Policy'\n")
    assert populations_internals(fake_repo) == {("populations/p.py", "marl.mappo"): 4}
