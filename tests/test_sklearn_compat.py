"""The estimators under scikit-learn's model selection (clone, tags, CV, grid search).

scikit-learn is a test dependency only: ssvm-core must import, fit and
predict without it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ssvm_core import FrankWolfeSSVM, SubgradientSSVM
from ssvm_core.testing import random_chain_data
from ssvm_oracles import ChainModel

sklearn = pytest.importorskip("sklearn", minversion="1.6")
from sklearn.base import clone  # noqa: E402
from sklearn.metrics import make_scorer  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402


def chain_problem(seed=0, n=18, n_states=3, n_features=4):
    """A small chain problem whose labels follow the features (so lam matters)."""
    rng = np.random.default_rng(seed)
    X, _ = random_chain_data(rng, n, 5, n_states, n_features)
    W = rng.normal(size=(n_features, n_states))
    Y = [np.argmax(x @ W + 0.3 * rng.normal(size=(len(x), n_states)), axis=1) for x in X]
    return X, Y


def hamming(Y_true, Y_pred) -> float:
    """Mean per-token Hamming loss over sequences (a structured loss for make_scorer)."""
    return float(np.mean([np.mean(np.asarray(a) != np.asarray(b))
                          for a, b in zip(Y_true, Y_pred)]))


def manual_cv(est, X, Y, folds, scorer=None):
    """What cross_val_score must return: fit a fresh copy per fold, score the held-out part."""
    out = []
    for train, test in folds:
        fitted = clone(est).fit([X[i] for i in train], [Y[i] for i in train])
        X_test, Y_test = [X[i] for i in test], [Y[i] for i in test]
        out.append(fitted.score(X_test, Y_test) if scorer is None
                   else -hamming(Y_test, fitted.predict(X_test)))
    return np.array(out)


@pytest.mark.parametrize("make", [
    lambda: FrankWolfeSSVM(ChainModel(3), lam=0.1, max_passes=8, random_state=0),
    lambda: SubgradientSSVM(ChainModel(3), lam=0.1, max_passes=4, random_state=0),
])
def test_tags_and_clone(make):
    est = make()
    tags = sklearn.utils.get_tags(est)
    assert tags.estimator_type is None and tags.target_tags.required and tags.no_validation
    assert not sklearn.base.is_classifier(est) and not sklearn.base.is_regressor(est)
    twin = clone(est)
    assert twin is not est and twin.get_params().keys() == est.get_params().keys()
    assert twin.get_params()["model__n_states"] == 3
    assert twin.model is not est.model and repr(twin.model) == repr(est.model)
    with pytest.raises(sklearn.exceptions.NotFittedError):
        sklearn.utils.validation.check_is_fitted(est)
    X, Y = chain_problem()
    sklearn.utils.validation.check_is_fitted(est.fit(X, Y))


def test_cross_val_score_with_the_estimator_score_and_a_structured_scorer():
    X, Y = chain_problem()
    est = FrankWolfeSSVM(ChainModel(3), lam=0.05, max_passes=10, random_state=0)
    folds = list(KFold(3).split(X))
    scores = cross_val_score(est, X, Y, cv=KFold(3), error_score="raise")
    np.testing.assert_array_equal(scores, manual_cv(est, X, Y, folds))
    assert np.all((scores > 0.4) & (scores <= 1.0))      # better than chance (1/3)
    scorer = make_scorer(hamming, greater_is_better=False)
    by_loss = cross_val_score(est, X, Y, cv=KFold(3), scoring=scorer, error_score="raise")
    np.testing.assert_array_equal(by_loss, manual_cv(est, X, Y, folds, scorer))
    # ChainModel's score is 1 - the mean per-sequence Hamming loss.
    np.testing.assert_allclose(by_loss, scores - 1.0, rtol=0, atol=1e-12)


def test_grid_search_over_lam_picks_the_best_mean_score():
    X, Y = chain_problem(seed=1)
    est = FrankWolfeSSVM(ChainModel(3), max_passes=10, random_state=0)
    lams = [1e-3, 1e-1, 1e1]
    search = GridSearchCV(est, {"lam": lams}, cv=KFold(3), error_score="raise").fit(X, Y)
    folds = list(KFold(3).split(X))
    means = [manual_cv(clone(est).set_params(lam=lam), X, Y, folds).mean() for lam in lams]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], means, rtol=0, atol=0)
    assert search.best_params_ == {"lam": lams[int(np.argmax(means))]}
    best = search.best_estimator_
    assert best.lam == search.best_params_["lam"] and best.lam_ == best.lam
    refit = clone(est).set_params(lam=best.lam).fit(X, Y)
    np.testing.assert_array_equal(best.w_, refit.w_)
    assert est.lam is None and not hasattr(est, "w_")      # the template is left untouched


class _Params:
    """A parameter value with its own get_params/set_params (nested ``name__key``)."""

    def __init__(self, a=1):
        self.a = a

    def get_params(self, deep=True):
        return {"a": self.a}

    def set_params(self, **params):
        self.a = params.pop("a", self.a)
        return self


def test_models_with_array_parameters_clone():
    """Constructors that convert a parameter (cost to float64) still clone, unbound."""
    from ssvm_oracles import GraphModel, MulticlassModel

    cost = [[0, 1, 2], [1, 0, 1], [3, 1, 0]]
    for model in (MulticlassModel(3, cost=cost), GraphModel(3, class_weight=[1, 2, 1])):
        model.n_features_in_ = 5                     # as bind leaves it
        twin = clone(FrankWolfeSSVM(model, lam=0.1)).model
        assert twin is not model and type(twin) is type(model)
        assert not hasattr(twin, "n_features_in_")
        for key, value in model.get_params().items():
            np.testing.assert_array_equal(twin.get_params()[key], value)


def test_nested_params():
    est = FrankWolfeSSVM(ChainModel(3), callback=_Params())
    assert est.get_params()["callback__a"] == 1
    assert "callback__a" not in est.get_params(deep=False)
    assert est.set_params(callback__a=5, lam=0.2).callback.a == 5 and est.lam == 0.2
    model = est.model
    assert est.set_params(model__n_states=4).model is model and model.n_states == 4
    assert est.get_params()["model__n_states"] == 4
    with pytest.raises(ValueError, match="'sampling' of FrankWolfeSSVM has no parameters"):
        est.set_params(sampling__a=4)
    with pytest.raises(ValueError, match="invalid parameter 'nope'"):
        est.set_params(nope__a=1)


def test_estimators_work_without_scikit_learn():
    """ssvm-core never imports scikit-learn: block it and fit, predict, catch NotFittedError."""
    code = """
import sys
sys.modules["sklearn"] = None          # any import of sklearn now fails
import numpy as np
from ssvm_core import FrankWolfeSSVM, NotFittedError
from ssvm_core.testing import random_chain_data
from ssvm_oracles import ChainModel
X, Y = random_chain_data(np.random.default_rng(0), 6, 4, 3, 2)
est = FrankWolfeSSVM(ChainModel(3), max_passes=2)
try:
    est.predict(X)
except NotFittedError:
    pass
est.fit(X, Y)
assert len(est.predict(X)) == 6 and est.__sklearn_is_fitted__()
try:
    est.__sklearn_tags__()
except ImportError:
    print("ok")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"
