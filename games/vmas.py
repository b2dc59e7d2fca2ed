"""VMAS scenarios, natively batched: ``games.make("vmas/<scenario>", **kwargs)``.

`VMAS <https://github.com/proroklab/VectorizedMultiAgentSimulator>`_ simulates B copies of
a scenario as torch tensors on one device. :class:`VmasGame` is one copy behind the game
contract (``check_game``, ``to_pettingzoo``, LLM text views); its :meth:`VmasGame.batched`
builds a :class:`VmasBatch`, B copies stepping in one call, which ``VectorGame`` delegates
to: ``VectorGame("vmas/simple_spread", 4096)`` steps every copy at once, auto-resets,
counts returns and truncates at ``max_steps`` on the game's device.

Keyword arguments: ``device`` (``"cpu"``, ``"cuda"``), ``continuous_actions`` (default
False: VMAS's 9 moves, stay and the 8 directions, times ``dim_c`` with communication),
``max_steps`` (default 100, BenchMARL's horizon), ``teams`` / ``zero_sum`` (overrides),
``memory_check`` (default True: a batch estimated larger than the memory available is
refused before it is built; False builds it anyway, not part of the game's name), and
anything else goes to the scenario (``n_agents=4``, ``num_adversaries=2``; a key the
scenario does not read is an error, and so is a value of the wrong kind for the default the
scenario's source gives it: true or false (or 0 or 1) for a flag, an integer for a count
``n_*`` / ``num_*``, at least 1 for the total ``n_agents``, a number for a number;
:mod:`games.vmas_params`).

Roles are agent names without their index (``adversary_0`` -> ``adversary``). Teams come from
the agents' ``adversary`` flags: adversaries against the others in the competitive MPE ports
(``simple_tag``, ``simple_adversary``, ``simple_push``, ``simple_crypto``,
``simple_world_comm``); ``blue`` against ``red`` in ``football`` when both sides are played
(``ai_red_agents=False``); one cooperative team elsewhere. Like the PettingZoo MPE adapter,
no scenario is declared zero-sum.

Randomness: VMAS keeps one random state for all its environments; each game here keeps its
own (and, on CUDA, its own state of the device's generator, which VMAS draws from there) and
swaps it in around every VMAS call, so games do not disturb each other or the learner's RNG.
A batch is seeded once with its ``seed``: the same (seed, B) replays identically, but copy
``b`` is not ``reset(seed + b)`` of a single game as in the numpy ``VectorGame``. A
scenario whose reset of all copies draws part of the layout once for the batch (passage's
gap and which agent starts where, give_way's start noise:
``games.vmas_reset.DRAWS_SHARED``) has up to 32 copies (``RESET_GROUPS``) reset one by one,
each its own draw, and more in 32 groups, each a reset of all copies that keeps only its
group's: 32 draws of the shared part (passage at 1,024 copies on a CPU: 0.16-0.26 s, 15-19
times less than one by one, 1-2 % of a 100-step episode).

Every VMAS 1.5.2 scenario passes ``check_game`` except the replay check of two whose
episodes depend on earlier ones: ``road_traffic`` (a buffer of recorded initial states) and
``wind_flocking`` with discrete actions (state its reset leaves in place).

This module imports torch and vmas; ``games`` imports it only when a ``vmas/`` game is made.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import vmas
from vmas.simulator.environment.environment import Environment, local_seed

from games.array_text import array_text
from games.core import (
    ActionSpace,
    EntityGraph,
    Game,
    GameError,
    GameSpec,
    Transition,
    UnknownGameError,
)
from games.graphs import NODE_DIM, full_edges, warn_large_graph
from games.kinds import is_flag
from games.registry import did_you_mean, kwargs_name
from games.teams import agent_specs, parse_teams, parse_zero_sum
from games.vector import VecStep, check_actions
from games.vmas_info import EndedInfo
from games.vmas_params import check_scenario_kwargs, zero_agents_line
from games.vmas_reset import (  # noqa: F401  (RESET_ONE_BY_ONE: read here by tests and users)
    REDRAWN_BOOKKEEPING,
    RESET_GROUPS,
    RESET_ONE_BY_ONE,
    batch_slots,
    changed_keys,
    draws_shared,
    is_vmas_object,
    put_back,
    restore_others,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 100
COOPERATIVE_TEAM = "team"
# VMAS's default discrete moves: nvec [3, 3], flat id = 3 * x + y, each 0 stay, 1 -, 2 +
_AXIS = (("", "left", "right"), ("", "down", "up"))
MOVES_3X3 = tuple("+".join(filter(None, (_AXIS[0][i // 3], _AXIS[1][i % 3]))) or "stay"
                  for i in range(9))
SCENARIOS = tuple(sorted({*vmas.scenarios, *vmas.mpe_scenarios, *vmas.debug_scenarios}))


def _colour_sides(scenario: Any) -> dict[str, str]:
    """``{agent name: "blue" | "red"}`` of a scenario that lists both sides (``football``:
    played and scripted players alike; its ball is on neither), else empty."""
    if not (getattr(scenario, "blue_agents", None) and getattr(scenario, "red_agents", None)):
        return {}
    return {a.name: s for s in ("blue", "red") for a in getattr(scenario, f"{s}_agents")}


def _declared_teams(scenario: Any, agents: Sequence[Any]) -> dict[str, str]:
    """Teams of the played ``agents``: adversaries against the others where the agents'
    ``adversary`` flags differ (the MPE ports); ``blue`` against ``red`` where the scenario
    lists both sides and agents of both are played (``football`` with
    ``ai_red_agents=False``, whose red agents have no adversary flag); else one team."""
    ids = [a.name for a in agents]
    flags = [bool(a.adversary) for a in agents]
    if any(flags) and not all(flags):
        return {a: "adversary" if f else "good" for a, f in zip(ids, flags, strict=True)}
    side = _colour_sides(scenario)
    if set(ids) <= set(side) and len({side[a] for a in ids}) > 1:
        return {a: side[a] for a in ids}
    return {a: COOPERATIVE_TEAM for a in ids}


def _base_role(agent: str) -> str:
    return re.sub(r"_\d+$", "", agent)


def batched_reset_from(num_envs: int) -> int:
    """How many ended copies make resetting all copies at once cheaper than one by one.

    Measured on navigation (one CPU thread): a full reset costs 2.2 single resets at 256
    copies, 3.4 at 1,024, 6.5 at 4,096, 15 at 16,384; on a GPU each reset is launch-bound,
    so the full one costs about as much as one single reset there."""
    return 3 + num_envs // 1024


# Memory: a batch of B copies keeps about B times the bytes of one copy's tensors (world
# state, observations, returns); a step's temporaries (collisions, lidar rays) and the
# allocator's slack come on top. Peak over kept bytes, measured after a reset and three steps
# of 50,000-200,000 copies on a CPU: 1.5 (wheel, dispersion), 1.7 (simple_spread), 2.1
# (simple_tag), 3.0 (navigation), 4.9 (flocking), 5.5 (discovery: lidar on every agent).
PEAK_PER_KEPT = 6
PROBE_COPIES = 64  # the second probe of bytes_per_copy (the first has one copy)
_OOM = re.compile(r"can't allocate memory|cannot allocate memory|out of memory", re.I)


def _out_of_memory(err: BaseException) -> bool:
    """torch's allocation errors (CPU's ``DefaultCPUAllocator: can't allocate memory``,
    ``torch.OutOfMemoryError`` on CUDA) and Python's ``MemoryError``."""
    return isinstance(err, (MemoryError, torch.OutOfMemoryError)) or (
        isinstance(err, RuntimeError) and bool(_OOM.search(str(err))))


def _memory_line(where: str, num_envs: int, device: Any, err: BaseException,
                 doing: str = "building") -> str:
    why = re.sub(r"\[enforce fail at [^\]]*\] err == 0\.\s*", "", str(err))
    why = " ".join(why.split()) or "no message"
    return (f"out of memory {doing} {where} with num_envs={num_envs} on {device} "
            f"({type(err).__name__}: {why}); lower num_envs")


@contextlib.contextmanager
def _memory_hint(where: str, num_envs: int, device: Any, doing: str = "building"
                 ) -> Iterator[None]:
    """An allocation error inside becomes one line naming num_envs (:func:`_memory_line`)."""
    try:
        yield
    except (RuntimeError, MemoryError) as err:
        if not _out_of_memory(err):
            raise
        raise GameError(_memory_line(where, num_envs, device, err, doing)) from None


def _failed_check(err: BaseException) -> str:
    """An assertion without a message: its place and source text in the scenario (VMAS checks
    its arguments so: ``...failed at vmas/scenarios/balance.py:22 in make_world: assert
    self.n_agents > 1``), which names the argument."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return "the scenario's own check failed, without a message"
    f = frames[-1]
    root = os.path.dirname(os.path.dirname(vmas.__file__))  # site-packages/vmas/... -> vmas/...
    path = os.path.relpath(f.filename, root) if f.filename.startswith(root) else f.filename
    text = f": {f.line}" if f.line else ""
    return f"the scenario's own check failed at {path}:{f.lineno} in {f.name}{text}"


def available_memory(device: torch.device) -> int | None:
    """Bytes a new batch may take on ``device``: on CUDA, the device's free memory and what
    PyTorch's caching allocator holds reserved but unallocated (a process that built a batch
    before keeps its freed blocks there, for its next tensors; the device's figure does not
    count them); on a CPU, Linux's ``MemAvailable`` (else psutil's, when installed); None
    where not known."""
    if device.type == "cuda":
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(torch.cuda.mem_get_info(device)[0]) + max(int(cached), 0)
    if device.type != "cpu":
        return None
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def kept_bytes(*roots: Any) -> int:
    """Bytes of the distinct tensor storages reachable from ``roots`` through VMAS objects,
    this module's and ``games.vector``'s, lists, tuples and dicts."""
    seen: set[int] = set()
    storages: dict[tuple[str, int], int] = {}
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.Tensor):
            st = obj.untyped_storage()
            storages[(str(obj.device), st.data_ptr())] = st.nbytes()
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__") and (is_vmas_object(obj) or type(obj).__module__
                                           in (__name__, "games.vector")):
            stack.extend(vars(obj).values())
    return sum(storages.values())


def bytes_per_copy(game: VmasGame, with_state: bool, with_graphs: bool) -> float:
    """Bytes one more copy of ``game`` keeps in a batch (tensors of the simulation, its
    observations and what ``VectorGame`` returns), after a reset and a step: the difference
    of batches of 1 and :data:`PROBE_COPIES` copies, per copy."""
    sizes = []
    for n in (1, PROBE_COPIES + 1):
        batch = VmasBatch(game, n, 0, with_state, with_graphs, check_memory=False)
        first = batch.reset()
        acts = {a: (torch.zeros(n, *sp.shape) if not sp.discrete else torch.zeros(n, dtype=int))
                for a, sp in game.spec.action_spaces.items()}
        sizes.append(kept_bytes(batch, first, batch.step(acts)))
    return max(sizes[1] - sizes[0], 1) / PROBE_COPIES


def _check_memory(game: VmasGame, num_envs: int, with_state: bool, with_graphs: bool) -> None:
    """Refuse, before building it, a batch of ``num_envs`` copies whose estimate
    (:data:`PEAK_PER_KEPT` times :func:`bytes_per_copy`) exceeds :func:`available_memory`,
    naming the largest num_envs that fits. The probes are built only for batches that a
    generous bound (the one-copy game's tensors, fixed ones included, as each copy's) does
    not show to fit."""
    free = available_memory(game._sim.device)
    generous = 3 * PEAK_PER_KEPT * kept_bytes(game._sim)
    if free is None or num_envs * generous <= free:
        return
    per_copy = PEAK_PER_KEPT * bytes_per_copy(game, with_state, with_graphs)
    need = num_envs * per_copy
    if need <= free:
        return
    fits = int(free // per_copy)
    raise GameError(
        f"vmas/{game.scenario}: num_envs={num_envs} needs about {_size(need)} of "
        f"{game._sim.device.type} memory (about {_size(per_copy)} per copy: its tensors and a "
        f"step's temporaries) and {_size(free)} is available; lower num_envs (" + (
            f"the largest that fits is about {fits})" if fits else "not one copy fits)")
        + ", or pass memory_check=False to build it anyway")


def _size(n: float) -> str:
    """Bytes in three digits: ``4.16 KB``, ``21.9 GB``, ``416 TB``."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} TB" if n < 1000 else f"{n:,.0f} TB"


class _Sim:
    """One VMAS environment of ``num_envs`` copies with its own random state.

    Every call into VMAS goes through :meth:`rng`, which installs this simulator's random
    state in VMAS's process-wide one and takes it back afterwards.
    """

    def __init__(self, scenario: str, num_envs: int, device: str, continuous: bool,
                 kwargs: Mapping[str, Any], seed: int | None) -> None:
        if scenario not in SCENARIOS:
            raise UnknownGameError(
                f"unknown VMAS scenario {scenario!r};{did_you_mean(scenario, SCENARIOS)} "
                f"accepted: {', '.join(SCENARIOS)}")
        self.where = f"vmas/{scenario}"
        self._state = self._seeded_state(seed)
        self._cuda_state: torch.Tensor | None = None  # set once the device is known
        with self.rng(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self.env = vmas.make_env(
                    scenario, num_envs=num_envs, device=device, continuous_actions=continuous,
                    max_steps=None, seed=None, dict_spaces=False, clamp_actions=True,
                    terminated_truncated=True, **kwargs)
            except (TypeError, ValueError, AssertionError, RuntimeError, MemoryError) as err:
                if _out_of_memory(err):
                    raise GameError(_memory_line(self.where, num_envs, device, err)) from None
                why = str(err).strip() or _failed_check(err)
                raise GameError(zero_agents_line(scenario, kwargs, err) or (
                    f"cannot build {self.where} (device={device!r}, scenario kwargs "
                    f"{dict(kwargs)}): {type(err).__name__}: {why}")) from None
        unused = [str(w.message) for w in caught if "not used by the scenario" in str(w.message)]
        if unused:
            raise GameError(f"bad arguments for {self.where}: {unused[0].split('.')[0]}; "
                            "see the scenario's make_world for the keys it reads")
        self.device = self.env.device
        self._one_by_one = False  # set when a reset of all copies changed shared state
        # a reset of all copies draws part of the layout once for the batch: each copy is
        # reset on its own after it (games.vmas_reset.DRAWS_SHARED)
        self.each_copy = num_envs > 1 and draws_shared(self.where, dict(kwargs))
        self.groups = RESET_GROUPS  # (bench/vmas41_reset.py sets it past B: one by one)
        self._seed_cuda(seed)
        self.num_envs = num_envs
        self.agents = list(self.env.agents)
        self.entities = list(self.env.world.agents) + list(self.env.world.landmarks)
        names = {a.name for a in self.agents}  # scripted agents are nodes without a seat
        self.agent_node = {e.name: i for i, e in enumerate(self.env.world.agents)
                           if e.name in names}

    @staticmethod
    def _seeded_state(seed: int | None) -> list[Any]:
        """VMAS's random state (torch CPU, numpy, python) seeded with ``seed``, built from
        private generators: the global ones are never touched."""
        seed = int(np.random.default_rng().integers(2**31)) if seed is None else seed % 2**32
        return [torch.Generator().manual_seed(seed).get_state(),
                np.random.RandomState(seed).get_state(), random.Random(seed).getstate()]

    @contextlib.contextmanager
    def rng(self) -> Iterator[None]:
        """Install this simulator's random state in VMAS's shared one (and, on CUDA, the
        device's generator, which VMAS draws from there) for the duration of a call."""
        shared = Environment.vmas_random_state
        others = list(shared)
        shared[:] = self._state
        cuda = self._cuda_state is not None
        if cuda:
            outside = torch.cuda.get_rng_state(self.device)
            torch.cuda.set_rng_state(self._cuda_state, self.device)
        try:
            yield
        finally:
            self._state = list(shared)
            shared[:] = others
            if cuda:
                self._cuda_state = torch.cuda.get_rng_state(self.device)
                torch.cuda.set_rng_state(outside, self.device)

    def _seed_cuda(self, seed: int | None) -> None:
        """A CUDA simulation's own device generator state, seeded like the CPU ones."""
        if self.device.type != "cuda":
            return
        outside = torch.cuda.get_rng_state(self.device)
        with torch.cuda.device(self.device):
            torch.cuda.manual_seed(int(np.random.default_rng().integers(2**31))
                                   if seed is None else seed % 2**32)
        self._cuda_state = torch.cuda.get_rng_state(self.device)
        torch.cuda.set_rng_state(outside, self.device)

    def seed(self, seed: int) -> None:
        self._state = self._seeded_state(seed)
        self._seed_cuda(seed)

    def reset(self) -> list[torch.Tensor]:
        """Reset every copy. A scenario that draws part of the layout once for all copies
        (:attr:`each_copy`) has every copy's layout drawn by :meth:`_reset_each`: up to
        :attr:`groups` copies each its own draw, more in that many groups of their own."""
        with self.rng(), _memory_hint(self.where, self.num_envs, self.device, "resetting"):
            if not self.each_copy:
                return self._flat(self.env.reset())
            with local_seed(Environment.vmas_random_state):
                everyone = torch.arange(self.num_envs, device=self.device)
                if self._grouped(self.num_envs):
                    self._reset_each(everyone)
                else:  # (as before: the reset of all, then copies 1..B-1 on their own)
                    self.env.scenario.env_reset_world_at(None)
                    self._reset_each(everyone[1:])
                self.env.steps = torch.zeros(self.num_envs, device=self.device)
                obs = self.env._get_from_scenario(get_observations=True, get_rewards=False,
                                                  get_infos=False, get_dones=False)
            return self._flat(obs[0])

    def reset_at(self, index: torch.Tensor) -> list[torch.Tensor]:
        """Reset the copies in ``index`` (``[k]`` int64), return every copy's observations.

        VMAS resets one copy (or all) per call, dozens of small tensor ops each: ~0.7-1.4 ms
        of a CPU, and on a GPU a launch-bound call per copy, so k copies cost k calls. From
        :func:`batched_reset_from` copies on, all copies are reset in one call and the
        others put back (:func:`games.vmas_reset.restore_others`): the cost of ~2-15 single
        resets. A scenario that draws part of the layout once for all copies
        (:attr:`each_copy`) resets them by :meth:`_reset_each`."""
        scenario = self.env.scenario
        with (self.rng(), local_seed(Environment.vmas_random_state),
              _memory_hint(self.where, self.num_envs, self.device, "resetting")):
            if self.each_copy:
                self._reset_each(index)
            else:
                one_call = (len(index) >= batched_reset_from(self.num_envs)
                            and self.where not in RESET_ONE_BY_ONE and not self._one_by_one)
                if not (one_call and self._reset_in_one_call(index)):
                    for i in index.tolist():
                        scenario.env_reset_world_at(i)
            self.env.steps[index] = 0
            obs = self.env._get_from_scenario(get_observations=True, get_rewards=False,
                                              get_infos=False, get_dones=False)
        return self._flat(obs[0])

    def _reset_each(self, index: torch.Tensor) -> None:
        """Reset the copies in ``index`` of a scenario that draws part of a layout once for
        all copies reset together (:attr:`each_copy`). Up to :attr:`groups` copies: one by
        one, each its own draw. More: in :attr:`groups` groups (``index[k::groups]``), each
        group a reset of all copies that keeps only that group's (:meth:`_reset_in_one_call`,
        the others put back): the groups' layouts independent draws, the copies of one
        group sharing the draws made once for the batch (passage's gap), the rest their own.
        Where a reset of all copies changes state shared by every copy (or the scenario is in
        RESET_ONE_BY_ONE), one by one."""
        scenario = self.env.scenario
        if self._grouped(len(index)):
            for k in range(self.groups):
                if not self._reset_in_one_call(index[k::self.groups]):
                    index = torch.cat([index[j::self.groups] for j in range(k, self.groups)])
                    break
            else:
                return
        for i in index.tolist():
            scenario.env_reset_world_at(i)

    def _grouped(self, n: int) -> bool:
        """Whether :meth:`_reset_each` resets ``n`` copies in groups."""
        return (n > self.groups and self.where not in RESET_ONE_BY_ONE
                and not self._one_by_one)

    def _reset_in_one_call(self, index: torch.Tensor) -> bool:
        """Reset every copy in one VMAS call and put the copies not in ``index`` back; True
        when done. A scenario whose full reset changes state shared by all copies (a Python
        attribute: one goal landmark drawn for all copies, as simple_adversary's) is put back
        whole and marked ``_one_by_one``, and False returned: reset ``index`` one by one."""
        scenario = self.env.scenario
        keep = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        keep[index] = False
        slots, shared = batch_slots(scenario, self.num_envs)
        saved = [t.clone() for _, _, t in slots]
        scenario.env_reset_world_at(None)
        changed = [k for k in changed_keys(shared)
                   if k not in REDRAWN_BOOKKEEPING.get(self.where, ())]
        if changed:  # nothing of the full reset may stay: every copy back as it was
            put_back(shared)
            restore_others(slots, saved, torch.ones_like(keep), self.where)
            self._one_by_one = True
            log.debug("%s: a reset of all copies changes %s, shared by every copy: "
                      "resetting copies one by one", self.where, ", ".join(changed[:5]))
            return False
        # joints: a single reset's set_pos puts every copy's joint landmark between its ends
        # again; the ended copies keep what the scenario's reset gave them
        joined = [e for e in self.env.world.entities if getattr(e, "_observers", None)]
        fresh = [c[k].clone() for c, k, _ in slots] if joined else []
        restore_others(slots, saved, keep, self.where)
        for entity in joined:
            entity.notify_observers()
        if joined:
            restore_others(slots, fresh, ~keep, self.where)
        return True

    def step(self, actions: Sequence[torch.Tensor]) -> tuple[
            list[torch.Tensor], list[torch.Tensor], torch.Tensor, list[dict[str, Any]]]:
        """(observations ``[B, O]``, rewards ``[B]`` per agent, terminated ``[B]`` bool, the
        scenario's info per agent: ``{key: [B, ...] tensor}``, VMAS's own)."""
        with self.rng():
            try:
                obs, rew, term, _, info = self.env.step(list(actions))
            except (AssertionError, RuntimeError, MemoryError) as err:  # checked before moving
                if _out_of_memory(err):
                    raise GameError(_memory_line(self.where, self.num_envs, self.device,
                                                 err, "stepping")) from None
                msg = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise GameError(f"{self.where}: bad actions: {msg}") from None
        # some scenarios (wheel) give [B, 1] rewards
        return (self._flat(obs), [r.reshape(self.num_envs).float() for r in rew], term.bool(),
                list(info) if isinstance(info, Sequence) else [])

    def _flat(self, obs: Sequence[Any]) -> list[torch.Tensor]:
        if not all(isinstance(o, torch.Tensor) for o in obs):
            raise GameError(f"{self.where}: dict observations are not supported; "
                            "pass the scenario's option for flat observations")
        return [o.reshape(self.num_envs, -1).float() for o in obs]

    def graph_static(self) -> tuple[torch.Tensor, np.ndarray]:
        """(``[V, F]`` node features without positions, ``[V]`` node types)."""
        n_agents = len(self.env.world.agents)
        # football: red players are the adversary type, blue ones agents, and its ball (an
        # agent of neither side) an object, as a landmark; before, all three looked alike
        side = _colour_sides(self.env.scenario)
        types = np.array([2 if i >= n_agents or (side and e.name not in side)
                          else 1 if e.adversary or side.get(e.name) == "red" else 0
                          for i, e in enumerate(self.entities)], np.int64)
        nodes = torch.zeros(len(self.entities), NODE_DIM, device=self.device)
        for i, e in enumerate(self.entities):
            nodes[i, 4] = float(e.shape.circumscribed_radius())
            nodes[i, 6 + types[i]] = 1.0
        return nodes, types

    def graph_nodes(self, static: torch.Tensor) -> torch.Tensor:
        """``[B, V, F]`` node features in absolute coordinates (graphs.NODE_FEATURES)."""
        pos = torch.stack([e.state.pos for e in self.entities], 1)  # [B, V, 2]
        vel = torch.stack([e.state.vel for e in self.entities], 1)
        return torch.cat([pos, vel, static[:, 4:].expand(pos.shape[0], -1, -1)], -1)


class VmasGame(Game):
    """One copy of a VMAS scenario behind the game contract (see the module docstring).

    Args:
        scenario: a VMAS scenario name (``simple_spread``, ``navigation``, ``balance``).
        device: torch device of the simulation.
        continuous_actions: Box actions instead of discrete moves.
        max_steps: episode limit (truncation).
        teams / zero_sum: overrides of the sides from the adversary flags.
        memory_check: False builds a batch :func:`_check_memory` would refuse.
        **kwargs: forwarded to the scenario.
    """

    def __init__(self, scenario: str, device: str = "cpu", continuous_actions: bool = False,
                 max_steps: int = DEFAULT_MAX_STEPS, teams: Any = None, zero_sum: Any = None,
                 memory_check: bool = True, **kwargs: Any) -> None:
        if (isinstance(max_steps, bool) or not isinstance(max_steps, int)
                or max_steps < 1):  # true passed as 1: every episode one step long
            raise GameError(f"bad parameter for vmas/{scenario}: max_steps={max_steps!r}; "
                            "accepted: an integer >= 1")
        if not is_flag(memory_check):  # "false" from a command line is true
            raise GameError(f"bad parameter for vmas/{scenario}: memory_check="
                            f"{memory_check!r}; accepted: true or false")
        if not is_flag(continuous_actions):  # "false" built continuous actions
            raise GameError(f"bad parameter for vmas/{scenario}: continuous_actions="
                            f"{continuous_actions!r}; accepted: true or false")
        self.memory_check = bool(memory_check)
        self.scenario, self.device = scenario, device
        self.continuous = bool(continuous_actions)
        self.kwargs = check_scenario_kwargs(scenario, kwargs)  # flags as bools; the name
        # keeps them as given, which a run recorded with shared_rew=0 holds
        # A fixed seed, not OS entropy: a scenario that fails for some draws fails every
        # time or never, and an unseeded copy replays; reset(seed=...) reseeds it.
        self._sim = _Sim(scenario, 1, device, self.continuous, self.kwargs, seed=0)
        self._first = torch.zeros(1, dtype=torch.long, device=self._sim.device)  # copy 0's info
        env = self._sim.env
        ids = [a.name for a in self._sim.agents]
        where = f"vmas/{scenario}"
        team_of = _declared_teams(env.scenario, self._sim.agents)
        if teams is not None:
            team_of = parse_teams(teams, ids, where)
        obs = self._sim.reset()
        named = {**kwargs, **({"continuous_actions": True} if self.continuous else {}),
                 **({} if max_steps == DEFAULT_MAX_STEPS else {"max_steps": max_steps}),
                 **{k: v for k, v in (("teams", teams), ("zero_sum", zero_sum)) if v is not None}}
        self.spec = GameSpec(
            name=kwargs_name(where, named),  # not the device: the same game anywhere
            agents=agent_specs({a: _base_role(a) for a in ids}, team_of),
            obs_shapes={a: (int(o.shape[1]),) for a, o in zip(ids, obs, strict=True)},
            action_spaces={a: self._space(env.action_space[i], where)
                           for i, a in enumerate(ids)},
            max_steps=max_steps,
            zero_sum=False if zero_sum is None else parse_zero_sum(zero_sum, where),
            simultaneous=True,
            state_shape=(int(sum(o.shape[1] for o in obs)),),
            has_entity_graph=True,
        )
        self._static, self._types = self._sim.graph_static()
        self._moves = {a.name: list(a.discrete_action_nvec) == [3, 3]
                       and (a.silent or env.world.dim_c == 0) for a in self._sim.agents}
        self._obs: dict[str, np.ndarray] = {}
        self._live: tuple[str, ...] = ()
        self._t = 0
        self._seeded = False

    @staticmethod
    def _space(space: Any, where: str) -> ActionSpace:
        name = type(space).__name__
        if name == "Discrete":
            return ActionSpace("discrete", n=int(space.n))
        if name == "Box":
            try:  # per dimension: kinematic_bicycle steers in [-0.52, 0.52] (a min and max of
                # the dimensions mapped half a policy's steering range outside the box)
                return ActionSpace.box(space.shape, space.low, space.high)
            except GameError as err:
                raise GameError(f"{where}: unsupported action space {space}: {err}") from None
        raise GameError(f"{where}: unsupported action space {space}; Discrete or Box is accepted")

    def batched(self, num_envs: int, seed: int | None = 0, with_state: bool = False,
                with_graphs: bool = False) -> VmasBatch:
        """``num_envs`` copies of this game stepping together (what ``VectorGame`` uses)."""
        return VmasBatch(self, num_envs, seed, with_state, with_graphs,
                         check_memory=self.memory_check)

    # ------------------------------------------------------------------- contract
    def _actions(self, actions: Mapping[str, Any], batch: int) -> list[torch.Tensor]:
        out = []
        for a in self.spec.agent_ids:
            x = torch.as_tensor(np.asarray(actions[a]) if not isinstance(actions[a], torch.Tensor)
                                else actions[a], device=self._sim.device)
            out.append(x.reshape(batch, -1).float() if self.continuous
                       else x.reshape(batch, 1).long())
        return out

    def _reset(self, seed: int | None) -> None:
        if seed is not None:
            self._sim.seed(seed)
        self._take(self._sim.reset())
        self._t = 0
        self._live = self.spec.agent_ids

    def _step(self, actions: dict[str, Any]) -> Transition:
        obs, rew, term, info = self._sim.step(self._actions(actions, 1))
        self._take(obs)
        self._t += 1
        ended = bool(term[0])
        cut = not ended and self._t >= self.spec.max_steps
        ids = self.spec.agent_ids
        if ended or cut:
            self._live = ()
        return Transition(rewards={a: float(r[0]) for a, r in zip(ids, rew, strict=True)},
                          terminated={a: ended for a in ids}, truncated={a: cut for a in ids},
                          info=EndedInfo(ids, self._first, info, 1)[0] if ended or cut
                          else {})  # fmt: skip

    def _take(self, obs: list[torch.Tensor]) -> None:
        self._obs = {a: o[0].cpu().numpy() for a, o in zip(self.spec.agent_ids, obs, strict=True)}

    def acting_agents(self) -> tuple[str, ...]:
        return self._live

    def observe(self, agent: str) -> np.ndarray:
        return self._obs[agent]

    def legal_actions(self, agent: str) -> Sequence[int]:
        return range(self.spec.action_spaces[agent].n) if agent in self._live else []

    def text_observation(self, agent: str) -> str:
        obs = array_text(self.observe(agent))  # numpy's array2string of it, byte for byte
        return (f"vmas/{self.scenario} step {self._t}; you are {agent} "
                f"({self.spec.agent(agent).role}); observation: {obs}")

    def action_text(self, agent: str, action: int) -> str:
        if self._moves[agent]:
            return MOVES_3X3[int(action)]
        return super().action_text(agent, action)

    def state(self) -> np.ndarray:
        return np.concatenate([self._obs[a] for a in self.spec.agent_ids])

    def entity_graph(self, agent: str | None = None) -> EntityGraph:
        nodes = self._sim.graph_nodes(self._static)[0].cpu().numpy()
        agent_node = dict(self._sim.agent_node)
        if agent is not None:
            if agent not in agent_node:
                raise GameError(f"unknown ego agent {agent!r}; agents: {list(agent_node)}")
            me = agent_node[agent]
            nodes[:, 0:4] -= nodes[me, 0:4].copy()
            nodes[me, 5] = 1.0
        return EntityGraph(nodes=nodes, edge_index=full_edges(len(nodes)),
                           node_type=self._types.copy(), agent_node=agent_node)


class VmasBatch:
    """B copies of a :class:`VmasGame` stepping as tensors on its device.

    ``reset`` / ``step`` return :class:`~games.vector.VecStep` whose fields are torch tensors
    on ``device`` (``to_numpy`` converts one); auto-reset, episode returns and lengths and
    truncation at ``spec.max_steps`` are computed there. A batch whose estimate exceeds the
    memory available is refused before it is built (:func:`_check_memory`).
    """

    def __init__(self, game: VmasGame, num_envs: int, seed: int | None,
                 with_state: bool, with_graphs: bool, check_memory: bool = True) -> None:
        if num_envs < 1:
            raise GameError(f"num_envs must be >= 1, got {num_envs}")
        if check_memory:  # (False: bytes_per_copy's own small probes)
            _check_memory(game, num_envs, with_state, with_graphs)
        self.game, self.spec, self.num_envs = game, game.spec, num_envs
        self.seed, self.with_state, self.with_graphs = seed, with_state, with_graphs
        with _memory_hint(f"vmas/{game.scenario}", num_envs, game._sim.device):
            self._build(seed)
        if with_graphs:  # a GNN reads them: slow on large scenes (once per game)
            warn_large_graph(self.spec.name, len(self.sim.entities), len(self.agent_node))

    def _build(self, seed: int | None) -> None:
        game, num_envs = self.game, self.num_envs
        self.sim = _Sim(game.scenario, num_envs, game.device, game.continuous, game.kwargs, seed)
        self.device = self.sim.device
        self._ids = self.spec.agent_ids
        self.agent_node = dict(self.sim.agent_node)
        self._static, _ = self.sim.graph_static()
        B, dev = num_envs, self.device
        self._ret = torch.zeros(len(self._ids), B, device=dev)
        self._len = torch.zeros(B, dtype=torch.long, device=dev)
        self._legal = {a: torch.ones(B, sp.n, dtype=torch.bool, device=dev)
                       for a, sp in self.spec.action_spaces.items() if sp.discrete}
        self._true = torch.ones(B, dtype=torch.bool, device=dev)
        self._obs: list[torch.Tensor] = []

    def reset(self) -> VecStep:
        """Reset every copy (the batch is seeded with ``seed``)."""
        if self.seed is not None:
            self.sim.seed(self.seed)
        self._obs = self.sim.reset()
        self._ret.zero_()
        self._len.zero_()
        zero = torch.zeros(self.num_envs, device=self.device)
        no = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        return self._vecstep([zero] * len(self._ids), no, no, no, None)

    def step(self, actions: Mapping[str, Any]) -> VecStep:
        """Apply ``actions[agent]`` (``[B]`` ids or ``[B, D]``, tensors or arrays) in every copy."""
        if not self._obs:
            raise GameError("VectorGame.step() before reset()")
        every = list(range(self.num_envs))  # every agent acts in every copy
        check_actions(self.spec, self.num_envs, actions, lambda a: every)
        obs, rew, term, info = self.sim.step(self.game._actions(actions, self.num_envs))
        self._len += 1
        trunc = ~term & (self._len >= self.spec.max_steps)
        done = term | trunc
        self._ret += torch.stack(rew)
        self._obs = obs
        final, ended = None, None
        if bool(done.any()):  # one host sync per step: resetting is a Python loop in VMAS
            final = (obs, self._state(obs) if self.with_state else None,
                     self.sim.graph_nodes(self._static) if self.with_graphs else None)
            idx = done.nonzero().squeeze(1)
            ended = EndedInfo(self._ids, idx, info, self.num_envs)  # before the reset
            self._obs = self.sim.reset() if len(idx) == self.num_envs else self.sim.reset_at(idx)
        vs = self._vecstep(rew, term, trunc, done, final)
        if ended is not None:
            vs.info = ended
        self._ret.masked_fill_(done, 0.0)  # not `_ret[:, done] = 0`: a boolean index is a
        self._len.masked_fill_(done, 0)  # nonzero, which waits for the GPU every step
        return vs

    def _state(self, obs: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(obs, 1)

    def _vecstep(self, rew: list[torch.Tensor], term: torch.Tensor, trunc: torch.Tensor,
                 done: torch.Tensor, final: tuple | None) -> VecStep:
        ids, obs = self._ids, self._obs
        d = done[:, None]
        if final is None:
            final_obs = {a: torch.zeros_like(o) for a, o in zip(ids, obs, strict=True)}
        else:
            final_obs = {a: torch.where(d, f, 0.0) for a, f in zip(ids, final[0], strict=True)}
        # VMAS has no action masks: every action is legal where an episode ended
        final_legal = {a: m & d for a, m in self._legal.items()}
        graph = self.sim.graph_nodes(self._static) if self.with_graphs else None
        final_graph = None
        if graph is not None:
            final_graph = graph if final is None else torch.where(d[:, :, None], final[2], graph)
        state = final_state = None
        if self.with_state:
            state = self._state(obs)
            final_state = (torch.zeros_like(state) if final is None
                           else torch.where(d, final[1], 0.0))
        return VecStep(
            obs=dict(zip(ids, obs, strict=True)),
            legal=dict(self._legal),
            acting={a: self._true for a in ids},
            rewards=dict(zip(ids, rew, strict=True)),
            terminated={a: term for a in ids},
            truncated={a: trunc for a in ids},
            done=done,
            final_obs=final_obs,
            episode_return={a: self._ret[i].clone() for i, a in enumerate(ids)},
            episode_length=self._len.clone(),
            state=state,
            final_state=final_state,
            final_legal=final_legal,
            graph=graph,
            final_graph=final_graph,
            agent_node=self.agent_node if self.with_graphs else None,
        )

    def close(self) -> None:
        self.game.close()

