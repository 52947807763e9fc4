"""ssvm.compat.pystruct: joint features, losses, objectives, pickling/cloning, errors."""

import itertools
import pickle

import numpy as np
import pytest

from ssvm.compat.pystruct.datasets import generate_blocks, generate_blocks_multinomial
from ssvm.compat.pystruct.learners import (
    FrankWolfeSSVM,
    NSlackSSVM,
    OneSlackSSVM,
    SubgradientSSVM,
)
from ssvm.compat.pystruct.models import (
    BinaryClf,
    ChainCRF,
    DirectionalGridCRF,
    EdgeFeatureGraphCRF,
    GraphCRF,
    GridCRF,
    MultiClassClf,
    MultiLabelClf,
)
from ssvm.compat.pystruct.utils import (
    SaveLogger,
    compress_sym,
    expand_sym,
    find_constraint,
    make_grid_edges,
    objective_primal,
)

sklearn_base = pytest.importorskip("sklearn.base")


# --- joint features, built entry by entry ---------------------------------------------

def expected_graph_phi(features, edges, y, K, directed, edge_features=None):
    """pystruct's layout by explicit loops: unary U[k, f], then pairwise."""
    n, F = features.shape
    unary = np.zeros(K * F)
    for v in range(n):
        for f in range(F):
            unary[y[v] * F + f] += features[v, f]
    if edge_features is not None:
        G = edge_features.shape[1]
        pair = np.zeros(G * K * K)
        for e, (u, v) in enumerate(edges):
            for g in range(G):
                pair[g * K * K + y[u] * K + y[v]] += edge_features[e, g]
        return np.concatenate([unary, pair])
    if directed:
        pair = np.zeros(K * K)
        for u, v in edges:
            pair[y[u] * K + y[v]] += 1
    else:
        pair = []
        for a in range(K):                       # lower triangle, row by row
            for b in range(a + 1):
                pair.append(sum(1 for u, v in edges
                                if {y[u], y[v]} == {a, b} or (a == b == y[u] == y[v])))
        pair = np.array(pair, dtype=float)
    return np.concatenate([unary, pair])


@pytest.mark.parametrize("directed", [False, True])
def test_graph_crf_joint_feature(directed):
    rng = np.random.default_rng(0)
    K, F, n = 3, 4, 7
    features = rng.normal(size=(n, F))
    edges = np.array([[0, 1], [1, 2], [2, 0], [3, 4], [5, 6], [6, 5], [4, 2]])
    y = rng.integers(0, K, size=n)
    model = GraphCRF(n_states=K, n_features=F, directed=directed)
    got = model.joint_feature((features, edges), y)
    assert got.shape == (model.size_joint_feature,)
    np.testing.assert_allclose(got, expected_graph_phi(features, edges, y, K, directed))


def test_chain_crf_joint_feature_and_loss():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(5, 3)), np.array([0, 2, 2, 1, 0])
    model = ChainCRF(n_states=3, n_features=3, class_weight=[1.0, 2.0, 0.5])
    chain = np.array([[t, t + 1] for t in range(4)])
    np.testing.assert_allclose(model.joint_feature(x, y),
                               expected_graph_phi(x, chain, y, 3, directed=True))
    y_hat = np.array([1, 2, 0, 1, 1])
    assert model.loss(y, y_hat) == pytest.approx(1.0 + 2.0 * 0 + 0.5 + 0 + 1.0)
    assert model.max_loss(y) == pytest.approx(1 + 0.5 + 0.5 + 2 + 1)


@pytest.mark.parametrize("sym,antisym", [([], []), ([0], [1])])
def test_edge_feature_graph_crf_joint_feature(sym, antisym):
    rng = np.random.default_rng(2)
    K, F, G, n = 3, 2, 2, 6
    features = rng.normal(size=(n, F))
    edges = np.array([[0, 1], [1, 2], [3, 2], [4, 5], [5, 0]])
    ef = rng.normal(size=(len(edges), G))
    y = rng.integers(0, K, size=n)
    model = EdgeFeatureGraphCRF(n_states=K, n_features=F, n_edge_features=G,
                                symmetric_edge_features=sym, antisymmetric_edge_features=antisym)
    expected = expected_graph_phi(features, edges, y, K, True, ef)
    pair = expected[K * F:].reshape(G, K, K)
    for g in sym:
        pair[g] = (pair[g] + pair[g].T) / 2
    for g in antisym:
        pair[g] = (pair[g] - pair[g].T) / 2
    np.testing.assert_allclose(model.joint_feature((features, edges, ef), y), expected)


def test_grid_crfs_joint_feature():
    X, Y = generate_blocks_multinomial(n_samples=2, seed=0, size_x=6)
    x, y = X[0], Y[1].copy()
    y[0, 0] = 1
    H, W, F = x.shape
    edges = [(r * W + c, r * W + c + 1) for r in range(H) for c in range(W - 1)]
    edges += [(r * W + c, (r + 1) * W + c) for r in range(H - 1) for c in range(W)]
    np.testing.assert_array_equal(make_grid_edges(x), np.array(edges))
    flat = x.reshape(-1, F)
    grid = GridCRF(n_states=3, n_features=F)
    np.testing.assert_allclose(grid.joint_feature(x, y),
                               expected_graph_phi(flat, np.array(edges), y.ravel(), 3, False))
    directional = DirectionalGridCRF(n_states=3, n_features=F)
    ef = np.zeros((len(edges), 2))
    ef[:H * (W - 1), 0] = 1
    ef[H * (W - 1):, 1] = 1
    np.testing.assert_allclose(directional.joint_feature(x, y),
                               expected_graph_phi(flat, np.array(edges), y.ravel(), 3, True, ef))


def test_multilabel_joint_feature():
    x = np.array([1.0, -2.0, 0.5])
    y = np.array([1, 0, 1, 1])
    edges = np.array([[0, 1], [2, 3], [1, 3]])
    model = MultiLabelClf(n_labels=4, n_features=3, edges=edges)
    expected = []
    for j in range(4):
        expected.extend((1 if y[j] else -1) * x)
    for u, v in edges:
        block = np.zeros(4)
        block[2 * y[u] + y[v]] = 1
        expected.extend(block)
    np.testing.assert_allclose(model.joint_feature(x, y), expected)
    assert model.loss(y, np.array([0, 0, 1, 0])) == 2


def test_unstructured_joint_features():
    x = np.array([1.0, 2.0, -1.0])
    mc = MultiClassClf(n_features=3, n_classes=3, class_weight=[1, 2, 3])
    np.testing.assert_allclose(mc.joint_feature(x, 2), [0, 0, 0, 0, 0, 0, 1, 2, -1])
    assert mc.loss(1, 0) == 2 and mc.loss(1, 1) == 0
    np.testing.assert_allclose(BinaryClf(3).joint_feature(x, -1), -x / 2)


def test_symmetric_packing_round_trip():
    rng = np.random.default_rng(3)
    m = rng.normal(size=(4, 4))
    m = m + m.T
    np.testing.assert_allclose(expand_sym(compress_sym(m, make_symmetric=False)), m)
    counts = np.array([[1.0, 2.0], [0.0, 3.0]])          # P + P^T - diag(P), lower part
    np.testing.assert_allclose(compress_sym(counts), [1.0, 2.0, 3.0])


# --- learners: objective against brute force ------------------------------------------

def brute_primal(model, X, Y, w, C):
    """||w||^2 / 2 + C sum_i max_y (loss + <w, phi(x, y)> - <w, phi(x, y_i)>) by enumeration."""
    total = 0.0
    for x, y in zip(X, Y):
        best = max(model.loss(y, c) + w @ (model.joint_feature(x, c) - model.joint_feature(x, y))
                   for c in candidates(model, y))
        total += best
    return 0.5 * w @ w + C * total


def candidates(model, y):
    if isinstance(model, BinaryClf):
        return [-1, 1]
    if isinstance(model, MultiClassClf):
        return range(model.n_states)
    return [np.array(c) for c in itertools.product(range(2), repeat=np.size(y))]


def multiclass_data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, -1] = 1.0
    Y = np.arange(n) % 3
    X[:, :3] += 1.5 * np.eye(3)[Y]
    return X, Y


@pytest.mark.parametrize("learner,tol,bound", [(FrankWolfeSSVM, 1e-2, 1e-2),
                                               (NSlackSSVM, 1e-5, 1e-5 * 0.5 * 30),
                                               (OneSlackSSVM, 1e-5, 1e-5 * 0.5 * 30)])
def test_frank_wolfe_learners_certified_objective(learner, tol, bound):
    """FrankWolfeSSVM's tol bounds the gap of pystruct's objective, the cutting-plane
    learners' the gap divided by C n (the mean slack violation, pystruct's one-slack tol)."""
    X, Y = multiclass_data()
    model = MultiClassClf(class_weight=[1.0, 2.0, 1.0])
    svm = learner(model, C=0.5, max_iter=500, tol=tol).fit(X, Y)
    primal = brute_primal(model, X, Y, svm.w, 0.5)
    assert svm.primal_objective_curve_[-1] == pytest.approx(primal, rel=1e-10)
    assert svm.duality_gap_ <= bound and svm.exact_
    dual = svm.objective_curve_[-1]
    assert dual <= primal + 1e-12 and primal - dual == pytest.approx(svm.duality_gap_)
    assert objective_primal(model, svm.w, X, Y, 0.5) == pytest.approx(primal)


def test_all_learners_reach_the_same_optimum():
    """Each certified primal is within its own gap of the optimum, so any two differ by
    at most the larger gap; subgradient's primal is never below the certified optimum."""
    X, Y = multiclass_data(seed=1)
    ref = NSlackSSVM(MultiClassClf(), C=1.0, tol=1e-7, max_iter=1000).fit(X, Y)
    p_ref = ref.primal_objective_curve_[-1]
    for learner in (OneSlackSSVM(MultiClassClf(), C=1.0, tol=1e-6, inference_cache=10),
                    FrankWolfeSSVM(MultiClassClf(), C=1.0, max_iter=300, tol=1e-6,
                                   sample_method="perm", random_state=0),
                    FrankWolfeSSVM(MultiClassClf(), C=1.0, max_iter=100, tol=1e-6,
                                   sample_method="rnd", random_state=0),
                    FrankWolfeSSVM(MultiClassClf(), C=1.0, max_iter=300, tol=1e-6,
                                   batch_mode=True)):
        learner.fit(X, Y)
        gap = max(learner.duality_gap_, ref.duality_gap_)
        assert abs(learner.primal_objective_curve_[-1] - p_ref) <= gap + 1e-9
        assert learner.objective_curve_[-1] <= p_ref + 1e-9     # weak duality
    sg = SubgradientSSVM(MultiClassClf(), C=1.0, max_iter=300).fit(X, Y)
    assert sg.objective_curve_[-1] >= p_ref - ref.duality_gap_
    assert sg.objective_curve_[-1] == pytest.approx(p_ref, rel=0.05)


def test_online_subgradient_ssvm_makes_ssvm_core_s_online_steps():
    """The online learner (n_jobs=1, no batches) is ``subgradient_steps`` pass after pass
    with lam = 1 / (C n), the learning rate and decay as given, "auto" = C n, and the
    clock kept across passes and warm starts, where the iterate restarts from the average
    and the momentum from zero, as in pystruct."""
    from ssvm.compat.pystruct.learners.base import bind_training_set
    from ssvm_core.subgradient import subgradient_steps
    X, Y = multiclass_data(seed=3)
    for kw, rate in ((dict(learning_rate=0.2, decay_exponent=0.5, decay_t0=4.0,
                           momentum=0.3, averaging="linear"), 0.2),
                     (dict(averaging=None), 0.5 * len(X))):
        sg = SubgradientSSVM(MultiClassClf(), C=0.5, max_iter=3, break_on_no_constraints=False,
                             **kw).fit(X, Y)
        oracle = bind_training_set(sg.model, X, Y)
        n, d = oracle.n_blocks, oracle.n_features
        w, w_avg, clock = np.zeros(d), np.zeros(d), np.array([0.0])
        steps = dict(learning_rate=rate, decay_exponent=kw.get("decay_exponent", 1),
                     decay_t0=kw.get("decay_t0", 10), momentum=kw.get("momentum", 0.0),
                     averaging=kw["averaging"] or "none")
        for passes in (3, 2):               # the fit, then a warm start of 2 more passes
            if passes == 2:
                sg.set_params(max_iter=2).fit(X, Y, warm_start=True)
                w = w_avg.copy()
            velocity = np.zeros(d)
            for _ in range(passes):
                subgradient_steps(oracle, np.arange(n), 1.0 / (0.5 * n), w, w_avg, velocity,
                                  clock, **steps)
            np.testing.assert_array_equal(sg.w, w_avg)
            assert sg.t == clock[0]


def test_binary_clf_generic_oracle_matches_brute_force():
    X, _ = multiclass_data(seed=2)
    Y = np.where(X[:, 0] - X[:, 1] > 0, 1, -1)
    model = BinaryClf()
    svm = FrankWolfeSSVM(model, C=2.0, max_iter=300, tol=1e-2).fit(X, Y)
    assert svm.exact_
    assert svm.primal_objective_curve_[-1] == pytest.approx(
        brute_primal(model, X, Y, svm.w, 2.0), rel=1e-10)
    assert svm.duality_gap_ <= 1e-2
    pred = svm.predict(X)
    assert svm.score(X, Y) == pytest.approx(np.mean(pred == Y))
    y_hat, delta, slack, loss = find_constraint(model, X[0], Y[0], svm.w)
    assert slack == pytest.approx(max(loss - svm.w @ delta, 0))


def test_negativity_constraint_is_enforced():
    X, Y = multiclass_data(seed=3)
    svm = NSlackSSVM(MultiClassClf(), C=1.0, negativity_constraint=[0, 5]).fit(X, Y)
    assert svm.w[0] <= 0 and svm.w[5] <= 0


def test_score_is_pystruct_score():
    X, Y = multiclass_data(seed=4)
    model = MultiClassClf(class_weight=[1.0, 3.0, 1.0])
    svm = FrankWolfeSSVM(model, C=0.1, max_iter=5).fit(X, Y)
    pred = svm.predict(X)
    losses = [model.loss(y, p) for y, p in zip(Y, pred)]
    assert svm.score(X, Y) == pytest.approx(1 - sum(losses) / sum(model.class_weight[Y]))


def test_curves_logger_and_loss_curve(tmp_path):
    X, Y = multiclass_data(seed=5)
    logger = SaveLogger(str(tmp_path / "model_%d.pkl"), save_every=2)
    svm = FrankWolfeSSVM(MultiClassClf(), C=1.0, max_iter=6, check_dual_every=2,
                         show_loss_every=3, logger=logger, tol=0).fit(X, Y)
    assert len(svm.objective_curve_) == len(svm.primal_objective_curve_) == 3
    assert len(svm.timestamps_) == 4 and svm.timestamps_[0] > 1e9
    assert len(svm.loss_curve_) == 2
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == ["model_0.pkl", "model_2.pkl", "model_4.pkl", "model_final.pkl"]
    final = SaveLogger(str(tmp_path / "model_final.pkl")).load()
    np.testing.assert_array_equal(final.w, svm.w)


# --- pickle / clone / errors ------------------------------------------------------------

ALL_MODELS = [ChainCRF(n_states=3, n_features=2), GraphCRF(class_weight=[1, 2]),
              EdgeFeatureGraphCRF(symmetric_edge_features=[0]), GridCRF(neighborhood=8),
              DirectionalGridCRF(), MultiLabelClf(edges="tree"), MultiClassClf(n_classes=3),
              BinaryClf()]


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda m: type(m).__name__)
def test_models_pickle_and_clone(model):
    again = pickle.loads(pickle.dumps(model))
    assert again.get_params() == model.get_params()
    cloned = sklearn_base.clone(model)
    assert type(cloned) is type(model)
    assert repr(cloned.get_params()) == repr(model.get_params())


@pytest.mark.parametrize("learner", [FrankWolfeSSVM, SubgradientSSVM, NSlackSSVM, OneSlackSSVM])
def test_learners_pickle_and_clone(learner):
    X, Y = multiclass_data(seed=6)
    svm = learner(MultiClassClf(), C=1.0, max_iter=3).fit(X, Y)
    again = pickle.loads(pickle.dumps(svm))
    np.testing.assert_array_equal(again.predict(X), svm.predict(X))
    cloned = sklearn_base.clone(svm)
    assert not hasattr(cloned, "w") and cloned.get_params()["C"] == 1.0
    cloned.set_params(C=2.0)
    assert cloned.C == 2.0


def test_clear_errors():
    with pytest.raises(ValueError, match="inference_method must be one of"):
        GraphCRF(inference_method="trw")
    with pytest.raises(ValueError, match="must name one of"):
        GraphCRF(inference_method=("ogm", {"alg": "magic"}))
    with pytest.raises(NotImplementedError, match="NodeTypeEdgeFeatureGraphCRF"):
        from ssvm.compat.pystruct.models import TypedCRF  # noqa: F401
    with pytest.raises(NotImplementedError, match="class_weight"):
        MultiClassClf(rescale_C=True)
    with pytest.raises(ValueError, match="sample_method"):
        FrankWolfeSSVM(MultiClassClf(), sample_method="cyclic")
    with pytest.raises(ValueError, match="class_weight must have length"):
        GraphCRF(n_states=3, n_features=2, class_weight=[1, 2])
    with pytest.raises(ValueError, match="Expected 5 features"):
        X, Y = generate_blocks(n_samples=2)
        GridCRF(n_features=5).initialize(X, Y)
