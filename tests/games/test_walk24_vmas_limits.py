"""Walk 24 on the VMAS family: a batch too large for the machine is refused in one line
before it is built (num_envs, the estimate, what is available, the largest num_envs that
fits); torch's allocation errors while building or stepping read as running out of memory,
with the same hint; a scenario's assertion without a message names its line and text."""

from __future__ import annotations

import pytest
import torch

import games
from games import vmas as gv
from games.core import GameError
from tests.populations.test_walk18_cli_more import _train

OOM_CPU = ("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
           "memory: you tried to allocate 80000000000 bytes. Error code 12 (Cannot allocate "
           "memory)")


def _guard_builds(monkeypatch, largest: int, err: BaseException) -> list[int]:
    """vmas.make_env raises ``err`` for more than ``largest`` copies (nothing large is ever
    allocated); returns the sizes asked for."""
    real, asked = gv.vmas.make_env, []

    def make_env(scenario, num_envs, **kwargs):
        asked.append(num_envs)
        if num_envs > largest:
            raise err
        return real(scenario, num_envs=num_envs, **kwargs)

    monkeypatch.setattr(gv.vmas, "make_env", make_env)
    return asked


def test_too_many_copies_are_refused_before_the_build(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gv, "available_memory", lambda device: 50 * 10**6,  # 50 MB free
                        raising=False)  # (raising: the test fails before the fix by its asserts)
    asked = _guard_builds(monkeypatch, 1000, RuntimeError(OOM_CPU))
    with pytest.raises(SystemExit) as exit_:
        _train(["game=vmas_spread", "num_envs=1000000", "frames=1000", "progress=false",
                f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert len(err.splitlines()) == 1, err
    assert "num_envs=1000000" in err and "50 MB is available" in err
    assert "lower num_envs (the largest that fits is about " in err
    fits = int(err.split("the largest that fits is about ")[1].split(")")[0])
    assert 1000 < fits < 50_000  # simple_spread keeps ~1 KB per copy, times the peak factor
    assert max(asked) <= gv.PROBE_COPIES + 1  # only the small probes were built
    assert not (tmp_path / "run").exists()


def test_estimate_is_skipped_for_batches_that_plainly_fit(monkeypatch):
    """The probes (two more builds) are paid only by batches a generous bound does not pass."""
    game = gv.VmasGame("simple_spread")
    probed = []
    monkeypatch.setattr(gv, "bytes_per_copy", lambda *a: probed.append(a) or 1e9)
    monkeypatch.setattr(gv, "available_memory", lambda device: 10**9)
    gv._check_memory(game, 8, False, False)
    assert probed == []
    with pytest.raises(GameError, match="num_envs=100000 needs about "):
        gv._check_memory(game, 100_000, False, False)
    assert probed


def test_the_estimate_scales_with_the_copies():
    """bytes_per_copy measures what one more copy keeps (between 100 B and 100 KB)."""
    game = gv.VmasGame("simple_spread")
    per = gv.bytes_per_copy(game, True, False)
    assert 100 < per < 100_000
    assert gv.available_memory(torch.device("cpu")) is None or \
        gv.available_memory(torch.device("cpu")) > 0


@pytest.mark.parametrize("err", [RuntimeError(OOM_CPU), torch.OutOfMemoryError("CUDA out of "
                                 "memory. Tried to allocate 8.00 GiB"), MemoryError()],
                         ids=["cpu", "cuda", "python"])
def test_allocation_error_in_the_build_is_one_line_with_the_hint(monkeypatch, err):
    game = gv.VmasGame("simple_spread")
    _guard_builds(monkeypatch, 1, err)
    with pytest.raises(GameError) as caught:
        game.batched(8)
    msg = str(caught.value)
    assert "\n" not in msg and "enforce fail" not in msg
    assert msg.startswith("out of memory building vmas/simple_spread with num_envs=8 on ")
    assert msg.endswith("; lower num_envs")
    assert type(err).__name__ in msg


def test_allocation_error_through_the_cli(monkeypatch, tmp_path, capsys):
    _guard_builds(monkeypatch, 1, RuntimeError(OOM_CPU))
    with pytest.raises(SystemExit) as exit_:
        _train(["game=vmas_spread", "num_envs=4", "frames=100", "progress=false",
                f"hydra.run.dir={tmp_path / 'run'}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2
    assert len(err.splitlines()) == 1, err
    assert "out of memory building vmas/simple_spread with num_envs=4" in err
    assert "lower num_envs" in err


def test_allocation_error_in_a_step_is_no_bad_action(monkeypatch):
    """A step that runs out of memory said 'bad actions: DefaultCPUAllocator...' before."""
    batch = gv.VmasGame("simple_spread").batched(4)
    batch.reset()

    def step(actions):
        raise RuntimeError(OOM_CPU)

    monkeypatch.setattr(batch.sim.env, "step", step)
    acts = {a: torch.zeros(4, dtype=torch.long) for a in batch.spec.agent_ids}
    with pytest.raises(GameError, match="out of memory stepping vmas/simple_spread with "
                                        "num_envs=4 .*; lower num_envs$") as caught:
        batch.step(acts)
    assert "bad actions" not in str(caught.value)


def test_a_failed_scenario_check_names_its_line():
    with pytest.raises(GameError) as caught:
        games.make("vmas/balance", n_agents=1)  # 0: refused before, a count of agents
    msg = str(caught.value)
    assert "without a message" not in msg
    assert "vmas/scenarios/balance.py:" in msg and "in make_world" in msg
    assert "assert self.n_agents > 1" in msg
    assert "{'n_agents': 1}" in msg


def test_sizes_read_in_three_digits():
    assert [gv._size(x) for x in (512, 4160, 2.19e10, 1.03e12, 4.16e14)] == [
        "512 B", "4.16 KB", "21.9 GB", "1.03 TB", "416 TB"]


def test_cuda_memory_counts_the_allocators_cached_blocks(monkeypatch):
    """On CUDA, what PyTorch's caching allocator holds reserved but unallocated is free to a
    new batch: a process that built a batch before keeps its freed blocks there (before: only
    the device's free figure, so a batch that fits could be refused)."""
    gib = 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (1 * gib, 80 * gib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 30 * gib)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 10 * gib)
    assert gv.available_memory(torch.device("cuda:0")) == 21 * gib


def test_memory_check_false_builds_a_batch_the_check_refuses(monkeypatch, tmp_path, capsys):
    """The refusal names the escape; ``game.kwargs.memory_check=false`` builds the batch
    anyway (here the build runs out of memory: nothing large is allocated), and it is no
    part of the game's name. Before: memory_check went to the scenario, which refused it."""
    monkeypatch.setattr(gv, "available_memory", lambda device: 50 * 10**6)
    with pytest.raises(GameError, match=r"\), or pass memory_check=False to build it anyway$"):
        gv.VmasGame("simple_spread").batched(10**6)
    assert gv.VmasGame("simple_spread", memory_check=False).spec.name == "vmas/simple_spread"
    asked = _guard_builds(monkeypatch, 1000, RuntimeError(OOM_CPU))
    with pytest.raises(SystemExit) as exit_:
        _train(["game=vmas_spread", "num_envs=1000000", "frames=1000", "progress=false",
                "game.kwargs.memory_check=false", f"hydra.run.dir={tmp_path / 'run'}"],
               monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1, err
    assert "out of memory building vmas/simple_spread with num_envs=1000000" in err
    assert 10**6 in asked


def test_memory_check_takes_a_bool():
    with pytest.raises(GameError, match=r"memory_check='no'; accepted: true or false$"):
        gv.VmasGame("simple_spread", memory_check="no")
