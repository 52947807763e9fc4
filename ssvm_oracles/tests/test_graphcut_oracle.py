"""GraphCutModel / GraphCutOracle: min-cut against enumeration, loss, inputs, errors.

The max-flow is checked against brute force on small graphs and against
scipy.sparse.csgraph.maximum_flow (an independent implementation) on larger ones.
"""

from __future__ import annotations

import importlib.util
import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import maximum_flow

from ssvm_core import BruteForceOracle, MaxOracle, as_oracle
from ssvm_core.testing import check_oracle, enumerate_problem, scaled_examples
from ssvm_oracles import GraphCutModel, GraphCutOracle, NonSubmodularError
from ssvm_oracles.graphcut import balanced_weights, min_cut, pymaxflow_min_cut

needs_pymaxflow = pytest.mark.skipif(importlib.util.find_spec("maxflow") is None,
                                     reason="PyMaxflow (extra ssvm-oracles[graphcut])")


def random_graph(rng, n_nodes: int, n_unary: int, n_pairwise: int, density: float,
                 unary_density: float = 1.0):
    """A random undirected graph on n_nodes with Gaussian unary and uniform pairwise features.

    With ``unary_density < 1`` the unary features are sparse (stored in CSR form by the
    model when at most 20% are nonzero).
    """
    pairs = np.array(list(itertools.combinations(range(n_nodes), 2)), dtype=np.int64)
    pairs = pairs.reshape(-1, 2)[rng.random(len(pairs)) < density]
    flip = rng.random(len(pairs)) < 0.5                      # endpoint order must not matter
    pairs[flip] = pairs[flip, ::-1]
    unary = rng.normal(size=(n_nodes, n_unary)) * (rng.random((n_nodes, n_unary)) < unary_density)
    pairwise = rng.random((len(pairs), n_pairwise)) * (rng.random((len(pairs), n_pairwise)) < 0.8)
    return unary, pairs, pairwise


@st.composite
def graph_data(draw):
    """1-3 images of 1-8 nodes each, with labels and a seeded generator for weights."""
    n_images = draw(st.integers(1, 3))
    n_unary = draw(st.integers(1, 4))
    n_pairwise = draw(st.integers(1, 3))
    density = draw(st.sampled_from([0.0, 0.3, 0.6, 1.0]))
    unary_density = draw(st.sampled_from([1.0, 0.15]))
    as_sparse = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X, Y = [], []
    for _ in range(n_images):
        n_nodes = draw(st.integers(1, 8))
        unary, edges, pairwise = random_graph(rng, n_nodes, n_unary, n_pairwise, density,
                                              unary_density)
        X.append((sp.csr_array(unary) if as_sparse else unary, edges, pairwise))
        Y.append(rng.integers(0, 2, size=n_nodes))
    return X, Y, n_unary, n_pairwise, rng


def feasible_weights(rng, n_unary, n_pairwise):
    """Weights with w_P >= 0 at several scales (some pairwise weights exactly 0)."""
    out = []
    for scale in (0.1, 1.0, 5.0):
        w_pairwise = rng.exponential(scale, n_pairwise) * (rng.random(n_pairwise) < 0.7)
        out.append(np.concatenate([rng.normal(scale=scale, size=n_unary), w_pairwise]))
    return out


def reference_scores(x, y_true, w, n_unary):
    """H(y) = L(y) + <w, phi(y)> - <w, phi(y_true)> for every labelling, from the formulas.

    Written from Osokin et al. (2016), App. I.3 without the model's code: score(y) = sum_p (2 y_p -
    1)
    <w_U, x_p> - sum_{pq} <w_P, x_pq> [y_p != y_q]; class-balanced Hamming loss.
    """
    unary, edges, pairwise = x
    unary = unary.toarray() if sp.issparse(unary) else unary
    n = len(y_true)

    def score(y):
        s = sum((2 * y[p] - 1) * float(unary[p] @ w[:n_unary]) for p in range(n))
        return s - sum(float(pairwise[e] @ w[n_unary:])
                       for e, (p, q) in enumerate(edges) if y[p] != y[q])

    counts = [sum(1 for v in y_true if v == c) for c in (0, 1)]
    classes = sum(1 for c in counts if c)
    labellings = list(itertools.product((0, 1), repeat=n))
    H = []
    for y in labellings:
        loss = sum(1.0 / (classes * counts[y_true[p]]) for p in range(n) if y[p] != y_true[p])
        H.append(loss + score(y) - score(list(y_true)))
    return np.array(H), labellings


@settings(max_examples=scaled_examples(40))
@given(graph_data())
def test_oracle_equals_brute_force(data):
    X, Y, n_unary, n_pairwise, rng = data
    model = GraphCutModel()
    oracle = model.bind(X, Y)
    assert isinstance(oracle, GraphCutOracle)
    assert (oracle.n_blocks, oracle.n_features) == (len(X), n_unary + n_pairwise)
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    # Ties between labellings are possible (e.g. isolated nodes with zero weights).
    check_oracle(oracle, problem, feasible_weights(rng, n_unary, n_pairwise), atol=1e-9,
                 check_labels=False)


@settings(max_examples=scaled_examples(30))
@given(graph_data())
def test_oracle_max_equals_an_independent_enumeration(data):
    X, Y, n_unary, n_pairwise, rng = data
    oracle = as_oracle(GraphCutModel().bind(X, Y))
    for w in feasible_weights(rng, n_unary, n_pairwise):
        for i, (x, y) in enumerate(zip(X, Y)):
            H, labellings = reference_scores(x, y, w, n_unary)
            labels, _psi, loss, score = oracle.solve_py(i, w)
            tol = 1e-9 * max(1.0, np.abs(H).max())
            assert score == pytest.approx(H.max(), abs=tol)
            assert score == pytest.approx(H[labellings.index(tuple(labels))], abs=tol)
            assert 0.0 <= loss <= 1.0 + 1e-12


@settings(max_examples=scaled_examples(30))
@given(graph_data())
def test_ground_truth_has_zero_psi_and_loss_and_losses_are_in_unit_interval(data):
    X, Y, n_unary, n_pairwise, rng = data
    model = GraphCutModel()
    oracle = model.bind(X, Y)
    w = feasible_weights(rng, n_unary, n_pairwise)[1]
    for i, (x, y) in enumerate(zip(X, Y)):
        psi, loss, score = oracle.evaluate_py(i, y, w)
        assert loss == 0.0 and score == 0.0 and not psi.any()
        assert model.loss(y, y) == 0.0
        for cand in model.enumerate_labellings(x):
            assert 0.0 <= model.loss(y, cand) <= 1.0 + 1e-12
        # Every node wrong costs exactly 1 (both classes weigh one half, or one class all).
        assert model.loss(y, 1 - y) == pytest.approx(1.0)


@settings(max_examples=scaled_examples(20))
@given(graph_data())
def test_predict_is_the_argmax_of_the_score(data):
    X, Y, n_unary, n_pairwise, rng = data
    model = GraphCutModel()
    model.bind(X, Y)
    for w in feasible_weights(rng, n_unary, n_pairwise):
        for x, pred in zip(X, model.predict(X, w)):
            scores = [w @ model.joint_feature(x, c) for c in model.enumerate_labellings(x)]
            assert w @ model.joint_feature(x, pred) == pytest.approx(
                max(scores), abs=1e-9 * max(1.0, np.abs(scores).max()))


def test_joint_feature_layout():
    unary = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    edges = np.array([[0, 1], [1, 2]])
    pairwise = np.array([[0.5], [0.25]])
    model = GraphCutModel()
    phi = model.joint_feature((unary, edges, pairwise), [1, 0, 0])
    # unary: x_0 - x_1 - x_2; pairwise: minus the features of the cut edge (0, 1).
    np.testing.assert_array_equal(phi, [1 - 3 - 5, 2 - 4 - 6, -0.5])
    assert (model.n_unary, model.n_pairwise) == (None, None)      # only bind records widths


def test_balanced_loss_values():
    y = np.array([1, 0, 0, 0])
    np.testing.assert_allclose(balanced_weights(y), [0.5, 1 / 6, 1 / 6, 1 / 6])
    model = GraphCutModel()
    assert model.loss(y, [0, 0, 0, 0]) == pytest.approx(0.5)
    assert model.loss(y, [1, 1, 0, 0]) == pytest.approx(1 / 6)
    # A single-class image: plain normalised Hamming loss.
    np.testing.assert_allclose(balanced_weights(np.zeros(4, int)), 0.25)
    assert model.loss([0, 0, 0, 0], [1, 1, 0, 0]) == pytest.approx(0.5)


def test_zero_weights_return_the_worst_labelling():
    """At w = 0 the oracle maximises the loss alone: every node flipped, loss 1."""
    rng = np.random.default_rng(3)
    X = [random_graph(rng, 7, 3, 2, 0.5)]
    Y = [np.array([0, 1, 1, 0, 0, 0, 1])]
    labels, _psi, loss, _score = GraphCutModel().bind(X, Y).solve_py(0, np.zeros(5))
    np.testing.assert_array_equal(labels, 1 - Y[0])
    assert loss == pytest.approx(1.0)


def test_weight_bounds():
    model = GraphCutModel(3, 2)
    lower, upper = model.weight_bounds()
    np.testing.assert_array_equal(lower, [-np.inf] * 3 + [0.0, 0.0])
    np.testing.assert_array_equal(upper, [np.inf] * 5)
    with pytest.raises(ValueError, match="unknown until the model is bound"):
        GraphCutModel().weight_bounds()


def test_negative_pairwise_weights_are_rejected():
    rng = np.random.default_rng(1)
    X = [random_graph(rng, 5, 2, 3, 0.8)]
    Y = [np.array([0, 1, 1, 0, 1])]
    model = GraphCutModel()
    oracle = model.bind(X, Y)
    w = np.array([0.3, -0.2, 0.1, -1e-3, 0.0])
    with pytest.raises(NonSubmodularError, match=r"w_P\[1\] = -0.001 is negative"):
        oracle.solve_py(0, w)
    with pytest.raises(NonSubmodularError, match="weight_bounds"):
        oracle.solve_many_py(0, w, 2)
    with pytest.raises(NonSubmodularError):
        model.predict(X, w)
    assert issubclass(NonSubmodularError, ValueError)
    # Negative unary weights are fine, and evaluate needs no min-cut.
    psi, loss, _score = oracle.evaluate_py(0, Y[0], w)
    assert loss == 0.0 and not psi.any()


def good_image():
    return (np.ones((3, 2)), np.array([[0, 1], [1, 2]]), np.ones((2, 1)))


@pytest.mark.parametrize("x, y, message", [
    ((np.ones((3, 2)), np.array([[0, 1]])), [0, 1, 1], "must be a .unary, edges, pairwise. triple"),
    ((np.ones(3), np.array([[0, 1]]), np.ones((1, 1))), [0, 1, 1], "must be 2-D"),
    ((np.ones((3, 2)), np.array([0, 1, 2]), np.ones((1, 1))), [0, 1, 1],
     r"edges must have shape \(n_edges, 2\)"),
    ((np.ones((3, 2)), np.array([[0, 3]]), np.ones((1, 1))), [0, 1, 1],
     r"edge endpoints outside \[0, 3\)"),
    ((np.ones((3, 2)), np.array([[-1, 2]]), np.ones((1, 1))), [0, 1, 1], "outside"),
    ((np.ones((3, 2)), np.array([[1, 1]]), np.ones((1, 1))), [0, 1, 1], "self-loop"),
    ((np.ones((3, 2)), np.array([[0.0, 1.0]]), np.ones((1, 1))), [0, 1, 1], "integer node"),
    ((np.ones((3, 2)), np.array([[0, 1]]), np.ones((2, 1))), [0, 1, 1],
     r"pairwise features must have shape \(n_edges=1"),
    ((np.ones((3, 2)), np.array([[0, 1]]), -np.ones((1, 1))), [0, 1, 1],
     "negative pairwise features"),
    ((np.full((3, 2), np.nan), np.array([[0, 1]]), np.ones((1, 1))), [0, 1, 1], "NaN"),
    (good_image(), [0, 1], r"Y\[0\] has shape \(2,\), expected \(3,\)"),
    (good_image(), [0, 2, 1], r"labels outside \{0, 1\}"),
    (good_image(), [0.0, 1.0, 1.0], "integer labels"),
])
def test_bind_rejects_bad_input(x, y, message):
    with pytest.raises(ValueError, match=message):
        GraphCutModel().bind([x], [y])


def test_feature_counts_are_inferred_per_bind_and_enforced_when_given():
    model = GraphCutModel()
    model.bind([good_image()], [[0, 1, 1]])
    assert (model.n_unary, model.n_pairwise) == (None, None)
    assert (model.n_unary_in_, model.n_pairwise_in_) == (2, 1)
    np.testing.assert_array_equal(model.weight_bounds()[0], [-np.inf, -np.inf, 0.0])
    wide = (np.ones((3, 4)), np.array([[0, 1]]), np.ones((1, 2)))
    assert model.bind([wide], [[0, 1, 1]]).n_features == 6       # rebinding another width
    assert (model.n_unary_in_, model.n_pairwise_in_, model.size_joint_feature) == (4, 2, 6)
    np.testing.assert_array_equal(model.weight_bounds()[0], [-np.inf] * 4 + [0.0] * 2)
    with pytest.raises(ValueError, match=r"w has shape \(6,\), expected \(3,\) for inputs "
                                         "with 2 unary and 1 pairwise features"):
        model.predict([good_image()], np.zeros(6))
    mixed = (np.ones((3, 2)), np.array([[0, 1]]), np.ones((1, 3)))
    with pytest.raises(ValueError, match="3 pairwise features, expected 1"):
        model.predict([good_image(), mixed], np.zeros(3))
    fixed = GraphCutModel(n_unary=2, n_pairwise=1)
    with pytest.raises(ValueError, match="4 unary features, expected 2"):
        fixed.bind([wide], [[0, 1, 1]])
    with pytest.raises(ValueError, match="3 pairwise features, expected 1"):
        fixed.predict([mixed], np.zeros(3))
    with pytest.raises(ValueError, match="X has 1 images but Y has 2"):
        model.bind([good_image()], [[0, 1, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match="X is empty"):
        model.bind([], [])


def test_evaluate_checks_the_labelling():
    oracle = GraphCutModel().bind([good_image()], [[0, 1, 1]])
    for labels in ([0, 1], [0, 1, 2], [0, -1, 1]):
        with pytest.raises(ValueError, match="labelling of its 3 nodes"):
            oracle.evaluate_py(0, labels, np.zeros(3))


def test_graph_without_edges_decodes_node_by_node():
    unary = np.array([[1.0], [-2.0], [0.5]])
    x = (unary, np.zeros((0, 2), np.int64), np.zeros((0, 2)))
    model = GraphCutModel()
    oracle = model.bind([x], [[1, 0, 0]])
    w = np.array([1.0, 0.3, 0.7])
    np.testing.assert_array_equal(model.predict([x], w)[0], [1, 0, 1])
    labels, psi, loss, _score = oracle.solve_py(0, w)
    # Loss-augmented: node 2 keeps label 1 (score +0.5) and adds 0.25 to the loss.
    np.testing.assert_array_equal(labels, [1, 0, 1])
    assert loss == pytest.approx(0.25)
    np.testing.assert_allclose(psi, [-1.0, 0.0, 0.0])


@pytest.mark.parametrize("unary_density, as_sparse", [
    (1.0, False), (1.0, True), (0.1, False), (0.1, True)])
def test_psi_and_loss_equal_dense_products(unary_density, as_sparse):
    """Larger graphs: psi, loss and score of solve against dense numpy formulas."""
    rng = np.random.default_rng(4)
    graphs = [random_graph(rng, 30, 50, 4, 0.2, unary_density) for _ in range(3)]
    Y = [rng.integers(0, 2, size=30) for _ in graphs]
    X = [(sp.csr_array(u) if as_sparse else u, e, p) for u, e, p in graphs]
    model = GraphCutModel()
    oracle = model.bind(X, Y)
    for w in feasible_weights(rng, 50, 4):
        for i, ((unary, edges, pairwise), y) in enumerate(zip(graphs, Y)):
            labels, psi, loss, score = oracle.solve_py(i, w)
            cut = labels[edges[:, 0]] != labels[edges[:, 1]]
            true_cut = y[edges[:, 0]] != y[edges[:, 1]]
            expected = np.concatenate([2.0 * (y - labels) @ unary,
                                       (cut.astype(float) - true_cut) @ pairwise])
            np.testing.assert_allclose(psi, expected, rtol=1e-12, atol=1e-12)
            assert loss == pytest.approx(model.loss(y, labels), rel=1e-14)
            assert score == pytest.approx(loss - w @ expected, rel=1e-12, abs=1e-12)
            np.testing.assert_array_equal(oracle.evaluate_py(i, labels, w)[0], psi)


def cut_energy(labels, unary_cost, edges, capacity):
    cut = labels[edges[:, 0]] != labels[edges[:, 1]] if len(edges) else np.zeros(0, bool)
    return float(unary_cost @ labels + capacity @ cut)


@pytest.mark.parametrize("cut", [min_cut, pytest.param(pymaxflow_min_cut, marks=needs_pymaxflow)],
                         ids=["bk", "pymaxflow"])
@settings(max_examples=scaled_examples(60))
@given(st.integers(1, 9), st.sampled_from([0.0, 0.4, 1.0]), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_min_cut_equals_brute_force(cut, n_nodes, density, duplicate_edges, seed):
    """Any real unary costs, capacities >= 0 (some 0), repeated edges in both orders."""
    rng = np.random.default_rng(seed)
    _, edges, _ = random_graph(rng, n_nodes, 1, 1, density)
    if duplicate_edges and len(edges):
        edges = np.concatenate([edges, edges[:, ::-1]])
    unary_cost = rng.normal(scale=3.0, size=n_nodes) * (rng.random(n_nodes) < 0.8)
    capacity = rng.exponential(2.0, len(edges)) * (rng.random(len(edges)) < 0.8)
    head, tail = edges[:, 0].astype(np.int32), edges[:, 1].astype(np.int32)
    labels = cut(unary_cost, capacity, head, tail)
    assert labels.dtype == np.int32 and set(labels.tolist()) <= {0, 1}
    best = min(cut_energy(np.array(y), unary_cost, edges, capacity)
               for y in itertools.product((0, 1), repeat=n_nodes))
    assert cut_energy(labels, unary_cost, edges, capacity) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("n_nodes, density, seed", [(40, 0.15, 0), (80, 0.08, 1),
                                                    (150, 0.04, 2), (150, 0.3, 3)])
def test_min_cut_value_equals_scipy_maximum_flow(n_nodes, density, seed):
    """Integer capacities: our cut's energy equals sum_p min(D_p, 0) + scipy's max-flow."""
    rng = np.random.default_rng(seed)
    _, edges, _ = random_graph(rng, n_nodes, 1, 1, density)
    unary_cost = rng.integers(-20, 21, n_nodes).astype(np.float64)
    capacity = rng.integers(0, 15, len(edges)).astype(np.float64)
    labels = min_cut(unary_cost, capacity, edges[:, 0].astype(np.int32),
                     edges[:, 1].astype(np.int32))
    best = scipy_min_energy(unary_cost, edges, capacity)
    assert best > np.minimum(unary_cost, 0).sum()            # some flow: the cut matters
    assert cut_energy(labels, unary_cost, edges, capacity) == best


def scipy_min_energy(unary_cost, edges, capacity):
    """min_y of the cut energy by scipy's max-flow: sum_p min(D_p, 0) + max-flow (integers)."""
    n = len(unary_cost)
    rows = np.concatenate([edges[:, 0], edges[:, 1], np.full(n, n), np.arange(n)])
    cols = np.concatenate([edges[:, 1], edges[:, 0], np.arange(n), np.full(n, n + 1)])
    caps = np.concatenate([capacity, capacity, np.maximum(unary_cost, 0),
                           np.maximum(-unary_cost, 0)]).astype(np.int32)
    graph = sp.csr_array((caps, (rows, cols)), shape=(n + 2, n + 2))
    return np.minimum(unary_cost, 0).sum() + maximum_flow(graph, n, n + 1).flow_value


def test_min_cut_equals_scipy_on_many_small_graphs():
    """2,500 seeded graphs of 2-29 nodes with integer costs: the cut energy is the minimum.

    Failures of a max-flow that mishandles residual arcs are rare on random graphs
    (a few in a thousand), hence the many instances.
    """
    for seed in range(2500):
        rng = np.random.default_rng(seed)
        n_nodes = int(rng.integers(2, 30))
        _, edges, _ = random_graph(rng, n_nodes, 1, 1, rng.choice([0.1, 0.3, 0.6]))
        unary_cost = rng.integers(-10, 11, n_nodes).astype(np.float64)
        capacity = rng.integers(0, 8, len(edges)).astype(np.float64)
        labels = min_cut(unary_cost, capacity, edges[:, 0].astype(np.int32),
                         edges[:, 1].astype(np.int32))
        assert cut_energy(labels, unary_cost, edges, capacity) == scipy_min_energy(
            unary_cost, edges, capacity), f"seed {seed}"


def test_oracle_is_compiled_pickles_and_reports_its_sizes():
    rng = np.random.default_rng(5)
    graphs = [random_graph(rng, n, 6, 2, 0.5, 0.3) for n in (4, 9)]
    Y = [rng.integers(0, 2, size=len(u)) for u, _, _ in graphs]
    oracle = GraphCutModel().bind(graphs, Y)
    assert isinstance(oracle, MaxOracle) and not oracle.needs_gil and not oracle.dense_psi
    assert oracle.max_labels == 9
    nnz = [np.count_nonzero(u) for u, _, _ in graphs]
    assert oracle.max_psi_nnz == max(nnz) + 2
    clone = pickle.loads(pickle.dumps(oracle))
    w = feasible_weights(rng, 6, 2)[1]
    for i in range(2):
        for got, expected in zip(clone.solve_py(i, w), oracle.solve_py(i, w)):
            np.testing.assert_array_equal(got, expected)


def test_threads_give_the_same_scores_as_serial_calls():
    """The oracle runs without the GIL with per-call workspaces: two threads, same answers."""
    from ssvm_core.parallel import score_pass

    rng = np.random.default_rng(6)
    graphs = [random_graph(rng, 25, 8, 3, 0.2, 0.4) for _ in range(8)]
    Y = [rng.integers(0, 2, size=25) for _ in graphs]
    oracle = GraphCutModel().bind(graphs, Y)
    w = feasible_weights(rng, 8, 3)[2]
    serial = sum(oracle.solve_py(i, w)[3] for i in range(8))
    assert score_pass(oracle, w, n_jobs=2) == pytest.approx(serial, rel=1e-12)


# --- feature storage (feature_dtype) -------------------------------------------------------

def rounded_to_float32(X):
    return [(np.asarray(u).astype(np.float32).astype(np.float64), e,
             np.asarray(p).astype(np.float32).astype(np.float64)) for u, e, p in X]


@settings(max_examples=scaled_examples(25))
@given(graph_data())
def test_float32_storage_gives_the_float64_answers_on_float32_exact_features(data):
    """Every product and sum stays in float64: same labels, psi, loss and score, bit for bit."""
    X, Y, n_unary, n_pairwise, rng = data
    X = rounded_to_float32([(u.toarray() if sp.issparse(u) else u, e, p) for u, e, p in X])
    double = GraphCutModel(feature_dtype="float64").bind(X, Y)
    single = GraphCutModel().bind(X, Y)                     # "auto": exact, so float32
    assert single.single and not double.single
    assert single.val.dtype == np.float32 and single.pairwise.dtype == np.float32
    for w in feasible_weights(rng, n_unary, n_pairwise):
        for i in range(len(X)):
            for got, expected in zip(single.solve_py(i, w), double.solve_py(i, w)):
                np.testing.assert_array_equal(got, expected)
            y = rng.integers(0, 2, size=len(Y[i]))
            for got, expected in zip(single.evaluate_py(i, y, w), double.evaluate_py(i, y, w)):
                np.testing.assert_array_equal(got, expected)


@settings(max_examples=scaled_examples(20))
@given(graph_data())
def test_float32_rounding_model_is_exact_for_the_rounded_features(data):
    X, Y, n_unary, n_pairwise, rng = data
    model = GraphCutModel(feature_dtype="float32")
    oracle = model.bind(X, Y)
    assert oracle.single
    dense = rounded_to_float32([(u.toarray() if sp.issparse(u) else u, e, p) for u, e, p in X])
    for w in feasible_weights(rng, n_unary, n_pairwise):
        for i, (x, y) in enumerate(zip(dense, Y)):
            H, _ = reference_scores(x, y, w, n_unary)
            score = oracle.solve_py(i, w)[3]
            assert score == pytest.approx(H.max(), abs=1e-9 * max(1.0, np.abs(H).max()))
            cand = rng.integers(0, 2, size=len(y))
            np.testing.assert_array_equal(model.joint_feature(X[i], cand),
                                          GraphCutModel().joint_feature(x, cand))


def test_auto_storage_keeps_float64_when_float32_would_round():
    rng = np.random.default_rng(8)
    X = [random_graph(rng, 6, 3, 2, 0.5)]
    Y = [np.array([0, 1, 1, 0, 0, 1])]
    assert not GraphCutModel().bind(X, Y).single               # Gaussian doubles
    assert GraphCutModel().bind(rounded_to_float32(X), Y).single
    single = GraphCutModel(feature_dtype="float32").bind(X, Y)
    clone = pickle.loads(pickle.dumps(single))
    assert clone.single
    np.testing.assert_array_equal(clone.val, single.val)
    np.testing.assert_array_equal(clone.pairwise, single.pairwise)


def test_bad_options_and_float32_overflow_are_rejected():
    with pytest.raises(ValueError, match="feature_dtype must be one of"):
        GraphCutModel(feature_dtype="float16")
    with pytest.raises(ValueError, match="backend must be one of"):
        GraphCutModel(backend="maxflow")
    unary = np.array([[1e39], [1.0]])
    with pytest.raises(ValueError, match="beyond the float32 range"):
        GraphCutModel(feature_dtype="float32").bind([(unary, [[0, 1]], [[1.0]])], [[0, 1]])
    with pytest.raises(ValueError, match="both float64 or both float32"):
        GraphCutOracle(1, [0, 1], np.array([0, 1], np.intp), np.zeros(1, np.int32),
                       np.ones(1, np.float32), [0, 0], np.zeros(0, np.int32),
                       np.zeros(0, np.int32), np.zeros((0, 1)), np.zeros(1, np.int32),
                       np.ones(1))


# --- the PyMaxflow backend --------------------------------------------------------------------

@settings(max_examples=scaled_examples(25))
@given(graph_data())
@needs_pymaxflow
def test_pymaxflow_oracle_equals_brute_force(data):
    from ssvm_oracles.graphcut import PyMaxflowOracle

    X, Y, n_unary, n_pairwise, rng = data
    model = GraphCutModel(backend="pymaxflow")
    oracle = model.bind(X, Y)
    assert isinstance(oracle, PyMaxflowOracle)
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    weights = feasible_weights(rng, n_unary, n_pairwise)
    check_oracle(as_oracle(oracle), problem, weights, atol=1e-9, check_labels=False)
    builtin = GraphCutModel().bind(X, Y)
    for w in weights:
        for i in range(len(X)):
            assert as_oracle(oracle).solve_py(i, w)[3] == pytest.approx(
                builtin.solve_py(i, w)[3], abs=1e-9 * max(1.0, np.abs(w).max()))
        for x, ours, theirs in zip(X, GraphCutModel().predict(X, w), model.predict(X, w)):
            assert w @ model.joint_feature(x, theirs) == pytest.approx(
                w @ model.joint_feature(x, ours), abs=1e-9 * max(1.0, np.abs(w).max()))


@needs_pymaxflow
def test_both_backends_train_to_the_same_certified_gap():
    from ssvm_core import solve

    rng = np.random.default_rng(11)
    X = [random_graph(rng, 12, 5, 2, 0.3) for _ in range(6)]
    Y = [rng.integers(0, 2, size=12) for _ in X]
    results = []
    for backend in ("bk", "pymaxflow"):
        model = GraphCutModel(backend=backend)
        oracle = model.bind(X, Y)
        results.append(solve(oracle, 0.1, box=model.weight_bounds(), max_passes=30,
                             random_state=0))
    # Each certifies P(w) - P* in [0, gap] for the same P*: the primal values differ
    # by at most the sum of the gaps.
    primal = [r.history[-1]["primal"] for r in results]
    assert all(np.isfinite(r.gap) for r in results)
    assert abs(primal[0] - primal[1]) <= results[0].gap + results[1].gap + 1e-9


def test_pymaxflow_backend_names_the_extra_when_missing(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "maxflow", None)       # import maxflow now fails
    rng = np.random.default_rng(2)
    X = [random_graph(rng, 4, 2, 1, 0.5)]
    model = GraphCutModel(backend="pymaxflow")
    with pytest.raises(ImportError, match=r"ssvm-oracles\[graphcut\]"):
        model.bind(X, [np.array([0, 1, 0, 1])])
    with pytest.raises(ImportError, match=r"ssvm-oracles\[graphcut\]"):
        model.predict(X, np.zeros(3))
