/* Chain kernels written so that compilers vectorise them (restrict pointers),
 * and the scatter of a direction's token-label entries into w (unrolled).
 *
 * Max-sum message passing: written so that compilers vectorise
 * the O(K^2) step: restrict-qualified pointers and a plain max (no arg-max
 * bookkeeping in the inner loop; back-pointers are recovered on the
 * decoded path only, from the same sums, so ties resolve identically).
 */
#ifndef SSVM_MAXSUM_H
#define SSVM_MAXSUM_H

#include <stddef.h>
#include <stdint.h>

/* y[k] += alpha * x[k] for k < K (emission rows into a unary table) */
static inline void ssvm_axpy(double alpha, const double *restrict x,
                             double *restrict y, ptrdiff_t K)
{
    for (ptrdiff_t k = 0; k < K; ++k)
        y[k] += alpha * x[k];
}

/* best[b] = max_a prev[a] + trans[a*K + b] */
static inline void ssvm_maxsum_step(const double *restrict prev,
                                    const double *restrict trans,
                                    double *restrict best, ptrdiff_t K)
{
    for (ptrdiff_t b = 0; b < K; ++b)
        best[b] = prev[0] + trans[b];
    for (ptrdiff_t a = 1; a < K; ++a) {
        const double va = prev[a];
        const double *restrict row = trans + a * K;
        for (ptrdiff_t b = 0; b < K; ++b) {
            const double cand = va + row[b];
            best[b] = cand > best[b] ? cand : best[b];
        }
    }
}

/* The smallest a maximising prev[a] + trans[a*K + b]. */
static inline ptrdiff_t ssvm_maxsum_argmax(const double *prev, const double *trans,
                                           ptrdiff_t b, ptrdiff_t K)
{
    ptrdiff_t arg = 0;
    double best = prev[0] + trans[b];
    for (ptrdiff_t a = 1; a < K; ++a) {
        const double cand = prev[a] + trans[a * K + b];
        if (cand > best) {
            best = cand;
            arg = a;
        }
    }
    return arg;
}

/* One token's entries of a direction into w (out) and, when out2 is not NULL,
 * the lazy average (out2): out[f*K + k_j] += x_f * a[j] and
 * out2[f*K + k_j] += (c2 * x_f) * a[j] for each feature f = feats[p] of the token
 * (value x_f = vals[p]; when vals is NULL, x_f = 1 and the terms are a[j] and
 * c2 * a[j]) and each of its m entries (state k_j = idx[j] - shift, coefficient
 * a[j]).  Feature by feature, so the row of f is found once for all the entries;
 * the entries go four at a time (a token carries one to four labels in a
 * direction, as a rule).  Every entry of out and out2 receives its terms in the
 * order of p, as entry by entry. */
static inline void ssvm_chain_scatter(const int32_t *feats, const double *vals, ptrdiff_t n,
                                      ptrdiff_t K, const int32_t *idx, ptrdiff_t shift,
                                      const double *a, ptrdiff_t m, double *out,
                                      double *out2, double c2)
{
    for (ptrdiff_t j0 = 0; j0 < m; j0 += 4) {
        const ptrdiff_t r = m - j0 < 4 ? m - j0 : 4;
        const ptrdiff_t k0 = idx[j0] - shift, k1 = r > 1 ? idx[j0 + 1] - shift : 0,
                        k2 = r > 2 ? idx[j0 + 2] - shift : 0,
                        k3 = r > 3 ? idx[j0 + 3] - shift : 0;
        const double a0 = a[j0], a1 = r > 1 ? a[j0 + 1] : 0.0,
                     a2 = r > 2 ? a[j0 + 2] : 0.0, a3 = r > 3 ? a[j0 + 3] : 0.0;
        const double b0 = c2 * a0, b1 = c2 * a1, b2 = c2 * a2, b3 = c2 * a3;
        if (vals != NULL) {
            for (ptrdiff_t p = 0; p < n; ++p) {
                const ptrdiff_t f = (ptrdiff_t)feats[p] * K;
                const double v = vals[p], v2 = c2 * v;
                double *row = out + f;
                row[k0] += v * a0;
                if (r > 1) row[k1] += v * a1;
                if (r > 2) row[k2] += v * a2;
                if (r > 3) row[k3] += v * a3;
                if (out2 != NULL) {
                    double *row2 = out2 + f;
                    row2[k0] += v2 * a0;
                    if (r > 1) row2[k1] += v2 * a1;
                    if (r > 2) row2[k2] += v2 * a2;
                    if (r > 3) row2[k3] += v2 * a3;
                }
            }
            continue;
        }
        if (out2 == NULL) {
            for (ptrdiff_t p = 0; p < n; ++p) {
                double *row = out + (ptrdiff_t)feats[p] * K;
                row[k0] += a0;
                if (r > 1) row[k1] += a1;
                if (r > 2) row[k2] += a2;
                if (r > 3) row[k3] += a3;
            }
            continue;
        }
        switch (r) {                    /* binary features with the average: unrolled */
        case 1:
            for (ptrdiff_t p = 0; p < n; ++p) {
                const ptrdiff_t f = (ptrdiff_t)feats[p] * K;
                out[f + k0] += a0;
                out2[f + k0] += b0;
            }
            break;
        case 2:
            for (ptrdiff_t p = 0; p < n; ++p) {
                const ptrdiff_t f = (ptrdiff_t)feats[p] * K;
                out[f + k0] += a0; out[f + k1] += a1;
                out2[f + k0] += b0; out2[f + k1] += b1;
            }
            break;
        case 3:
            for (ptrdiff_t p = 0; p < n; ++p) {
                const ptrdiff_t f = (ptrdiff_t)feats[p] * K;
                out[f + k0] += a0; out[f + k1] += a1; out[f + k2] += a2;
                out2[f + k0] += b0; out2[f + k1] += b1; out2[f + k2] += b2;
            }
            break;
        default:
            for (ptrdiff_t p = 0; p < n; ++p) {
                const ptrdiff_t f = (ptrdiff_t)feats[p] * K;
                out[f + k0] += a0; out[f + k1] += a1; out[f + k2] += a2; out[f + k3] += a3;
                out2[f + k0] += b0; out2[f + k1] += b1; out2[f + k2] += b2;
                out2[f + k3] += b3;
            }
        }
    }
}

#endif
