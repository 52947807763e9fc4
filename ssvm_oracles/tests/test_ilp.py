"""The integer program of ``ssvm_oracles.ilp`` against brute force, and where it is used."""

import itertools
import subprocess
import sys

import numpy as np
import pytest

from ssvm_core import primal_objective, solve
from ssvm_core.latent import LatentSSVM
from ssvm_oracles._local_dual import tight_labelling
from ssvm_oracles.elimination import (
    elimination_decode,
    elimination_order,
    elimination_table_entries,
)
from ssvm_oracles.graph import GraphModel, grid_edges
from ssvm_oracles.ilp import (
    AUTO_MAX_VARIABLES,
    ilp_decode,
    local_polytope,
    n_variables,
    solve_local_polytope,
)
from ssvm_oracles.latent import LatentGraphModel, LatentGridModel
from ssvm_oracles.potentials import decode_potentials


def _score(u, pw, edges, z):
    z = np.asarray(z)
    return float(u[np.arange(len(z)), z].sum()
                 + pw[np.arange(len(edges)), z[edges[:, 0]], z[edges[:, 1]]].sum())


def _loopy_graph(rng, n):
    """A random connected graph on n nodes with cycles: a ring plus random chords."""
    ring = [(i, (i + 1) % n) for i in range(n)]
    chords = [(i, j) for i in range(n) for j in range(i + 2, n)
              if (i, j) != (0, n - 1) and rng.random() < 0.3]
    return np.array(ring + chords, dtype=np.int64)


def _random_problem(seed: int, ties: bool, max_states: int, spread: int):
    """A random loopy graph on 3-6 nodes with 2..max_states states and its tables: Gaussian,
    or with ``ties`` integers in [-spread, spread] (many tied labellings)."""
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(3, 7)), int(rng.integers(2, max_states + 1))
    edges = _loopy_graph(rng, n)
    draw = (lambda size: rng.integers(-spread, spread + 1, size=size).astype(float)) if ties \
        else (lambda size: rng.normal(size=size))
    return rng, edges, draw((n, K)), draw((len(edges), K, K))


def _brute(u, pw, edges, allowed=None):
    n, K = u.shape
    ranges = [range(K)] * n if allowed is None else [range(a) for a in allowed]
    return max(_score(u, pw, edges, z) for z in itertools.product(*ranges))


def _assert_exact(decode, seed: int, ties: bool):
    """``decode`` (``ilp_decode``, ``elimination_decode``) scores as brute force on a random
    loopy problem, with and without ``n_allowed``; returns the problem's edges and tables."""
    rng, edges, u, pw = _random_problem(seed, ties, max_states=4, spread=2)
    n, K = u.shape
    z = decode(u, pw, edges)
    assert z.dtype == np.int32 and z.shape == (n,)
    # ties: several maximisers may exist; the answer must score as the best one
    assert _score(u, pw, edges, z) == pytest.approx(_brute(u, pw, edges), abs=1e-9)
    allowed = rng.integers(1, K + 1, size=n)
    z = decode(u, pw, edges, n_allowed=allowed)
    assert np.all(z < allowed)
    assert _score(u, pw, edges, z) == pytest.approx(_brute(u, pw, edges, allowed), abs=1e-9)
    return edges, u, pw


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("elimination", [True, False])
def test_ilp_matches_brute_force_on_loopy_graphs(seed, ties, elimination, monkeypatch):
    import ssvm_oracles.ilp as ilp

    if not elimination:                       # the integer program where the LP is loose
        monkeypatch.setattr(ilp, "ELIMINATION_MAX_ENTRIES", 0)
    edges, u, pw = _assert_exact(ilp_decode, seed, ties)
    n, K = u.shape
    # the LP relaxation bounds the integer optimum from above, and its score is attained
    relaxed = solve_local_polytope(u, pw, edges)
    assert relaxed.score >= _brute(u, pw, edges) - 1e-9
    exact = solve_local_polytope(u, pw, edges, integral=True)
    assert exact.score == pytest.approx(_brute(u, pw, edges), abs=1e-7)
    np.testing.assert_allclose(exact.node_marginals.sum(axis=1), 1.0, atol=1e-9)


def _argmax(u, pw, edges):
    n, K = u.shape
    return np.array(max(itertools.product(range(K), repeat=n),
                        key=lambda z: _score(u, pw, edges, z)), dtype=np.int32)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("ties", [False, True])
def test_a_candidate_changes_the_time_not_the_answer(seed, ties, monkeypatch):
    """With a candidate the answer is the one without, except where the integer program
    would choose among tied maximisers: then it is the candidate, proven a maximiser."""
    import ssvm_oracles.ilp as ilp

    rng, edges, u, pw = _random_problem(seed, ties, max_states=3, spread=1)
    n, K = u.shape
    allowed = rng.integers(1, K + 1, size=n)
    calls = []
    monkeypatch.setattr(ilp, "solve_local_polytope", lambda *a, **k: calls.append(
        k.get("integral", False)) or solve_local_polytope(*a, **k))
    for n_allowed in (None, allowed):
        labellings = [np.array(z) for z in itertools.product(
            *[range(a) for a in ([K] * n if n_allowed is None else n_allowed)])]
        best = max(_score(u, pw, edges, z) for z in labellings)
        del calls[:]
        plain = ilp_decode(u, pw, edges, n_allowed=n_allowed)
        integer_program = any(calls)
        for candidate in (max(labellings, key=lambda z: _score(u, pw, edges, z)),
                          rng.integers(0, K, size=n), np.full(n, K - 1)):
            del calls[:]
            z = ilp_decode(u, pw, edges, n_allowed=n_allowed, candidate=candidate)
            assert _score(u, pw, edges, z) == pytest.approx(best, abs=1e-9)
            if not integer_program:
                np.testing.assert_array_equal(z, plain)
            elif not np.array_equal(z, plain):
                np.testing.assert_array_equal(z, candidate)
                assert not any(calls)        # the candidate replaced the integer program
            if not calls:                    # no cold solve: proven the unique maximiser
                assert sum(_score(u, pw, edges, other) > best - 1e-9
                           for other in labellings) == 1
    with pytest.raises(ValueError, match="candidate must hold"):
        ilp_decode(u, pw, edges, candidate=np.full(n + 1, 0))
    with pytest.raises(ValueError, match="candidate must hold"):
        ilp_decode(u, pw, edges, candidate=np.full(n, K))


@pytest.mark.parametrize("seed", range(6))
def test_a_candidate_function_is_called_only_when_the_dual_proves_nothing(seed):
    """``candidate`` may be a function: ``ilp_decode`` calls it only when MPLP's dual did not
    prove the answer, and answers as with the labelling it returns."""
    import ssvm_oracles.ilp as ilp

    rng, edges, u, pw = _random_problem(seed, True, max_states=3, spread=1)
    n, K = u.shape
    guess = rng.integers(0, K, size=n)
    calls = []

    def candidate():
        calls.append(1)
        return guess

    z = ilp_decode(u, pw, edges, candidate=candidate)
    np.testing.assert_array_equal(z, ilp_decode(u, pw, edges, candidate=guess))
    assert bool(calls) == (ilp._dual_proves_unique(u, pw, edges, None) is None)
    edges = _tree(rng, n)                     # Gaussian scores on a tree: proven, not called
    u, pw = rng.normal(size=(n, K)), rng.normal(size=(n - 1, K, K))
    ilp_decode(u, pw, edges, candidate=lambda: pytest.fail("the candidate was computed"))
    frustrated = np.array([[0, 1], [1, 2], [2, 0]])  # a fractional relaxation: called
    pw = np.tile(np.array([[0.0, 1.0], [1.0, 0.0]]), (3, 1, 1))
    with pytest.raises(ValueError, match="candidate must hold"):
        ilp_decode(np.zeros((3, 2)), pw, frustrated, candidate=lambda: np.full(3, 2))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ties", [False, True])
def test_elimination_matches_brute_force_on_loopy_graphs(seed, ties):
    edges, u, pw = _assert_exact(elimination_decode, seed, ties)
    # repeated and reversed edges are tables like any other
    twice = np.concatenate([edges, edges[:, ::-1]])
    pw2 = np.concatenate([pw, 0.5 * pw.transpose(0, 2, 1)])
    z = elimination_decode(u, pw2, twice)
    assert _score(u, pw2, twice, z) == pytest.approx(_brute(u, pw2, twice), abs=1e-9)


def test_elimination_order_width_on_known_graphs():
    path = np.array([[i, i + 1] for i in range(5)])
    assert elimination_order(6, path)[1] == 2
    ring = np.concatenate([path, [[5, 0]]])
    assert elimination_order(6, ring)[1] == 3
    order, width = elimination_order(16, grid_edges(4, 4))
    assert sorted(order.tolist()) == list(range(16)) and width <= 5
    assert elimination_order(3, np.zeros((0, 2), int))[1] == 1
    entries = elimination_table_entries(16, grid_edges(4, 4), 3)
    assert 16 * 3 <= entries <= 16 * 3 ** width and entries % 3 == 0
    assert elimination_table_entries(6, path, 4) == 5 * 4 ** 2 + 4   # 5 pairs, then 1 node
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=f"tables of {entries} entries"):
        elimination_decode(rng.normal(size=(16, 3)), rng.normal(size=(24, 3, 3)),
                           grid_edges(4, 4), max_entries=entries - 1)


@pytest.mark.parametrize("exact", ["elimination", "integer program"])
def test_ilp_decode_without_a_tight_relaxation(exact, monkeypatch):
    """Where the rounded relaxation falls short, variable elimination decides when its
    tables are small enough, else the integer program; both are exact."""
    import ssvm_oracles.ilp as ilp

    if exact == "integer program":
        monkeypatch.setattr(ilp, "ELIMINATION_MAX_ENTRIES", 0)
    integral = []
    monkeypatch.setattr(ilp, "solve_local_polytope", lambda *a, **k: integral.append(
        k.get("integral", False)) or solve_local_polytope(*a, **k))
    # a frustrated triangle: the relaxation's optimum is the fractional half-half point
    edges = np.array([[0, 1], [1, 2], [2, 0]])
    u = np.array([[0.0, 0.1], [0.0, 0.0], [0.0, 0.0]])
    pw = np.tile(np.array([[0.0, 1.0], [1.0, 0.0]]), (3, 1, 1))
    z = ilp_decode(u, pw, edges)
    assert _score(u, pw, edges, z) == pytest.approx(_brute(u, pw, edges))
    assert any(integral) == (exact == "integer program")


def test_a_unique_maximiser_skips_the_cold_solve_and_a_tie_does_not(monkeypatch):
    import ssvm_oracles.ilp as ilp

    cold = []
    monkeypatch.setattr(ilp, "solve_local_polytope",
                        lambda *a, **k: cold.append(1) or solve_local_polytope(*a, **k))
    edges = grid_edges(3, 3)
    rng = np.random.default_rng(0)
    u = rng.normal(size=(9, 3))
    u[np.arange(9), rng.integers(0, 3, 9)] += 5.0        # a clear winner per node
    pw = 0.1 * rng.normal(size=(len(edges), 3, 3))
    z = ilp_decode(u, pw, edges, candidate=_argmax(u, pw, edges))
    assert not cold and _score(u, pw, edges, z) == pytest.approx(_brute(u, pw, edges))
    # every labelling ties: the cold relaxation's vertex decides, as without a candidate
    zero_u, zero_pw = np.zeros((9, 3)), np.zeros((len(edges), 3, 3))
    z = ilp_decode(zero_u, zero_pw, edges, candidate=np.full(9, 2))
    assert cold
    np.testing.assert_array_equal(z, ilp_decode(zero_u, zero_pw, edges))


def test_the_answer_does_not_depend_on_earlier_calls_or_the_thread():
    """The warm-started relaxation's history changes at most whether the cold solve runs."""
    import concurrent.futures

    rng = np.random.default_rng(3)
    edges = grid_edges(3, 3)
    problems = [(rng.integers(-1, 2, size=(9, 3)).astype(float),
                 rng.integers(-1, 2, size=(len(edges), 3, 3)).astype(float),
                 rng.integers(0, 3, size=9)) for _ in range(12)]

    def answers(order):
        return {k: ilp_decode(*problems[k][:2], edges, candidate=problems[k][2]).tolist()
                for k in order}

    first = answers(range(12))
    assert answers(reversed(range(12))) == first
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert pool.submit(answers, [5, 1, 9, 0, 11, 2, 3, 4, 6, 7, 8, 10]).result() == first


def test_local_polytope_holds_exactly_the_indicators_of_a_labelling():
    rng = np.random.default_rng(0)
    edges = _loopy_graph(rng, 5)
    A, b = local_polytope(5, 3, edges)
    assert A.shape == (5 + 2 * len(edges) * 3, n_variables(5, len(edges), 3))
    z = rng.integers(0, 3, 5)
    x = np.concatenate([np.eye(3)[z].ravel()]
                       + [np.outer(np.eye(3)[z[u]], np.eye(3)[z[v]]).ravel() for u, v in edges])
    np.testing.assert_array_equal(A @ x, b)
    x[5 * 3 + 1] += 1.0                 # an edge entry that disagrees with its endpoints
    assert np.any(A @ x != b)


@pytest.mark.parametrize("seed", range(4))
def test_decode_potentials_certifies_small_loopy_graphs(seed):
    rng = np.random.default_rng(seed)
    edges = grid_edges(3, 3)
    u, pw = rng.normal(size=(9, 3)), rng.normal(size=(len(edges), 3, 3))
    best = _brute(u, pw, edges)
    for inference in ("ilp", "auto"):
        # max_brute=10: the compiled brute force does not apply; auto takes the program
        z, exact = decode_potentials(u, pw, edges, inference=inference, max_brute=10)
        assert exact
        assert _score(u, pw, edges, z) == pytest.approx(best, abs=1e-9)
    z, exact = decode_potentials(u, pw, edges, inference="max-product", max_brute=10)
    assert not exact and _score(u, pw, edges, z) <= best + 1e-12
    # binary tables that are not submodular: graph cuts do not apply, the program does
    u2, pw2 = rng.normal(size=(9, 2)), rng.normal(size=(len(edges), 2, 2))
    pw2[:, 0, 1] += 3.0
    z, exact = decode_potentials(u2, pw2, edges, max_brute=10)
    assert exact and _score(u2, pw2, edges, z) == pytest.approx(_brute(u2, pw2, edges))


def test_auto_leaves_large_loopy_graphs_to_flagged_approximations():
    edges = grid_edges(30, 30)
    assert n_variables(900, len(edges), 3) > AUTO_MAX_VARIABLES
    rng = np.random.default_rng(0)
    _, exact = decode_potentials(rng.normal(size=(900, 3)),
                                 rng.normal(size=(len(edges), 3, 3)), edges)
    assert not exact


def test_ilp_checks_its_inputs():
    edges = np.array([[0, 1], [1, 2], [2, 0]])
    u, pw = np.zeros((3, 2)), np.zeros((3, 2, 2))
    with pytest.raises(ValueError, match="pairwise must have shape"):
        ilp_decode(u, pw[:2], edges)
    with pytest.raises(ValueError, match="outside"):
        ilp_decode(u, pw, edges + 1)
    with pytest.raises(ValueError, match="finite"):
        ilp_decode(np.full((3, 2), np.nan), pw, edges)
    with pytest.raises(ValueError, match="n_allowed"):
        ilp_decode(u, pw, edges, n_allowed=[1, 3, 1])
    with pytest.raises(ValueError, match="inference must be one of"):
        decode_potentials(u, pw, edges, inference="branch-and-bound")
    with pytest.raises(ValueError, match="inference must be one of"):
        LatentGraphModel(2, 2, inference="ad3")


@pytest.mark.parametrize("seed", range(3))
def test_latent_ilp_model_is_exact_loss_augmented_and_in_the_completion(seed):
    rng = np.random.default_rng(seed)
    model = LatentGraphModel(2, [1, 2], n_features=2, inference="ilp")
    edges = _loopy_graph(rng, 5)
    x = (rng.normal(size=(5, 2)), edges)
    w = rng.normal(size=model.size_joint_feature)
    h = np.array(rng.integers(0, 3, 5), dtype=np.int32)
    y = model.label_from_latent(h)
    cands = list(model.enumerate_labellings(x))
    aug, exact = model.loss_augmented_inference(x, h, w)
    best = max(model.loss(h, c) + w @ model.joint_feature(x, c) for c in cands)
    assert exact
    assert model.loss(h, aug) + w @ model.joint_feature(x, aug) == pytest.approx(best)
    completion = model.latent(x, y, w)
    assert np.array_equal(model.label_from_latent(completion), y)
    best = max(w @ model.joint_feature(x, c) for c in cands
               if np.array_equal(model.label_from_latent(c), y))
    assert w @ model.joint_feature(x, completion) == pytest.approx(best)


def _crosses(n, size, seed=0):
    """Grids with a noisy cross on label 1, whose centre looks unlike its arms."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        y = np.zeros((size, size), dtype=np.int32)
        r, c = rng.integers(1, size - 1, 2)
        y[r, :] = y[:, c] = 1
        f = np.stack([1.0 - y, y * 1.0], axis=-1) + 0.8 * rng.normal(size=(size, size, 2))
        f[r, c] = [0.5, 0.5]
        X.append(f)
        Y.append(y)
    return X, Y


@pytest.mark.parametrize("inference", ["auto", "ilp"])
def test_latent_fit_on_a_loopy_grid_ends_every_round_certified(inference):
    X, Y = _crosses(n=3, size=3)
    # max_brute=16: no compiled exact method applies to the 3 x 3 grids with K = 3
    model = LatentGridModel(2, [1, 2], n_features=2, inference=inference, max_brute=16)
    inner_tol = 2e-2
    svm = LatentSSVM(model, lam=1.0, latent_iter=3, tol=0.0, inner_tol=inner_tol,
                     solver_options={"step": "pairwise"}, random_state=0).fit(X, Y)
    assert all(r["certified"] and r["inner_gap"] <= inner_tol for r in svm.history_)
    objectives = [r["objective"] for r in svm.history_]
    assert all(b <= a + inner_tol for a, b in zip(objectives, objectives[1:]))
    assert model.bind(X, svm.H_).exact


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("ties", [False, True])
def test_the_relaxation_with_and_without_presolve_reaches_the_same_optimum(seed, ties):
    """Both are optimal vertices of the local polytope with the same score; without ties (a
    unique optimum, Gaussian scores) they are the same vertex."""
    rng, edges, u, pw = _random_problem(seed, ties, max_states=4, spread=1)
    n, K = u.shape
    A, b = local_polytope(n, K, edges)
    allowed = rng.integers(1, K + 1, size=n) if seed % 2 else None
    answers = [solve_local_polytope(u, pw, edges, presolve=presolve, n_allowed=allowed)
               for presolve in (False, True)]
    for r in answers:
        x = np.concatenate([r.node_marginals.ravel(), r.edge_marginals.ravel()])
        np.testing.assert_allclose(A @ x, b, atol=1e-9)
        assert x.min() >= 0.0
        score = u.ravel() @ r.node_marginals.ravel() + pw.ravel() @ r.edge_marginals.ravel()
        assert score == pytest.approx(r.score, abs=1e-9)
    assert answers[0].score == pytest.approx(answers[1].score, abs=1e-9)
    assert answers[0].score >= _brute(u, pw, edges, allowed) - 1e-9
    if allowed is not None:
        for r in answers:
            assert np.all(r.node_marginals[np.arange(K)[None, :] >= allowed[:, None]] == 0.0)
    if not ties:
        np.testing.assert_allclose(answers[0].node_marginals, answers[1].node_marginals,
                                   atol=1e-9)


def _tree(rng, n):
    """A random tree on n nodes (each node after the first hangs from an earlier one)."""
    return np.array([(int(rng.integers(0, v)), v) for v in range(1, n)], dtype=np.int64)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("graph", ["tree", "loopy"])
def test_a_labelling_the_dual_proves_is_an_optimal_vertex(seed, ties, graph):
    """MPLP's dual (``_local_dual.tight_labelling``) is a proof: whenever it returns a
    labelling, the labelling is a brute-force maximiser (also with ``n_allowed``), and its
    score and the dual bound are the relaxation's optimum (HiGHS with presolve)."""
    rng, edges, u, pw = _random_problem(seed, ties, max_states=4, spread=2)
    n, K = u.shape
    if graph == "tree":
        edges = _tree(rng, n)
        pw = pw[:len(edges)]
    for allowed in (None, rng.integers(1, K + 1, size=n)):
        states = np.full(n, K, dtype=np.intp) if allowed is None else allowed.astype(np.intp)
        found = tight_labelling(u, np.ascontiguousarray(pw), edges, states, 1e-9)
        if graph == "tree" and not ties:     # tight, and the beliefs' maxima are unique
            assert found is not None
        if found is None:
            continue
        z, score, bound, _, _ = found
        assert z.dtype == np.int32 and np.all(z < states)
        best = _brute(u, pw, edges, allowed)
        assert _score(u, pw, edges, z) == pytest.approx(best, abs=1e-9)
        assert score == pytest.approx(best, abs=1e-9)
        lp = solve_local_polytope(u, pw, edges, n_allowed=allowed, presolve=True).score
        assert bound == pytest.approx(lp, abs=1e-8) and bound >= score - 1e-9 * (1 + abs(bound))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("graph", ["tree", "loopy"])
def test_a_labelling_the_dual_proves_unique_is_the_cold_solve_s_answer(seed, ties, graph):
    """``ilp_decode`` returns MPLP's labelling without a cold solve only when it is the only
    maximiser (brute force) and the relaxation's only optimum: the cold relaxation's vertex
    is that labelling."""
    import ssvm_oracles.ilp as ilp

    rng, edges, u, pw = _random_problem(seed, ties, max_states=4, spread=1)
    n, K = u.shape
    if graph == "tree":
        edges = _tree(rng, n)
        pw = np.ascontiguousarray(pw[:len(edges)])
    for allowed in (None, rng.integers(1, K + 1, size=n)):
        z = ilp._dual_proves_unique(u, pw, edges, allowed)
        if graph == "tree" and not ties:
            assert z is not None              # Gaussian scores: one maximiser, proven
        if z is None:
            continue
        ranges = [range(K)] * n if allowed is None else [range(a) for a in allowed]
        scores = sorted((_score(u, pw, edges, y) for y in itertools.product(*ranges)),
                        reverse=True)
        assert _score(u, pw, edges, z) == pytest.approx(scores[0], abs=1e-9)
        assert len(scores) == 1 or scores[1] < scores[0] - 1e-9
        cold = solve_local_polytope(u, pw, edges, n_allowed=allowed, presolve=True)
        np.testing.assert_allclose(cold.node_marginals, np.eye(K)[z], atol=1e-9)


def test_a_self_loop_is_left_to_highs():
    """MPLP's update does not cover an edge from a node to itself: the relaxation of a graph
    with one is solved by HiGHS, with the optimum of the program as built."""
    import ssvm_oracles.ilp as ilp

    rng = np.random.default_rng(3)
    edges = np.array([[0, 1], [1, 1], [1, 2]], dtype=np.int64)
    u, pw = rng.normal(size=(3, 3)), rng.normal(size=(3, 3, 3))
    assert ilp._dual_proof(u, pw, edges, np.ones((3, 3), dtype=bool)) is None
    ours = solve_local_polytope(u, pw, edges)
    assert ours.score == pytest.approx(solve_local_polytope(u, pw, edges, presolve=True).score,
                                       abs=1e-9)
    z = ilp_decode(u, pw, edges)
    assert _score(u, pw, edges, z) == pytest.approx(_brute(u, pw, edges), abs=1e-9)


def test_the_dual_proves_nothing_on_a_fractional_relaxation(monkeypatch):
    """A frustrated triangle: the relaxation's optimum (all marginals one half) beats every
    labelling, so no labelling can reach the dual's bound and HiGHS answers."""
    import ssvm_oracles.ilp as ilp

    edges = np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int64)
    u = np.array([[0.0, 0.1], [0.0, 0.0], [0.0, 0.0]])
    pw = np.tile(np.array([[0.0, 1.0], [1.0, 0.0]]), (3, 1, 1))
    assert tight_labelling(u, pw, edges, np.full(3, 2, dtype=np.intp), 1e-9) is None
    relaxed = solve_local_polytope(u, pw, edges)
    np.testing.assert_allclose(relaxed.node_marginals, 0.5)
    assert relaxed.score == pytest.approx(3.05) and relaxed.score > _brute(u, pw, edges)
    # and a tight one is answered without HiGHS, as the labelling's vertex
    monkeypatch.setattr(ilp, "_cold_relaxation", lambda *a: pytest.fail("HiGHS ran"))
    pw = -pw                                  # attractive: the relaxation is tight
    relaxed = solve_local_polytope(u, pw, edges)
    np.testing.assert_array_equal(relaxed.node_marginals, [[0, 1], [0, 1], [0, 1]])
    np.testing.assert_array_equal(relaxed.edge_marginals, np.tile([0, 0, 0, 1], (3, 1)))
    assert relaxed.score == pytest.approx(_brute(u, pw, edges)) == pytest.approx(0.1)


def test_solving_prints_nothing():
    """HiGHS prints its banner at the first ``highspy.Highs()`` of a process, before any
    option can silence it; the relaxations, the warm model and the integer program print
    nothing (a fresh process, so that the first instance is ours)."""
    code = ("import numpy as np; from ssvm_oracles.ilp import ilp_decode, solve_local_polytope;"
            "e = np.array([[0, 1], [1, 2], [2, 0]]); r = np.random.default_rng(0);"
            "u, p = r.normal(size=(3, 2)), r.normal(size=(3, 2, 2));"
            "ilp_decode(u, p, e, candidate=np.zeros(3, int));"
            "solve_local_polytope(u, p, e); solve_local_polytope(u, p, e, integral=True)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (out.stdout, out.stderr) == ("", "")


def test_importing_the_packages_does_not_import_networkx():
    code = ("import sys, ssvm_oracles, ssvm.compat.pystruct.models, ssvm.compat.pystruct.learners;"
            "print('networkx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("edge_features", [False, True])
def test_graph_model_ilp_oracle_is_exact_loss_augmented_and_in_prediction(seed, edge_features):
    rng = np.random.default_rng(seed)
    K, n = 3, 5
    edges = _loopy_graph(rng, n)
    x = (rng.normal(size=(n, 2)), edges)
    if edge_features:
        x = x + (rng.normal(size=(len(edges), 2)),)
    model = GraphModel(K, inference="ilp", class_weight=[1.0, 2.0, 0.5],
                       antisymmetric_edge_features=[1] if edge_features else ())
    y = rng.integers(0, K, n)
    oracle = model.bind([x], [y])
    w = rng.normal(size=oracle.n_features)
    z, psi, loss = oracle.solve(0, w)
    cands = list(model.enumerate_labellings(x))
    best = max(model.loss(y, c) + w @ model.joint_feature(x, c) for c in cands)
    assert loss + w @ model.joint_feature(x, z) == pytest.approx(best)
    np.testing.assert_allclose(psi, model.joint_feature(x, y) - model.joint_feature(x, z))
    assert loss == model.loss(y, z) and oracle.exact
    (pred,) = model.predict([x], w)
    assert w @ model.joint_feature(x, pred) == pytest.approx(
        max(w @ model.joint_feature(x, c) for c in cands))


def test_graph_model_ilp_training_ends_certified_with_the_brute_force_objective():
    rng = np.random.default_rng(0)
    X, Y = [], []
    for _ in range(4):
        y = rng.integers(0, 3, 6)
        X.append((np.eye(3)[y] + rng.normal(scale=1.0, size=(6, 3)), _loopy_graph(rng, 6)))
        Y.append(y)
    oracle = GraphModel(3, inference="ilp").bind(X, Y)
    result = solve(oracle, 1.0, step="pairwise", tol=1e-2, max_passes=300, random_state=0)
    assert result.certified and result.gap <= 1e-2
    brute = GraphModel(3, inference="brute").bind(X, Y)
    assert primal_objective(oracle, 1.0, result.w) == pytest.approx(
        primal_objective(brute, 1.0, result.w), rel=1e-12)
