"""Latent pairwise models and CCCP, checked against brute force on tiny problems."""

import itertools

import numpy as np
import pytest

from ssvm_core import primal_objective
from ssvm_core.latent import LatentSSVM
from ssvm_oracles.latent import LatentGraphModel, LatentGridModel, LatentNodeModel
from ssvm_oracles.potentials import decode_potentials, gather_local


def _score(u, pw, edges, z):
    s = u[np.arange(len(z)), z].sum()
    return s + (pw[np.arange(len(edges)), z[edges[:, 0]], z[edges[:, 1]]].sum()
                if len(edges) else 0.0)


@pytest.mark.parametrize("seed", range(40))
def test_decode_potentials_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(1, 6)), int(rng.integers(2, 4))
    edges = np.array([(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5],
                     dtype=np.int64).reshape(-1, 2)
    u, pw = rng.normal(size=(n, K)), rng.normal(size=(len(edges), K, K))
    allowed = rng.integers(1, K + 1, size=n)
    best = max(_score(u, pw, edges, np.array(z))
               for z in itertools.product(*[range(a) for a in allowed]))
    z, exact = decode_potentials(u, pw, edges, n_allowed=allowed)
    assert np.all(z < allowed)
    assert exact                        # tiny graphs: brute force or max-product
    assert _score(u, pw, edges, z) == pytest.approx(best, abs=1e-9)


def test_decode_potentials_flags_loopy_answers_inexact():
    rng = np.random.default_rng(0)
    ids = np.arange(36).reshape(6, 6)
    edges = np.vstack([np.c_[ids[:, :-1].ravel(), ids[:, 1:].ravel()],
                       np.c_[ids[:-1].ravel(), ids[1:].ravel()]])
    u, pw = rng.normal(size=(36, 3)), rng.normal(size=(len(edges), 3, 3))
    _, exact = decode_potentials(u, pw, edges, inference="max-product")
    assert not exact
    # "auto" solves this small loopy graph by the integer program instead (test_ilp.py)
    assert decode_potentials(u, pw, edges)[1]


def _models_and_examples():
    rng = np.random.default_rng(3)
    cycle = (rng.normal(size=(4, 3)), np.array([[0, 1], [1, 2], [2, 3], [3, 0]]))
    yield LatentGraphModel(2, [2, 1], n_features=3), cycle, np.array([0, 1, 0, 0])
    edge_feats = (rng.normal(size=(4, 3)), np.array([[0, 1], [1, 2], [2, 3]]),
                  rng.normal(size=(3, 2)))
    yield (LatentGraphModel(2, 2, n_features=3, n_edge_features=2,
                            antisymmetric_edge_features=[1]), edge_feats, np.array([1, 1, 0, 1]))
    grid = rng.normal(size=(2, 3, 2))
    yield LatentGridModel(2, 2, n_features=2), grid, rng.integers(0, 2, size=(2, 3))
    yield (LatentGridModel(2, [1, 3], n_features=2, directional=True), grid,
           rng.integers(0, 2, size=(2, 3)))
    hidden = (rng.normal(size=(3, 2)), np.array([[0, 3], [1, 3], [2, 4], [3, 4]]), 2)
    yield LatentNodeModel(2, 3, n_features=2), hidden, np.array([0, 1, 1])


@pytest.mark.parametrize("case", range(5))
def test_latent_models_match_brute_force(case):
    model, x, y = list(_models_and_examples())[case]
    rng = np.random.default_rng(case)
    candidates = list(model.enumerate_labellings(x))
    consistent = [h for h in candidates
                  if np.array_equal(np.ravel(model.label_from_latent(h)), np.ravel(y))]
    h_true = consistent[len(consistent) // 2]
    oracle = model.bind([x], [h_true])
    for _ in range(4):
        w = rng.normal(size=model.size_joint_feature)
        # the completion is the best h whose labels are y
        h = model.latent(x, y, w)
        assert np.array_equal(np.ravel(model.label_from_latent(h)), np.ravel(y))
        assert w @ model.joint_feature(x, h) == pytest.approx(
            max(w @ model.joint_feature(x, c) for c in consistent), abs=1e-9)
        # loss-augmented inference maximises loss + score
        z, exact = model.loss_augmented_inference(x, h_true, w)
        best = max(model.loss(h_true, c) + w @ model.joint_feature(x, c) for c in candidates)
        assert exact
        assert model.loss(h_true, z) + w @ model.joint_feature(x, z) == pytest.approx(best)
        # the bound oracle answers H(z) = loss - <w, phi(h) - phi(z)>
        labels, psi, loss, score = oracle.solve_py(0, w)
        assert score == pytest.approx(best - w @ model.joint_feature(x, h_true))
        assert psi == pytest.approx(model.joint_feature(x, h_true)
                                    - model.joint_feature(x, labels))
        assert loss == model.loss(h_true, labels)
    assert oracle.exact


def _every_latent_layout():
    """(model, inputs, visible labellings) of every latent model and layout, edgeless ones
    (latent SVMs as CRFs, isolated hidden nodes) included."""
    rng = np.random.default_rng(11)
    yield from (((m, [x], [y]) for m, x, y in _models_and_examples()))
    single = [(rng.normal(size=(1, 4)), np.zeros((0, 2), np.int64)) for _ in range(6)]
    yield LatentGraphModel(2, 5), single, [rng.integers(0, 2, size=1) for _ in range(6)]
    yield (LatentGraphModel(3, [1, 2, 3], n_features=4), single,
           [rng.integers(0, 3, size=1) for _ in range(6)])
    bags = [(rng.normal(size=(3, 2)), np.zeros((0, 2), np.int64)) for _ in range(4)]
    yield LatentGraphModel(2, [3, 2]), bags, [rng.integers(0, 2, size=3) for _ in range(4)]
    isolated = [(rng.normal(size=(5, 2)), np.zeros((0, 2), np.int64), 2) for _ in range(3)]
    yield (LatentNodeModel(2, 3, latent_node_features=True), isolated,
           [rng.integers(0, 2, size=3) for _ in range(3)])
    edged = [(rng.normal(size=(3, 2)), np.array([[0, 3], [1, 3], [2, 3]]),
              rng.normal(size=(3, 2)), 1) for _ in range(3)]
    yield (LatentNodeModel(2, 2, n_edge_features=2, symmetric_edge_features=[0]), edged,
           [rng.integers(0, 2, size=3) for _ in range(3)])


@pytest.mark.parametrize("case", range(10))
def test_latent_oracles_answer_as_the_generic_decoder(case):
    """The oracle, the completion and predictions equal decode_potentials on the models'
    potentials with the public joint feature (the generic route), on random w."""
    model, X, Y = list(_every_latent_layout())[case]
    rng = np.random.default_rng(100 + case)
    H = model.init_latent(X, Y)
    oracle = model.bind(X, H)
    examples = model._examples(X)
    for _ in range(5):
        w = rng.normal(size=model.size_joint_feature)
        for i, (ex, x, y, h) in enumerate(zip(examples, X, Y, H)):
            unary, pairwise = model._potentials(ex, w)
            flat_h = np.ravel(h).astype(np.int32)
            unary = unary + model.loss_augmentation(ex, model._visible_labels(ex, flat_h))
            states = model._node_states(ex)
            if states is None:
                z_ref, _ = decode_potentials(unary, pairwise, ex.graph.edges)
            else:
                local_u, local_p = gather_local(unary, pairwise, ex.graph.edges, states)
                z_loc, _ = decode_potentials(local_u, local_p, ex.graph.edges,
                                             n_allowed=np.sum(states >= 0, axis=1))
                z_ref = states[np.arange(len(z_loc)), z_loc]
            labels, psi, loss, _ = oracle.solve_py(i, w)
            np.testing.assert_array_equal(labels, z_ref)
            z_shaped = np.reshape(z_ref, np.shape(h))
            np.testing.assert_allclose(psi, model.joint_feature(x, h)
                                       - model.joint_feature(x, z_shaped), atol=1e-12)
            assert loss == model.loss(h, z_shaped)
            # the completion: the best consistent h, by enumeration on these small inputs
            completion = model.latent(x, y, w)
            consistent = [c for c in model.enumerate_labellings(x)
                          if np.array_equal(np.ravel(model.label_from_latent(c)), np.ravel(y))]
            assert w @ model.joint_feature(x, completion) == pytest.approx(
                max(w @ model.joint_feature(x, c) for c in consistent), abs=1e-9)
    assert oracle.exact == all(model._decode(ex, *model._potentials(ex, w),
                                             model._node_states(ex))[1] for ex in examples)


def test_latent_graph_loss_compares_labels_only():
    model = LatentGraphModel(2, [2, 3], class_weight=[1.0, 2.5])
    h = np.array([0, 1, 2, 4])
    # states 0, 1 are label 0; states 2, 3, 4 are label 1
    assert model.loss(h, np.array([1, 0, 3, 2])) == 0.0
    assert model.loss(h, np.array([2, 1, 0, 4])) == 1.0 + 2.5
    assert model.label_from_latent(h).tolist() == [0, 0, 1, 1]


def test_latent_node_joint_feature_by_hand():
    model = LatentNodeModel(2, 2, n_features=1)
    x = (np.array([[2.0], [-1.0]]), np.array([[0, 2], [1, 2], [2, 3]]), 2)
    h = np.array([1, 0, 3, 2])
    # unaries: label 0 gets x_1 = -1, label 1 gets x_0 = 2; pairwise counts over 4 states,
    # folded into the lower triangle: (1, 3) -> [3, 1], (0, 3) -> [3, 0], (3, 2) -> [3, 2]
    pair = np.zeros((4, 4))
    pair[3, 1] = pair[3, 0] = pair[3, 2] = 1
    expected = np.concatenate([[-1.0, 2.0], pair[np.tri(4, dtype=bool)]])
    assert model.joint_feature(x, h) == pytest.approx(expected)
    assert model.size_joint_feature == 2 + 10
    assert model.loss(h, np.array([1, 1, 2, 2])) == 1.0


def test_init_latent_is_consistent_and_uses_every_state():
    rng = np.random.default_rng(0)
    X, Y = [], []
    for _ in range(6):
        y = rng.integers(0, 2, 10)
        X.append((rng.normal(size=(10, 2)) + y[:, None],
                  np.c_[np.arange(9), np.arange(1, 10)]))
        Y.append(y)
    model = LatentGraphModel(2, [2, 3], n_features=2)
    H = model.init_latent(X, Y)
    for h, y in zip(H, Y):
        assert np.array_equal(model.label_from_latent(h), y)
    assert set(np.concatenate(H)) == set(range(5))


def _chain_data(seed=0, n=20):
    """Two labels; label 0 has two modes (feature 1 on or off), a hidden state each."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        y, mode = rng.integers(0, 2, 6), rng.integers(0, 2, 6)
        f = np.c_[(y == 1) + 0.3 * rng.normal(size=6),
                  ((y == 0) & (mode == 0)) + 0.3 * rng.normal(size=6), np.ones(6)]
        X.append((f, np.c_[np.arange(5), np.arange(1, 6)]))
        Y.append(y)
    return X, Y


def _brute_latent_objective(model, X, Y, w, lam):
    """J(w) from its definition, by enumeration."""
    total = 0.0
    for x, y in zip(X, Y):
        cands = list(model.enumerate_labellings(x))
        loss_aug = max(model.base_loss(y, model.label_from_latent(c))
                       + w @ model.joint_feature(x, c) for c in cands)
        best_consistent = max(w @ model.joint_feature(x, c) for c in cands
                              if np.array_equal(model.label_from_latent(c), y))
        total += loss_aug - best_consistent
    return 0.5 * lam * w @ w + total / len(X)


@pytest.mark.parametrize("warm_start", ["corners", "cold"])
def test_cccp_decreases_the_latent_objective_with_certified_inner_problems(warm_start):
    X, Y = _chain_data()
    model = LatentGraphModel(2, [2, 1], n_features=3)
    inner_tol = 1e-3
    svm = LatentSSVM(model, lam=0.05, latent_iter=6, tol=0.0, inner_tol=inner_tol,
                     warm_start=warm_start, solver_options={"step": "pairwise"},
                     random_state=0).fit(X, Y)
    objectives = [r["objective"] for r in svm.history_]
    assert all(r["certified"] and r["inner_gap"] <= inner_tol for r in svm.history_)
    # CCCP: J never increases by more than the inner problems' tolerance
    assert all(b <= a + inner_tol for a, b in zip(objectives, objectives[1:]))
    assert svm.status_ in ("latent_fixed", "objective", "latent_iter")
    # the reported J is the latent objective at w_, which the completion H_ makes convex
    assert svm.objective_ == pytest.approx(
        _brute_latent_objective(model, X[:20], Y, svm.w_, svm.lam_), abs=1e-9)
    assert svm.objective_ == pytest.approx(primal_objective(model.bind(X, svm.H_), svm.lam_,
                                                            svm.w_))
    assert svm.history_[0]["start"] == "cold"
    assert svm.score(X, Y) > 0.7


def test_latent_ssvm_checks_its_inputs():
    X, Y = _chain_data(n=3)
    model = LatentGraphModel(2, 2, n_features=3)
    with pytest.raises(ValueError, match="warm_start"):
        LatentSSVM(model, warm_start="hot").fit(X, Y)
    with pytest.raises(ValueError, match="solver_options"):
        LatentSSVM(model, solver_options={"tol": 1.0}).fit(X, Y)
    bad = [np.zeros(6, dtype=int) for _ in Y]
    with pytest.raises(ValueError, match="not consistent"):
        LatentSSVM(model).fit(X, Y, H_init=bad)
