"""Checks of an experiment's top-level values that need neither torch nor the schema.

:class:`populations.experiment.ExperimentConfig` runs :func:`check_run_values` on itself, and
``selfplay-train`` runs it (with :func:`typed_override`) on the command line's overrides
before Hydra loads the schema, which imports torch and the learners (~3 s of CPU): a mistyped
``num_envs=0`` or ``seed=abc`` is refused in the time it takes to parse the command line.
Nothing here imports torch.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TOP_LEVEL_TYPES: dict[str, type] = {
    "seed": int, "frames": int, "num_envs": int, "eval_episodes": int, "torch_threads": int,
    "checkpoint_every_s": float, "device": str, "resume": bool, "resume_override": bool,
    "keep_going": bool, "progress": bool}
"""The top-level scalar settings these checks cover and their types (a test keeps this in
step with ExperimentConfig's fields)."""
FLAG_WORDS = "true or false"
"""What a true/false setting takes (OmegaConf also reads 1 / 0, yes / no, on / off)."""
AT_LEAST_ONE = ("frames", "num_envs", "eval_episodes", "torch_threads")
MAX_THREADS = 1024
"""The most ``torch_threads`` taken: more than the cores only slows a run down, and OpenMP
cannot start tens of thousands (``torch_threads=100000`` killed the run with SIGSEGV after its
folder, settings and database were written); 1024 covers the largest machines."""
MAX_SIZES: dict[str, tuple[int, str]] = {
    "frames": (10**12, "10**12: 12 days at a million frames a second"),
    "num_envs": (10**9, "10**9 game copies stepped together"),
    "eval_episodes": (10**6, "10**6: each evaluation episode is a row of the run's database"),
    "torch_threads": (MAX_THREADS, "intra-op threads: more than the cores only slow the run")}
"""The largest value of each size setting and why, far above any run that ends: past them a
run was taken and never finished (``frames=10**20`` made its folder and trained with an
estimate of 10**13 hours; ``eval_episodes=10**15`` after its training), as marl's learners
bound their own sizes (``marl.configs.MAX_REPLAY``...). A stepped game takes fewer copies
(:func:`populations.experiment_config.check_copies`)."""
EXPLOIT_SIZES: dict[str, tuple[int, str]] = {
    "frames": MAX_SIZES["frames"],
    "seeds": (10**6, "10**6 repetitions, each training a response per team"),
    "eval_episodes": MAX_SIZES["eval_episodes"],
    "num_envs": MAX_SIZES["num_envs"]}
"""The largest budget of an approximate NashConv (``populations.approx_exploit.ApproxConfig``:
``population.exploit.*``, ``selfplay-eval --exploit-*``), as a run's own sizes: with
``population.exploit.frames=10**20`` a league's first estimate trained without end."""
NUM_ENVS = 32
"""``ExperimentConfig.num_envs``'s default (it takes it from here)."""
STEPPED_ALGOS = ("mappo", "ippo", "vdn", "qmix", "maddpg")
"""marl's learners that step copies of the game (not ``own_rollouts``): a ``population=none``
run of one of them with ``runner.rollout_workers`` shares ``num_envs`` among the workers (a
test keeps this in step with the learner registry; a learner of yours is checked later)."""
ROLLOUT_ALGOS = ("mappo", "ippo")
"""The learners rollout workers train (MAPPO's on-policy replay, feed-forward nets only)."""
DEVICE = re.compile(r"cpu|cuda(:\d+)?|auto")
SEED_END = 2**62
"""``seed`` is below this and not negative, as ``selfplay-eval --seed``: every consumer of the
run's seed takes it (torch.manual_seed overflows from 2**63, SQLite's INTEGER and a league's
generation seeds ``seed + 100_003 * g`` near it; PSRO's numpy generators and a league's game
copies refuse negative seeds)."""


def check_run_values(values: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` (one line naming the value and what is accepted) for a bad value
    among ``values`` (top-level settings of an experiment; keys not given are not checked)."""
    for name, kind in TOP_LEVEL_TYPES.items():
        if kind is bool and name in values:
            check_flag(name, values[name])
    seed = values.get("seed", 0)
    # 2**63 crashed a league after its first checkpoint
    if not _integer(seed) or not 0 <= seed < SEED_END:
        raise ValueError(f"seed={_said(seed)}; expected an integer from 0 to {SEED_END - 1} "
                         f"(2**62 - 1, as selfplay-eval's --seed){write_integer(seed)}")
    for name in AT_LEAST_ONE:  # frames=-5 trained nothing; 2.5 and True were taken too
        if name not in values:
            continue
        value, (top, why) = values[name], MAX_SIZES[name]
        whole = value if _integer(value) else int(value) if write_integer(value) else None
        if whole is not None and whole > top:  # frames=1e20: not "(write 10**20)"
            raise ValueError(f"{name}={value}; expected an integer from 1 to {top} ({why})")
        if not _integer(value) or value < 1:  # frames="100" said frames=100
            raise ValueError(f"{name}={_said(value)}; expected an integer >= 1"
                             f"{write_integer(value)}")
    every = values.get("checkpoint_every_s", 0.0)
    if not every >= 0:  # NaN too
        raise ValueError(f"checkpoint_every_s={every}; expected seconds >= 0 (0: after every "
                         "update)")
    if "device" in values and not DEVICE.fullmatch(str(values["device"])):
        from marl.configs import unknown_device  # torch-free; resolve_device's words too
        raise ValueError(unknown_device(values["device"]))


def _said(value: Any) -> str:
    """``value`` as a message names it: a string quoted (``frames='100'``, from the Python
    API, is not the number it reads as), any other value as it prints."""
    return repr(value) if isinstance(value, str) else str(value)


def write_integer(value: Any) -> str:
    """`` (write 10000)`` for a whole number typed as a float (``frames=1e4``: YAML and Hydra
    read scientific notation as a float, which an integer setting refuses); ``""`` for any
    other value. Such a value is refused, not rounded: the integer is what to write."""
    if isinstance(value, float) and value.is_integer():  # not inf, nan, 2.5
        return f" (write {int(value)})"
    return ""


def _integer(value: Any) -> bool:
    """``marl.configs.is_integer``'s rule (an int setting's value: not a bool, nor a float
    such as 2.5 or 2.0), here without importing ``marl`` (these checks run before it
    loads)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


_OMEGACONF_BOOL_WORDS = ("true", "false", "yes", "no", "on", "off", "y", "n")
"""The words OmegaConf's ``BooleanNode`` reads as true or false (any case)."""


def check_flag(where: str, value: Any) -> None:
    """``ValueError`` (one line) for an integer other than 0 and 1 given to a true/false
    setting (``progress=2``, ``mappo.value_norm='5'``): OmegaConf reads every other integer as
    true, so a typo ran as true. Booleans, 0, 1 and OmegaConf's words pass; another word
    (``progress=maybe``) is refused here, in these words, not OmegaConf's."""
    if isinstance(value, bool):
        return
    number = value if isinstance(value, int) else None
    if isinstance(value, str):
        try:
            number = int(value)
        except ValueError:  # progress=maybe: OmegaConf's "Value 'maybe' is not a valid bool"
            if value.strip().lower() in _OMEGACONF_BOOL_WORDS:
                return
            raise ValueError(f"{where}={value!r}; expected {FLAG_WORDS}") from None
    if number is not None and number not in (0, 1):
        raise ValueError(f"{where}={value!r}; expected {FLAG_WORDS}")


def check_rollout_copies(num_envs: int, workers: int) -> None:
    """``ValueError`` (one line naming both) when ``workers`` rollout workers cannot share
    ``num_envs`` game copies: each plays at least one."""
    if num_envs < workers:
        raise ValueError(f"num_envs={num_envs} game copies cannot be shared by "
                         f"rollout_workers={workers}: give num_envs >= {workers} "
                         "(each worker plays at least one copy)")


def check_rollout_share(line: Mapping[str, Sequence[Any]], presets: Any) -> None:
    """Refuse rollout workers where the run would refuse them after torch: for a learner
    other than :data:`ROLLOUT_ALGOS`, a recurrent MAPPO or continuous actions
    (``populations.rollouts``' words),
    and fewer game copies than workers (:func:`check_rollout_copies`). ``line`` holds the
    command line's values of ``num_envs``, ``runner.rollout_workers``, ``population.kind``,
    ``mappo.net.recurrent`` and ``game.kwargs.continuous_actions`` (interpolations left out;
    several for a sweep: one refused job refuses the line), over what its group options set
    (``presets``, a config with ``algo``) and the defaults. Only a ``population=none`` run of
    one of :data:`STEPPED_ALGOS` shares them (a league or an LLM team plays no such copies)."""
    from omegaconf import OmegaConf

    def chosen(key: str, default: Any) -> list[Any]:
        if key in line:
            return list(line[key])
        found = OmegaConf.select(presets, key, default=None)
        return [default if found is None else found]

    try:
        kinds, algos = chosen("population.kind", "none"), chosen("algo", None)
        copies, workers = chosen("num_envs", NUM_ENVS), chosen("runner.rollout_workers", 0)
    except Exception:  # noqa: BLE001 - an interpolation of a preset: the schema decides
        return
    if kinds != ["none"] or len(algos) != 1 or algos[0] not in STEPPED_ALGOS:
        return
    if any(isinstance(w, int) and w >= 1 for w in workers):  # populations.rollouts' learners
        if algos[0] not in ROLLOUT_ALGOS:
            raise ValueError(f"rollout workers train MAPPO/IPPO learners (on-policy replay); "
                             f"got algo={algos[0]}: use rollout_workers=0")
        if True in chosen("mappo.net.recurrent", False):  # encoder=mlp_gru sets it
            raise ValueError("rollout workers do not carry GRU states between rounds yet; use "
                             "rollout_workers=0 with a recurrent MAPPO")
        if True in chosen("game.kwargs.continuous_actions", False):  # (a game of one's own
            # with boxes is refused by the workers' own check, as training starts)
            raise ValueError("rollout workers replay discrete actions only (their policies' "
                             "action_probs); use runner.rollout_workers=0 on a game of "
                             "continuous actions")
    for n in copies:
        for w in workers:
            if isinstance(n, int) and isinstance(w, int) and n >= 1 and w >= 1:
                check_rollout_copies(n, w)


def typed_override(key: str, value: Any) -> Any:
    """A command line's ``key=value`` (as Hydra's parser typed it) as the setting's type, the
    way OmegaConf converts it (a quoted number ``seed='5'`` is 5); ``ValueError`` when it
    cannot become one: a word where a number goes (``seed=abc``). A true/false setting's value
    is left as it is (:func:`check_flag` decides)."""
    want = TOP_LEVEL_TYPES[key]
    if want in (str, bool) or not isinstance(value, str):
        return value  # numbers and bools: the range checks (or OmegaConf) decide
    try:
        return want(value)
    except ValueError:
        pass
    try:  # the setting's own rule, as a number out of range is told (frames=abc and
        check_run_values({key: value})  # frames=-5: 'expected an integer >= 1')
    except ValueError as rule:
        raise ValueError(str(rule)) from None
    except TypeError:  # a rule that compares (checkpoint_every_s): the kind alone
        pass
    kind = "an integer" if want is int else "a number"
    raise ValueError(f"{key}={value!r}; expected {kind}")


def check_game_kwargs(name: str, kwargs: Mapping[str, Any]) -> None:
    """Build game ``name`` with the user's ``kwargs``, reset it and play one step of first
    legal actions (the middle of a continuous box): an argument the game cannot use raises
    ``ValueError``, one line naming the arguments; an exception of the game's own code
    (:class:`games.GameCodeError`) is told with them, where it was (``reset(seed=0)``,
    ``step 0``), the game's method and the file:line that raised (the exception is the
    error's ``__cause__``). Some games take any value when built and fail later
    (``max_cycles="5"``: a TypeError at the first step of a run, a traceback after the run
    folder was made; ``max_cycles=1e400``: an OverflowError)."""
    import numpy as np

    import games

    def refused(err: Exception, when: str) -> ValueError:
        text = str(err).strip().splitlines()
        return ValueError(f"{name} {when} with the game arguments {dict(kwargs)} "
                          f"({type(err).__name__}: {text[0] if text else ''}); check their "
                          "values and types")

    try:
        game = games.make(name, **kwargs)
    except ValueError:
        raise  # the game's own one-line errors (GameError)
    except Exception as err:  # noqa: BLE001 - whatever the game raised on the user's values
        raise refused(err, "cannot be built") from None
    when = "fails on reset"
    try:
        game.reset(seed=0)
        when = "fails on its first step"
        actions: dict[str, Any] = {}
        for agent in game.acting_agents():
            space = game.spec.action_spaces[agent]
            actions[agent] = game.legal_actions(agent)[0] if space.discrete else \
                np.mean(space.bounds(), axis=0).astype(np.float32)  # each dimension's middle
        if actions:
            game.step(actions)
    except games.GameCodeError as err:  # the game's own code failed: on the user's values,
        # or a bug of the game's; its method and file:line as without arguments (walk38a M1)
        raise ValueError(f"{name} fails at {err.where} with the game arguments {dict(kwargs)}:"
                         f" {err.detail}; check their values and types, or the game's code "
                         "at that line") from err.error
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001
        raise refused(err, when) from None
    finally:
        game.close()


def section_schemas() -> dict[str, tuple[type, dict[str, Any]]]:
    """The sections of an experiment whose dataclasses import without torch, by dotted path, in
    ``ExperimentConfig``'s order (the schema reports the first bad one): each one's dataclass
    and the defaults ``ExperimentConfig`` gives it beyond the class's own (a test keeps this
    in step with ExperimentConfig). The other one (``game``) is checked when the schema
    loads."""
    from llm_agents.settings import LLMConfig
    from marl.configs import MADDPGConfig, MAPPOConfig, ValueDecompConfig
    from populations.experiment_config import PopulationConfig, RunnerConfig
    from populations.loggers import LoggerConfig

    return {"mappo": (MAPPOConfig, {}), "vdn": (ValueDecompConfig, {"mixer": "vdn"}),
            "qmix": (ValueDecompConfig, {"mixer": "qmix"}), "maddpg": (MADDPGConfig, {}),
            "llm": (LLMConfig, {}), "population": (PopulationConfig, {}),
            "runner": (RunnerConfig, {}), "logger": (LoggerConfig, {})}


def knob_defaults() -> dict[str, Any]:
    """The Python API's knobs that an experiment does not read, by dotted path, each with the
    value it accepts beside the run's own (``seed=``, ``device=``), in the order
    ``ExperimentConfig`` refuses them (:func:`unread_knob`): the LLM learner's device and
    seed, PSRO's seed, and the ``seed`` of each learner section that has one (``vdn``,
    ``qmix``, ``maddpg``)."""
    import dataclasses
    import typing

    from populations.experiment_config import ExperimentConfig
    from populations.psro_config import PSROConfig

    psro_seed = next(f.default for f in dataclasses.fields(PSROConfig) if f.name == "seed")
    hints = typing.get_type_hints(ExperimentConfig)
    seeded = [f.name for f in dataclasses.fields(ExperimentConfig)
              if dataclasses.is_dataclass(hints.get(f.name))
              and any(g.name == "seed" for g in dataclasses.fields(hints[f.name]))]
    return {"llm.grpo.device": "auto", "llm.grpo.seed": 0, "population.psro.seed": psro_seed,
            **{f"{name}.seed": 0 for name in seeded}}


def unread_knob(key: str, value: Any, seed: int, device: str) -> str | None:
    """``ExperimentConfig``'s refusal (one line) of ``key=value``, a knob of
    :func:`knob_defaults`, in a run of ``seed`` and ``device``: the run seeds (and places)
    every learner from its own settings, so ``vdn.seed=5`` trained the run of ``vdn.seed=0``.
    None when the value is the knob's default or the run's own. ``selfplay-train`` says it
    before torch loads (:func:`populations.override_types.refuse_unread_knobs`); a test keeps
    the words those of ``ExperimentConfig``."""
    name = key.rpartition(".")[2]
    if value in (knob_defaults()[key], device if name == "device" else seed):
        return None
    if key.startswith("llm.grpo."):
        return (f"{key}={value!r} is not read by an experiment: the run's {name}= sets the LLM "
                f"learner's too (give {name}={value} instead)")
    if key == "population.psro.seed":
        return (f"{key}={value!r} is not read by an experiment: the run's seed= seeds PSRO "
                f"too (give seed={value} instead)")
    return (f"{key}={value!r} is not read by an experiment: the run's seed= seeds the learner "
            f"too (give seed={value} instead)")


def group_preset(root: Path, group: str, option: str) -> Any:
    """``configs/<group>/<option>.yaml`` of a group packaged under its own name (``llm=hf``:
    the ``llm`` section) as ``{group: values}``, its defaults list (other options of the same
    group and ``_self_``, ``smollm2_kuhn``: ``[hf, _self_]``) merged in Hydra's order
    (``_self_`` last when not listed). ``LookupError`` for anything else in a defaults list
    (the schema decides); ``OSError`` when there is no such file (a ConfigStore preset)."""
    from omegaconf import OmegaConf

    def body(name: str, seen: tuple[str, ...]) -> Any:
        if name in seen or not re.fullmatch(r"[\w-]+", name):
            raise LookupError(name)
        data = OmegaConf.create((root / group / f"{name}.yaml").read_text())
        defaults = data.pop("defaults", None)
        items = OmegaConf.to_container(defaults) if defaults is not None else []
        if not isinstance(items, list) or any(not isinstance(i, str) for i in items):
            raise LookupError(name)
        out = OmegaConf.create()
        for item in items if "_self_" in items else [*items, "_self_"]:
            out.merge_with(data if item == "_self_" else body(item, (*seen, name)))
        return out

    return OmegaConf.create({group: body(option, ())})


def writable(node: Any) -> Any:
    """``node`` (a structured config) and every node under it made writable: structured
    configs of frozen dataclasses are read-only, and overrides must apply (the dataclasses
    are rebuilt, and validated, by ``OmegaConf.to_object``)."""
    from omegaconf import DictConfig

    # OmegaConf.set_readonly(node, False) and structured(flags=...) leave the nested frozen
    # dataclasses' own read-only flags; no public call walks nodes without resolving them
    node._set_flag("readonly", None)
    if isinstance(node, DictConfig):
        for key in node:
            writable(node._get_node(key))
    return node


def check_section_value(key: str, value: Any, input_line: str | None = None,
                        presets: Any = None) -> None:
    """Refuse a command line's ``key=value`` inside a section of :func:`section_schemas`
    (``mappo.lr=-1``, ``mappo.lrr=0.1``) as the schema would, before torch loads:
    :func:`check_section_values` with this one value."""
    check_section_values([(key, value, input_line)], presets)


def check_section_values(items: Sequence[tuple[str, Any, str | None]],
                         presets: Any = None, section: str | None = None) -> None:
    """Refuse the command line's values of one section of :func:`section_schemas` (``items``:
    ``(key, value, input_line)`` in the line's order) as the schema would, before torch loads:
    the section's dataclass is built from its defaults, what the command line's group options
    set there (``presets``, a config: ``population=fsp`` sets
    ``population.matchmaking.rule=fsp``) and then these values in order, as Hydra applies them,
    so its own checks decide (one source) and a rule of one field that depends on another
    (pfsp's exponent, ``mappo.net.value=shared``'s critic) sees the values the run will have.
    Its message names the value by its full path; an unknown key is named with the section's
    nearest keys. ``ValueError`` (one line) when refused.

    A section's check that needs torch (MAPPO's ``adv_norm`` registry, VDN/QMIX's mixers,
    the learner registry for ``population.oracle`` / ``members``; the LLM's ``adv_norm``,
    ``kl_estimator``, ``loss_agg`` and action ``mode``) imports it last, when the others
    passed: a value refused only there costs torch's import here, as it would later; a good
    value costs nothing (the run imports torch next). ``section`` (``llm``) checks that
    section from its defaults and ``presets`` alone when ``items`` is empty (``llm=hf``).
    An ``llm`` section's backend must run on this machine (:func:`backend_fits`), checked
    after its values and before its registry checks: ``vllm`` without its package is refused
    without torch (its CUDA check imports torch)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    from llm_agents.settings import registry_checks_later, registry_refusal
    from populations.config_paths import at_path, refusal
    from populations.override_types import expected_of

    schemas = section_schemas()
    path = None
    for key, value, input_line in [*items] or ([(section + ".", None, None)] if section else []):
        found = max((p for p in schemas if key.startswith(p + ".")), key=len, default=None)
        if path is None:
            if found is None:
                return
            path = found
            cls, defaults = schemas[path]
            with registry_checks_later():  # the defaults are built: their checks run below
                node = writable(OmegaConf.structured(cls))
            for name, default in defaults.items():
                node[name] = default
            chosen = OmegaConf.select(presets, path) if presets is not None else None
            if chosen is not None:
                try:
                    node.merge_with(chosen)
                except OmegaConfBaseException:
                    return  # a preset the schema reports itself
        assert found == path, f"{key} is not in section {path}"  # one section per call
        sub = key[len(path) + 1:]
        if not sub:  # the section as its presets set it (llm=hf)
            continue
        if is_flag(node, sub):  # OmegaConf reads mappo.value_norm=2 as true
            check_flag(key, value)
        try:
            OmegaConf.update(node, sub, value, merge=True)
        except (ConfigAttributeError, ConfigKeyError) as err:
            raise ValueError(unknown_key_message(node, path, sub, err)) from None
        except OmegaConfBaseException as err:  # a word where a number goes: OmegaConf's words
            text = str(err).strip().splitlines()[0]
            if write_integer(value) and "converted to Integer" in text:  # 2e4: a float
                typed = input_line or f"{key}={value}"
                # 1e20: the integer's own refusal (its range), not "(write 10**20)" refused next
                whole = _whole_refusal(node, path, cls, sub, int(value), items)
                named, number = f"{key}={int(value)}", str(int(value))
                if whole is not None and named in whole:
                    raise ValueError(whole.replace(named, typed, 1)) from None
                if whole is not None and key in whole and number in whole:  # "..., got N"
                    head, _, tail = whole.rpartition(number)
                    raise ValueError(head + typed.partition("=")[2] + tail) from None
                raise ValueError(f"{typed}; expected an integer{write_integer(value)}") from None
            if value is None and "is not Optional" in text:  # OmegaConf: "field 'lr' is..."
                had = OmegaConf.select(node, sub)
                text = (f"a value is required here (null is not accepted); it was {had!r}"
                        if not OmegaConf.is_config(had) else
                        f"a section, not a value: set its keys ({key}.<key>=...), or leave it")
            expected = expected_of(node, path, sub, value, registry_checks_later) \
                if value is not None else None  # a list's items too: [64,abc]
            if expected is not None:  # what the setting takes, not OmegaConf's words
                raise ValueError(f"{input_line or f'{key}={value}'}; {expected}") from None
            raise ValueError(f"{input_line or f'{key}={value}'}: {text}") from None
    if path is None:
        return
    refused = None  # llm's registry checks (torch) wait until every other check passed
    try:
        with registry_checks_later() as later:
            built = OmegaConf.to_object(node)
        if path == "llm":  # the machine, before the registries import torch (llm=vllm on a
            backend_fits(built.backend)  # CPU loaded the model, then failed in the run folder)
        refused = registry_refusal(built, later) if later else None
        if refused is not None:
            sub, owner, inner = refused
            raise ValueError(at_path(str(inner).strip().splitlines()[0],
                                     f"{path}.{sub}" if sub else path, owner))
    except OmegaConfBaseException:
        return  # an interpolation in a preset (resolved against the whole config): the schema's
    except (ValueError, TypeError) as err:
        if refused is not None or isinstance(err, _Unavailable):
            raise
        with registry_checks_later():
            where, owner, inner = refusal(node, path + ".") or (path, cls, err)  # mappo.net first
        text = str(inner).strip().splitlines()[0]
        raise ValueError(at_path(text, where, owner)) from None


def _whole_refusal(node: Any, path: str, cls: type, sub: str, whole: int,
                   items: Sequence[tuple[str, Any, str | None]]) -> str | None:
    """The section's own refusal (one line, by full path) of ``sub=whole``, the integer a
    float such as ``1e20`` stands for, with the line's other values applied after it as they
    apply (registry checks, which import torch, left out); None when it passes."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from llm_agents.settings import registry_checks_later
    from populations.config_paths import at_path, refusal

    trial = writable(node.copy())
    try:
        OmegaConf.update(trial, sub, whole, merge=True)
        for key, value, _ in items:  # the later values too: a rule may read them
            try:
                OmegaConf.update(trial, key[len(path) + 1:], value, merge=True)
            except OmegaConfBaseException:
                continue  # refused on its own after this one
        with registry_checks_later():
            OmegaConf.to_object(trial)
    except OmegaConfBaseException:
        return None
    except (ValueError, TypeError) as err:
        with registry_checks_later():
            where, owner, inner = refusal(trial, path + ".") or (path, cls, err)
        return at_path(str(inner).strip().splitlines()[0], where, owner)
    return None


def is_flag(node: Any, sub: str) -> bool:
    """Whether the setting at dotted path ``sub`` of ``node`` (a section's config) is a
    true/false one."""
    from omegaconf import BooleanNode, DictConfig

    for part in sub.split("."):
        if not isinstance(node, DictConfig) or part not in node:
            return False
        node = node._get_node(part)
    return isinstance(node, BooleanNode)


class _Unavailable(ValueError):
    """A backend this machine cannot run (not a value of the section: reported as it is)."""


def backend_fits(backend: str) -> None:
    """:class:`_Unavailable` (one line) when the LLM ``backend`` cannot run on this machine
    (:func:`llm_agents.settings.check_backend_here`)."""
    from llm_agents.settings import check_backend_here

    try:
        check_backend_here(backend)
    except ValueError as err:
        raise _Unavailable(str(err)) from None


def unknown_key_message(node: Any, path: str, sub: str, err: Exception) -> str:
    """``mappo.lrr: Key 'lrr' not in 'MAPPOConfig'; nearest: mappo.lr``: OmegaConf's words
    with the nearest keys of the section the unknown one was looked up in."""
    from omegaconf import OmegaConf

    parts = sub.split(".")
    bad = str(getattr(err, "key", None) or parts[-1])
    owner = parts[:parts.index(bad)] if bad in parts else parts[:-1]
    parent = OmegaConf.select(node, ".".join(owner)) if owner else node
    keys = [str(k) for k in parent] if OmegaConf.is_dict(parent) else []
    tree = OmegaConf.to_container(parent, throw_on_missing=False) if keys else {}
    text = str(err).strip().splitlines()[0]
    return (f"{path}.{sub}: {text}; "
            f"{nearest_keys(bad, keys, '.'.join([path, *owner]), tree)}")  # type: ignore[arg-type]


def nearest_keys(bad: str, keys: list[str], where: str, tree: Mapping[str, Any] | None = None
                 ) -> str:
    """``nearest: mappo.lr`` (the keys of section ``where`` that ``bad`` begins, then those
    spelt like it: ``mappo.ent``: ``nearest: mappo.ent_coef, mappo.net``); where none is
    close, the key ``bad`` of a section inside it (``tree``: the section as nested dicts;
    ``llm.adv_norm``: ``nearest: llm.grpo.adv_norm``), else the keys its first word
    abbreviates or that abbreviate it (``vdn.epsilon``: ``nearest: vdn.eps_start, ...``), else
    all of the keys."""
    import difflib

    keys = list(dict.fromkeys(keys))  # a learner's section is also a field of the experiment
    # (mappo, llm): "keys of the config" listed them twice
    # the keys that ``bad`` begins first (``mappo.ent``: ent_coef, which difflib ranks below
    # net, being spelt further from it), then difflib's
    begun = [k for k in keys if len(bad) >= 3 and k.lower().startswith(bad.lower())]
    close = difflib.get_close_matches(bad, keys, n=3, cutoff=0.6)
    near = list(dict.fromkeys([*begun, *close]))[:3] or _inside(bad, tree or {}) \
        or _abbreviated(bad, keys)
    prefix = f"{where}." if where else ""
    return (f"nearest: {', '.join(prefix + k for k in near)}" if near else
            f"keys of {where or 'the config'}: {', '.join(keys)}")


def _abbreviated(bad: str, keys: list[str]) -> list[str]:
    """Up to 3 of ``keys`` whose first word (up to ``_``) begins ``bad``, or that ``bad``
    begins, 3 letters at least: ``epsilon`` -> eps_start, eps_end, eps_decay_frames (spelt
    too far apart for difflib); ``learning`` -> learning_starts."""
    low = bad.lower()
    if len(low) < 3:
        return []
    found = []
    for key in keys:
        word = key.lower().split("_")[0]
        if (len(word) >= 3 and low.startswith(word)) or key.lower().startswith(low):
            found.append(key)
    return found[:3]


def _inside(key: str, tree: Mapping[str, Any], depth: int = 3) -> list[str]:
    """Dotted paths of ``key`` in the sections of ``tree`` (nested dicts), at most ``depth``
    deep, shallowest first."""
    found: list[str] = []
    level = [(str(k), v) for k, v in tree.items() if isinstance(v, Mapping)]
    for _ in range(depth):
        found += [f"{path}.{key}" for path, node in level if key in node]
        if found:
            return found[:3]
        level = [(f"{path}.{k}", v) for path, node in level for k, v in node.items()
                 if isinstance(v, Mapping)]
    return []


def unknown_key_hint(err: BaseException) -> str | None:
    """The nearest keys for OmegaConf's ``Key 'x' not in 'SomeConfig'`` (``err``, raised
    where the schema composes: sections checked only after torch, such as ``llm``), from
    the dataclass's fields; None for other errors."""
    import dataclasses

    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    cls, key = getattr(err, "object_type", None), getattr(err, "key", None)
    if not isinstance(err, (ConfigAttributeError, ConfigKeyError)) or not isinstance(key, str) \
            or not dataclasses.is_dataclass(cls):
        return None
    full = str(getattr(err, "full_key", "") or key)
    where = full[:-len(key)].rstrip(".") if full.endswith(key) else ""
    return nearest_keys(key, [f.name for f in dataclasses.fields(cls)], where, _fields_tree(cls))


def _fields_tree(cls: type, depth: int = 3) -> dict[str, Any]:
    """A dataclass's fields as nested dicts (its dataclass-typed fields opened, ``depth``
    deep; the others None), for :func:`nearest_keys`."""
    import dataclasses
    import typing

    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a user's annotation that does not resolve: no tree
        return {}
    return {f.name: _fields_tree(hints[f.name], depth - 1)
            if depth > 1 and dataclasses.is_dataclass(hints.get(f.name)) else None
            for f in dataclasses.fields(cls)}
