"""Small CRF problems and an independent local-polytope LP, for the relaxed-training tests.

The LP (SciPy's ``linprog`` on a constraint matrix written here) and brute force over
labellings check the compat cutting planes' relaxed oracle and certificates without going
through the library's own inference.
"""

import itertools

import numpy as np
from scipy.optimize import linprog

from ssvm.compat.pystruct.utils.graph import make_grid_edges
from ssvm.compat.pystruct.utils.inference import expand_sym


def frustrated_grids(n=4, noise=1.0, seed=0):
    """Binary 2 x 3 images on the 8-neighbourhood (triangles), labels alternating along rows and
    columns: training learns repulsive pairwise weights, and the LP on the triangles goes
    fractional."""
    rng = np.random.default_rng(seed)
    base = np.add.outer(np.arange(2), np.arange(3)) % 2
    Y = [base if i % 2 == 0 else 1 - base for i in range(n)]
    X = [np.eye(2)[y] + noise * rng.normal(size=(2, 3, 2)) for y in Y]
    return X, Y


def potentials(x, y, w, K):
    """Loss-augmented unary scores (n_nodes, K), the pairwise matrix and the edges of a
    symmetric 8-neighbourhood GridCRF, from w's layout written out here."""
    features = np.asarray(x).reshape(-1, np.shape(x)[-1])
    F = features.shape[1]
    unary = features @ w[:K * F].reshape(K, F).T
    unary += np.arange(K)[None, :] != np.ravel(y)[:, None]        # Hamming loss
    return unary, expand_sym(w[K * F:]), make_grid_edges(x, neighborhood=8)


def lp_optimum(unary, pairwise, edges):
    """max over the local polytope of sum_v unary_v . mu_v + sum_e pairwise . mu_e (linprog)."""
    n, K = unary.shape
    E = edges.shape[0]
    n_var = n * K + E * K * K
    c = -np.concatenate([unary.ravel(), np.tile(pairwise.ravel(), E)])
    rows = []
    for v in range(n):                                   # each node's marginal sums to 1
        row = np.zeros(n_var)
        row[v * K:(v + 1) * K] = 1
        rows.append((row, 1.0))
    for e, (s, t) in enumerate(edges):                   # edge marginals agree with the nodes'
        block = n * K + e * K * K
        for a in range(K):
            row = np.zeros(n_var)
            row[block + a * K:block + (a + 1) * K] = 1
            row[s * K + a] = -1
            rows.append((row, 0.0))
            row = np.zeros(n_var)
            row[block + a:block + K * K:K] = 1
            row[t * K + a] = -1
            rows.append((row, 0.0))
    result = linprog(c, A_eq=np.array([r for r, _ in rows]), b_eq=[b for _, b in rows],
                     bounds=(0, 1), method="highs")
    assert result.status == 0
    return -result.fun


def labelling_score(unary, pairwise, edges, labels):
    return float(unary[np.arange(len(labels)), labels].sum()
                 + pairwise[labels[edges[:, 0]], labels[edges[:, 1]]].sum())


def brute_max(unary, pairwise, edges):
    n, K = unary.shape
    return max(labelling_score(unary, pairwise, edges, np.array(labels))
               for labels in itertools.product(range(K), repeat=n))


def relaxed_primal(X, Y, w, C, K=2):
    """||w||^2 / 2 + C sum_i (LP optimum_i - score of y_i): the relaxed problem's primal."""
    total = 0.0
    for x, y in zip(X, Y):
        unary, pairwise, edges = potentials(x, y, w, K)
        total += lp_optimum(unary, pairwise, edges) - labelling_score(unary, pairwise, edges,
                                                                      np.ravel(y))
    return 0.5 * w @ w + C * total


def integral_primal(X, Y, w, C, K=2):
    total = 0.0
    for x, y in zip(X, Y):
        unary, pairwise, edges = potentials(x, y, w, K)
        total += brute_max(unary, pairwise, edges) - labelling_score(unary, pairwise, edges,
                                                                     np.ravel(y))
    return 0.5 * w @ w + C * total


def chains(n=5, length=6, K=3, seed=0):
    rng = np.random.default_rng(seed)
    Y = [rng.integers(0, K, size=length) for _ in range(n)]
    X = [np.eye(K)[y] + 1.5 * rng.normal(size=(length, K)) for y in Y]
    return X, Y
