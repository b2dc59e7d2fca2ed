"""The classic learners' settings, torch-free: ``selfplay-train`` builds them from the command
line's section values (``mappo.lr=-1``) before torch loads (``populations.config_checks``), and
the learners (:mod:`marl.mappo`, :mod:`marl.actor_critic`) take them from here. A check that
needs a registry of torch code (MAPPO's ``adv_norm``) imports it last, when the others passed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAPPO_KEYS = ("agent", "role")  # advantage keys of a rollout (group/turn keys are LLM ones)
OPTIMS = ("joint", "separate")
TRUNCATIONS = ("bootstrap", "terminal")
ROLLOUT_ENDS = ("carry", "bootstrap")
ENCODERS = ("mlp", "gnn")
CRITICS = ("auto", "state", "concat", "local", "gnn")
SHARING = ("auto", "all", "role", "agent")
VALUES = ("seat", "shared")
INITS = ("orthogonal", "torch")


@dataclass(frozen=True)
class NetConfig:
    """Network shapes shared by the actor and the critic."""

    encoder: str = "mlp"  # actor input: mlp (observation) | gnn (entity graph)
    critic: str = "auto"  # critic input: auto (state if the game has one, else concat) |
    # state | concat | local (IPPO) | gnn
    share: str = "auto"  # parameter sharing: auto (all if every seat has the same actions,
    # else role) | all | role | agent
    hidden: tuple[int, ...] = (64, 64)  # MLP widths (actor and critic heads)
    gnn_layer: str = "gatv2"  # gatv2 | transformer (torch_geometric conv)
    gnn_hidden: int = 64  # GNN width
    gnn_layers: int = 2  # message-passing rounds
    gnn_heads: int = 2  # attention heads per layer
    graph_radius: float | None = None  # connect entities closer than this (None: all)
    recurrent: bool = False  # GRU after the encoder in actor and critic (recurrent MAPPO)
    rnn_hidden: int = 64  # GRU hidden width (recurrent only)
    value: str = "seat"  # seat: one value per seat (critic input + seat one-hot) | shared:
    # one value per copy from the state/concat input, given to all seats of the group
    fast_tanh: bool = True  # MLP and GNN tanh as 2*sigmoid(2x)-1 on CPU (networks.FastTanh)
    init: str = "orthogonal"  # MLP weights: orthogonal (gain √2, actor out 0.01, critic out 1)
    # | torch (nn.Linear's default, as TorchRL's / BenchMARL's MLPs)
    seat_id: bool = True  # an MLP actor shared by several seats sees a seat one-hot
    # (false: the observation only, as BenchMARL's shared actor)

    def __post_init__(self) -> None:
        for name, choices in (("encoder", ENCODERS), ("critic", CRITICS), ("share", SHARING),
                              ("value", VALUES), ("init", INITS)):
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"{name}={getattr(self, name)!r} unknown; choose one of {list(choices)}"
                )
        for name in ("rnn_hidden", "gnn_hidden", "gnn_layers", "gnn_heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected an integer >= 1")
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(f"hidden={list(self.hidden)!r}; expected one or more widths >= 1")
        if self.value == "shared" and self.critic not in ("auto", "state", "concat"):
            raise ValueError(f"value='shared' needs critic='state', 'concat' or 'auto', not "
                             f"critic={self.critic!r}; use value='seat'")
        if self.value == "shared" and self.recurrent:
            raise ValueError("value='shared' is feed-forward only, not recurrent=True; "
                             "use value='seat'")


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
    max_grad_norm: float = 10.0  # gradient clipping (global norm)
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
                                 f"{list(choices)}")
        if not self.adam_eps > 0:
            raise ValueError(f"adam_eps={self.adam_eps!r}; expected a number > 0")
        for name in ("rollout_steps", "epochs", "minibatches", "chunk_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected an integer >= 1")
        for name, low, high in (("lr", 0.0, None), ("clip_coef", 0.0, None),
                                ("max_grad_norm", 0.0, None), ("gamma", None, 1.0),
                                ("gae_lambda", None, 1.0), ("vf_coef", None, None),
                                ("ent_coef", None, None)):
            value = getattr(self, name)
            if not (value == value and abs(value) != float("inf")) or (
                    low is not None and not value > low) or (low is None and value < 0) or (
                    high is not None and value > high):
                want = (f"a number > {low:g}" if low is not None else
                        "a number in [0, 1]" if high is not None else "a number >= 0")
                raise ValueError(f"{name}={value!r}; expected {want}")
        # the registry decides: adv_norms over the keys a rollout has, fed GAE advantages
        # (imported here, last: it needs torch, the checks above do not)
        from marl.advantages import check_adv_norm

        check_adv_norm(self.adv_norm, MAPPO_KEYS, by="MAPPO", consumes="returns", stateful=False)
