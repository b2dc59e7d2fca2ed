/* CPU kernels of marl.advantages: one pass per step instead of one pass per tensor op.
 *
 * Built by marl/native.py with the system C compiler on first use and loaded with ctypes;
 * every function has a pure-torch twin in marl/advantages.py and marl/returns.py, which runs
 * on GPUs, when no compiler is found, and when SELFPLAY_NATIVE=0.
 *
 * Conventions. Samples are i in [i0, i1). A key is the mixed radix of up to MAXC int64 columns,
 * k = ((c0 - lo0) * span1 + (c1 - lo1)) * span2 + ... in [0, K); K is the dummy key of masked
 * samples. Statistics accumulate in double, shifted by a pilot value per key (the first
 * contributing sample) so that variances do not cancel. Functions that need an order return
 * -1 when the input does not have it; the caller then takes the torch path.
 */
#define _DEFAULT_SOURCE /* madvise */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

/* Ask for 2 MB pages on the 2 MB-aligned interior of a fresh buffer (before it is touched):
 * first touches of a 40 MB output then cost ~20 faults instead of ~10k. 0 on success. */
int prefer_huge_pages(void *p, int64_t nbytes) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)1 << 21;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + nbytes) & ~(huge - 1);
    return e > a ? madvise((void *)a, e - a, MADV_HUGEPAGE) : 0;
#else
    (void)p, (void)nbytes;
    return -1;
#endif
}

typedef struct {
    int64_t cz;   /* contributing samples | (samples with x != pilot) << 32; nz 0: constant key */
    double w;     /* total weight, weighted only (per trajectory: sum over pairs of pair weight /
                   * pair count) */
    double s1;    /* sum of w * (x - pilot) (per trajectory: of pair sums / pair count) */
    double s2;    /* sum of w * (x - pilot)^2 (idem) */
    double pilot; /* NaN until the first contributing sample */
} Acc;

typedef struct {
    int64_t cz;   /* samples | (samples with x != pilot) << 32, of one (trajectory, key) pair */
    double w;     /* their weight (weighted only) */
    double s1;    /* sum of w * (x - pilot) */
    double s2;    /* sum of w * (x - pilot)^2 */
    double pilot; /* the key's pilot, copied when the pair starts */
} Pair;           /* flushed into the key's Acc when the trajectory ends */

typedef struct {
    double cnt, w, sx, swx; /* one (trajectory, key) unit of role_ema: count, weight, sums */
    double before;          /* its baseline before its update */
} Unit;

typedef struct {
    double g;   /* return-to-go of one key in the current trajectory; RET_UNSET before its turn */
    double sum; /* centered player_turn: the sum of the key's returns in the trajectory */
} Ret;

/* A signaling NaN with payload 1: no arithmetic result (quiet NaNs) and no float32 converted
 * to double (payload in the high bits) has these bits, so it marks unset entries even when
 * returns are NaN. */
#define RET_UNSET_BITS 0x7FF0000000000001ULL
static inline int ret_unset(double g) {
    uint64_t b;
    memcpy(&b, &g, sizeof b);
    return b == RET_UNSET_BITS;
}
static inline void ret_clear(Ret *e) {
    uint64_t b = RET_UNSET_BITS;
    memcpy(&e->g, &b, sizeof b);
    e->sum = 0;
}
/* A trajectory ended: its sums go to s1 (centered) and the keys it touched are unset again
 * (each enters touched once per trajectory, as no computed return has the unset bits). */
#define RET_FLUSH(centered)                                                                        \
    do {                                                                                           \
        for (int64_t j = 0; j < nt; j++) {                                                         \
            if (centered) acc2[touched[j]].s1 += E[touched[j]].sum;                                \
            ret_clear(E + touched[j]);                                                             \
        }                                                                                          \
        nt = 0;                                                                                    \
    } while (0)

/* Key columns copied into locals once per call, so that stores to tables and outputs do not
 * force the compiler to reload them; KEY(i) is branch-free once the loop is unswitched on nc. */
#define MAXC 4
#define KEY_LOCALS                                                                                \
    const int64_t *c0 = nc > 0 ? cols[0] : 0, *c1 = nc > 1 ? cols[1] : 0;                         \
    const int64_t *c2 = nc > 2 ? cols[2] : 0, *c3 = nc > 3 ? cols[3] : 0;                         \
    const int64_t l0 = nc > 0 ? lo[0] : 0, l1 = nc > 1 ? lo[1] : 0, l2 = nc > 2 ? lo[2] : 0;      \
    const int64_t l3 = nc > 3 ? lo[3] : 0, p1 = nc > 1 ? span[1] : 1, p2 = nc > 2 ? span[2] : 1;  \
    const int64_t p3 = nc > 3 ? span[3] : 1;                                                      \
    (void)c1, (void)c2, (void)c3, (void)l1, (void)l2, (void)l3, (void)p1, (void)p2, (void)p3
#define KEY(i)                                                                                    \
    (nc == 0   ? 0                                                                                \
     : nc == 1 ? c0[i] - l0                                                                       \
     : nc == 2 ? (c0[i] - l0) * p1 + (c1[i] - l1)                                                 \
     : nc == 3 ? ((c0[i] - l0) * p1 + (c1[i] - l1)) * p2 + (c2[i] - l2)                           \
               : (((c0[i] - l0) * p1 + (c1[i] - l1)) * p2 + (c2[i] - l2)) * p3 + (c3[i] - l3))

/* The moments kernel instantiated per (columns, runs, weights?): constant arguments fold away
 * the branches the loop would otherwise test per sample. */
#define STATS_ARGS(F, NC, W, R, C) F(i0, i1, x, mask, W, NC, cols, lo, span, ids, K, acc, R, C, orv)
#define STATS_RUNS(F, NC, C)                                                                       \
    if (runs == 1)                                                                                 \
        return wt ? STATS_ARGS(F, NC, wt, 1, C) : STATS_ARGS(F, NC, NULL, 1, C);                  \
    if (runs == 2 && NC >= 2)                                                                      \
        return wt ? STATS_ARGS(F, NC, wt, 2, C) : STATS_ARGS(F, NC, NULL, 2, C);                  \
    return wt ? STATS_ARGS(F, NC, wt, 0, C) : STATS_ARGS(F, NC, NULL, 0, C)
#define STATS_CASE(F, NC)                                                                          \
    if (orv) {                                                                                     \
        STATS_RUNS(F, NC, 1);                                                                      \
    }                                                                                              \
    STATS_RUNS(F, NC, 0)

/* Checked keys: the OR of each column's offsets c - lo (as unsigned) in registers. With spans
 * that are powers of two, every offset of column j is in range iff OR_j < span_j, so one OR
 * per column checks guessed ranges; the key, masked to [0, K) (K a power of two then), stays in
 * the table whatever the columns hold. */
#define KEY_OR_LOCALS uint64_t r0 = 0, r1 = 0, r2 = 0, r3 = 0
#define KEY_OR(i)                                                                                 \
    do {                                                                                          \
        if (nc > 0) r0 |= (uint64_t)(c0[i] - l0);                                                 \
        if (nc > 1) r1 |= (uint64_t)(c1[i] - l1);                                                 \
        if (nc > 2) r2 |= (uint64_t)(c2[i] - l2);                                                 \
        if (nc > 3) r3 |= (uint64_t)(c3[i] - l3);                                                 \
    } while (0)
/* The last column's offset, and whether a leading column (all but the last) differs between
 * samples i and j. */
#define LAST_OFF(i)                                                                               \
    (nc <= 1 ? c0[i] - l0 : nc == 2 ? c1[i] - l1 : nc == 3 ? c2[i] - l2 : c3[i] - l3)
#define LEAD_DIFF(i, j)                                                                           \
    (nc > 1 && (c0[i] != c0[j] || (nc > 2 && c1[i] != c1[j]) || (nc > 3 && c2[i] != c2[j])))
#define KEY_OR_LAST(o)                                                                            \
    do {                                                                                          \
        if (nc == 2) r1 |= (uint64_t)(o);                                                         \
        if (nc == 3) r2 |= (uint64_t)(o);                                                         \
        if (nc == 4) r3 |= (uint64_t)(o);                                                         \
    } while (0)
#define KEY_OR_STORE(orv)                                                                         \
    do {                                                                                          \
        if (nc > 0) orv[0] |= r0;                                                                 \
        if (nc > 1) orv[1] |= r1;                                                                 \
        if (nc > 2) orv[2] |= r2;                                                                 \
        if (nc > 3) orv[3] |= r3;                                                                 \
    } while (0)

/* The constant-key count nz (Acc.cz >> 32) for float64 only: with float32 inputs every
 * nonzero x - pilot in double squares to at least 2^-298 (weights at least 2^-149), so a key
 * is constant exactly when its s2 is 0, and the per-sample count is one add cheaper. */
#define CZ_ADD(T, d) (sizeof(T) == 8 ? 1 + ((int64_t)((d) != 0) << 32) : 1)

/* Fold the pairs of the trajectory that just ended into their keys: each pair weighs its
 * mean weight (1 unweighted), its sums divided by its sample count. */
#define STATS_TRAJ_FLUSH                                                                           \
    do {                                                                                           \
        for (int64_t j = 0; j < nt; j++) {                                                         \
            Pair *q = pairs + touched[j];                                                          \
            Acc *a = acc + touched[j];                                                             \
            double c = (double)(q->cz & 0xFFFFFFFF);                                               \
            a->cz += q->cz;                                                                        \
            a->w += wt ? q->w / c : 1.0;                                                           \
            a->s1 += q->s1 / c;                                                                    \
            a->s2 += q->s2 / c;                                                                    \
            memset(q, 0, sizeof(Pair));                                                            \
        }                                                                                          \
        nt = 0;                                                                                    \
    } while (0)

/* The EMA kernels per number of columns, checked (orv) or not. */
#define EMA_CASE(SUF, NC)                                                                          \
    (orv ? ema_body_##SUF(n, x, mask, wt, NC, cols, lo, span, alpha, init, b, cnt, out, K, 1, orv)  \
         : ema_body_##SUF(n, x, mask, wt, NC, cols, lo, span, alpha, init, b, cnt, out, K, 0, orv))
#define EMA_UNITS_CASE(SUF, NC)                                                                    \
    (orv ? ema_units_body_##SUF(a, e, x, mask, wt, NC, cols, lo, span, traj, pp, tt, uid, means,   \
                                keys, live, K, 1, orv + (int64_t)p * MAXC)                         \
         : ema_units_body_##SUF(a, e, x, mask, wt, NC, cols, lo, span, traj, pp, tt, uid, means,   \
                                keys, live, K, 0, NULL))
#define DEFINE_KERNELS(T, SUF)                                                                     \
    /* Per-key moments; ids[i] (may be NULL, may alias an output of the same width) gets the     \
     * key, K when masked. Weight <= 0 (or NaN) keeps a sample out of the statistics only. */     \
    static inline __attribute__((always_inline)) int64_t stats_body_##SUF(int64_t i0, int64_t i1, const T *x, const uint8_t *mask, const T *wt,     \
                        const int nc, const int64_t *const *cols, const int64_t *lo,                    \
                        const int64_t *span, int32_t *ids, int64_t K, Acc *acc, const int runs,   \
                        const int chk, uint64_t *orv) {                                           \
        KEY_LOCALS;                                                                               \
        KEY_OR_LOCALS;                                                                            \
        /* runs 1: a run of one key accumulates in registers, flushed when the key changes      \
         * (sorted keys, one key); else every sample updates its key's table entry (keys that   \
         * interleave); runs 2 (such keys whose leading columns come in runs, e.g. the agents  \
         * of one game and group): the leading part of the key is recomputed (and checked)      \
         * only when a leading column changes. count and nz share one int64: nz << 32 | count. */ \
        int64_t cur = -1, cz = 0, base = 0;                                                       \
        int64_t q0 = i0 < i1 && nc > 1 ? ~c0[i0] : 0, q1 = 0, q2 = 0; /* q0 differs at i0 */     \
        double pilot = 0, sw = 0, s1 = 0, s2 = 0;                                                 \
        for (int64_t i = i0; i < i1; i++) {                                                       \
            int64_t k;                                                                            \
            if (runs == 2) {                                                                      \
                if (c0[i] != q0 || (nc > 2 && c1[i] != q1) || (nc > 3 && c2[i] != q2)) {          \
                    q0 = c0[i];                                                                   \
                    if (nc > 2) q1 = c1[i];                                                       \
                    if (nc > 3) q2 = c2[i];                                                       \
                    base = KEY(i) - LAST_OFF(i);                                                  \
                    if (chk) KEY_OR(i);                                                           \
                }                                                                                 \
                int64_t o = LAST_OFF(i);                                                          \
                if (chk) KEY_OR_LAST(o);                                                          \
                k = base + o;                                                                     \
            } else {                                                                              \
                k = KEY(i);                                                                       \
                if (chk) KEY_OR(i);                                                               \
            }                                                                                     \
            if (chk) k &= K - 1;                                                                  \
            int on = mask ? mask[i] : 1;                                                          \
            if (ids) ids[i] = on ? (int32_t)k : (int32_t)K;                                       \
            if (!on) continue;                                                                    \
            double v = (double)x[i], w = 1.0;                                                     \
            if (wt) {                                                                             \
                w = (double)wt[i];                                                                \
                if (!(w > 0)) continue;                                                           \
            }                                                                                     \
            if (runs != 1) {                                                                      \
                Acc *a = acc + k;                                                                 \
                if (a->pilot != a->pilot) a->pilot = v;                                           \
                double d = v - a->pilot;                                                          \
                a->cz += CZ_ADD(T, d);                                                            \
                if (wt) {                                                                         \
                    a->w += w;                                                                    \
                    a->s1 += w * d;                                                               \
                    a->s2 += w * d * d;                                                           \
                } else {                                                                          \
                    a->s1 += d;                                                                   \
                    a->s2 += d * d;                                                               \
                }                                                                                 \
                continue;                                                                         \
            }                                                                                     \
            if (k != cur) {                                                                       \
                if (cur >= 0) {                                                                   \
                    Acc *a = acc + cur;                                                           \
                    a->cz += cz;                                                                  \
                    a->s1 += s1;                                                                  \
                    a->s2 += s2;                                                                  \
                    if (wt) a->w += sw;                                                           \
                }                                                                                 \
                cur = k;                                                                          \
                cz = 0;                                                                           \
                sw = s1 = s2 = 0;                                                                 \
                if (acc[k].pilot != acc[k].pilot) acc[k].pilot = v;                               \
                pilot = acc[k].pilot;                                                             \
            }                                                                                     \
            double d = v - pilot;                                                                 \
            cz += CZ_ADD(T, d);                                                                   \
            if (wt) {                                                                             \
                sw += w;                                                                          \
                s1 += w * d;                                                                      \
                s2 += w * d * d;                                                                  \
            } else {                                                                              \
                s1 += d;                                                                          \
                s2 += d * d;                                                                      \
            }                                                                                     \
        }                                                                                         \
        if (cur >= 0) {                                                                           \
            Acc *a = acc + cur;                                                                   \
            a->cz += cz;                                                                          \
            a->s1 += s1;                                                                          \
            a->s2 += s2;                                                                          \
            if (wt) a->w += sw;                                                                   \
        }                                                                                         \
        if (chk) KEY_OR_STORE(orv);                                                               \
        return 0;                                                                                 \
    }                                                                                             \
    /* orv (NULL: exact ranges) -- checked keys, K a power of two: orv[j] |= OR of column j's  \
     * offsets, which the caller compares with span j. */                                        \
    int64_t stats_##SUF(int64_t i0, int64_t i1, const T *x, const uint8_t *mask, const T *wt,     \
                        int nc, const int64_t *const *cols, const int64_t *lo,                    \
                        const int64_t *span, int32_t *ids, int64_t K, Acc *acc, int runs,         \
                        uint64_t *orv) {                                                          \
        switch (nc) {                                                                             \
        case 0: STATS_CASE(stats_body_##SUF, 0);                                                  \
        case 1: STATS_CASE(stats_body_##SUF, 1);                                                  \
        case 2: STATS_CASE(stats_body_##SUF, 2);                                                  \
        case 3: STATS_CASE(stats_body_##SUF, 3);                                                  \
        case 4: STATS_CASE(stats_body_##SUF, 4);                                                  \
        }                                                                                         \
        return -1;                                                                                \
    }                                                                                             \
                                                                                                  \
    /* Per-trajectory moments: every (trajectory, key) pair weighs its mean weight. Needs        \
     * trajectories as ascending contiguous runs (-1 otherwise). pairs [K] zeroed, touched [K]. */ \
    static inline __attribute__((always_inline)) int64_t stats_traj_body_##SUF(                  \
        int64_t i0, int64_t i1, const T *x, const uint8_t *mask, const T *wt, const int nc,       \
        const int64_t *const *cols, const int64_t *lo, const int64_t *span, const int64_t *traj,  \
        int32_t *ids, int64_t K, Acc *acc, Pair *pairs, int64_t *touched) {                       \
        KEY_LOCALS;                                                                               \
        int64_t nt = 0;                                                                           \
        for (int64_t i = i0; i < i1; i++) {                                                       \
            if (i > i0 && traj[i] != traj[i - 1]) {                                               \
                if (traj[i] < traj[i - 1]) return -1;                                             \
                STATS_TRAJ_FLUSH;                                                                 \
            }                                                                                     \
            int64_t k = KEY(i);                                                                   \
            int on = mask ? mask[i] : 1;                                                          \
            if (ids) ids[i] = on ? (int32_t)k : (int32_t)K;                                       \
            if (!on) continue;                                                                    \
            double v = (double)x[i], w = 1.0;                                                     \
            if (wt) {                                                                             \
                w = (double)wt[i];                                                                \
                if (!(w > 0)) continue;                                                           \
            }                                                                                     \
            Pair *p = pairs + k;                                                                  \
            if (p->cz == 0) { /* the pair starts: its key's pilot */                              \
                touched[nt++] = k;                                                                \
                if (acc[k].pilot != acc[k].pilot) acc[k].pilot = v;                               \
                p->pilot = acc[k].pilot;                                                          \
            }                                                                                     \
            double d = v - p->pilot;                                                              \
            p->cz += CZ_ADD(T, d);                                                                \
            if (wt) p->w += w;                                                                    \
            p->s1 += w * d;                                                                       \
            p->s2 += w * d * d;                                                                   \
        }                                                                                         \
        STATS_TRAJ_FLUSH;                                                                         \
        return 0;                                                                                 \
    }                                                                                             \
    int64_t stats_traj_##SUF(int64_t i0, int64_t i1, const T *x, const uint8_t *mask, const T *wt, int nc, const int64_t *const *cols, const int64_t *lo, const int64_t *span, const int64_t *traj, int32_t *ids, int64_t K, Acc *acc, Pair *pairs, int64_t *touched) { \
        switch (nc) { \
        case 0: return wt ? stats_traj_body_##SUF(i0, i1, x, mask, wt, 0, cols, lo, span, traj, ids, K, acc, pairs, touched) : stats_traj_body_##SUF(i0, i1, x, mask, NULL, 0, cols, lo, span, traj, ids, K, acc, pairs, touched); \
        case 1: return wt ? stats_traj_body_##SUF(i0, i1, x, mask, wt, 1, cols, lo, span, traj, ids, K, acc, pairs, touched) : stats_traj_body_##SUF(i0, i1, x, mask, NULL, 1, cols, lo, span, traj, ids, K, acc, pairs, touched); \
        case 2: return wt ? stats_traj_body_##SUF(i0, i1, x, mask, wt, 2, cols, lo, span, traj, ids, K, acc, pairs, touched) : stats_traj_body_##SUF(i0, i1, x, mask, NULL, 2, cols, lo, span, traj, ids, K, acc, pairs, touched); \
        case 3: return wt ? stats_traj_body_##SUF(i0, i1, x, mask, wt, 3, cols, lo, span, traj, ids, K, acc, pairs, touched) : stats_traj_body_##SUF(i0, i1, x, mask, NULL, 3, cols, lo, span, traj, ids, K, acc, pairs, touched); \
        case 4: return wt ? stats_traj_body_##SUF(i0, i1, x, mask, wt, 4, cols, lo, span, traj, ids, K, acc, pairs, touched) : stats_traj_body_##SUF(i0, i1, x, mask, NULL, 4, cols, lo, span, traj, ids, K, acc, pairs, touched); \
        } \
        return -1; \
    } \
                                                                                                  \
    /* out[i] = (x[i] - mean[k]) * inv[k], 0 for masked samples. Keys come from ids (which may  \
     * alias out: each is read before it is written) or, when ids is NULL, from the columns. */   \
    static inline __attribute__((always_inline)) void apply_body_##SUF(int64_t i0, int64_t i1, const T *x, const int32_t *ids, const uint8_t *mask, \
                     const int nc, const int64_t *const *cols, const int64_t *lo, const int64_t *span,  \
                     const T *mean, const T *inv, int64_t K, T *out) {                            \
        KEY_LOCALS;                                                                               \
        for (int64_t i = i0; i < i1; i++) {                                                       \
            int64_t k;                                                                            \
            if (ids)                                                                              \
                k = ids[i];                                                                       \
            else                                                                                  \
                k = (mask && !mask[i]) ? K : KEY(i);                       \
            out[i] = k == K ? (T)0 : (T)((x[i] - mean[k]) * inv[k]);                              \
        }                                                                                         \
    }                                                                                             \
    void apply_##SUF(int64_t i0, int64_t i1, const T *x, const int32_t *ids, const uint8_t *mask, int nc, const int64_t *const *cols, const int64_t *lo, const int64_t *span, const T *mean, const T *inv, int64_t K, T *out) { \
        switch (nc) { \
        case 0: apply_body_##SUF(i0, i1, x, ids, mask, 0, cols, lo, span, mean, inv, K, out); return; \
        case 1: apply_body_##SUF(i0, i1, x, ids, mask, 1, cols, lo, span, mean, inv, K, out); return; \
        case 2: apply_body_##SUF(i0, i1, x, ids, mask, 2, cols, lo, span, mean, inv, K, out); return; \
        case 3: apply_body_##SUF(i0, i1, x, ids, mask, 3, cols, lo, span, mean, inv, K, out); return; \
        case 4: apply_body_##SUF(i0, i1, x, ids, mask, 4, cols, lo, span, mean, inv, K, out); return; \
        } \
         \
    } \
                                                                                                  \
    /* SPIRAL's per-key EMA in sample order: out = x - b (before the update), then               \
     * b <- alpha b + (1 - alpha) x. Weight <= 0: compared with init, updates nothing. */          \
    static inline __attribute__((always_inline)) void ema_body_##SUF(int64_t n, const T *x, const uint8_t *mask, const T *wt, const int nc,               \
                   const int64_t *const *cols, const int64_t *lo, const int64_t *span,            \
                   double alpha, const double *init, double *b, double *cnt, T *out, int64_t K,   \
                   const int chk, uint64_t *orv) {                                                \
        KEY_LOCALS;                                                                               \
        KEY_OR_LOCALS;                                                                            \
        /* a run of one key keeps its baseline in a register */                                   \
        int64_t cur = -1;                                                                         \
        double bc = 0, nu = 0, beta = 1.0 - alpha;                                                \
        for (int64_t i = 0; i < n; i++) {                                                         \
            if (chk) KEY_OR(i); /* checked keys: masked samples' columns too */                   \
            if (mask && !mask[i]) {                                                               \
                out[i] = 0;                                                                       \
                continue;                                                                         \
            }                                                                                     \
            int64_t k = KEY(i);                                                                   \
            if (chk) k &= K - 1;                                                                  \
            T v = x[i];                                                                           \
            if (wt && !(wt[i] > 0)) {                                                             \
                out[i] = v - (T)init[k];                                                          \
                continue;                                                                         \
            }                                                                                     \
            if (k != cur) {                                                                       \
                if (cur >= 0) {                                                                   \
                    b[cur] = bc;                                                                  \
                    cnt[cur] += nu;                                                               \
                }                                                                                 \
                cur = k;                                                                          \
                bc = b[k];                                                                        \
                nu = 0;                                                                           \
            }                                                                                     \
            out[i] = v - (T)bc;                                                                   \
            bc = alpha * bc + beta * (double)v;                                                   \
            nu += 1;                                                                              \
        }                                                                                         \
        if (cur >= 0) {                                                                           \
            b[cur] = bc;                                                                          \
            cnt[cur] += nu;                                                                       \
        }                                                                                         \
        if (chk) KEY_OR_STORE(orv);                                                               \
    }                                                                                             \
    /* orv: checked keys (as stats_); K the table size. */                                       \
    void ema_##SUF(int64_t n, const T *x, const uint8_t *mask, const T *wt, int nc, const int64_t *const *cols, const int64_t *lo, const int64_t *span, double alpha, const double *init, double *b, double *cnt, T *out, int64_t K, uint64_t *orv) { \
        switch (nc) { \
        case 0: EMA_CASE(SUF, 0); return; \
        case 1: EMA_CASE(SUF, 1); return; \
        case 2: EMA_CASE(SUF, 2); return; \
        case 3: EMA_CASE(SUF, 3); return; \
        case 4: EMA_CASE(SUF, 4); return; \
        } \
    } \
                                                                                                  \
    /* Return-to-go per key over samples in order, g = r + gamma g_next, 0 for masked samples;   \
     * g (double [K]) zeroed; out may alias r. */                                                 \
    static inline __attribute__((always_inline)) void turn_returns_body_##SUF(int64_t n, const T *r, const uint8_t *mask, const int nc,                  \
                            const int64_t *const *cols, const int64_t *lo, const int64_t *span,   \
                            double gamma, double *g, T *out) {                                    \
        KEY_LOCALS;                                                                               \
        for (int64_t i = n - 1; i >= 0; i--) {                                                    \
            if (mask && !mask[i]) {                                                               \
                out[i] = 0;                                                                       \
                continue;                                                                         \
            }                                                                                     \
            int64_t k = KEY(i);                                            \
            g[k] = (double)r[i] + gamma * g[k];                                                   \
            out[i] = (T)g[k];                                                                     \
        }                                                                                         \
    }  \
    void turn_returns_##SUF(int64_t n, const T *r, const uint8_t *mask, int nc, const int64_t *const *cols, const int64_t *lo, const int64_t *span, double gamma, double *g, T *out) { \
        switch (nc) { \
        case 0: turn_returns_body_##SUF(n, r, mask, 0, cols, lo, span, gamma, g, out); return; \
        case 1: turn_returns_body_##SUF(n, r, mask, 1, cols, lo, span, gamma, g, out); return; \
        case 2: turn_returns_body_##SUF(n, r, mask, 2, cols, lo, span, gamma, g, out); return; \
        case 3: turn_returns_body_##SUF(n, r, mask, 3, cols, lo, span, gamma, g, out); return; \
        case 4: turn_returns_body_##SUF(n, r, mask, 4, cols, lo, span, gamma, g, out); return; \
        } \
    }

/* Touch a fresh buffer's pages in ascending order: kernels that write backwards would
 * otherwise take their 2 MB page faults in descending order, which costs several times more. */
void touch_pages(uint8_t *p, int64_t nbytes) {
    for (int64_t i = 0; i < nbytes; i += 4096) p[i] = 0;
}

/* Per part, the counts (low 32 bits of cz) of key-1 entries added to their key-2 entries. */
void add_counts(int P, int64_t K1, const Acc *acc1, const int64_t *k1_to_k2, int64_t K2,
                Acc *acc2) {
    for (int p = 0; p < P; p++)
        for (int64_t k = 0; k < K1; k++)
            acc2[p * K2 + k1_to_k2[k]].cz += acc1[p * K1 + k].cz & 0xFFFFFFFF;
}

/* (min, max) of each column over the m probed positions idx: out[2j], out[2j + 1]. */
void probe_range(int nc, const int64_t *const *cols, const int64_t *idx, int64_t m, int64_t *out) {
    for (int j = 0; j < nc; j++) {
        int64_t a = INT64_MAX, b = INT64_MIN;
        for (int64_t q = 0; q < m; q++) {
            int64_t v = cols[j][idx[q]];
            a = v < a ? v : a;
            b = v > b ? v : b;
        }
        out[2 * j] = a;
        out[2 * j + 1] = b;
    }
}

/* The moments kernel's mode for keys like samples [0, n): 1 when they mostly come in runs
 * (fewer changes than n / 4), 2 when their leading columns do (fewer changes than n / 16),
 * else 0. */
int64_t mostly_runs(int64_t n, int nc, const int64_t *const *cols, const int64_t *lo,
                    const int64_t *span) {
    KEY_LOCALS;
    int64_t changes = 0, lead = 0;
    for (int64_t i = 1; i < n; i++) {
        changes += KEY(i) != KEY(i - 1);
        lead += LEAD_DIFF(i, i - 1);
    }
    if (changes * 4 < n) return 1;
    return nc > 1 && lead * 16 < n ? 2 : 0;
}

/* 1 when trajectories are ascending contiguous runs and (turn not NULL) turns never decrease
 * inside a run, else 0. */
int64_t in_order(int64_t n, const int64_t *traj, const int64_t *turn) {
    for (int64_t i = 1; i < n; i++) {
        if (traj[i] < traj[i - 1]) return 0;
        if (turn && traj[i] == traj[i - 1] && turn[i] < turn[i - 1]) return 0;
    }
    return 1;
}

DEFINE_KERNELS(float, f32)
DEFINE_KERNELS(double, f64)

#define TURN_FUSED(SUF, W, C)                                                                      \
    turn_fused_body_##SUF(i0, i1, x, ids, W, traj, turn, mean1, inv1, K1, k1_to_k2, gamma, E,      \
                          touched, K2, acc2, out, k2out, C)
#define DEFINE_MORE(T, SUF)                                                                        \
    /* MARS player_turn after the first normalization's moments, backward over [i0, i1):        \
     * r = (x - mean1[id]) * inv1[id] (ids: the first key, K1 when masked; may alias out),      \
     * g = r + gamma g_next per (trajectory, key 2) -- key 2 = k1_to_k2[id], (game, agent) -- in  \
     * a table E [K2] of {g, sum} restarted at every trajectory (touched: its keys), out = g,    \
     * and the key-2 moments of g (acc2) for samples with positive weight. centered (float32,   \
     * unweighted, the final step centers only): the trajectory's sum of g per key, added to s1 \
     * when it ends (acc2 pilots 0, counts those of key 1, summed by the caller); a key whose   \
     * returns are all c still gets mean c and outputs 0, since a sum of n float32 values c in  \
     * double is n c exactly (n < 2^29; beyond, within far less than a float32 ulp of it). Else \
     * per-sample pilot-shifted moments. Trajectories must be ascending runs with turns (when  \
     * given) that never decrease inside them, parts whole trajectories: 1 otherwise (out is    \
     * then unspecified). */                                                                      \
    static inline __attribute__((always_inline)) int64_t turn_fused_body_##SUF(                  \
        int64_t i0, int64_t i1, const T *x, const int32_t *ids, const T *wt, const int64_t *traj, \
        const int64_t *turn, const T *mean1, const T *inv1, int64_t K1,                           \
        const int64_t *k1_to_k2, double gamma, Ret *E, int64_t *touched, int64_t K2, Acc *acc2,   \
        T *out, uint16_t *k2out, const int centered) {                                            \
        int64_t nt = 0, bad = 0;                                                                  \
        if (i1 <= i0) return 0;                                                                   \
        int64_t tn = traj[i1 - 1], un = turn ? turn[i1 - 1] : 0;                                  \
        for (int64_t i = i1 - 1; i >= i0; i--) {                                                  \
            int64_t tc = traj[i], fresh = tc != tn; /* order checks without branches */           \
            bad |= tc > tn;                                                                       \
            if (turn) {                                                                           \
                int64_t uc = turn[i];                                                             \
                bad |= !fresh & (uc > un);                                                        \
                un = uc;                                                                          \
            }                                                                                     \
            tn = tc;                                                                              \
            if (fresh) RET_FLUSH(centered);                                                       \
            int64_t id = ids[i];                                                                  \
            if (id == K1) {                                                                       \
                out[i] = 0;                                                                       \
                if (k2out) k2out[i] = (uint16_t)K2;                                               \
                continue;                                                                         \
            }                                                                                     \
            T r = (T)((x[i] - mean1[id]) * inv1[id]);                                             \
            int64_t k = k1_to_k2[id];                                                             \
            if (k2out) k2out[i] = (uint16_t)k;                                                    \
            Ret *e = E + k;                                                                       \
            double next = e->g;                                                                   \
            if (ret_unset(next)) {                                                                \
                next = 0;                                                                         \
                touched[nt++] = k;                                                                \
            }                                                                                     \
            e->g = (double)r + gamma * next;                                                      \
            T g = (T)e->g;                                                                        \
            out[i] = g;                                                                           \
            double w = 1.0;                                                                       \
            if (wt) {                                                                             \
                w = (double)wt[i];                                                                \
                if (!(w > 0)) continue;                                                           \
            }                                                                                     \
            if (centered) {                                                                       \
                e->sum += (double)g;                                                              \
                continue;                                                                         \
            }                                                                                     \
            Acc *a = acc2 + k;                                                                    \
            double v = (double)g;                                                                 \
            if (a->pilot != a->pilot) a->pilot = v;                                               \
            double d = v - a->pilot;                                                              \
            a->cz += CZ_ADD(T, d);                                                                \
            if (wt) a->w += w; /* unweighted: the count */                                        \
            a->s1 += w * d;                                                                       \
            a->s2 += w * d * d;                                                                   \
        }                                                                                         \
        RET_FLUSH(centered);                                                                      \
        return bad;                                                                               \
    }                                                                                             \
    int64_t turn_fused_##SUF(int64_t i0, int64_t i1, const T *x, const int32_t *ids, const T *wt, \
                             const int64_t *traj, const int64_t *turn, const T *mean1,            \
                             const T *inv1, int64_t K1, const int64_t *k1_to_k2, double gamma,    \
                             Ret *E, int64_t *touched, int64_t K2, Acc *acc2, T *out,             \
                             uint16_t *k2out, int centered) {                                     \
        if (centered && sizeof(T) == 4 && !wt) return TURN_FUSED(SUF, NULL, 1);                   \
        return wt ? TURN_FUSED(SUF, wt, 0) : TURN_FUSED(SUF, NULL, 0);                            \
    }                                                                                             \
                                                                                                  \
    /* out[i] = table[key], 0 where masked. */                                                    \
    static inline __attribute__((always_inline)) void gather_body_##SUF(int64_t i0, int64_t i1, const uint8_t *mask, const int nc,                        \
                      const int64_t *const *cols, const int64_t *lo, const int64_t *span,         \
                      const T *table, T *out) {                                                   \
        KEY_LOCALS;                                                                               \
        for (int64_t i = i0; i < i1; i++) out[i] = (mask && !mask[i]) ? (T)0 : table[KEY(i)];     \
    }  \
    void gather_##SUF(int64_t i0, int64_t i1, const uint8_t *mask, int nc, const int64_t *const *cols, const int64_t *lo, const int64_t *span, const T *table, T *out) { \
        switch (nc) { \
        case 0: gather_body_##SUF(i0, i1, mask, 0, cols, lo, span, table, out); return; \
        case 1: gather_body_##SUF(i0, i1, mask, 1, cols, lo, span, table, out); return; \
        case 2: gather_body_##SUF(i0, i1, mask, 2, cols, lo, span, table, out); return; \
        case 3: gather_body_##SUF(i0, i1, mask, 3, cols, lo, span, table, out); return; \
        case 4: gather_body_##SUF(i0, i1, mask, 4, cols, lo, span, table, out); return; \
        } \
    }

DEFINE_MORE(float, f32)
DEFINE_MORE(double, f64)

/* The value of each check column in each unit (the key of the columns), first[c * K + k];
 * 1 when every unit holds one value per check column, else 0. first starts at INT64_MIN. */
int64_t unit_values(int64_t i0, int64_t i1, int nc, const int64_t *const *cols, const int64_t *lo,
                    const int64_t *span, int64_t K, int nchk, const int64_t *const *chk,
                    int64_t *first) {
    KEY_LOCALS;
    for (int64_t i = i0; i < i1; i++) {
        int64_t k = KEY(i);
        for (int c = 0; c < nchk; c++) {
            int64_t *f = first + c * K + k, v = chk[c][i];
            if (*f == INT64_MIN)
                *f = v;
            else if (*f != v)
                return 0;
        }
    }
    return 1;
}

/* Parallel drivers: part p covers [cuts[p], cuts[p + 1]) and owns table p (stride K); one
 * OpenMP thread per part. Built with -fopenmp they run on the OpenMP runtime torch already
 * loaded (same libgomp.so.1), so torch's spinning idle workers do the work instead of
 * competing with other threads for the cores; without OpenMP the parts run one after another. */
#define PAR_FOR _Pragma("omp parallel for num_threads(P) schedule(static, 1) reduction(|:bad)")
#define DEFINE_PAR(T, SUF)                                                                         \
    int64_t stats_par_##SUF(int P, const int64_t *cuts, const T *x, const uint8_t *mask,          \
                            const T *wt, int nc, const int64_t *const *cols, const int64_t *lo,   \
                            const int64_t *span, int32_t *ids, int64_t K, Acc *acc, int runs,     \
                            uint64_t *orv) {                                                      \
        int64_t bad = 0;                                                                          \
        PAR_FOR                                                                                   \
        for (int p = 0; p < P; p++)                                                               \
            bad |= stats_##SUF(cuts[p], cuts[p + 1], x, mask, wt, nc, cols, lo, span, ids, K,     \
                               acc + (int64_t)p * K, runs, orv ? orv + p * MAXC : NULL) != 0;     \
        return bad;                                                                               \
    }                                                                                             \
    int64_t stats_traj_par_##SUF(int P, const int64_t *cuts, const T *x, const uint8_t *mask,     \
                                 const T *wt, int nc, const int64_t *const *cols,                 \
                                 const int64_t *lo, const int64_t *span, const int64_t *traj,     \
                                 int32_t *ids, int64_t K, Acc *acc, Pair *pairs,                  \
                                 int64_t *touched) {                                              \
        int64_t bad = 0;                                                                          \
        PAR_FOR                                                                                   \
        for (int p = 0; p < P; p++)                                                               \
            bad |= stats_traj_##SUF(cuts[p], cuts[p + 1], x, mask, wt, nc, cols, lo, span, traj,  \
                                    ids, K, acc + (int64_t)p * K, pairs + (int64_t)p * K,         \
                                    touched + (int64_t)p * K) != 0;                               \
        return bad;                                                                               \
    }                                                                                             \
    int64_t apply_par_##SUF(int P, const int64_t *cuts, const T *x, const int32_t *ids,           \
                            const uint8_t *mask, int nc, const int64_t *const *cols,              \
                            const int64_t *lo, const int64_t *span, const T *mean, const T *inv,  \
                            int64_t K, T *out) {                                                  \
        int64_t bad = 0;                                                                          \
        PAR_FOR                                                                                   \
        for (int p = 0; p < P; p++)                                                               \
            apply_##SUF(cuts[p], cuts[p + 1], x, ids, mask, nc, cols, lo, span, mean, inv, K,     \
                        out);                                                                     \
        return bad;                                                                               \
    }                                                                                             \
    int64_t turn_fused_par_##SUF(int P, const int64_t *cuts, const T *x, const int32_t *ids,      \
                                 const T *wt, const int64_t *traj, const int64_t *turn,           \
                                 const T *mean1, const T *inv1, int64_t K1,                       \
                                 const int64_t *k1_to_k2, double gamma, Ret *E, int64_t *touched, \
                                 Acc *acc2, int64_t K2, T *out, uint16_t *k2out, int centered) {  \
        int64_t bad = 0;                                                                          \
        PAR_FOR                                                                                   \
        for (int p = 0; p < P; p++)                                                               \
            bad |= turn_fused_##SUF(cuts[p], cuts[p + 1], x, ids, wt, traj, turn, mean1, inv1,    \
                                    K1, k1_to_k2, gamma, E + (int64_t)p * K2,                     \
                                    touched + (int64_t)p * K2, K2,                                \
                                    acc2 + (int64_t)p * K2, out,                                  \
                                    k2out, centered);                                             \
        return bad;                                                                               \
    }                                                                                             \
    /* out = (out - mean[k]) * inv[k] in place with 16-bit keys; masked samples hold 0 and the \
     * key K2, whose table entries are 0, so they stay 0 without a branch. */                     \
    int64_t apply16_par_##SUF(int P, const int64_t *cuts, const uint16_t *k16, const T *mean,     \
                              const T *inv, T *out) {                                             \
        int64_t bad = 0;                                                                          \
        PAR_FOR                                                                                   \
        for (int p = 0; p < P; p++)                                                               \
            for (int64_t i = cuts[p]; i < cuts[p + 1]; i++) {                                     \
                uint16_t k = k16[i];                                                              \
                out[i] = (T)((out[i] - mean[k]) * inv[k]);                                        \
            }                                                                                     \
        return bad;                                                                               \
    }                                                                                             \
    int64_t gather_par_##SUF(int P, const int64_t *cuts, const uint8_t *mask, int nc,             \
                             const int64_t *const *cols, const int64_t *lo, const int64_t *span,  \
                             const T *table, T *out) {                                            \
        int64_t bad = 0;                                                                          \
        PAR_FOR                                                                                   \
        for (int p = 0; p < P; p++)                                                               \
            gather_##SUF(cuts[p], cuts[p + 1], mask, nc, cols, lo, span, table, out);             \
        return bad;                                                                               \
    }

DEFINE_PAR(float, f32)
DEFINE_PAR(double, f64)

int64_t unit_values_par(int P, const int64_t *cuts, int nc, const int64_t *const *cols,
                        const int64_t *lo, const int64_t *span, int64_t K, int nchk,
                        const int64_t *const *chk, int64_t *first) {
    int64_t bad = 0;
    PAR_FOR
    for (int p = 0; p < P; p++)
        bad |= !unit_values(cuts[p], cuts[p + 1], nc, cols, lo, span, K, nchk, chk,
                            first + (int64_t)p * nchk * K);
    return bad;
}

int64_t in_order_par(int P, const int64_t *cuts, const int64_t *traj, const int64_t *turn) {
    int64_t bad = 0;
    PAR_FOR
    for (int p = 0; p < P; p++) {
        int64_t a = cuts[p] > 0 ? cuts[p] - 1 : 0; /* each part also checks its left seam */
        bad |= !in_order(cuts[p + 1] - a, traj + a, turn ? turn + a : 0);
    }
    return bad;
}

/* role_ema per trajectory on threads, in three steps. 1 (parts of whole trajectories, in
 * parallel): each (trajectory, key) unit's mean value (weighted; plain, and not live, when its
 * weights are all 0) into means[u], keys[u], live[u], units numbered from the part's first
 * sample (a part holds at most as many units as samples), and each sample's unit into uid
 * (-1 masked; uid may alias a float32 output). 2 (sequential, part after part): the EMA over
 * units in trajectory order, means[u] <- the unit's baseline before its update. 3 (parallel):
 * out = x - baseline of the sample's unit. */
#define DEFINE_EMA_UNITS(T, SUF)                                                                   \
    static inline __attribute__((always_inline)) int64_t ema_units_body_##SUF(                    \
        int64_t i0, int64_t i1, const T *x, const uint8_t *mask, const T *wt, const int nc,        \
        const int64_t *const *cols, const int64_t *lo, const int64_t *span, const int64_t *traj,   \
        Unit *pairs, int64_t *touched, int32_t *uid, double *means, int64_t *keys,                 \
        uint8_t *live, int64_t K, const int chk, uint64_t *orv) {                                  \
        KEY_LOCALS;                                                                                \
        KEY_OR_LOCALS;                                                                             \
        const int64_t km = chk ? K - 1 : -1; /* checked keys stay in the table */                 \
        int64_t nt = 0, s = i0, nu = i0;                                                           \
        for (int64_t i = i0; i <= i1; i++) {                                                       \
            if (i == i1 || (i > i0 && traj[i] != traj[i - 1])) {                                   \
                if (i < i1 && traj[i] < traj[i - 1]) return -1;                                    \
                for (int64_t j = 0; j < nt; j++) {                                                 \
                    Unit *p = pairs + touched[j];                                                  \
                    int on = wt ? p->w > 0 : 1;                                                    \
                    means[nu] = on && wt ? p->swx / p->w : p->sx / p->cnt;                         \
                    keys[nu] = touched[j];                                                         \
                    live[nu] = (uint8_t)on;                                                        \
                    p->before = (double)nu++; /* the unit's number, for its samples */             \
                }                                                                                  \
                for (int64_t q = s; q < i; q++)                                                    \
                    uid[q] = (mask && !mask[q]) ? -1 : (int32_t)pairs[KEY(q) & km].before;         \
                for (int64_t j = 0; j < nt; j++) memset(pairs + touched[j], 0, sizeof(Unit));      \
                nt = 0;                                                                            \
                s = i;                                                                             \
                if (i == i1) break;                                                                \
            }                                                                                      \
            if (chk) KEY_OR(i);                                                                    \
            if (mask && !mask[i]) continue;                                                        \
            int64_t k = KEY(i) & km;                                                               \
            Unit *p = pairs + k;                                                                   \
            if (p->cnt == 0) touched[nt++] = k;                                                    \
            p->cnt += 1;                                                                           \
            p->sx += (double)x[i];                                                                 \
            if (wt) {                                                                              \
                p->w += (double)wt[i];                                                             \
                p->swx += (double)wt[i] * (double)x[i];                                            \
            }                                                                                      \
        }                                                                                          \
        if (chk) KEY_OR_STORE(orv);                                                                \
        return nu - i0;                                                                            \
    }                                                                                              \
    int64_t ema_units_par_##SUF(int P, const int64_t *cuts, const T *x, const uint8_t *mask,       \
                                const T *wt, int nc, const int64_t *const *cols,                   \
                                const int64_t *lo, const int64_t *span, const int64_t *traj,       \
                                Unit *pairs, int64_t *touched, int64_t K, int32_t *uid,            \
                                double *means, int64_t *keys, uint8_t *live, int64_t *nunits,      \
                                uint64_t *orv) {                                                   \
        int64_t bad = 0;                                                                           \
        PAR_FOR                                                                                    \
        for (int p = 0; p < P; p++) {                                                              \
            int64_t r = -1, a = cuts[p], e = cuts[p + 1];                                          \
            Unit *pp = pairs + (int64_t)p * K;                                                     \
            int64_t *tt = touched + (int64_t)p * K;                                                \
            switch (nc) {                                                                          \
            case 0: r = EMA_UNITS_CASE(SUF, 0); break;                                       \
            case 1: r = EMA_UNITS_CASE(SUF, 1); break;                                       \
            case 2: r = EMA_UNITS_CASE(SUF, 2); break;                                       \
            }                                                                                      \
            nunits[p] = r;                                                                         \
            bad |= r < 0;                                                                          \
        }                                                                                          \
        return bad;                                                                                \
    }                                                                                              \
    int64_t ema_out_par_##SUF(int P, const int64_t *cuts, const T *x, const int32_t *uid,          \
                              const double *before, T *out) {                                      \
        int64_t bad = 0;                                                                           \
        PAR_FOR                                                                                    \
        for (int p = 0; p < P; p++)                                                                \
            for (int64_t i = cuts[p]; i < cuts[p + 1]; i++) {                                      \
                int32_t u = uid[i];                                                                \
                out[i] = u < 0 ? (T)0 : x[i] - (T)before[u];                                       \
            }                                                                                      \
        return bad;                                                                                \
    }

DEFINE_EMA_UNITS(float, f32)
DEFINE_EMA_UNITS(double, f64)

void ema_scan(int P, const int64_t *cuts, const int64_t *nunits, double *means,
              const int64_t *keys, const uint8_t *live, double alpha, const double *init,
              double *b, double *cnt) {
    for (int p = 0; p < P; p++)
        for (int64_t u = cuts[p]; u < cuts[p] + nunits[p]; u++) {
            int64_t k = keys[u];
            double r = means[u];
            if (live[u]) {
                means[u] = b[k];
                b[k] = alpha * b[k] + (1.0 - alpha) * r;
                cnt[k] += 1;
            } else {
                means[u] = init[k];
            }
        }
}

/* Per-key mean and multiplier [K] from the parts' accumulators [P][K] (the rules of
 * marl.advantages: fewer than 2 contributing samples: mean 0, multiplier 1; a constant key:
 * its value, multiplier 0; else 1 / (std + eps), or 1 without scale). A key is constant when
 * no sample differs from its part's pilot (nz: cz >> 32 in float64, s2 != 0 in float32) and
 * the parts' pilots agree. centered (with scale 0): accumulators that hold no s2 and no nz;
 * every key then counts as varying, which gives a constant key the same output, x - its value
 * = 0, since its s1 is exactly 0. */
#define DEFINE_TABLES(T, SUF)                                                                      \
    void tables_##SUF(int P, int64_t K, const Acc *acc, int weighted, double eps, int scale,      \
                      int unbiased, int centered, T *mean, T *inv) {                               \
        _Pragma("omp parallel for if (K >= 16384)")                                                \
        for (int64_t k = 0; k < K; k++) {                                                          \
            double ref = NAN, cnt = 0, w = 0, s1 = 0, s2 = 0, nz = 0;                              \
            for (int p = 0; p < P; p++) {                                                          \
                const Acc *a = acc + (int64_t)p * K + k;                                           \
                double c = (double)(a->cz & 0xFFFFFFFF);                                           \
                if (c == 0) continue;                                                              \
                double wp = weighted ? a->w : c;                                                   \
                if (ref != ref) ref = a->pilot;                                                    \
                double d = a->pilot - ref;                                                         \
                s2 += a->s2 + 2 * d * a->s1 + wp * d * d;                                          \
                s1 += a->s1 + wp * d;                                                              \
                nz += (centered ? 1 : sizeof(T) == 8 ? (double)(a->cz >> 32) : a->s2 != 0) +      \
                      (d != 0);                                                                    \
                cnt += c;                                                                          \
                w += wp;                                                                           \
            }                                                                                      \
            if (cnt < 2) {                                                                         \
                mean[k] = 0;                                                                       \
                inv[k] = 1;                                                                        \
                continue;                                                                          \
            }                                                                                      \
            if (nz == 0) {                                                                         \
                mean[k] = (T)ref;                                                                  \
                inv[k] = 0;                                                                        \
                continue;                                                                          \
            }                                                                                      \
            double wd = w > 1e-300 ? w : 1e-300, m1 = s1 / wd, var = s2 / wd - m1 * m1;            \
            if (var < 0) var = 0;                                                                  \
            if (unbiased && w > 1) var *= w / (w - 1);                                             \
            mean[k] = (T)(ref + m1);                                                               \
            inv[k] = scale ? (T)(1.0 / (sqrt(var) + eps)) : (T)1;                                  \
        }                                                                                          \
    }

DEFINE_TABLES(float, f32)
DEFINE_TABLES(double, f64)
