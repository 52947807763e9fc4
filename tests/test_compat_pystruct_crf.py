"""ssvm.compat.pystruct CRFs on ssvm_oracles.GraphModel: the bound oracles, prediction,
single-example inference and training, each against enumeration of all labellings."""

import itertools

import numpy as np
import pytest

from ssvm.compat.pystruct.datasets import generate_blocks_multinomial
from ssvm.compat.pystruct.inference import compute_energy, inference_dispatch
from ssvm.compat.pystruct.learners import FrankWolfeSSVM, OneSlackSSVM
from ssvm.compat.pystruct.models import (
    ChainCRF,
    DirectionalGridCRF,
    EdgeFeatureGraphCRF,
    GraphCRF,
    GridCRF,
    MultiLabelClf,
)


def labellings(model, y):
    """Every labelling with y's shape."""
    shape = np.shape(y)
    for c in itertools.product(range(model.n_states), repeat=int(np.prod(shape))):
        yield np.array(c).reshape(shape)


def brute_max(model, x, y, w, augmented=True):
    """max over labellings c of [loss(y, c)] + <w, phi(x, c)>, by enumeration."""
    return max((model.loss(y, c) if augmented else 0.0) + w @ model.joint_feature(x, c)
               for c in labellings(model, y))


def graph_data(rng, n_graphs, n_nodes, K, F, edges, G=None):
    X, Y = [], []
    for _ in range(n_graphs):
        features = rng.normal(size=(n_nodes, F))
        x = (features, edges) if G is None else (features, edges,
                                                 rng.normal(size=(len(edges), G)))
        X.append(x)
        Y.append(rng.integers(0, K, size=n_nodes))
    return X, Y


TREE = np.array([[0, 1], [1, 2], [3, 1], [3, 4]])
LOOPY = np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4], [4, 2]])


def cases():
    """(model, X, Y, exact) for each compat CRF on small graphs (K^n <= 3^5)."""
    rng = np.random.default_rng(0)
    out = []
    X = [rng.normal(size=(T, 3)) for T in (3, 5, 4)]
    Y = [rng.integers(0, 3, size=len(x)) for x in X]
    out.append((ChainCRF(class_weight=[1.0, 2.0, 0.5]), X, Y, True))
    out.append((ChainCRF(directed=False), X, Y, True))
    X, Y = graph_data(rng, 3, 5, 3, 2, TREE)
    out.append((GraphCRF(), X, Y, True))
    X, Y = graph_data(rng, 3, 5, 3, 2, LOOPY)
    out.append((GraphCRF(inference_method="auto", directed=True), X, Y, True))
    out.append((GraphCRF(inference_method="max-product"), X, Y, False))
    X, Y = graph_data(rng, 3, 5, 3, 2, LOOPY, G=2)
    out.append((EdgeFeatureGraphCRF(inference_method="auto", symmetric_edge_features=[0],
                                    antisymmetric_edge_features=[1]), X, Y, True))
    X, Y = graph_data(rng, 3, 5, 3, 2, TREE, G=3)
    out.append((EdgeFeatureGraphCRF(), X, Y, True))
    X = [rng.normal(size=(2, 2, 2)) for _ in range(3)]
    Y = [rng.integers(0, 3, size=(2, 2)) for _ in range(3)]
    out.append((GridCRF(inference_method="auto"), X, Y, True))
    out.append((GridCRF(inference_method="auto", neighborhood=8), X, Y, True))
    out.append((DirectionalGridCRF(inference_method="auto"), X, Y, True))
    return out


IDS = ["chain", "chain-undirected", "graph-tree", "graph-loopy-auto", "graph-loopy-bp",
       "edge-features-loopy", "edge-features-tree", "grid", "grid-8", "directional-grid"]


@pytest.mark.parametrize("model,X,Y,exact", cases(), ids=IDS)
def test_bound_oracle_matches_enumeration(model, X, Y, exact):
    """The compiled oracle's answer has psi = phi(y) - phi(y_hat), the model's loss, and
    (exact inference) the enumerated maximum of loss + <w, phi(x, c)> - <w, phi(x, y)>."""
    model.initialize(X, Y)
    oracle = model.bind(X, Y)
    rng = np.random.default_rng(1)
    for _ in range(3):
        w = rng.normal(size=model.size_joint_feature)
        for i, (x, y) in enumerate(zip(X, Y)):
            labels, psi, loss, score = oracle.solve_py(i, w)
            y_hat = np.asarray(labels).reshape(np.shape(y))
            np.testing.assert_allclose(psi, model.joint_feature(x, y)
                                       - model.joint_feature(x, y_hat), atol=1e-12)
            assert loss == pytest.approx(model.loss(y, y_hat))
            assert score == pytest.approx(loss + w @ -psi)
            best = brute_max(model, x, y, w) - w @ model.joint_feature(x, y)
            if exact:
                assert score == pytest.approx(best)
            else:
                assert score <= best + 1e-9
    assert oracle.exact == exact


@pytest.mark.parametrize("model,X,Y,exact", [c for c in cases() if c[3]],
                         ids=[i for i, c in zip(IDS, cases()) if c[3]])
def test_prediction_and_inference_match_enumeration(model, X, Y, exact):
    """batch_inference (compiled), inference and loss_augmented_inference (explicit
    potentials through inference_dispatch) all reach the enumerated maxima."""
    model.initialize(X, Y)
    w = np.random.default_rng(2).normal(size=model.size_joint_feature)
    for x, y, y_pred in zip(X, Y, model.batch_inference(X, w)):
        assert np.shape(y_pred) == np.shape(y)
        top = brute_max(model, x, y, w, augmented=False)
        assert w @ model.joint_feature(x, y_pred) == pytest.approx(top)
        assert w @ model.joint_feature(x, model.inference(x, w)) == pytest.approx(top)
        y_aug = model.loss_augmented_inference(x, y, w)
        assert (model.loss(y, y_aug) + w @ model.joint_feature(x, y_aug)
                == pytest.approx(brute_max(model, x, y, w)))


def test_inference_dispatch_per_edge_potentials_and_energy():
    rng = np.random.default_rng(3)
    unary = rng.normal(size=(5, 3))
    pairwise = rng.normal(size=(len(LOOPY), 3, 3))
    best = max(itertools.product(range(3), repeat=5),
               key=lambda c: compute_energy(unary, pairwise, LOOPY, c))
    expected = compute_energy(unary, pairwise, LOOPY, best)
    by_hand = sum(unary[v, best[v]] for v in range(5)) + sum(
        pairwise[e, best[u], best[v]] for e, (u, v) in enumerate(LOOPY))
    assert expected == pytest.approx(by_hand)
    labels, energy = inference_dispatch(unary, pairwise, LOOPY, "auto", return_energy=True)
    assert energy == pytest.approx(-expected)      # pystruct's energy: minus the score
    labels = inference_dispatch(unary, pairwise[:len(TREE)], TREE, "max-product")
    assert compute_energy(unary, pairwise[:len(TREE)], TREE, labels) == pytest.approx(max(
        compute_energy(unary, pairwise[:len(TREE)], TREE, c)
        for c in itertools.product(range(3), repeat=5)))


def brute_primal(model, X, Y, w, C):
    hinge = sum(brute_max(model, x, y, w) - w @ model.joint_feature(x, y)
                for x, y in zip(X, Y))
    return 0.5 * w @ w + C * hinge


@pytest.mark.parametrize("learner,tol,bound", [(FrankWolfeSSVM, 0.05, 0.05),
                                               (OneSlackSSVM, 6e-5, 6e-5 * 2.0 * 8)])
def test_chain_training_certified_against_enumeration(learner, tol, bound):
    """The reported primal is the enumerated primal at the learned w, within the
    certified gap of the reported dual (OneSlackSSVM's tol is on the gap over C n)."""
    rng = np.random.default_rng(4)
    Y = [rng.integers(0, 3, size=4) for _ in range(8)]
    X = [np.eye(3)[y] + 0.8 * rng.normal(size=(4, 3)) for y in Y]
    model = ChainCRF()
    seed = {"random_state": 0} if learner is FrankWolfeSSVM else {}   # a deterministic run
    svm = learner(model, C=2.0, max_iter=1000, tol=tol, **seed).fit(X, Y)
    primal = brute_primal(model, X, Y, svm.w, 2.0)
    assert svm.exact_ and svm.duality_gap_ <= bound
    assert svm.primal_objective_curve_[-1] == pytest.approx(primal, rel=1e-9)
    assert primal - svm.objective_curve_[-1] == pytest.approx(svm.duality_gap_, abs=1e-9)
    assert svm.score(X, Y) > 0.5


def test_grid_training_flags_loopy_inference():
    """Grids with pystruct's default max-product run loopy belief propagation: the learner
    reports exact_ False, and its gap is then only an estimate."""
    X, Y = generate_blocks_multinomial(n_samples=4, noise=0.5, seed=0, size_x=6)
    svm = FrankWolfeSSVM(GridCRF(), C=1.0, max_iter=5).fit(X, Y)
    assert not svm.exact_
    assert [np.shape(y) for y in svm.predict(X)] == [np.shape(y) for y in Y]


def test_multilabel_compiled_oracle_matches_enumeration():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 3))
    Y = (rng.random(size=(6, 4)) < 0.5).astype(int)
    for edges in (None, "full", "tree"):
        model = MultiLabelClf(edges=edges, inference_method="auto")
        model.initialize(X, Y)
        oracle = model.bind(X, Y)
        w = rng.normal(size=model.size_joint_feature)
        for i, (x, y) in enumerate(zip(X, Y)):
            labels, psi, loss, score = oracle.solve_py(i, w)
            np.testing.assert_allclose(psi, model.joint_feature(x, y)
                                       - model.joint_feature(x, labels), atol=1e-12)
            assert loss == model.loss(y, labels)
            best = brute_max(model, x, y, w) - w @ model.joint_feature(x, y)
            assert score == pytest.approx(best)
        for x, y_pred in zip(X, model.batch_inference(X, w)):
            assert w @ model.joint_feature(x, y_pred) == pytest.approx(
                brute_max(model, x, np.zeros(4, int), w, augmented=False))


def test_method_options_reach_the_graph_oracle():
    model = GraphCRF(n_states=3, n_features=2, inference_method=("max-product",
                                                                 {"max_iter": 7, "damping": 0.2}))
    engine = model.ssvm_model()
    assert (engine.inference, engine.max_iter, engine.damping) == ("max-product", 7, 0.2)
    independent = MultiLabelClf(inference_method="unary")
    assert independent.get_params()["inference_method"] == "unary"
    with pytest.raises(NotImplementedError, match="edges=None"):
        MultiLabelClf(edges="full", inference_method="unary")
