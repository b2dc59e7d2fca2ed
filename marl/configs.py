"""The classic learners' settings, torch-free: ``selfplay-train`` builds them from the command
line's section values (``mappo.lr=-1``) before torch loads (``populations.config_checks``), and
the learners (:mod:`marl.mappo`, :mod:`marl.actor_critic`, :mod:`marl.value_decomp`,
:mod:`marl.maddpg`) take them from here. A check that needs torch code (MAPPO's ``adv_norm``
registry, VDN/QMIX's mixers) imports it last, when the others passed; inside
:func:`registry_checks_later` it waits on a list (Hydra's schema is built so, without torch).
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

MAPPO_KEYS = ("agent", "role")  # advantage keys of a rollout (group/turn keys are LLM ones)
OPTIMS = ("joint", "separate")
TRUNCATIONS = ("bootstrap", "terminal")
ROLLOUT_ENDS = ("carry", "bootstrap")
ENCODERS = ("mlp", "gnn")  # built in; marl.encoders.register_encoder adds your own
GNN_LAYERS = ("gatv2", "transformer")  # message-passing layers marl.gnn builds (torch_geometric)
CRITICS = ("auto", "state", "concat", "local", "gnn")
SHARING = ("auto", "all", "role", "agent")
VALUES = ("seat", "shared")
INITS = ("orthogonal", "torch")
TEAM_REWARDS = ("mean", "sum")
STATE_INPUTS = ("auto", "state", "obs")
TARGET_UPDATES = ("hard", "polyak")
LOSSES = ("mse", "huber")
TARGET_ACTIONS = ("argmax", "gumbel")


class DeferredChecks:
    """Checks a package's settings run on construction that import a registry of torch code:
    :meth:`check` runs one now, or, inside :meth:`later`, puts it on the yielded list as
    ``(settings object, check)`` for the caller to run once every torch-free check passed.
    Hydra's schema is made from the dataclasses' defaults without torch
    (``populations.train_overrides.register_schema``). One per package (``marl`` here,
    ``llm_agents.settings``' own), each with its own context."""

    def __init__(self, name: str) -> None:
        self._later: ContextVar[list[tuple[Any, Callable[[], None]]] | None] = ContextVar(
            f"{name}_registry_checks_later", default=None)

    def check(self, owner: Any, check: Callable[[], None]) -> None:
        """Run ``check`` now, or later inside :meth:`later`."""
        later = self._later.get()
        if later is None:
            check()
        else:
            later.append((owner, check))

    @contextmanager
    def later(self) -> Iterator[list[tuple[Any, Callable[[], None]]]]:
        """Inside, :meth:`check` postpones onto the yielded list."""
        later: list[tuple[Any, Callable[[], None]]] = []
        token = self._later.set(later)
        try:
            yield later
        finally:
            self._later.reset(token)


_CHECKS = DeferredChecks("marl")
registry_check = _CHECKS.check
"""Run a check that imports torch code now, or later inside :func:`registry_checks_later`."""
registry_checks_later = _CHECKS.later
"""Inside, the settings built here (and :mod:`populations.experiment_config`'s) postpone their
registry checks (:class:`DeferredChecks`), as :func:`llm_agents.settings.registry_checks_later`
does for the LLM settings."""


def did_you_mean(value: Any, accepted: Iterable[Any]) -> str:
    """``; did you mean 'gnn'?`` for the accepted name nearest a misspelt ``value``
    (``gnnn``, ``GNN``), else "": choice settings get the hint games, members and algos do."""
    if not isinstance(value, str):
        return ""
    lower = {str(a).lower(): a for a in accepted}
    close = difflib.get_close_matches(value.lower(), list(lower), n=1)
    return f"; did you mean {lower[close[0]]!r}?" if close else ""


def check_choice(where: str, value: Any, accepted: Iterable[Any]) -> None:
    """One-line ``ValueError`` naming ``where``, the bad ``value``, the accepted ones and
    the nearest of them (:func:`did_you_mean`)."""
    accepted = tuple(accepted)
    if value not in accepted:
        raise ValueError(f"{where}={value!r} is not supported; accepted: {list(accepted)}"
                         f"{did_you_mean(value, accepted)}")


DEVICES = ("cpu", "cuda", "auto")  # and cuda:N (N a GPU index)


def unknown_device(value: Any) -> str:
    """The one line refusing a ``device`` that is none of cpu, cuda, cuda:N or auto, with the
    nearest (``device=cdua`` -> ``; did you mean 'cuda'?``): marl.core.resolve_device's words
    and populations.config_checks' (before torch) alike."""
    # gpu is a GPU: spelt like 'cpu', meant as 'cuda'; cuda0 / cuda-0 / cuda 0: cuda:0
    text = str(value).strip().lower()
    index = text[4:].lstrip(" -_:") if text.startswith("cuda") else ""
    hint = (f"; did you mean {'cuda:' + index!r}?" if index.isdigit() and text != f"cuda:{index}"
            else did_you_mean("cuda" if text in ("gpu", "gpus") else value, DEVICES))
    return (f"device={value!r:.40} unknown; choose one of cpu, cuda, cuda:N (N a GPU index), "
            f"auto{hint}")


def is_integer(value: Any) -> bool:
    """``value`` is an integer as an ``int`` setting takes it (``int``, numpy's integers):
    not a bool (True is 1 to Python) nor a float (2.5; 2.0 too, as OmegaConf's typed fields
    refuse it)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_number(where: str, value: Any, *, above: float | None = None,
                 at_least: float | None = None, at_most: float | None = None,
                 integer: bool = False, allow_inf: bool = False, why: str = "") -> None:
    """One-line ``ValueError`` naming ``where``, the bad ``value`` and the accepted range
    (``lr=0.0; expected a finite number > 0``, ``ValueDecompConfig.tau=0.0; expected a number
    in (0, 1]``) unless ``value`` is a finite number with ``above < value``,
    ``at_least <= value <= at_most`` (the bounds given). With ``integer`` the value is an
    integer (``int``, numpy's integers; not a float such as 2.0, as OmegaConf's typed fields
    refuse it, nor a bool); a bool is never a number here. NaN and infinities are refused
    (``+inf`` accepted with ``allow_inf``: a gradient clip of inf clips nothing). ``why``
    follows the range in brackets (``buffer_size=5000000000; expected an integer in
    [1, 1000000000] (the replay buffer is allocated up front)``)."""
    infinite = allow_inf and value == float("inf")
    # a bool is a numbers.Real (True == 1) and 2.5 passed a count's range: both were taken
    # where a count goes (MAPPOConfig(epochs=2.5)) and failed later, or ran as 1
    number = is_integer(value) if integer else (
        isinstance(value, numbers.Real) and not isinstance(value, bool))
    ok = number and value == value and (
        abs(value) != float("inf") or infinite) and (
        above is None or value > above) and (at_least is None or value >= at_least) and (
        at_most is None or value <= at_most)
    if ok:
        return
    kind = "an integer" if integer else "a number"
    low = f"({_shown(above)}" if above is not None else f"[{_shown(at_least)}" \
        if at_least is not None else None
    if low is not None and at_most is not None:
        want = f"{kind} in {low}, {_shown(at_most)}]"
    else:
        bound = (f" > {_shown(above)}" if above is not None else f" >= {_shown(at_least)}"
                 if at_least is not None else f" <= {_shown(at_most)}" if at_most is not None
                 else "")
        want = f"{kind}{bound}" if integer else f"a number{bound} or inf" if allow_inf \
            else f"a finite number{bound}"
    raise ValueError(f"{where}={value!r}; expected {want}" + (f" ({why})" if why else ""))


def _shown(bound: float) -> str:
    """A bound as the user types it: integers whole (1000000000, not 1e+09)."""
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


POSITIVE = {"above": 0.0}  # learning rates, clip ranges, temperatures
CLIP = {"above": 0.0, "allow_inf": True}  # gradient-norm clips (inf: no clipping)
NON_NEGATIVE = {"at_least": 0.0}  # loss weights, noise
UNIT = {"at_least": 0.0, "at_most": 1.0}  # discounts, GAE lambda
RATE = {"above": 0.0, "at_most": 1.0}  # Polyak rates
COUNT = {"at_least": 1, "integer": True}  # sizes, steps, intervals
COUNTED = {"at_least": 0, "integer": True}  # frames before something starts
# Upper bounds of sizes, far above any run that fits a machine: a value past them was taken
# and failed after the run folder was made, allocating (vdn.buffer_size=5000000000: 220 GB)
# or overflowing (mappo.net.hidden=[10**14]), or never finished (mappo.epochs=10**20)
MAX_WIDTH = 65_536  # a layer's width: one 65536 x 65536 float32 weight is already 16 GiB
MAX_LAYERS = 1_024  # stacked layers, message-passing rounds, transformer blocks
MAX_HEADS = 1_024  # attention heads of a layer
MAX_REPLAY = 10**9  # replay transitions (and a batch drawn from them)
MAX_ROLLOUT = 10**6  # steps per copy of an on-policy rollout (and rows of its chunks)
MAX_MINIBATCHES = 10**6  # minibatches per epoch
MAX_EPOCHS = 10_000  # passes over each batch of experience
WIDTH = {**COUNT, "at_most": MAX_WIDTH, "why": "a layer's width"}
LAYERS = {**COUNT, "at_most": MAX_LAYERS, "why": "layers are built up front"}
HEADS = {**COUNT, "at_most": MAX_HEADS, "why": "attention heads of a layer"}
REPLAY = {**COUNT, "at_most": MAX_REPLAY, "why": "the replay buffer is allocated up front"}
BATCH = {**COUNT, "at_most": MAX_REPLAY, "why": "a batch is drawn from the replay buffer"}
ROLLOUT = {**COUNT, "at_most": MAX_ROLLOUT, "why": "the rollout buffer is allocated up front"}
MINIBATCHES = {**COUNT, "at_most": MAX_MINIBATCHES, "why": "minibatches per epoch"}
EPOCHS = {**COUNT, "at_most": MAX_EPOCHS, "why": "passes over each batch"}
MAX_GRADIENT_STEPS = 10_000  # gradient steps of one replay update (an update never ended)


def check_widths(where: str, hidden: Any) -> None:
    """One-line ``ValueError`` unless ``hidden`` holds one to :data:`MAX_LAYERS` layer widths,
    integers from 1 to :data:`MAX_WIDTH`."""
    if not hidden or len(hidden) > MAX_LAYERS or not all(map(is_integer, hidden)) or \
            min(hidden) < 1 or max(hidden) > MAX_WIDTH:
        raise ValueError(f"{where}={list(hidden)!r}; expected one or more widths from 1 to "
                         f"{MAX_WIDTH} (at most {MAX_LAYERS} layers)")


@dataclass(frozen=True)
class AdvantageConfig:
    """Settings of ``marl.advantages.normalize_advantages`` (torch-free: the LLM trainer's
    settings hold one and are checked before torch loads); one source for YAML presets and
    learners."""

    eps: float = 1e-6  # added to sigma before dividing
    per_trajectory: bool = False  # each (key, trajectory) weighs 1 in statistics, not each step
    float64: bool = False  # accumulate statistics in float64 instead of float32
    unbiased_std: bool = False  # Bessel-corrected std (weights read as frequency weights)
    scale: bool = True  # global/agent/role/group_role divide by sigma (False: center only)
    role_ema_alpha: float = 0.95  # role_ema decay: b <- alpha * b + (1 - alpha) * R
    role_ema_init: float = 0.0  # role_ema baseline of a (game, role) never seen before
    drop_zero: bool = False  # drop samples with advantage exactly 0 from the returned mask
    turn_gamma: float = 1.0  # player_turn discount per own turn of a player
    player_turn_scale: bool = False  # player_turn also divides by the per-player std at the end
    joint_group_scale: bool = False  # joint_group divides by the std of sibling joint returns
    diagnostics: str = "keys"  # on first read: keys (global, per agent, per role) | global | none

    def __post_init__(self) -> None:
        for name in ("role_ema_alpha", "turn_gamma"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a value in [0, 1]")
        # NaN / inf failed (or zeroed every advantage) at the first update, naming no key
        check_number("eps", self.eps, **NON_NEGATIVE)
        check_number("role_ema_init", self.role_ema_init)
        if self.diagnostics not in ("none", "global", "keys"):
            raise ValueError(f"diagnostics={self.diagnostics!r}; expected none, global or keys")


@dataclass(frozen=True)
class NetConfig:
    """Network shapes shared by the actor and the critic."""

    encoder: str = "mlp"  # actor input: mlp (observation) | gnn (entity graph) | a name
    # registered by marl.encoders.register_encoder (observation rows -> features)
    critic: str = "auto"  # critic input: auto (state if the game has one, else concat) |
    # state | concat | local (IPPO) | gnn
    share: str = "auto"  # parameter sharing: auto (all if every seat has the same actions,
    # else role) | all | role | agent
    hidden: tuple[int, ...] = (64, 64)  # MLP widths (actor and critic heads)
    gnn_layer: str = "gatv2"  # gatv2 | transformer (torch_geometric conv: GNN_LAYERS)
    gnn_hidden: int = 64  # GNN width
    gnn_layers: int = 2  # message-passing rounds
    gnn_heads: int = 2  # attention heads per layer
    graph_radius: float | None = None  # connect entities closer than this, > 0 (None: all)
    recurrent: bool = False  # GRU after the encoder in actor and critic (recurrent MAPPO)
    rnn_hidden: int = 64  # GRU hidden width (recurrent only)
    value: str = "seat"  # seat: one value per seat (critic input + seat one-hot) | shared:
    # one value per copy from the state/concat input, given to all seats of the group
    fast_tanh: bool = True  # MLP and GNN tanh as 2*sigmoid(2x)-1 on CPU (networks.FastTanh)
    init: str = "orthogonal"  # MLP weights: orthogonal (gain √2, actor out 0.01, critic out 1)
    # | torch (nn.Linear's default, as TorchRL's / BenchMARL's MLPs)
    seat_id: bool = True  # an MLP (or registered encoder) actor shared by several seats
    # sees a seat one-hot
    # (false: the observation only, as BenchMARL's shared actor)

    def __post_init__(self) -> None:
        for name, choices in (("critic", CRITICS), ("share", SHARING),
                              ("value", VALUES), ("init", INITS), ("gnn_layer", GNN_LAYERS)):
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"{name}={getattr(self, name)!r} unknown; choose one of {list(choices)}"
                    f"{did_you_mean(getattr(self, name), choices)}")
        for name, bounds in (("rnn_hidden", WIDTH), ("gnn_hidden", WIDTH),
                             ("gnn_layers", LAYERS), ("gnn_heads", HEADS)):
            check_number(name, getattr(self, name), **bounds)
        check_widths("hidden", self.hidden)
        if self.graph_radius is not None:  # 0 or less connects no entities at all
            check_number("graph_radius", self.graph_radius, **CLIP)
        if self.value == "shared" and self.critic not in ("auto", "state", "concat"):
            raise ValueError(f"value='shared' needs critic='state', 'concat' or 'auto', not "
                             f"critic={self.critic!r}; use value='seat'")
        if self.value == "shared" and self.recurrent:
            raise ValueError("value='shared' is feed-forward only, not recurrent=True; "
                             "use value='seat'")
        if self.encoder not in ENCODERS:  # a registered one: imported last (torch), as
            from marl.encoders import check_encoder  # MAPPOConfig's adv_norm check is

            check_encoder(self.encoder)


def reads_graphs(net: NetConfig) -> bool:
    """Whether ``net``'s actor or critic reads the game's entity graphs (``gnn``): here,
    without torch, for the config check (``populations.cli``) as for MAPPO itself."""
    return "gnn" in (net.encoder, net.critic)


@dataclass(frozen=True)
class MAPPOConfig:
    """MAPPO / IPPO hyperparameters (defaults tuned for MPE on a CPU)."""

    rollout_steps: int = 25  # steps per copy between updates
    epochs: int = 10  # passes over each rollout
    minibatches: int = 4  # minibatches per epoch
    lr: float = 1e-3  # Adam learning rate (actor and critic)
    gamma: float = 0.99  # discount
    gae_lambda: float = 0.95  # GAE lambda
    clip_coef: float = 0.2  # PPO ratio clip
    vf_coef: float = 0.5  # value loss weight
    ent_coef: float = 0.01  # entropy bonus weight
    max_grad_norm: float = 10.0  # gradient clipping (global norm; inf: none)
    optim: str = "joint"  # joint: one gradient-norm clip over actor and critic | separate:
    # actor and critic clipped apart (BenchMARL's / TorchRL's two Adams; Adam is per parameter)
    adam_eps: float = 1e-5  # Adam epsilon (BenchMARL: 1e-6)
    truncation: str = "bootstrap"  # an episode cut at its step limit: bootstrap from the
    # value of its last observation | terminal: end it there (TorchRL's VMAS wrapper)
    rollout_end: str = "carry"  # an agent's last step of a rollout, episode still running:
    # carry: into the next update, its target waits for its successor | bootstrap: from the
    # value of the next observation (TorchRL's GAE); a seat not acting there is carried
    value_norm: bool = True  # normalize value targets with running mean/std
    adv_norm: str = "global"  # marl.advantages adv_norm over MAPPO_KEYS: global|agent|role|none
    chunk_len: int = 10  # recurrent nets: rows per training sequence (rMAPPO data chunk)
    net: NetConfig = field(default_factory=NetConfig)  # encoders, GRU, critic input, sharing

    def __post_init__(self) -> None:
        for name, choices in (("optim", OPTIMS), ("truncation", TRUNCATIONS),
                              ("rollout_end", ROLLOUT_ENDS)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name}={getattr(self, name)!r} unknown; choose one of "
                                 f"{list(choices)}{did_you_mean(getattr(self, name), choices)}")
        for name, bounds in (("adam_eps", POSITIVE), ("rollout_steps", ROLLOUT),
                             ("epochs", EPOCHS), ("minibatches", MINIBATCHES),
                             ("chunk_len", ROLLOUT),
                             ("lr", POSITIVE), ("clip_coef", POSITIVE),
                             ("max_grad_norm", CLIP), ("gamma", UNIT), ("gae_lambda", UNIT),
                             ("vf_coef", NON_NEGATIVE), ("ent_coef", NON_NEGATIVE)):
            check_number(name, getattr(self, name), **bounds)
        # the registry decides: adv_norms over the keys a rollout has, fed GAE advantages
        # (last: it needs torch, the checks above do not)
        registry_check(self, self._check_adv_norm)

    def _check_adv_norm(self) -> None:
        from marl.advantages import check_adv_norm

        check_adv_norm(self.adv_norm, MAPPO_KEYS, by="MAPPO", consumes="returns", stateful=False)


@dataclass
class ValueDecompConfig:
    """Hyperparameters of VDN / QMIX (defaults: pymarl's QMIX, scaled to small games)."""

    mixer: str = "qmix"  # how utilities become Q_tot: "vdn" (sum) or "qmix" (monotone hypernet)
    hidden: tuple[int, ...] = (64, 64)  # hidden widths of the shared agent Q network
    mixing_embed_dim: int = 32  # QMIX: width E of the mixing network's hidden layer
    hypernet_hidden: int = 64  # QMIX: hidden width of the hypernetworks producing mixer weights
    state_input: str = "auto"  # QMIX mixer input: "state", "obs" (all obs concatenated), "auto"
    team_reward: str = "mean"  # team reward from the controlled agents' rewards: "sum", or
    # "mean" over all controlled agents (sum / A: a departed agent counts 0), the sum scaled
    gamma: float = 0.99  # discount factor
    lr: float = 5e-4  # Adam learning rate (agent network and mixer)
    batch_size: int = 128  # transitions per gradient step
    buffer_size: int = 50_000  # replay capacity in transitions (one per copy and step)
    learning_starts: int = 1_000  # frames collected before the first update (steps of one
    # copy, the other teams' turns included; and at least batch_size transitions stored)
    train_every: int = 1  # vector steps between updates
    gradient_steps: int | str = "auto"  # TD gradient steps per update, each on its own
    # minibatch | auto: ceil(copies * train_every / batch_size), so an update samples about
    # as many transitions as the copies played since the last one (1 up to batch_size copies)
    double_q: bool = True  # the online network picks the target action, the target evaluates
    target_update: str = "hard"  # "hard" copy every target_update_interval, or "polyak"
    target_update_interval: int = 200  # gradient steps between hard target copies
    tau: float = 0.005  # Polyak rate: target <- tau * online + (1 - tau) * target
    eps_start: float = 1.0  # ε of ε-greedy exploration at frame 0
    eps_end: float = 0.05  # ε after eps_decay_frames
    eps_decay_frames: int = 20_000  # frames over which ε decays linearly
    loss: str = "mse"  # TD loss: "mse" or "huber"
    optimistic_weight: float = 1.0  # TD-loss weight where Q_tot > target (OW-QMIX; 1: plain)
    max_grad_norm: float = 10.0  # gradient clipping (global norm; inf: none)
    seed: int = 0  # seeds network init, exploration and minibatch sampling
    checkpoint_buffer: bool = True  # include the replay contents in state_dict()

    def __post_init__(self) -> None:
        self.validate()  # a bad value fails where it is set (the config, a CLI override)

    def validate(self) -> None:
        check_choice("ValueDecompConfig.state_input", self.state_input, STATE_INPUTS)
        check_choice("ValueDecompConfig.team_reward", self.team_reward, TEAM_REWARDS)
        check_choice("ValueDecompConfig.target_update", self.target_update, TARGET_UPDATES)
        check_choice("ValueDecompConfig.loss", self.loss, LOSSES)
        for name, bounds in (("batch_size", BATCH), ("buffer_size", REPLAY),
                             ("train_every", COUNT), ("target_update_interval", COUNT),
                             ("mixing_embed_dim", WIDTH), ("hypernet_hidden", WIDTH),
                             ("learning_starts", COUNTED), ("eps_decay_frames", COUNTED),
                             ("tau", RATE), ("optimistic_weight", POSITIVE), ("gamma", UNIT),
                             ("lr", POSITIVE), ("eps_start", UNIT), ("eps_end", UNIT),
                             ("max_grad_norm", CLIP)):
            check_number(f"ValueDecompConfig.{name}", getattr(self, name), **bounds)
        check_widths("ValueDecompConfig.hidden", self.hidden)
        check_gradient_steps("ValueDecompConfig.gradient_steps", self.gradient_steps)
        check_replay_holds_batch("ValueDecompConfig", self.buffer_size, self.batch_size)
        if self.eps_start < self.eps_end:  # ran silently, ε rising over eps_decay_frames
            raise ValueError(f"ValueDecompConfig.eps_start={self.eps_start} < eps_end="
                             f"{self.eps_end}: ε would grow over eps_decay_frames; expected "
                             "eps_start >= eps_end (ε decays from eps_start to eps_end; "
                             "equal: a constant ε)")
        registry_check(self, self._check_mixer)  # last: the mixers are torch modules

    def _check_mixer(self) -> None:
        from marl.value_decomp import MIXERS

        check_choice("ValueDecompConfig.mixer", self.mixer, MIXERS)


@dataclass
class MADDPGConfig:
    """Hyperparameters of MADDPG (defaults: Lowe et al. on MPE, with a smaller batch)."""

    hidden: tuple[int, ...] = (64, 64)  # hidden widths of actors and critics
    share_parameters: bool = False  # agents of the same role share actor and critic weights
    state_input: str = "auto"  # critic input: "state", "obs" (all obs concatenated), "auto"
    gamma: float = 0.95  # discount factor
    lr_actor: float = 1e-3  # Adam learning rate of the actors
    lr_critic: float = 1e-3  # Adam learning rate of the critics
    tau: float = 0.01  # Polyak rate: target <- tau * online + (1 - tau) * target
    batch_size: int = 256  # transitions per gradient step
    buffer_size: int = 100_000  # replay capacity in transitions (one per copy and step)
    learning_starts: int = 1_000  # frames collected before the first update (steps of one
    # copy; and at least batch_size transitions stored)
    train_every: int = 1  # vector steps between updates
    gradient_steps: int | str = "auto"  # gradient steps (one critic + one actor step and the
    # Polyak targets) per update, each on its own minibatch | auto: ceil(copies *
    # train_every / batch_size), about one sample per frame played (1 up to batch_size copies)
    exploration_noise: float = 0.1  # continuous: std of Gaussian noise in [-1, 1] action units
    gumbel_temperature: float = 1.0  # discrete: Gumbel-softmax temperature of the actor update
    target_action: str = "argmax"  # discrete: the target actors' next actions in the critic
    # targets: "argmax" (their best legal action; maddpg-pytorch, EPyMARL) or "gumbel" (a hard
    # Gumbel-max sample of their policy; OpenAI's MADDPG feeds the soft relaxed sample instead)
    actor_reg: float = 1e-3  # L2 penalty on actor outputs (pre-tanh / logits), as in MADDPG
    max_grad_norm: float = 0.5  # gradient clipping (global norm; inf: none) of actors and
    # critics
    seed: int = 0  # seeds network init, exploration and minibatch sampling
    checkpoint_buffer: bool = True  # include the replay contents in state_dict()

    def __post_init__(self) -> None:
        self.validate()  # a bad value fails where it is set (the config, a CLI override)

    def validate(self) -> None:
        check_choice("MADDPGConfig.state_input", self.state_input, STATE_INPUTS)
        check_choice("MADDPGConfig.target_action", self.target_action, TARGET_ACTIONS)
        for name, bounds in (("batch_size", BATCH), ("buffer_size", REPLAY),
                             ("train_every", COUNT), ("learning_starts", COUNTED), ("tau", RATE),
                             ("gumbel_temperature", POSITIVE), ("exploration_noise", NON_NEGATIVE),
                             ("gamma", UNIT), ("lr_actor", POSITIVE), ("lr_critic", POSITIVE),
                             ("actor_reg", NON_NEGATIVE), ("max_grad_norm", CLIP)):
            check_number(f"MADDPGConfig.{name}", getattr(self, name), **bounds)
        check_widths("MADDPGConfig.hidden", self.hidden)
        check_gradient_steps("MADDPGConfig.gradient_steps", self.gradient_steps)
        check_replay_holds_batch("MADDPGConfig", self.buffer_size, self.batch_size)


def check_replay_holds_batch(owner: str, buffer_size: int, batch_size: int) -> None:
    """One-line ``ValueError`` unless a replay of ``buffer_size`` transitions can hold a
    minibatch of ``batch_size``: a replay learner updates once its buffer holds
    ``batch_size`` transitions (:func:`marl.replay.warmed_up`), which a smaller buffer never
    does (``vdn.buffer_size=10 vdn.batch_size=128`` ran to its end without one update and
    exited 0). ``owner`` names the config (``ValueDecompConfig``; the command line shows its
    section: ``vdn.buffer_size=10 < batch_size=128: ...``)."""
    if buffer_size < batch_size:
        raise ValueError(f"{owner}.buffer_size={buffer_size} < batch_size={batch_size}: the "
                         "learner would never update (it draws batch_size transitions from "
                         "a replay holding at most buffer_size); expected buffer_size >= "
                         "batch_size")


def check_gradient_steps(where: str, value: Any) -> None:
    """One-line ``ValueError`` unless ``value`` is ``"auto"`` or an integer from 1 to
    :data:`MAX_GRADIENT_STEPS` (a replay learner's gradient steps per update)."""
    if value == "auto":
        return
    if not is_integer(value):  # "4", 2.5, True
        raise ValueError(f"{where}={value!r}; expected an integer in [1, {MAX_GRADIENT_STEPS}] "
                         "(or 'auto')")
    check_number(where, value, **COUNT, at_most=MAX_GRADIENT_STEPS, why="or 'auto'")


def gradient_steps_per_update(gradient_steps: int | str, copies: int, train_every: int,
                              batch_size: int) -> int:
    """A replay learner's gradient steps per update: ``gradient_steps``, or for ``"auto"``
    ``ceil(copies * train_every / batch_size)`` (at least 1): the minibatches of one update
    hold about as many samples as the copies played frames since the last one, as many
    copies as there are (a fixed count of one trained 128 of 4,096 copies' frames)."""
    if gradient_steps != "auto":
        return int(gradient_steps)
    return max(1, min(MAX_GRADIENT_STEPS, -(-copies * train_every // batch_size)))


# a replay learner's settings that waste most of what its copies play (warned once, at the
# first step, where the copies are known): updates that sample fewer than 1/8 of the frames
# played since the last, a buffer of fewer vector steps of history, ε decayed in fewer steps
MAX_UNSAMPLED = 8
MIN_HISTORY_STEPS = 200
MIN_DECAY_STEPS = 20


def replay_warnings(section: str, cfg: ValueDecompConfig | MADDPGConfig,
                    copies: int) -> list[str]:
    """One line per setting of ``cfg`` (the ``section`` of a command line: ``qmix``) that
    ``copies`` game copies stepped together make waste most of their frames: an update (every
    ``train_every`` steps) whose minibatches sample fewer than 1/:data:`MAX_UNSAMPLED` of the
    frames played since the last, a replay holding fewer than :data:`MIN_HISTORY_STEPS` steps
    of the copies, ε (VDN/QMIX) at ``eps_end`` within :data:`MIN_DECAY_STEPS` steps."""
    notes = []
    played = copies * cfg.train_every
    steps = gradient_steps_per_update(cfg.gradient_steps, copies, cfg.train_every,
                                      cfg.batch_size)
    sampled = steps * cfg.batch_size
    if played > MAX_UNSAMPLED * sampled:
        notes.append(
            f"{section}: an update samples {sampled} transitions ({section}.gradient_steps="
            f"{cfg.gradient_steps} x {section}.batch_size={cfg.batch_size}) for the {played} "
            f"frames played since the last ({copies} copies x {section}.train_every="
            f"{cfg.train_every}): about {sampled / played:.1%} of them; raise "
            f"{section}.gradient_steps (auto: one sample per frame) or {section}.batch_size, "
            "or lower num_envs")
    history = cfg.buffer_size // copies
    if history < MIN_HISTORY_STEPS:
        notes.append(
            f"{section}.buffer_size={cfg.buffer_size} holds only the last {history} steps of "
            f"{copies} copies; raise it to {MIN_HISTORY_STEPS * copies} or more "
            f"({MIN_HISTORY_STEPS} steps), or lower num_envs")
    decay = getattr(cfg, "eps_decay_frames", 0)
    if 0 < decay < MIN_DECAY_STEPS * copies and cfg.eps_start != cfg.eps_end:
        notes.append(
            f"{section}.eps_decay_frames={decay}: epsilon reaches eps_end={cfg.eps_end} after "
            f"{-(-decay // copies)} steps of {copies} copies; raise it to "
            f"{MIN_DECAY_STEPS * copies} or more ({MIN_DECAY_STEPS} steps), or lower num_envs")
    return notes
