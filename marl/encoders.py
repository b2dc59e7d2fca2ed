"""Actor encoders of your own for MAPPO / IPPO, registered by name.

``mappo.net.encoder`` picks how an actor turns its input into features before its MLP head
(and, with ``recurrent=True``, before the MLP → GRU body): the built-in ``mlp`` (the
observation as it is) and ``gnn`` (the entity graph, :mod:`marl.gnn`), or a name registered
here::

    # myenc.py, imported by selfplay-train imports=[myenc] / selfplay-eval --import myenc
    from torch import nn
    from marl.encoders import register_encoder

    @register_encoder("wide")
    def build(net, in_dim):          # net: the run's marl.configs.NetConfig
        return nn.Sequential(nn.Linear(in_dim, 128), nn.ReLU())

    # selfplay-train imports=[myenc] mappo.net.encoder=wide ...

What an encoder gets: ``[M, in_dim]`` float rows, one per sample (copy × step × seat), each
the agent's observation flattened and zero-padded to the widest of its parameter-sharing
group, followed by the seat one-hot when several seats share the network and
``net.seat_id`` (exactly the ``mlp`` actor's input). Graphs, the critic's input and the GRU
state are not given: the entity graph stays the built-in ``gnn``'s, and the critic keeps its
own input (``mappo.net.critic``). It returns ``[M, F]`` features; ``F`` is the module's
``out_dim`` attribute when it has one (as :class:`marl.gnn.GraphEncoder`), else the width
of its output on two zero rows when built (a snapshot's load builds it on the meta device
first: give ``out_dim`` if your forward needs real values). Its weights are trained with
the actor's and saved in snapshots, which record the encoder's name and the module that
registered it; a snapshot is rebuilt only from this registry (``selfplay-eval --import
<module>`` registers it), never from code the file names.

A name is registered by :func:`register_encoder` in a module the command line imports, or by
an installed package's ``selfplay.encoders`` entry point. An error a user's encoder raises,
or an output of the wrong shape, is one line (:class:`EncoderError`) naming the encoder, its
build function and the line of your code that raised.

Shape legend: ``M`` samples, ``I`` input width, ``F`` feature width.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import torch
from torch import nn

from games.core import where_raised
from games.registry import IMPORTS_ENV, defined_at, load_entry_points, redefinition
from marl.configs import ENCODERS, NetConfig, did_you_mean

ENTRY_POINTS = "selfplay.encoders"  # installed packages' modules that register encoders
EncoderBuild = Callable[[NetConfig, int], nn.Module]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")  # a word mappo.net.encoder= reads back
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
HOW = ("an encoder of your own is registered by register_encoder (marl.encoders) when its "
       "module is imported: imports=[module] (selfplay-train), --import module (selfplay-eval)")


@dataclass(frozen=True)
class Encoder:
    """A registered encoder: its name, build function and the module that registered it."""

    name: str
    build: EncoderBuild
    module: str


_REGISTRY: dict[str, Encoder] = {}


def register_encoder(name: str, build: EncoderBuild | None = None) -> Any:
    """Register an actor encoder under ``name``, picked by ``mappo.net.encoder=NAME``:
    ``register_encoder("wide", build)``, or ``@register_encoder("wide")`` above ``build``.

    ``build(net, in_dim)`` gets the run's :class:`marl.configs.NetConfig` and the width of
    the input rows and returns a ``torch.nn.Module`` mapping ``[M, in_dim]`` rows to
    ``[M, F]`` features (see the module docstring for what the rows hold and how ``F`` is
    found). It is called once per parameter-sharing group when a learner is built and when a
    snapshot is loaded (then first on the meta device, to check the file's weights fit).

    Raises:
        ValueError: ``name`` is not a word ``mappo.net.encoder=`` reads back, is built in
            (``mlp``, ``gnn``), or is taken by another encoder (the message names it).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"cannot register encoder {name!r}: an encoder name holds letters, "
                         "digits, '_', '-' and '.', starting with a letter or '_'")

    def deco(fn: EncoderBuild) -> EncoderBuild:
        if not callable(fn):
            raise ValueError(f"encoder {name!r}: {fn!r} is not a function")
        if name in ENCODERS:
            raise ValueError(f"encoder {name!r} is built in (marl.actor_critic.Actor); "
                             "register yours under another name")
        old = _REGISTRY.get(name)
        if old is not None and not redefinition(old.build, fn):
            raise ValueError(f"encoder {name!r} is already registered by "
                             f"{defined_at(old.build)}; register yours under another name")
        # a notebook cell run again (same module and qualname): its new function replaces
        _REGISTRY[name] = Encoder(name, fn, str(getattr(fn, "__module__", "?")))
        return fn

    return deco if build is None else deco(build)


def available_encoders() -> list[str]:
    """The built-in encoders, then the registered ones (sorted)."""
    return [*ENCODERS, *sorted(_REGISTRY)]


def find_encoder(name: str) -> Encoder | None:
    """The encoder registered as ``name`` (None if none): a name not yet known loads the
    ``selfplay.encoders`` entry points and the modules the command line imported
    (``SELFPLAY_IMPORTS``: a rollout worker inherits them), as ``games.make`` does."""
    if name not in _REGISTRY:
        load_entry_points(ENTRY_POINTS)
    if name not in _REGISTRY:
        import importlib

        for module in filter(None, os.environ.get(IMPORTS_ENV, "").split(",")):
            importlib.import_module(module)  # imported once by the CLI already: cached
    return _REGISTRY.get(name)


def check_encoder(name: str) -> Encoder:
    """The registered encoder ``name``, else a one-line ``ValueError`` listing the choices
    and how to register one."""
    found = find_encoder(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"encoder={name!r} unknown; choose one of {available_encoders()}; "
                         f"{HOW}{did_you_mean(name, available_encoders())}")
    return found


def snapshot_refusal(name: str, module: Any) -> str | None:
    """Why a snapshot whose actors use encoder ``name`` (registered by ``module``, both read
    from the file: only quoted, never imported) cannot be rebuilt here, or None."""
    if name in ENCODERS or find_encoder(name) is not None:
        return None
    which = (f"--import {module}" if isinstance(module, str) and _MODULE.fullmatch(module)
             else "--import <the module that registers it>")
    return (f"its actors use the encoder {name!r}, which is not registered here; import the "
            f"module that registers it (selfplay-eval {which}; selfplay-train imports=[...])")


class EncoderError(ValueError):
    """A registered encoder failed: one line (exit 2 on the command line) naming it, its
    build function, the error and the line of its code; ``__cause__`` is the error itself."""


class UserEncoder(nn.Module):
    """A registered encoder's module, its errors and wrong shapes made :class:`EncoderError`.

    ``out_dim``: the width ``F`` of its ``[M, F]`` output; ``module``: the module that
    registered it.
    """

    def __init__(self, net: NetConfig, in_dim: int) -> None:
        super().__init__()
        spec = check_encoder(net.encoder)
        self.name, self.in_dim, self._where = spec.name, in_dim, defined_at(spec.build)
        self.module = spec.module  # recorded in snapshots (a hint when it is missing)
        try:
            inner = spec.build(net, in_dim)
        except Exception as err:
            self._raise(err, "when built")
        if not isinstance(inner, nn.Module):
            raise EncoderError(f"encoder {self.name} ({self._where}) returned "
                               f"{type(inner).__name__}, not a torch.nn.Module")
        self.inner = inner
        width = getattr(inner, "out_dim", None)
        if not (isinstance(width, int) and not isinstance(width, bool) and width > 0):
            width = self._probe()
        self.out_dim = width

    def _probe(self) -> int:
        """The output width on two zero rows (eval mode, no gradient, the RNG left alone)."""
        was = self.inner.training
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            self.inner.eval()
            try:
                y = self._call(torch.zeros(2, self.in_dim), "when first called")
            finally:
                self.inner.train(was)
        if not isinstance(y, torch.Tensor) or y.dim() != 2 or y.shape[0] != 2 or y.shape[1] < 1:
            self._wrong(y, 2, "[2, F] with F >= 1")
        return int(y.shape[1])

    def _call(self, x_MI: torch.Tensor, when: str) -> Any:
        try:
            return self.inner(x_MI)
        except Exception as err:
            self._raise(err, when)

    def _raise(self, err: Exception, when: str) -> NoReturn:
        why = " ".join(str(err).split()) or "no message"
        where = where_raised(err, relative=True)  # the user's file, from here
        raise EncoderError(f"encoder {self.name} ({self._where}) failed {when}: "
                           f"{type(err).__name__}: {why} (at {where}); HYDRA_FULL_ERROR=1 "
                           "shows the traceback") from err

    def _wrong(self, y: Any, rows: int, expected: str) -> NoReturn:
        got = (f"a tensor of shape {list(y.shape)}" if isinstance(y, torch.Tensor)
               else f"a {type(y).__name__}")
        raise EncoderError(f"encoder {self.name} ({self._where}) returned {got} for input "
                           f"[{rows}, {self.in_dim}]; expected {expected}")

    def forward(self, x_MI: torch.Tensor) -> torch.Tensor:
        """``[M, I]`` input rows → ``[M, F]`` features."""
        y_MF = self._call(x_MI, "in forward")
        if not isinstance(y_MF, torch.Tensor) or tuple(y_MF.shape) != (x_MI.shape[0],
                                                                        self.out_dim):
            self._wrong(y_MF, x_MI.shape[0], f"[{x_MI.shape[0]}, {self.out_dim}] (rows x "
                                             "out_dim)")
        return y_MF
