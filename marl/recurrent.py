"""Recurrent (GRU) cores of the PPO family: the recurrent variant of MAPPO (rMAPPO, Yu et
al., 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games", §4 and
appendix: a GRU after the MLP base, trained on "data chunks" of the rollout).

The encoder's features pass through a GRU cell whose hidden state belongs to one
(copy, agent) pair:

* it is **reset** to zeros where an episode begins for that agent (:func:`episode_starts`:
  the copy ended and was reset, the agent's own episode ended, or the VectorGame was just
  reset);
* it **advances only on the steps where the agent acts**; in a turn-based game the other
  agents' states wait unchanged for their next turn;
* in training the GRU is **re-run over chunks** of the rollout from the hidden state the
  learner stored at the chunk's first row, applying the same resets and acting masks
  (:meth:`GRUCore.unroll`), so before any update the re-run reproduces the rollout's
  log-probabilities and values.

Hidden states are stored *before* the episode-start reset of their row; ``step`` and
``unroll`` apply the reset themselves, so a chunk may begin on an episode's first row.

Shape legend: ``B`` copies, ``A`` agents, ``M`` rows of one step (copies × seats), ``S``
sequences (chunks), ``L`` chunk length, ``F`` input features, ``H`` hidden width.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from games import VecStep
from marl.networks import orthogonal_


def episode_starts(vs: VecStep, agents: Sequence[str]) -> np.ndarray:
    """``[B, A]`` bool: where each agent's hidden state must restart at ``vs``.

    True where the copy's episode ended at this step (``done``: ``vs`` already shows the
    next episode), where the agent's own episode ended (``terminated`` / ``truncated``),
    and everywhere on a fresh ``VectorGame.reset()`` (``episode_length`` 0 without
    ``done``), so a policy reused on a new game does not carry an old game's memory.
    """
    fresh = vs.done | (vs.episode_length == 0)  # [B]
    starts = [fresh | vs.terminated[a] | vs.truncated[a] for a in agents]
    return torch.stack(starts, 1) if isinstance(fresh, torch.Tensor) else np.stack(starts, 1)


class GRUCore(nn.Module):
    """A GRU cell with the rMAPPO conventions: orthogonal init, LayerNorm on its output,
    resets at episode starts and updates only where the agent acts."""

    def __init__(self, in_dim: int, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(in_dim, hidden)
        for name, p in self.cell.named_parameters():
            if name.startswith("weight"):
                orthogonal_(p)  # skipped while a snapshot loads (weights_to_load)
            else:
                nn.init.zeros_(p)
        self.norm = nn.LayerNorm(hidden)

    def step(
        self, z_MF: torch.Tensor, h_MH: torch.Tensor, start_M: torch.Tensor, move_M: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: ``(out_MH, next_MH)``.

        ``h_MH`` is the state before this row's reset; rows with ``start_M`` restart from
        zeros; ``next_MH`` keeps the (reset) input state where ``move_M`` is False.
        """
        h = h_MH.masked_fill(start_M[:, None], 0.0)
        new = self.cell(z_MF, h)
        return self.norm(new), torch.where(move_M[:, None], new, h)

    def unroll(
        self,
        z_LSF: torch.Tensor,
        h0_SH: torch.Tensor,
        start_LS: torch.Tensor,
        move_LS: torch.Tensor,
    ) -> torch.Tensor:
        """``[L, S, H]`` outputs of S sequences of L rows from their first-row states
        ``h0_SH`` (a Python loop over the L rows only; everything else is batched).

        One ``torch.gru`` call over the rows (a C++ loop) was no faster here: on MAPPO's
        chunks (L=10, ~70 sequences) an update took the same CPU time on spread and pig.
        """
        h, outs = h0_SH, []
        # unbind, not z_LSF[t]: the backward of L selects is L zero-filled [L, S, F] tensors
        for z_SF, start_S, move_S in zip(z_LSF.unbind(0), start_LS[..., None].unbind(0),
                                         move_LS[..., None].unbind(0), strict=True):
            h = h.masked_fill(start_S, 0.0)  # as step(), with the LayerNorm once at the end
            new = self.cell(z_SF, h)
            outs.append(new)
            h = torch.where(move_S, new, h)
        return self.norm(torch.stack(outs))


class PolicyMemory:
    """Hidden states of a frozen recurrent policy: ``[B, H]`` per agent it plays.

    ``before(agent, vs)`` gives the state to act from; ``after`` records the next one.
    Asking twice about the same ``vs`` object (``action_probs`` then ``act``) starts from
    the same state, so a step is never applied twice. A new number of copies starts over.
    """

    def __init__(self, hidden: int, device: torch.device) -> None:
        self.hidden, self.device = hidden, device
        self._h: dict[str, torch.Tensor] = {}  # agent -> [B, H] state after its last step
        self._last: dict[str, tuple[VecStep, torch.Tensor]] = {}  # agent -> (vs, state before)

    def reset(self) -> None:
        self._h.clear()
        self._last.clear()

    def before(self, agent: str, vs: VecStep) -> torch.Tensor:
        """``[B, H]`` state of ``agent`` before acting on ``vs`` (before episode resets)."""
        last = self._last.get(agent)
        if last is not None and last[0] is vs:
            return last[1]
        B = vs.done.shape[0]
        h = self._h.get(agent)
        if h is None or h.shape[0] != B:
            h = torch.zeros(B, self.hidden, device=self.device)
        return h

    def after(self, agent: str, vs: VecStep, h_before: torch.Tensor, h_next: torch.Tensor) -> None:
        self._last[agent] = (vs, h_before)
        self._h[agent] = h_next
