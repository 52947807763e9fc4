"""Typed CRFs (``TypedGraphModel``): layout by hand, inference against brute force."""

import numpy as np
import pytest

from ssvm_core import FrankWolfeSSVM
from ssvm_oracles.typed import TypedGraphModel


def _two_type_input(rng):
    # type 0: 2 nodes, 2 features, 2 states; type 1: 2 nodes, 1 feature, 3 states
    nodes = [rng.normal(size=(2, 2)), rng.normal(size=(2, 1))]
    edges = [np.array([[0, 1]]), np.array([[0, 0], [1, 1]]), np.array([[1, 0]]),
             np.array([[0, 1]])]
    efeats = [rng.normal(size=(1, 1)), rng.normal(size=(2, 2)), rng.normal(size=(1, 2)),
              rng.normal(size=(1, 1))]
    return nodes, edges, efeats


def test_joint_feature_layout_by_hand():
    model = TypedGraphModel([2, 3], [2, 1], [[1, 2], [2, 0]])
    nodes = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0], [6.0]])]
    edges = [np.array([[0, 1]]), np.array([[1, 0]]), None, None]
    efeats = [np.array([[7.0]]), np.array([[8.0, 9.0]]), None, None]
    y = np.array([1, 0, 4, 2])                 # type 1 states are 2, 3, 4 (local 2, 0)
    phi = model.joint_feature((nodes, edges, efeats), y)
    expected = np.zeros(model.size_joint_feature)
    # unaries of type 0 (2 x 2): node 0 in state 1, node 1 in state 0
    expected[0:4] = [3.0, 4.0, 1.0, 2.0]
    # unaries of type 1 (3 x 1): node 0 local state 2, node 1 local state 0
    expected[4:7] = [6.0, 0.0, 5.0]
    # pair (0, 0), one feature, 2 x 2: edge (0 -> 1) in states (1, 0)
    expected[7 + 1 * 2 + 0] = 7.0
    # pair (0, 1), two features, each 2 x 3: edge (node 1 of type 0 -> node 0 of type 1),
    # states (0, local 2), feature-major
    base = 7 + 4
    expected[base + 0 * 6 + 0 * 3 + 2] = 8.0
    expected[base + 1 * 6 + 0 * 3 + 2] = 9.0
    assert model.size_joint_feature == 4 + 3 + 4 + 12 + 12 + 0
    assert phi == pytest.approx(expected)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("inference", ["auto", "ilp"])
def test_inference_matches_brute_force(seed, inference):
    rng = np.random.default_rng(seed)
    model = TypedGraphModel([2, 3], [2, 1], [[1, 2], [2, 1]], inference=inference,
                            class_weight=[[1.0, 2.0], [0.5, 1.0, 1.5]])
    x = _two_type_input(rng)
    y = np.array([1, 0, 3, 4])
    candidates = list(model.enumerate_labellings(x))
    assert len(candidates) == 2 * 2 * 3 * 3
    oracle = model.bind([x], [y])
    for _ in range(3):
        w = rng.normal(size=model.size_joint_feature)
        best = max(model.loss(y, c) + w @ model.joint_feature(x, c) for c in candidates)
        z, exact = model.loss_augmented_inference(x, y, w)
        assert exact
        assert model.loss(y, z) + w @ model.joint_feature(x, z) == pytest.approx(best)
        pred = model.predict([x], w)[0]
        assert w @ model.joint_feature(x, pred) == pytest.approx(
            max(w @ model.joint_feature(x, c) for c in candidates))
        _, psi, loss, score = oracle.solve_py(0, w)
        assert score == pytest.approx(best - w @ model.joint_feature(x, y))
        assert loss == model.loss(y, z)


def test_binary_types_on_a_loopy_graph_use_exact_graph_cuts():
    # two binary types on a 4-cycle (not a forest), more nodes than brute force allows
    rng = np.random.default_rng(0)
    model = TypedGraphModel([2, 2], [1, 1], [[1, 1], [1, 1]], max_brute=2)
    nodes = [rng.normal(size=(2, 1)), rng.normal(size=(2, 1))]
    edges = [np.array([[0, 1]]), np.array([[1, 0]]), None, np.array([[1, 0]])]
    efeats = [np.ones((1, 1)), np.ones((1, 1)), None, np.ones((1, 1))]
    edges[2], efeats[2] = np.array([[0, 0]]), np.ones((1, 1))
    x = (nodes, edges, efeats)
    w = rng.normal(size=model.size_joint_feature)
    # attractive tables: theta(0, 0) + theta(1, 1) >= theta(0, 1) + theta(1, 0)
    for block in range(4):
        start = 4 + 4 * block
        w[start:start + 4] = [1.0, -0.5, -0.5, 1.0]
    h, exact = model.loss_augmented_inference(x, np.array([0, 1, 2, 3]), w)
    assert exact
    best = max(model.loss(np.array([0, 1, 2, 3]), c) + w @ model.joint_feature(x, c)
               for c in model.enumerate_labellings(x))
    assert model.loss(np.array([0, 1, 2, 3]), h) + w @ model.joint_feature(x, h) == \
        pytest.approx(best)


def test_bad_inputs_are_named():
    model = TypedGraphModel([2, 3], [2, 1], [[1, 2], [2, 0]])
    nodes = [np.zeros((2, 2)), np.zeros((2, 1))]
    with pytest.raises(ValueError, match="4 edge arrays"):
        model.joint_feature((nodes, [None], [None]), np.array([0, 0, 2, 2]))
    with pytest.raises(ValueError, match="type 1 must be"):
        model.joint_feature(([np.zeros((2, 2)), np.zeros((2, 3))], [None] * 4, [None] * 4),
                            np.array([0, 0, 2, 2]))
    with pytest.raises(ValueError, match="another node type"):
        model.joint_feature((nodes, [None] * 4, [None] * 4), np.array([0, 2, 2, 2]))
    with pytest.raises(ValueError, match="no edge features in this model"):
        model.joint_feature((nodes, [None, None, None, np.array([[0, 1]])],
                             [None, None, None, np.zeros((1, 0))]), np.array([0, 0, 2, 2]))
    with pytest.raises(ValueError, match="symmetric"):
        TypedGraphModel([2, 2], [1, 1], [[1, 2], [1, 1]])
    with pytest.raises(ValueError, match="inference must be one of"):
        TypedGraphModel([2, 2], [1, 1], [[1, 1], [1, 1]], inference="ad3")


def test_training_recovers_a_typed_labelling():
    rng = np.random.default_rng(1)
    X, Y = [], []
    for _ in range(15):
        y0, y1 = rng.integers(0, 2, 3), rng.integers(0, 3, 2)
        nodes = [np.eye(2)[y0] + 0.2 * rng.normal(size=(3, 2)),
                 np.eye(3)[y1] + 0.2 * rng.normal(size=(2, 3))]
        edges = [np.array([[0, 1], [1, 2]]), np.array([[0, 0], [2, 1]]), None, None]
        efeats = [np.ones((2, 1)), np.ones((2, 1)), None, None]
        X.append((nodes, edges, efeats))
        Y.append(np.concatenate([y0, 2 + y1]))
    model = TypedGraphModel([2, 3], [2, 3], [[1, 1], [1, 0]])
    svm = FrankWolfeSSVM(model, C=10.0, step="pairwise", max_passes=2000,
                         random_state=0).fit(X, Y)
    assert svm.status_ == "converged" and svm.gap_ <= 1e-3   # exact oracle: a certificate
    assert svm.score(X, Y) == 1.0                             # every node right
