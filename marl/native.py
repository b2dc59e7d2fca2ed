"""CPU fast path of ``marl.advantages``: the C kernels of ``native.c``, one pass per step.

On the CPU a chain of torch ops reads and writes every [N] tensor once per op, and each fresh
[N] tensor costs page faults; these kernels fuse a whole step (key ids, moments, the
normalized output; the role EMA; turn returns; MARS's three steps) into one or two passes
over the samples. Parts of the samples run on OpenMP threads of the runtime torch has already
loaded (``-fopenmp`` links ``libgomp.so.1``, the library torch ships), so torch's idle workers
do the work instead of competing for the cores; each part keeps its own tables, merged here.
Fresh outputs ask for 2 MB pages (Linux transparent huge pages): first-touch page faults are
most of a fresh [N] tensor's cost on the CPU.

The C source is compiled with the system compiler (``$CC``, else ``cc``) on first use into
``$SELFPLAY_CACHE`` (default ``~/.cache/selfplay``), keyed by a hash of the source, compiler
and flags, and loaded with ``ctypes``; without OpenMP (``SELFPLAY_NATIVE_OPENMP=0``, or a
compiler without it) the parts run one after another. Nothing else is compiled or loaded.

Every entry point returns ``None`` when it does not apply (not a CPU tensor, a dtype other
than float32/float64, key ranges too wide for a table, samples out of the order a kernel
needs, no compiler) and the caller runs its torch twin, which stays the reference
implementation and the GPU path. ``SELFPLAY_NATIVE=0`` (or ``with native.disabled():``)
turns the fast path off.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import math
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

log = logging.getLogger(__name__)

_SOURCE = Path(__file__).with_name("native.c")
_FLAGS = ["-O3", "-std=c11", "-shared", "-fPIC", "-fno-math-errno"]
_LOCK = threading.Lock()
_STATE: dict[str, object] = {"lib": None, "tried": False, "off": 0}
_PART = 1 << 20  # samples per thread at least: smaller inputs run on one thread
_GUESS_MIN = 1 << 18  # samples from which key ranges are guessed (see ``guess``)
_PROBES = 4096  # samples whose keys make the guess
_PROBE_RUN = 128  # consecutive samples per probe
_MAXC = 4  # key columns the kernels take
_RET_UNSET = 0x7FF0000000000001  # native.c's RET_UNSET_BITS
MISSED = "missed"  # ``ema``: a guessed key missed a value and was settled; call again

_P, _I64, _INT, _DBL = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double
_SIGNATURES = {  # per dtype (suffix _f32 / _f64)
    "stats_par": (_I64, [_INT, _P, _P, _P, _P, _INT, _P, _P, _P, _P, _I64, _P, _INT, _P]),
    "stats_traj_par": (_I64, [_INT, _P, _P, _P, _P, _INT, _P, _P, _P, _P, _P, _I64, _P, _P, _P]),
    "apply_par": (_I64, [_INT, _P, _P, _P, _P, _INT, _P, _P, _P, _P, _P, _I64, _P]),
    "ema": (None, [_I64, _P, _P, _P, _INT, _P, _P, _P, _DBL, _P, _P, _P, _P, _I64, _P]),
    "turn_returns": (None, [_I64, _P, _P, _INT, _P, _P, _P, _DBL, _P, _P]),
    "turn_fused_par": (_I64, [_INT, _P, _P, _P, _P, _P, _P, _P, _P, _I64, _P, _DBL, _P, _P, _P,
                              _I64, _P, _P, _INT]),
    "apply16_par": (_I64, [_INT, _P, _P, _P, _P, _P]),
    "gather_par": (_I64, [_INT, _P, _P, _INT, _P, _P, _P, _P, _P]),
    "ema_units_par": (_I64, [_INT, _P, _P, _P, _P, _INT, _P, _P, _P, _P, _P, _P, _I64, _P, _P, _P,
                             _P, _P, _P]),
    "ema_out_par": (_I64, [_INT, _P, _P, _P, _P, _P]),
    "tables": (None, [_INT, _I64, _P, _INT, _DBL, _INT, _INT, _INT, _P, _P]),
}
_PLAIN = {  # dtype-free
    "in_order_par": (_I64, [_INT, _P, _P, _P]),
    "ema_scan": (None, [_INT, _P, _P, _P, _P, _P, _DBL, _P, _P, _P]),
    "touch_pages": (None, [_P, _I64]),
    "mostly_runs": (_I64, [_I64, _INT, _P, _P, _P]),
    "probe_range": (None, [_INT, _P, _P, _I64, _P]),
    "add_counts": (None, [_INT, _I64, _P, _P, _I64, _P]),
    "prefer_huge_pages": (_INT, [_P, _I64]),
    "unit_values_par": (_I64, [_INT, _P, _INT, _P, _P, _P, _I64, _INT, _P, _P]),
}


def cache_dir() -> Path:
    root = os.environ.get("SELFPLAY_CACHE") or os.environ.get("XDG_CACHE_HOME")
    return Path(root) / "selfplay" if root else Path.home() / ".cache" / "selfplay"


def _compile() -> ctypes.CDLL | None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        log.info("selfplay native kernels off: no C compiler (set CC); using torch ops")
        return None
    errors = []
    attempts = [["-fopenmp"], []] if os.environ.get("SELFPLAY_NATIVE_OPENMP", "1") != "0" else [[]]
    for extra in attempts:  # OpenMP shares torch's libgomp.so.1; else serial parts
        lib = _build(cc, _FLAGS + extra, errors)
        if lib is not None:
            break
    else:
        log.warning("selfplay native kernels off (%s failed: %s); using torch ops", cc, errors[-1])
        return None
    for name, (res, args) in _SIGNATURES.items():
        for suf in ("f32", "f64"):
            fn = getattr(lib, f"{name}_{suf}")
            fn.restype, fn.argtypes = res, args
    for name, (res, args) in _PLAIN.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


def _build(cc: str, flags: list[str], errors: list[str]) -> ctypes.CDLL | None:
    src = _SOURCE.read_bytes()
    tag = hashlib.sha256(b"\0".join([src, cc.encode(), " ".join(flags).encode(),
                                     platform.machine().encode()])).hexdigest()[:16]  # fmt: skip
    target = cache_dir() / f"native-{tag}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
        os.close(fd)
        try:
            run = subprocess.run([cc, *flags, str(_SOURCE), "-o", tmp, "-lm"],
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
            if run.returncode != 0:
                errors.append((run.stderr.strip().splitlines() or ["no message"])[-1])
                return None
            os.replace(tmp, target)  # atomic: concurrent builders write the same bytes
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return ctypes.CDLL(str(target))


def library() -> ctypes.CDLL | None:
    """The loaded kernels, compiling them on first use; None when off or unavailable."""
    if _STATE["off"] or os.environ.get("SELFPLAY_NATIVE", "1") == "0":
        return None
    if not _STATE["tried"]:
        with _LOCK:
            if not _STATE["tried"]:
                try:
                    _STATE["lib"] = _compile()
                except (OSError, subprocess.SubprocessError) as exc:
                    log.warning("selfplay native kernels off: %s", exc)
                _STATE["tried"] = True
    return _STATE["lib"]  # type: ignore[return-value]


def available() -> bool:
    return library() is not None


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the torch twins inside the block (tests compare both paths)."""
    _STATE["off"] = int(_STATE["off"]) + 1
    try:
        yield
    finally:
        _STATE["off"] = int(_STATE["off"]) - 1


# --- column ranges and zeroed outputs, remembered inside one call only
# Key columns may change between calls without torch knowing (a tensor over a numpy buffer that
# a rollout refills keeps its version counter), so nothing is remembered across calls.
_SCOPE = threading.local()


@contextlib.contextmanager
def call_scope() -> Iterator[None]:
    """One call of ``normalize_advantages``: key column ranges computed once (a scheme reads
    the same column several times) and the outputs whose masked samples a kernel zeroed."""
    outer = getattr(_SCOPE, "state", None)
    _SCOPE.state = outer if outer is not None else ({}, {})
    try:
        yield
    finally:
        if outer is None:
            _SCOPE.state = None


def _known_range(col: Tensor) -> tuple[int, int] | None:
    state = getattr(_SCOPE, "state", None)
    hit = None if state is None else state[0].get(id(col))
    fresh = hit is not None and hit[0] is col and hit[1] == col._version
    return (hit[2], hit[3]) if fresh else None


def col_range(col: Tensor) -> tuple[int, int]:
    """``(min, max)`` of an integer column (remembered inside a ``call_scope``)."""
    known = _known_range(col)
    if known is not None:
        return known
    state = getattr(_SCOPE, "state", None)
    lo, hi = (int(v) for v in torch.aminmax(col)) if col.numel() else (0, 0)
    if state is not None:  # holds the column itself: its id stays unique inside the scope
        state[0][id(col)] = (col, col._version, lo, hi)
    return lo, hi


def _zeroed(out: Tensor) -> Tensor:
    state = getattr(_SCOPE, "state", None)
    if state is not None:
        state[1][id(out)] = (out, out._version)
    return out


def masked_zero(t: Tensor) -> bool:
    """Whether a kernel of this ``call_scope`` returned ``t`` with every masked sample (of the
    call's mask) already 0, and nothing changed it since."""
    state = getattr(_SCOPE, "state", None)
    hit = None if state is None else state[1].get(id(t))
    return hit is not None and hit[0] is t and hit[1] == t._version


# --- argument plumbing
def _ptr(t: Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def _fn(lib: ctypes.CDLL, name: str, dtype: torch.dtype):
    return getattr(lib, f"{name}_{'f32' if dtype == torch.float32 else 'f64'}")


@dataclass
class Radix:
    """Mixed-radix key of int64 columns: ``((c0 - lo0) * span1 + (c1 - lo1)) * ...``.

    ``guessed``: the ranges come from a sample of the columns (``guess``), spans are powers of
    two, and only the moments kernel in its checked mode may read the key until ``confirm``
    has seen every value inside them."""

    cols: list[Tensor]
    lo: list[int]
    span: list[int]
    num: int
    guessed: bool = False

    def check_buffer(self, parts: int) -> Tensor | None:
        """Where the checked moments kernel ORs each part's column offsets (None: exact)."""
        return torch.zeros(parts, _MAXC, dtype=torch.long) if self.guessed else None

    def confirm(self, ors: Tensor | None) -> bool:
        """After a checked pass: whether every column value lay inside the guessed ranges (an
        offset OR below a power-of-two span means each offset was); the key is exact then."""
        if ors is not None:
            got = ors[:, : len(self.cols)]  # per part: below a power of two iff all parts are
            spans = torch.tensor(self.span, dtype=torch.long)
            if bool(((got < 0) | (got >= spans)).any()):
                return False
            self.guessed = False
        return True

    def settle(self, cap: int | None = None) -> bool:
        """Replace guessed ranges by the exact ones, in place (callers keep their reference);
        False when the exact table would exceed ``cap`` (see ``radix``)."""
        if self.guessed:
            exact = radix(self.cols, cap)
            if exact is None:
                return False
            self.lo, self.span, self.num, self.guessed = exact.lo, exact.span, exact.num, False
        return True

    @classmethod
    def of_ids(cls, ids: Tensor, num: int) -> Radix:
        """A key given as dense ids in ``[0, num)`` (e.g. from ``marl.returns.dense_key``)."""
        return cls([ids.reshape(-1).long().contiguous()], [0], [num], num)

    def args(self, checked: bool = False) -> tuple[int, object, object, object]:
        """The kernels' key arguments; a guessed key only for the checked moments kernel."""
        if self.guessed and not checked:
            raise RuntimeError("a guessed key reaches a kernel that does not check ranges")
        n = len(self.cols)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[c.data_ptr() for c in self.cols])
        lo = (ctypes.c_int64 * max(n, 1))(*self.lo)
        span = (ctypes.c_int64 * max(n, 1))(*self.span)
        self._keep = (ptrs, lo, span)  # alive while the call runs
        return n, ptrs, lo, span

    def runs(self, lib: ctypes.CDLL) -> int:
        """The moments kernel's mode, from the first 4,096 samples: 1 when keys come in runs
        (one key, sorted keys: runs accumulate in registers), 2 when only their leading
        columns do (the agents of one game and group: the key's leading part is recomputed
        when those change), 0 when keys interleave."""
        if not self.cols:
            return 1
        nc, cols, lo, span = self.args(checked=True)  # compares keys, indexes nothing
        return int(lib.mostly_runs(min(self.cols[0].numel(), 4096), nc, cols, lo, span))

    def unravel(self) -> list[Tensor]:
        """Column values [num] of every key id (the inverse of the radix)."""
        rest, out = torch.arange(self.num), []
        for lo, span in zip(reversed(self.lo), reversed(self.span), strict=True):
            out.append(rest % span + lo)
            rest = rest // span
        return out[::-1]


def radix(cols: Sequence[Tensor | None], cap: int | None = None) -> Radix | None:
    """The radix key of ``cols`` (None entries skipped), or None when its table would exceed
    ``cap`` (default ``max(2N, 65536)``) entries."""
    given = [c for c in cols if c is not None]
    if not given:
        return Radix([], [], [], 1)
    n = given[0].numel()
    cap = cap if cap is not None else max(2 * n, 1 << 16)
    cs, lo, span, num = [], [], [], 1
    for c in given:
        a, b = col_range(c)
        c = c.reshape(-1)
        cs.append(c if c.dtype == torch.long and c.is_contiguous() else c.long().contiguous())
        lo.append(a)
        span.append(b - a + 1)
        num *= b - a + 1
        if num > cap or num >= 1 << 31:
            return None
    return Radix(cs, lo, span, num)


def guess(cols: Sequence[Tensor | None], cap: int | None = None) -> Radix | None:
    """The radix key of ``cols`` with ranges guessed from ``_PROBES`` samples (``_probes``) and
    spans rounded up to powers of two, the slack placed below the
    smallest value seen (not below 0 for nonnegative ids): the first pass over the samples then
    checks the ranges with one OR per column (``Radix.confirm``) instead of one ``aminmax``
    pass per column before it (24 bytes per sample for three int64 columns). Exact ranges
    (``radix``) for small inputs, for columns whose range this call already knows, and when the
    rounding would make the table more than twice as large."""
    given = [c.reshape(-1) for c in cols if c is not None]
    n = given[0].numel() if given else 0
    lib = library()
    if n < _GUESS_MIN or len(given) > _MAXC or lib is None:
        return radix(cols, cap)
    cap = cap if cap is not None else max(2 * n, 1 << 16)
    cs = [c if c.dtype == torch.long and c.is_contiguous() else c.long().contiguous()
          for c in given]  # fmt: skip
    probe, seen = _probes(n), torch.empty(len(cs), 2, dtype=torch.long)
    ptrs = (ctypes.c_void_p * len(cs))(*[c.data_ptr() for c in cs])
    lib.probe_range(len(cs), ptrs, _ptr(probe), probe.numel(), _ptr(seen))
    lo, span, num, tight = [], [], 1, 1
    for c, (a, b) in zip(cs, seen.tolist(), strict=True):
        a, b = _known_range(c) or (a, b)
        width = 1 << (b - a).bit_length()  # the power of two above b - a
        slack = width - (b - a + 1)
        lo.append(max(0, a - slack) if a >= 0 else a - slack // 2)
        span.append(width)
        num, tight = num * width, tight * (b - a + 1)
    if num > cap or num >= 1 << 31 or num > max(2 * tight, 1 << 16):
        return radix(cols, cap)
    return Radix(cs, lo, span, num, guessed=True)


_PROBE_CACHE: dict[int, Tensor] = {}


def _probes(n: int) -> Tensor:
    """``_PROBES`` fixed positions in ``[0, n)``: runs of ``_PROBE_RUN`` consecutive samples
    (agents taking turns show up inside one run; a run reads a few cache lines where scattered
    probes would miss the cache once each) at pseudo-random starts (no stride to alias with),
    the first run at 0 and the last ending at n - 1 (ids that ascend with the samples show
    their range there)."""
    hit = _PROBE_CACHE.get(n)
    if hit is None:
        run = min(_PROBE_RUN, _PROBES, n)
        runs = max(1, _PROBES // run)
        gen = torch.Generator().manual_seed(n)
        starts = torch.randint(n - run + 1, (runs,), generator=gen)
        starts[0], starts[-1] = 0, n - run
        hit = (starts[:, None] + torch.arange(run)).reshape(-1)
        if len(_PROBE_CACHE) > 16:
            _PROBE_CACHE.clear()
        _PROBE_CACHE[n] = hit
    return hit


def empty_like(x: Tensor) -> Tensor:
    """A flat CPU output [N] like ``x``, backed by 2 MB pages where the kernel allows (Linux
    transparent huge pages): first-touch page faults are most of a fresh [N] tensor's cost on
    the CPU (~14 ms against ~2 ms for 10M float32 here)."""
    return empty(x.numel(), x.dtype)


def empty(n: int, dtype: torch.dtype, backward: bool = False) -> Tensor:
    """A fresh [n] CPU tensor on 2 MB pages; ``backward``: for a kernel that writes it from the
    end, so its pages are touched in ascending order first (descending 2 MB faults are slow)."""
    out = torch.empty(n, dtype=dtype)
    lib = library()
    size = out.numel() * out.element_size()
    if lib is not None and size >= 1 << 22:
        lib.prefer_huge_pages(out.data_ptr(), size)
        if backward:
            lib.touch_pages(out.data_ptr(), size)
    return out


def _usable(x: Tensor) -> bool:
    return x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64) and x.numel() > 0


def _flat(t: Tensor | None, dtype: torch.dtype | None = None) -> Tensor | None:
    if t is None:
        return None
    t = t.reshape(-1)
    return (t if dtype is None else t.to(dtype)).contiguous()




def _parts(n: int) -> int:
    return max(1, min(torch.get_num_threads(), n // _PART))


def _carr(cuts: list[int]):
    return (ctypes.c_int64 * len(cuts))(*cuts)


def _bounds(n: int, parts: int, traj: Tensor | None) -> list[int]:
    """Part boundaries; with (ascending) trajectories, moved to the start of a trajectory."""
    cuts = [n * p // parts for p in range(parts + 1)]
    if traj is not None:
        inner = torch.tensor(cuts[1:-1], dtype=torch.long)
        cuts[1:-1] = torch.searchsorted(traj, traj[inner]).tolist()
    return cuts


def _seams_ascend(t: Tensor, cuts: list[int]) -> bool:
    """Whether trajectory-aligned part boundaries are ordered and ids ascend across them."""
    if any(a > b for a, b in zip(cuts, cuts[1:], strict=False)):
        return False
    return all(int(t[c - 1]) <= int(t[c]) for c in cuts[1:-1] if 0 < c < t.numel())


def in_order(traj: Tensor, turn: Tensor | None = None) -> bool | None:
    """Whether trajectories are ascending contiguous runs (and turns never decrease inside
    them); None when the kernels are off."""
    lib = library()
    if lib is None or traj.device.type != "cpu":
        return None
    t, u = _flat(traj, torch.long), _flat(turn, torch.long)
    n = t.numel()
    parts = _parts(n)
    return not lib.in_order_par(parts, _carr(_bounds(n, parts, None)), _ptr(t), _ptr(u))


# --- entry points
def normalize(
    x: Tensor,
    key: Radix,
    mask: Tensor | None,
    weights: Tensor | None,
    *,
    eps: float,
    scale: bool,
    unbiased: bool,
    trajectory: Tensor | None = None,
    out: Tensor | None = None,
) -> Tensor | None:
    """``(x - mu_k) / (sigma_k + eps)`` per key (``scale=False``: centering), 0 where masked,
    with the degenerate-key rules of ``marl.advantages``; statistics per trajectory when
    ``trajectory`` is given (ascending contiguous runs, else None). ``out`` may be ``x``."""
    lib = library()
    if trajectory is not None and not key.settle():  # only the plain moments pass checks
        return None
    if lib is None or not _usable(x) or key.num >= (1 << 31) - 1:
        return None
    x, dt, n = x.reshape(-1), x.dtype, x.numel()
    m, w = _flat(mask, torch.bool), _flat(weights, dt)
    t = _flat(trajectory, torch.long)
    if not x.is_contiguous():
        x = x.contiguous()
    inplace = out is not None and out.data_ptr() == x.data_ptr()
    out = empty_like(x) if out is None else out
    # float32: key ids share the output's memory (each is read before its slot is written)
    ids = out.view(torch.int32) if dt == torch.float32 and not inplace else None
    parts = max(_parts(n), -(-n // (1 << 31)))  # the kernel counts samples in 32 bits
    cuts = _bounds(n, parts, t)
    if t is not None and not _seams_ascend(t, cuts):  # the kernel checks inside each part
        return None
    ca = _carr(cuts)
    if t is None:
        acc = _moments(lib, dt, key, parts, ca, x, m, w, ids)
        if acc is None:
            return None
        nc, cols, lo, span, num = *key.args(), key.num
    else:
        num = key.num
        acc = _acc(parts, num)
        nc, cols, lo, span = key.args()
        pairs = torch.zeros(parts, num, 5, dtype=torch.float64)
        touched = torch.empty(parts, num, dtype=torch.long)
        bad = _fn(lib, "stats_traj_par", dt)(parts, ca, _ptr(x), _ptr(m), _ptr(w), nc, cols, lo,
                                             span, _ptr(t), _ptr(ids), num, _ptr(acc),
                                             _ptr(pairs), _ptr(touched))  # fmt: skip
        if bad:
            return None
    weighted = w is not None or t is not None
    mean, inv = _tables(acc, weighted, eps=eps, scale=scale, unbiased=unbiased, dtype=dt)
    _fn(lib, "apply_par", dt)(parts, ca, _ptr(x), _ptr(ids), _ptr(m), nc, cols, lo, span,
                              _ptr(mean), _ptr(inv), num, _ptr(out))  # fmt: skip
    return _zeroed(out)


def _moments(lib, dt, key: Radix, parts: int, ca, x, m, w, ids) -> Tensor | None:
    """The moments pass: per-part accumulators [P, K, 5] of ``key`` (ids written when given).
    A guessed key is checked on the way; when a value fell outside it, the key is settled on
    exact ranges and the pass runs again. None when the kernel refused or the exact table
    would be too large."""
    while True:
        acc, ors = _acc(parts, key.num), key.check_buffer(parts)
        nc, cols, lo, span = key.args(checked=True)
        if _fn(lib, "stats_par", dt)(parts, ca, _ptr(x), _ptr(m), _ptr(w), nc, cols, lo, span,
                                     _ptr(ids), key.num, _ptr(acc), key.runs(lib), _ptr(ors)):
            return None
        if key.confirm(ors):
            return acc
        if not key.settle():
            return None


def _tables(acc: Tensor, weighted: bool, *, eps: float, scale: bool, unbiased: bool,
            dtype: torch.dtype = torch.float64, centered: bool = False) -> tuple[Tensor, Tensor]:
    """Per-key mean and multiplier [K] (``dtype``) from the parts' accumulators [P, K, 5] of a
    kernel run on ``dtype`` samples; ``centered``: accumulators without s2 and nz."""
    parts, num = acc.shape[0], acc.shape[1]
    mean, inv = torch.empty(num, dtype=dtype), torch.empty(num, dtype=dtype)
    _fn(library(), "tables", dtype)(parts, num, _ptr(acc), int(weighted), eps, int(scale),
                                    int(unbiased), int(centered), _ptr(mean),
                                    _ptr(inv))  # fmt: skip
    return mean, inv


def ema(
    x: Tensor,
    key: Radix,
    mask: Tensor | None,
    weights: Tensor | None,
    alpha: float,
    init: Tensor,
    trajectory: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor] | str | None:
    """SPIRAL's keyed EMA (see ``marl.advantages``'s ``role_ema``): ``(x - baseline before its
    update, final baselines [K] float64, updates per key [K])``; per (trajectory, key) unit when
    ``trajectory`` is given (ascending contiguous runs, else None). A guessed ``key`` is checked
    on the way: when a value fell outside it, ``MISSED`` (the key is settled on exact ranges in
    place; ``init`` follows the key, so the caller makes it again and calls again)."""
    lib = library()
    if lib is None or not _usable(x):
        return None
    x, dt, n, num = _flat(x), x.dtype, x.numel(), key.num
    m, w = _flat(mask, torch.bool), _flat(weights, dt)
    init = init.to(torch.float64).contiguous()
    b, cnt, out = init.clone(), torch.zeros(num, dtype=torch.float64), empty_like(x)
    nc, cols, lo, span = key.args(checked=True)
    parts = 1 if trajectory is None else _parts(n)
    ors = key.check_buffer(parts)
    if trajectory is None:
        _fn(lib, "ema", dt)(n, _ptr(x), _ptr(m), _ptr(w), nc, cols, lo, span, alpha,
                            _ptr(init), _ptr(b), _ptr(cnt), _ptr(out), num, _ptr(ors))  # fmt: skip
        if not key.confirm(ors):
            return MISSED if key.settle() else None
    else:  # unit means on threads, the EMA over units, the outputs on threads
        t = _flat(trajectory, torch.long)
        cuts = _bounds(n, parts, t)
        if n >= 1 << 31 or not _seams_ascend(t, cuts):
            return None
        ca, pairs = _carr(cuts), torch.zeros(parts, num, 5, dtype=torch.float64)
        touched, nunits = torch.empty(parts, num, dtype=torch.long), torch.empty(parts, 1).long()
        uid = out.view(torch.int32) if dt == torch.float32 else torch.empty(n, dtype=torch.int32)
        # one slot per possible unit; only the used ones are ever touched
        means, keys = torch.empty(n, dtype=torch.float64), torch.empty(n, dtype=torch.long)
        live = torch.empty(n, dtype=torch.uint8)
        if _fn(lib, "ema_units_par", dt)(parts, ca, _ptr(x), _ptr(m), _ptr(w), nc, cols, lo, span,
                                         _ptr(t), _ptr(pairs), _ptr(touched), num, _ptr(uid),
                                         _ptr(means), _ptr(keys), _ptr(live), _ptr(nunits),
                                         _ptr(ors)):  # fmt: skip
            return None
        if not key.confirm(ors):
            return MISSED if key.settle() else None
        lib.ema_scan(parts, ca, _ptr(nunits), _ptr(means), _ptr(keys), _ptr(live), alpha,
                     _ptr(init), _ptr(b), _ptr(cnt))  # fmt: skip
        _fn(lib, "ema_out_par", dt)(parts, ca, _ptr(x), _ptr(uid), _ptr(means), _ptr(out))
    return _zeroed(out), b, cnt


def turn_returns(
    r: Tensor, key: Radix, mask: Tensor | None, gamma: float, out: Tensor | None = None
) -> Tensor | None:
    """Return-to-go ``g = r + gamma * g_next`` per key over samples in sample order (the caller
    checks the turn order), 0 where masked; ``out`` may be ``r``."""
    lib = library()
    if lib is None or not _usable(r):
        return None
    r, dt = _flat(r), r.dtype
    m = _flat(mask, torch.bool)
    out = empty(r.numel(), dt, backward=True) if out is None else out
    g = torch.zeros(key.num, dtype=torch.float64)
    nc, cols, lo, span = key.args()
    _fn(lib, "turn_returns", dt)(r.numel(), _ptr(r), _ptr(m), nc, cols, lo, span, gamma,
                                 _ptr(g), _ptr(out))  # fmt: skip
    return out


def _acc(parts: int, num: int) -> Tensor:
    acc = torch.zeros(parts, num, 5, dtype=torch.float64)
    acc[..., 4] = float("nan")
    return acc


def player_turn(
    x: Tensor,
    game: Tensor | None,
    group: Tensor | None,
    agent: Tensor,
    mask: Tensor | None,
    weights: Tensor | None,
    trajectory: Tensor,
    turn: Tensor | None,
    *,
    gamma: float,
    eps: float,
    unbiased: bool,
    scale2: bool,
) -> Tensor | None:
    """MARS ``player_turn`` in three passes: moments per key 1 = (game, group, agent);
    backward, the normalized rewards' return-to-go per (trajectory, key 2 = (game, agent)) with
    the moments of those returns per key 2; then the centered (``scale2``: scaled) returns.
    None (after the first pass) unless trajectories are ascending contiguous runs in turn
    order."""
    lib = library()
    key1 = guess([game, group, agent])
    if lib is None or key1 is None or not _usable(x) or key1.num >= (1 << 31) - 1:
        return None
    x, dt, n = _flat(x), x.dtype, x.numel()
    m, w, t = _flat(mask, torch.bool), _flat(weights, dt), _flat(trajectory, torch.long)
    u = _flat(turn, torch.long)
    parts = max(_parts(n), -(-n // (1 << 31)))
    cuts = _bounds(n, parts, t)
    if not _seams_ascend(t, cuts):
        return None
    alias = dt == torch.float32  # ids share out's memory (read before each slot is written)
    out = empty(n, dt, backward=not alias)
    ids = out.view(torch.int32) if alias else empty(n, torch.int32)
    ca = _carr(cuts)
    acc1 = _moments(lib, dt, key1, parts, ca, x, m, w, ids)
    if acc1 is None:
        return None
    # key 2 over key 1's (now exact or confirmed) ranges of game and agent; k12: key 2 of
    # every key-1 id, the (game, agent) digits of the radix broadcast over the group digit
    keep = [group is None or i != (game is not None) for i in range(len(key1.cols))]
    span2 = [s for s, k in zip(key1.span, keep, strict=True) if k]
    key2 = Radix([c for c, k in zip(key1.cols, keep, strict=True) if k],
                 [lo for lo, k in zip(key1.lo, keep, strict=True) if k], span2, math.prod(span2))
    digits = torch.zeros(key1.span, dtype=torch.long)  # [game?, group?, agent]
    digits += torch.arange(span2[-1])
    if game is not None:
        digits += (torch.arange(span2[0]) * span2[-1]).view(-1, *[1] * (len(key1.span) - 1))
    k12 = digits.view(-1)
    mean1, inv1 = _tables(acc1, w is not None, eps=eps, scale=True, unbiased=unbiased, dtype=dt)
    # per part and key 2: {return (unset: the bits 0x7FF0000000000001), sum}; the keys the
    # current trajectory touched
    rets = torch.zeros(parts, key2.num, 2, dtype=torch.long)
    rets[..., 0] = _RET_UNSET
    touched = torch.empty(parts, key2.num, dtype=torch.long)
    acc2 = _acc(parts, key2.num)
    # unweighted float32 centering: the kernel only sums returns, per trajectory (with weights
    # a constant key's samples of weight 0 still need the constant rule, so its moments)
    centered = not scale2 and dt == torch.float32 and w is None
    if centered:
        acc2[..., 4] = 0.0
    # key 2 per sample (K2 where masked) for pass 3
    k16 = empty(n, torch.int16, backward=True) if key2.num < 0xFFFF else None
    if _fn(lib, "turn_fused_par", dt)(parts, ca, _ptr(x), _ptr(ids), _ptr(w), _ptr(t), _ptr(u),
                                      _ptr(mean1), _ptr(inv1), key1.num, _ptr(k12), gamma,
                                      _ptr(rets), _ptr(touched), _ptr(acc2), key2.num, _ptr(out),
                                      _ptr(k16), int(centered)):  # fmt: skip
        return None
    if centered:  # the counts of key 2 are those of key 1
        lib.add_counts(parts, key1.num, _ptr(acc1), _ptr(k12), key2.num, _ptr(acc2))
    mean2, inv2 = _tables(acc2, w is not None, eps=eps, scale=scale2, unbiased=unbiased,
                          dtype=dt, centered=centered)  # fmt: skip
    if k16 is not None:
        mean2, inv2 = (torch.cat([tab, tab.new_zeros(1)]) for tab in (mean2, inv2))
        _fn(lib, "apply16_par", dt)(parts, ca, _ptr(k16), _ptr(mean2), _ptr(inv2), _ptr(out))
    elif alias:  # the ids are gone: key 2 from its columns
        nc, cols, lo, span = key2.args()
        _fn(lib, "apply_par", dt)(parts, ca, _ptr(out), None, _ptr(m), nc, cols, lo, span,
                                  _ptr(mean2), _ptr(inv2), key2.num, _ptr(out))  # fmt: skip
    else:  # per key-1 id: the tables of its key 2
        mean2, inv2 = mean2[k12].contiguous(), inv2[k12].contiguous()
        _fn(lib, "apply_par", dt)(parts, ca, _ptr(out), _ptr(ids), None, 0, None, None, None,
                                  _ptr(mean2), _ptr(inv2), key1.num, _ptr(out))  # fmt: skip
    return _zeroed(out)


def unit_values(unit: Radix, checks: list[Tensor]) -> Tensor | None:
    """The value of each column of ``checks`` in each unit, [C, U] int64 (0 for empty units), or
    None when some unit holds two values of a column."""
    lib = library()
    if lib is None or any(c.device.type != "cpu" for c in checks):
        return None
    chk = [_flat(c, torch.long) for c in checks]
    n = chk[0].numel() if chk else 0
    parts = _parts(n)
    cuts = _bounds(n, parts, None)
    first = torch.full((parts, len(chk), unit.num), torch.iinfo(torch.long).min, dtype=torch.long)
    ptrs = (ctypes.c_void_p * max(len(chk), 1))(*[c.data_ptr() for c in chk])
    nc, cols, lo, span = unit.args()
    if lib.unit_values_par(parts, _carr(cuts), nc, cols, lo, span, unit.num, len(chk), ptrs,
                           _ptr(first)):  # fmt: skip
        return None
    low = torch.iinfo(torch.long).min
    val = first[0]
    for p in range(1, parts):  # the value of the first part that saw the unit
        val = torch.where(val == low, first[p], val)
    if bool(((first != low) & (first != val)).any()):
        return None
    return val.masked_fill_(val == low, 0)


def _key_moments(x: Tensor, key: Radix, mask: Tensor | None, weights: Tensor | None):
    """Per key [K], float64: (total weight -- the count when unweighted --, mean (NaN for an
    empty key), population variance), from the moments kernel with its parts merged."""
    lib = library()
    if lib is None or not _usable(x):
        return None
    x, dt, n = _flat(x), x.dtype, x.numel()
    m, w = _flat(mask, torch.bool), _flat(weights, dt)
    parts = max(_parts(n), -(-n // (1 << 31)))
    acc = _moments(lib, dt, key, parts, _carr(_bounds(n, parts, None)), x, m, w, None)
    if acc is None:
        return None
    cnt = (acc[..., 0].view(torch.int64) & 0xFFFFFFFF).double()
    tot, pilot = (acc[..., 1] if w is not None else cnt), acc[..., 4]
    ref = pilot[0]
    for p in range(1, parts):  # a common pilot: the first part that saw the key
        ref = torch.where(ref.isnan(), pilot[p], ref)
    delta = torch.where(cnt > 0, pilot - ref, 0.0)
    s1, s2 = acc[..., 2], acc[..., 3]
    s2 = (s2 + 2 * delta * s1 + tot * delta * delta).sum(0)
    s1, tot = (s1 + tot * delta).sum(0), tot.sum(0)
    m1 = s1 / tot.clamp_min(1e-300)
    return tot, ref + m1, (s2 / tot.clamp_min(1e-300) - m1 * m1).clamp_min(0.0)


def moments(x: Tensor, key: Radix, mask: Tensor | None) -> tuple[Tensor, Tensor, Tensor] | None:
    """Per key [K], float64: (count of unmasked samples, their mean, population variance)."""
    res = _key_moments(x, key, mask, None)
    if res is None:
        return None
    cnt, mean, var = res
    return cnt, torch.where(cnt > 0, mean, 0.0), var


def unit_means(
    x: Tensor, unit: Radix, mask: Tensor | None, weights: Tensor | None
) -> tuple[Tensor, Tensor] | None:
    """Per unit [U], float64: (count of unmasked samples, their mean) or, with ``weights``,
    (total positive weight, weighted mean); empty units have mean NaN."""
    res = _key_moments(x, unit, mask, weights)
    return None if res is None else res[:2]


def gather(table: Tensor, key: Radix, mask: Tensor | None, n: int) -> Tensor | None:
    """``table[key]`` per sample [N], 0 where masked."""
    lib = library()
    if lib is None or not _usable(table):
        return None
    table, dt = table.contiguous(), table.dtype
    m = _flat(mask, torch.bool)
    out = empty(n, dt)
    parts = _parts(n)
    cuts = _bounds(n, parts, None)
    nc, cols, lo, span = key.args()
    _fn(lib, "gather_par", dt)(parts, _carr(cuts), _ptr(m), nc, cols, lo, span, _ptr(table),
                               _ptr(out))  # fmt: skip
    return _zeroed(out)
