/* Chain kernels written so that compilers vectorise them (restrict pointers).
 *
 * Max-sum message passing: written so that compilers vectorise
 * the O(K^2) step: restrict-qualified pointers and a plain max (no arg-max
 * bookkeeping in the inner loop; back-pointers are recovered on the
 * decoded path only, from the same sums, so ties resolve identically).
 */
#ifndef SSVM_MAXSUM_H
#define SSVM_MAXSUM_H

#include <stddef.h>

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

#endif
