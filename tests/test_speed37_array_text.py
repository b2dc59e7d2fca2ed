"""games.array_text writes the text view of an observation exactly as the np.array2string call
it replaces did (kept here, whole, as the slow reference): on the observations of real
PettingZoo games played at random, on seeded random arrays of every dtype, magnitude and
shape, on the edges where numpy changes notation, and under changed print options."""

from __future__ import annotations

import numpy as np
import pytest

import games
from games.array_text import array_text


def reference(x) -> str:
    return np.array2string(np.asarray(x, dtype=np.float32).ravel(), precision=2, separator=" ")


GAMES = [  # (module, steps): MPE scenarios, classic games with action masks, long and image obs
    ("mpe2.simple_tag_v3", 200), ("mpe2.simple_spread_v3", 150),
    ("mpe2.simple_world_comm_v3", 120), ("mpe2.simple_crypto_v3", 150),
    ("mpe2.simple_speaker_listener_v4", 150), ("mpe2.simple_reference_v3", 150),
    ("mpe2.simple_push_v3", 150), ("mpe2.simple_adversary_v3", 150),
    ("pettingzoo.classic.tictactoe_v3", 200), ("pettingzoo.classic.connect_four_v3", 200),
    ("pettingzoo.classic.leduc_holdem_v4", 200), ("pettingzoo.classic.texas_holdem_v4", 200),
    ("pettingzoo.classic.texas_holdem_no_limit_v6", 200), ("pettingzoo.classic.rps_v2", 100),
    ("pettingzoo.classic.chess_v6", 120), ("pettingzoo.classic.go_v5", 120),
    ("pettingzoo.classic.hanabi_v5", 60), ("pettingzoo.sisl.pursuit_v5", 15),
    ("pettingzoo.butterfly.knights_archers_zombies_v11", 40),
]


@pytest.mark.parametrize("module,steps", GAMES)
def test_real_game_observations(module, steps):
    g = games.make(f"pettingzoo/{module}")
    rng = np.random.default_rng(37)
    ts, episode, seen = g.reset(0), 0, 0
    for _ in range(steps):
        if ts.done:
            episode += 1
            ts = g.reset(episode)
        actions = {}
        for agent in ts.acting:
            obs = g.observe(agent)
            want = reference(obs)
            assert array_text(obs) == want, (module, agent, obs)
            assert g.text_observation(agent).endswith("observation: " + want)
            seen += 1
            legal = np.flatnonzero(ts.legal[agent])
            actions[agent] = int(legal[rng.integers(0, len(legal))])
        ts = g.step(actions)
    g.close()
    assert seen >= steps


F32 = np.float32
EDGES = np.array([
    0.0, -0.0, 1.0, -1.0, 0.5, 0.125, 0.375, -0.125, 0.625, 2.675, 0.005, -0.005, 0.0051, 0.994,
    0.995, 0.996, 99.995, 65535.99, 65536.0, 131071.99, 131072.0, 131072.4, 999999.0, 1e6,
    float(F32(1e-4)), float(np.nextafter(F32(1e-4), F32(0))),
    float(np.nextafter(F32(1e-4), F32(1))),
    1e-5, 1e-8, 1e9, 3e38, np.nan, np.inf, -np.inf,
], dtype=np.float64)


def _random_array(rng: np.random.Generator) -> np.ndarray:
    n = int(rng.choice([1, 2, 3, 5, 8, 12, 14, 16, 18, 21, 25, 34, 60, 84, 150, 999, 1000,
                        1001, 1500],
                       p=[.06, .04, .05, .06, .06, .08, .08, .08, .06, .06, .05, .06, .05, .05,
                          .04, .01, .01, .05, .05]))
    kind = rng.integers(0, 6)
    if kind == 0:  # MPE-like: normal, a few scales
        x = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
    elif kind == 1:  # any magnitude, some in scientific notation
        x = rng.standard_normal(n) * 10.0 ** rng.uniform(-9, 9, n)
    elif kind == 2:  # counts, one-hots, masks
        x = rng.integers(0, int(rng.choice([2, 10, 256, 70000, 200000])), n)
    elif kind == 3:  # few decimals: uneven widths of fractions after trimming
        x = np.round(rng.uniform(-1, 1, n) * 10.0 ** rng.integers(0, 5), rng.integers(0, 4))
    elif kind == 4:  # exact half-way values at two decimals (k + 1/8, 3/8, ...)
        x = rng.integers(-2000, 2000, n) + rng.choice([0.125, 0.375, 0.625, 0.875, 0.0], n)
    else:  # float32 neighbours of the notation thresholds
        x = rng.choice(EDGES[np.isfinite(EDGES)], n)
    if rng.random() < 0.3:  # sprinkle edges: zeros, signed zeros, nan, inf, thresholds
        k = int(rng.integers(1, min(n, 4) + 1))
        x = np.asarray(x, dtype=np.float64)
        x[rng.integers(0, n, k)] = rng.choice(EDGES, k)
    dtype = rng.choice(["float16", "float32", "float64", "int8", "int32", "int64", "uint8",
                        "bool"], p=[.05, .5, .25, .04, .04, .04, .04, .04])
    with np.errstate(all="ignore"):
        x = np.asarray(x).astype(dtype)
    shapes = {1: [(n,)], 12: [(3, 4), (2, 2, 3)], 84: [(6, 7, 2)], 1500: [(10, 150), (5, 5, 60)]}
    options = shapes.get(n, [(n,)])
    return x.reshape(options[int(rng.integers(0, len(options)))])


def test_random_arrays_every_dtype_magnitude_and_shape():
    rng = np.random.default_rng(3737)
    for case in range(2500):
        x = _random_array(rng)
        with np.errstate(all="ignore"):
            want = reference(x)
        assert array_text(x) == want, (case, x.dtype, x.shape, x.ravel()[:20].tolist())


def test_notation_thresholds_compared_in_float32():
    # numpy switches to scientific notation when max / min > 1000 in float32: neighbours of
    # 1000 x lo for many lo, both sides of 1e-4 and 1e6, scalars and 0-d arrays
    rng = np.random.default_rng(0)
    for lo in np.concatenate([[1.0, 3.0, 0.3, 7e-4, 1.1e-4], rng.uniform(1e-4, 100, 300)]):
        lo32 = F32(lo)
        hi = F32(1000) * lo32
        for step in range(-3, 4):
            h = hi
            for _ in range(abs(step)):
                h = np.nextafter(h, F32(np.inf) if step > 0 else F32(0))
            x = np.array([lo32, 0.5 * h, h, -0.0], dtype=np.float32)
            assert array_text(x) == reference(x), (lo32, h)
    for v in EDGES:
        for x in (np.float32(v), np.array(v), [v, 0.5], [0.0, v, -v]):
            with np.errstate(all="ignore"):
                assert array_text(x) == reference(x), x


def test_long_arrays_wrap_and_summarize_as_numpy():
    for n in range(1, 140):  # every wrap point of narrow and wide words
        for x in (np.full(n, 0.5), np.arange(n) * -1.25, np.linspace(-999, 999, n)):
            assert array_text(x) == reference(x), n
    for n in (1001, 1500, 7104):  # summarized: formatted from the 6 numbers shown only
        x = np.zeros(n, dtype=np.float32)
        x[n // 2] = 1e9  # hidden: no scientific notation
        x[1], x[-1] = -12.5, 0.25
        assert array_text(x) == reference(x) == "[  0.   -12.5    0.   ...   0.     0.     0.25]"


@pytest.mark.parametrize("options", [
    {"linewidth": 40}, {"threshold": 10}, {"edgeitems": 1, "threshold": 5}, {"suppress": True},
    {"sign": " "}, {"sign": "+"}, {"floatmode": "fixed"}, {"legacy": "1.13"},
    {"formatter": {"float_kind": "{:.1f}".format}}, {"nanstr": "NaN", "infstr": "Inf"},
])
def test_changed_print_options_follow_numpy(options):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(n).astype(np.float32) for n in (3, 16, 40, 1200)]
    arrays += [np.array([np.nan, -np.inf, 0.5]), np.array([1e-7, 1.0]), np.array([-0.0, 2.0])]
    with np.printoptions(**options):
        for x in arrays:
            assert array_text(x) == reference(x), (options, x)


def test_common_observations_take_the_fast_path(monkeypatch):
    # not the fallback in disguise: MPE positions, masks, long boards and summaries are
    # written without numpy's formatter
    lo = F32(1.0001)
    edge = np.array([lo, F32(1000) * lo])  # ratio over 1000 in float64, 1000 in float32
    assert float(edge[1]) / float(edge[0]) > 1000 and "e" not in reference(edge)
    xs = [np.array([0.1, -1.25, 0.0, 3.0]), np.eye(3, 6).ravel(), np.arange(84) % 3,
          np.zeros((8, 8, 111), dtype=bool), np.linspace(-2, 2, 150), edge,
          np.array([F32(1e-4), 0.05], dtype=np.float32)]  # 1e-4 is not below 1e-4 in float32
    want = [reference(x) for x in xs]

    def refused(*args, **kwargs):
        raise AssertionError("np.array2string called")

    monkeypatch.setattr(np, "array2string", refused)
    assert [array_text(x) for x in xs] == want
